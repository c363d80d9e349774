import type { ChatModel, CompletionRequest, JsonSchema, StructuredOutputMode, Usage } from '../../llm/provider.js';
import type { ParseResult } from './representation-prompt.js';

/**
 * A model's answer that could not be read as the JSON asked for, after every way of asking.
 * The job that met it fails visibly (retried, then dead-lettered with this message) instead of
 * counting as "no conclusions" (the reference's most reported defect, reasoning.md R11).
 */
export class ModelOutputError extends Error {
  constructor(
    message: string,
    readonly attempts: readonly string[],
  ) {
    super(message);
    this.name = 'ModelOutputError';
  }
}

export interface StructuredAnswer<T> {
  value: T;
  usage: Usage;
  /** Which way of asking gave the answer: the model's own mode, JSON-object mode, or a repair. */
  via: 'configured' | 'json_object' | 'repair';
}

const schemaInstruction = (schema: JsonSchema) => `Answer with one JSON object that validates against this JSON Schema, and nothing else:\n${JSON.stringify(schema)}`;

/**
 * Asks for JSON and reads it with `parse`: first in the model's configured structured-output
 * mode; if that answer cannot be read, in JSON-object mode with the schema in the prompt; if
 * that fails too, once more showing the model its answer and the problem (a repair). Transport
 * errors (ModelError) are not caught: the caller's retry policy handles them.
 */
export async function completeStructured<T>(
  model: ChatModel,
  request: Omit<CompletionRequest, 'json'> & { json: { name: string; schema: JsonSchema } },
  parse: (text: string) => ParseResult<T>,
): Promise<StructuredAnswer<T>> {
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  const add = (more: Usage) => {
    usage.inputTokens += more.inputTokens;
    usage.outputTokens += more.outputTokens;
  };
  const problems: string[] = [];
  const configured: StructuredOutputMode = model.structuredOutputMode;

  const first = await model.complete({ ...request, json: { ...request.json, mode: configured } });
  add(first.usage);
  const firstParsed = parse(first.text);
  if (firstParsed.ok) return { value: firstParsed.value, usage, via: 'configured' };
  problems.push(`${configured}: ${firstParsed.error}`);

  const withSchema = [...request.messages, { role: 'system' as const, content: schemaInstruction(request.json.schema) }];
  const second = await model.complete({ ...request, messages: withSchema, json: { ...request.json, mode: 'json_object' } });
  add(second.usage);
  const secondParsed = parse(second.text);
  if (secondParsed.ok) return { value: secondParsed.value, usage, via: 'json_object' };
  problems.push(`json_object: ${secondParsed.error}`);

  const repair = await model.complete({
    ...request,
    messages: [
      ...withSchema,
      { role: 'assistant', content: second.text },
      { role: 'user', content: `That answer cannot be used (${secondParsed.error}). Reply again with only the corrected JSON object.` },
    ],
    json: { ...request.json, mode: 'json_object' },
  });
  add(repair.usage);
  const repaired = parse(repair.text);
  if (repaired.ok) return { value: repaired.value, usage, via: 'repair' };
  problems.push(`repair: ${repaired.error}`);
  throw new ModelOutputError(`${model.name} gave no usable JSON after 3 attempts (${problems.join('; ')})`, problems);
}
