import { describe, expect, it } from 'vitest';
import type { ChatMessage, ChatModel, Completion, CompletionRequest, StreamEvent } from '../../../src/llm/provider.js';
import { capToolOutput, FinalAnswerError, runToolLoop, type Tool } from '../../../src/domain/reasoning/tool-loop.js';
import { StoreUnavailableError } from '../../../src/storage/unavailable.js';

type Turn = { text?: string; calls?: Array<{ name: string; arguments: string }> };

/** A model that answers from a script and records what it was asked. */
function scriptedModel(turns: Turn[]) {
  const requests: CompletionRequest[] = [];
  let n = 0;
  const answer = (request: CompletionRequest): Completion => {
    requests.push({ ...request, messages: [...request.messages] });
    const turn = turns[n++] ?? { text: 'fallback' };
    const toolCalls = (turn.calls ?? []).map((c, i) => ({ id: `call_${n}_${i}`, ...c }));
    return { text: turn.text ?? '', toolCalls, usage: { inputTokens: 10, outputTokens: 2 }, finishReason: toolCalls.length ? 'tool_calls' : 'stop' };
  };
  const model: ChatModel = {
    name: 'test/scripted',
    structuredOutputMode: 'json_schema',
    complete: async (request) => answer(request),
    async *stream(request): AsyncIterable<StreamEvent> {
      const a = answer(request);
      for (const piece of a.text.match(/.{1,3}/gs) ?? []) yield { type: 'text', text: piece };
      for (const call of a.toolCalls) yield { type: 'tool_call', call };
      yield { type: 'done', usage: a.usage, finishReason: a.finishReason };
    },
  };
  return { model, requests };
}

const echo: Tool = {
  name: 'echo',
  description: 'Repeats a word n times',
  parameters: { type: 'object', properties: { word: { type: 'string' }, n: { type: 'integer', minimum: 1, maximum: 5000 } }, required: ['word'], additionalProperties: false },
  execute: async (args) => String(args.word).repeat(Number(args.n ?? 1)),
};

const base = (model: ChatModel, extra: Partial<Parameters<typeof runToolLoop>[0]> = {}) => ({
  model,
  module: 'dialectic' as const,
  messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'q' }] as ChatMessage[],
  tools: [echo],
  maxIterations: 3,
  ...extra,
});

const toolMessages = (request: CompletionRequest) => request.messages.filter((m) => m.role === 'tool').map((m) => m.content);

