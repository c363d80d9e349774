import { describe, expect, it } from 'vitest';
import type { ChatModel, Completion, CompletionRequest } from '../../../src/llm/provider.js';
import type { MembershipRecord } from '../../../src/storage/store.js';
import { effectiveConfiguration } from '../../../src/domain/scheduling/configuration.js';
import { observersOf } from '../../../src/domain/scheduling/observers.js';
import { parseDerivedFacts, parseRepresentation, representationPrompt } from '../../../src/domain/reasoning/representation-prompt.js';
import { checkReplacements } from '../../../src/domain/reasoning/deriver.js';
import { DEFAULT_REASONING_SETTINGS } from '../../../src/domain/reasoning-settings.js';
import { completeStructured, ModelOutputError } from '../../../src/domain/reasoning/structured-completion.js';

const member = (peerId: string, configuration: Record<string, unknown> = {}, leftAt: Date | null = null): MembershipRecord => ({
  peerId,
  configuration: { observe_me: null, observe_others: null, ...configuration },
  joinedAt: new Date(0),
  leftAt,
});

describe('observersOf', () => {
  it('by default a sender is observed by itself only', () => {
    expect(observersOf('alice', [member('alice'), member('bob')], new Map())).toEqual(['alice']);
  });

  it('adds active members with observe_others, not those who left', () => {
    const members = [member('alice'), member('bob', { observe_others: true }), member('carol', { observe_others: true }, new Date(1))];
    expect(observersOf('alice', members, new Map())).toEqual(['alice', 'bob']);
  });

  it('observe_me false means nobody observes the sender; the session setting wins over the peer one', () => {
    expect(observersOf('alice', [member('alice', { observe_me: false }), member('bob', { observe_others: true })], new Map())).toEqual([]);
    const peers = new Map([['alice', { observe_me: false }], ['bob', { observe_others: true }]]);
    expect(observersOf('alice', [member('alice'), member('bob')], peers)).toEqual([]);
    expect(observersOf('alice', [member('alice', { observe_me: true }), member('bob')], peers)).toEqual(['alice', 'bob']);
    expect(observersOf('alice', [member('alice', { observe_me: true }), member('bob', { observe_others: false })], peers)).toEqual(['alice']);
  });
});

describe('effectiveConfiguration', () => {
  const settings = DEFAULT_REASONING_SETTINGS;
  it('takes each field from the most specific level that sets it', () => {
    const config = effectiveConfiguration(settings, {
      workspace: { reasoning: { enabled: false, custom_instructions: 'ws' }, summary: { messages_per_short_summary: 30 } },
      session: { reasoning: { enabled: true }, summary: { enabled: false } },
      message: { reasoning: { custom_instructions: 'msg' } },
    });
    expect(config).toMatchObject({ reasoningEnabled: true, customInstructions: 'msg', summaryEnabled: false, messagesPerShortSummary: 30, messagesPerLongSummary: 60 });
  });

  it('reads the legacy deriver section and skip_deriver, and the settings as the last level', () => {
    expect(effectiveConfiguration(settings, { workspace: {}, session: { deriver: { enabled: false } } }).reasoningEnabled).toBe(false);
    expect(effectiveConfiguration(settings, { workspace: { skip_deriver: true }, session: {} }).reasoningEnabled).toBe(false);
    expect(effectiveConfiguration(settings, { workspace: {}, session: {} })).toMatchObject({ reasoningEnabled: true, peerCardUse: true, summaryEnabled: true });
    const off = { ...settings, deriver: { ...settings.deriver, enabled: false }, peerCardEnabled: false };
    expect(effectiveConfiguration(off, { workspace: {}, session: { reasoning: { enabled: true } } })).toMatchObject({ reasoningEnabled: false, peerCardUse: false, peerCardCreate: false });
  });
});

describe('the representation prompt and its answer', () => {
  it('lists the messages a line each with time and sender, names the peer and the custom instructions', () => {
    const prompt = representationPrompt({
      observedId: 'alice',
      customInstructions: 'Focus on food.',
      messages: [{ peerId: 'alice', content: 'I love pho', createdAt: new Date('2024-05-01T10:20:30Z') }],
    });
    expect(prompt).toContain('2024-05-01 10:20:30 alice: I love pho');
    expect(prompt).toContain('Participant: alice');
    expect(prompt).toContain('CUSTOM INSTRUCTIONS:\nFocus on food.');
  });

  it('reads objects, strings, fences and surrounding text; trims and drops repeats', () => {
    expect(parseRepresentation('{"explicit": [{"content": " alice likes pho "}, {"content": "Alice likes pho"}, {"content": ""}]}')).toEqual({ ok: true, value: ['alice likes pho'] });
    expect(parseRepresentation('Sure!\n```json\n{"explicit": ["a", "b"]}\n```')).toEqual({ ok: true, value: ['a', 'b'] });
    expect(parseRepresentation('{"explicit": []}')).toEqual({ ok: true, value: [] });
  });

  it('refuses what it cannot read, saying why', () => {
    expect(parseRepresentation('')).toMatchObject({ ok: false, error: 'the answer is empty' });
    expect(parseRepresentation('I cannot help with that')).toMatchObject({ ok: false });
    expect(parseRepresentation('{"facts": ["a"]}')).toMatchObject({ ok: false, error: 'the answer has no "explicit" list' });
    expect(parseRepresentation('{"explicit": [{"text": "a"}]}')).toMatchObject({ ok: false });
  });
});