describe('runToolLoop', () => {
  it('runs the tools the model calls, gives back their results, and ends when it calls none', async () => {
    const { model, requests } = scriptedModel([{ calls: [{ name: 'echo', arguments: '{"word":"ab","n":2}' }] }, { text: 'done' }]);
    const result = await runToolLoop(base(model));
    expect(result.text).toBe('done');
    expect(result.modelCalls).toBe(2);
    expect(result.usage).toEqual({ inputTokens: 20, outputTokens: 4 });
    expect(result.toolCalls).toMatchObject([{ name: 'echo', ok: true, outputChars: 4 }]);
    expect(toolMessages(requests[1]!)).toEqual(['abab']);
    expect(requests[0]!.tools?.map((t) => t.name)).toEqual(['echo']);
  });

  it('turns an unknown tool, bad JSON and invalid arguments into error texts, never a crash', async () => {
    const { model, requests } = scriptedModel([
      {
        calls: [
          { name: 'nope', arguments: '{}' },
          { name: 'echo', arguments: '{not json' },
          { name: 'echo', arguments: '{"word":3}' },
          { name: 'echo', arguments: '[1]' },
          { name: 'echo', arguments: '{"word":"x","extra":1}' },
        ],
      },
      { text: 'answer' },
    ]);
    const result = await runToolLoop(base(model));
    expect(result.text).toBe('answer');
    expect(result.toolCalls.map((c) => c.ok)).toEqual([false, false, false, false, false]);
    const outputs = toolMessages(requests[1]!);
    expect(outputs[0]).toMatch(/no tool named "nope"/);
    expect(outputs[1]).toMatch(/not valid JSON/);
    expect(outputs[2]).toMatch(/invalid arguments for echo: \/word must be string/);
    expect(outputs[3]).toMatch(/must be a JSON object/);
    expect(outputs[4]).toMatch(/additional properties/);
  });

  it('a tool that throws becomes an error text', async () => {
    const failing: Tool = { ...echo, name: 'boom', execute: async () => { throw new Error('disk on fire'); } };
    const { model, requests } = scriptedModel([{ calls: [{ name: 'boom', arguments: '{"word":"a"}' }] }, { text: 'ok' }]);
    const result = await runToolLoop(base(model, { tools: [failing] }));
    expect(result.toolCalls[0]!.ok).toBe(false);
    expect(toolMessages(requests[1]!)).toEqual(['Error: boom failed: disk on fire']);
  });

  it('a store that is unavailable under a tool ends the loop with its error: the model is not told of it', async () => {
    const down = new StoreUnavailableError('The database is unreachable; try again shortly', 'connection lost');
    const failing: Tool = { ...echo, name: 'lookup', execute: async () => { throw down; } };
    const { model, requests } = scriptedModel([{ calls: [{ name: 'lookup', arguments: '{"word":"a"}' }] }, { text: 'ok' }]);
    await expect(runToolLoop(base(model, { tools: [failing] }))).rejects.toBe(down);
    expect(requests).toHaveLength(1);
  });

  it('caps each tool result', async () => {
    const { model, requests } = scriptedModel([{ calls: [{ name: 'echo', arguments: '{"word":"abcde","n":3000}' }] }, { text: 'ok' }]);
    await runToolLoop(base(model));
    const output = toolMessages(requests[1]!)[0]!;
    expect(output.length).toBe(10_000);
    expect(output).toMatch(/\[cut: 5000 more characters\]$/);
    expect(capToolOutput('short', 10)).toBe('short');
  });

  it('at the iteration limit makes one last call without tools', async () => {
    const call = { name: 'echo', arguments: '{"word":"a"}' };
    const { model, requests } = scriptedModel([{ calls: [call] }, { calls: [call] }, { text: 'final' }]);
    const result = await runToolLoop(base(model, { maxIterations: 2 }));
    expect(result.text).toBe('final');
    expect(requests.map((r) => r.tools?.length ?? 0)).toEqual([1, 1, 0]);
    expect(result.toolCalls).toHaveLength(2);
  });

  it('retries an empty answer once', async () => {
    const { model, requests } = scriptedModel([{ text: '  ' }, { text: 'second try' }]);
    expect((await runToolLoop(base(model))).text).toBe('second try');
    expect(requests).toHaveLength(2);
    const again = scriptedModel([{ text: '' }, { text: '' }, { text: 'never asked' }]);
    expect((await runToolLoop(base(again.model, { maxIterations: 5 }))).text).toBe('');
    expect(again.requests).toHaveLength(2);
  });

  it('applies tool_choice required to the first turn only', async () => {
    const call = { name: 'echo', arguments: '{"word":"a"}' };
    const { model, requests } = scriptedModel([{ calls: [call] }, { text: 'ok' }]);
    await runToolLoop(base(model, { toolChoice: 'required' }));
    expect(requests.map((r) => r.toolChoice)).toEqual(['required', 'auto']);
  });

  it('streams the turns, passing the text on as it comes', async () => {
    const { model } = scriptedModel([{ calls: [{ name: 'echo', arguments: '{"word":"a"}' }] }, { text: 'streamed answer' }]);
    const pieces: string[] = [];
    const result = await runToolLoop(base(model, { onText: (t) => pieces.push(t) }));
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('streamed answer');
    expect(result.text).toBe('streamed answer');
    expect(result.usage.inputTokens).toBe(20);
  });

  it('JSON answers: asked for without tools, retried once, then a FinalAnswerError', async () => {
    const validate = (text: string) => {
      try {
        return typeof JSON.parse(text).name === 'string' ? undefined : 'name must be a string';
      } catch {
        return 'not JSON';
      }
    };
    const json = { name: 'answer', schema: { type: 'object' }, validate };
    const ok = scriptedModel([{ text: 'nope' }, { text: '{"name":"Alice"}' }]);
    expect((await runToolLoop(base(ok.model, { json }))).text).toBe('{"name":"Alice"}');
    expect(ok.requests[0]!.json).toBeUndefined();
    expect(ok.requests[1]!.json?.name).toBe('answer');
    expect(ok.requests[1]!.tools).toBeUndefined();

    const bad = scriptedModel([{ text: '{"name":1}' }, { text: 'still not' }]);
    await expect(runToolLoop(base(bad.model, { json }))).rejects.toBeInstanceOf(FinalAnswerError);
    expect(bad.requests).toHaveLength(2);
  });

  it('drops the oldest tool turns when the input grows over maxInputTokens, keeping the system and first user message', async () => {
    const big = (n: number) => ({ calls: [{ name: 'echo', arguments: JSON.stringify({ word: `w${n} `, n: 400 }) }] });
    const { model, requests } = scriptedModel([big(1), big(2), big(3), { text: 'done' }]);
    await runToolLoop(base(model, { maxIterations: 5, maxInputTokens: 1_000 }));
    const last = requests.at(-1)!;
    expect(last.messages[0]).toEqual({ role: 'system', content: 'sys' });
    expect(last.messages[1]).toEqual({ role: 'user', content: 'q' });
    // each tool result is about 800 tokens: only the newest turn fits
    expect(toolMessages(last)).toHaveLength(1);
    expect(toolMessages(last)[0]).toMatch(/^w3 /);
    expect(toolMessages(requests[1]!)).toHaveLength(1);
  });

  it('honours an abort signal between calls and inside tools', async () => {
    const controller = new AbortController();
    const slow: Tool = {
      ...echo,
      name: 'slow',
      execute: (_args, signal) =>
        new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(new Error('stopped')));
          setTimeout(() => controller.abort(new Error('client went away')), 5);
        }),
    };
    const { model, requests } = scriptedModel([{ calls: [{ name: 'slow', arguments: '{"word":"a"}' }] }, { text: 'never' }]);
    await expect(runToolLoop(base(model, { tools: [slow], signal: controller.signal }))).rejects.toThrow('client went away');
    expect(requests).toHaveLength(1);
  });
});