/** A model answering from a list, recording what it was asked. */
function scripted(answers: string[], mode: ChatModel['structuredOutputMode'] = 'json_schema') {
  const requests: CompletionRequest[] = [];
  const model: ChatModel = {
    name: 'test/scripted',
    structuredOutputMode: mode,
    async complete(request): Promise<Completion> {
      requests.push(request);
      const text = answers.shift();
      if (text === undefined) throw new Error('no answer scripted');
      return { text, toolCalls: [], usage: { inputTokens: 10, outputTokens: 5 }, finishReason: 'stop' };
    },
    stream: () => {
      throw new Error('not used');
    },
  };
  return { model, requests };
}

describe('completeStructured', () => {
  const request = { module: 'deriver' as const, messages: [{ role: 'user' as const, content: 'facts please' }], json: { name: 'facts', schema: { type: 'object' } } };

  it('takes a readable first answer in the configured mode', async () => {
    const { model, requests } = scripted(['{"explicit": ["a"]}']);
    const answer = await completeStructured(model, request, parseRepresentation);
    expect(answer).toEqual({ value: ['a'], usage: { inputTokens: 10, outputTokens: 5 }, via: 'configured' });
    expect(requests[0].json?.mode).toBe('json_schema');
  });

  it('falls back to JSON-object mode with the schema in the prompt, then to a repair', async () => {
    const second = scripted(['not json', '{"explicit": ["b"]}']);
    expect((await completeStructured(second.model, request, parseRepresentation)).via).toBe('json_object');
    expect(second.requests[1].json?.mode).toBe('json_object');
    expect(second.requests[1].messages.at(-1)?.content).toContain('JSON Schema');

    const third = scripted(['', 'still not', '{"explicit": []}']);
    const repaired = await completeStructured(third.model, request, parseRepresentation);
    expect(repaired).toMatchObject({ value: [], via: 'repair', usage: { inputTokens: 30, outputTokens: 15 } });
    expect(third.requests[2].messages.at(-2)).toEqual({ role: 'assistant', content: 'still not' });
  });

  it('fails with every problem named when no attempt can be read', async () => {
    const { model } = scripted(['nope', 'nope', '{"wrong": 1}']);
    const failure = await completeStructured(model, request, parseRepresentation).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelOutputError);
    expect((failure as ModelOutputError).attempts).toHaveLength(3);
    expect((failure as Error).message).toContain('no usable JSON after 3 attempts');
  });
});

describe('replacements the deriver declares (untrusted)', () => {
  const known = ['alice lives in Lisbon', 'alice likes tea'].map((content, i) => ({
    id: `c${i}`,
    workspaceId: 'w',
    observerId: 'alice',
    observedId: 'alice',
    sessionId: 's',
    content,
    level: 'explicit' as const,
    sourceIds: null,
    timesDerived: 1,
    createdAt: new Date(0),
  }));

  it('reads each fact\'s replaces list, a missing or malformed one as none', () => {
    const parsed = parseDerivedFacts('{"explicit": [{"content": "a", "replaces": [1]}, {"content": "b", "replaces": "1"}, {"content": "c"}, "d"]}');
    expect(parsed).toEqual({ ok: true, value: [{ content: 'a', replaces: [1] }, { content: 'b', replaces: [] }, { content: 'c', replaces: [] }, { content: 'd', replaces: [] }] });
    expect(parseRepresentation('{"explicit": [{"content": "a", "replaces": [1]}]}')).toEqual({ ok: true, value: ['a'] });
  });

  it('takes the numbers (or ids) of facts shown, each once; ignores the rest with a reason', () => {
    const { replacements, ignored } = checkReplacements(
      [
        { content: 'alice moved to Porto', replaces: [1, 0, 3, 1.5, 'c9', null] },
        { content: 'alice drinks coffee', replaces: ['c1', 1] },
      ],
      known,
    );
    expect([...replacements]).toEqual([
      [0, [0]],
      [1, [1]],
    ]);
    expect(ignored).toEqual([
      'fact 1 replaces 0: not a fact that was shown',
      'fact 1 replaces 3: not a fact that was shown',
      'fact 1 replaces 1.5: not a fact that was shown',
      'fact 1 replaces "c9": not a fact that was shown',
      'fact 1 replaces null: not a fact that was shown',
      'fact 2 replaces 1: another fact of the answer replaces it already',
    ]);
  });

  it('shows known facts numbered with their dates only when there are some', () => {
    const withKnown = representationPrompt({ observedId: 'alice', messages: [], known: [{ content: 'alice lives in Lisbon', validFrom: new Date('2026-07-01T10:00:00Z') }] });
    expect(withKnown).toContain('[1] 2026-07-01: alice lives in Lisbon');
    expect(withKnown).toContain('"replaces"');
    expect(representationPrompt({ observedId: 'alice', messages: [] })).not.toContain('replaces');
  });
});
