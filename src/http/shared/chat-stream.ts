import type { DomainContext } from '../../domain/context.js';
import { DomainError } from '../../domain/errors.js';
import { prepareChat, type ChatRequest } from '../../domain/reasoning/chat.js';
import type { Reply } from './route.js';
import { isStoreUnavailable } from '../../storage/unavailable.js';

/** JSON as Python's json.dumps writes it (the reference's wire format): non-ASCII escaped. */
export function pythonJson(value: unknown): string {
  const text = JSON.stringify(value, null, 0)
    .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return text;
}

/** One event of the chat stream, byte for byte as the reference writes it (reasoning.md R5). */
export function deltaEvent(text: string): string {
  return `data: {"delta": {"content": ${pythonJson(text)}}, "done": false}\n\n`;
}

export const DONE_EVENT = 'data: {"done": true}\n\n';

/** The last event after an error once the stream has started: the SDKs stop at `done`. */
export function errorEvent(message: string): string {
  return `data: {"done": true, "error": {"message": ${pythonJson(message)}}}\n\n`;
}

/**
 * Answers a chat: checks and prepares it first (errors are ordinary JSON responses), then either
 * waits for the answer (`{"content": ...}`) or streams the model's final turn as it comes.
 * `signal` (the client went away) aborts the model calls.
 */
export async function answerChat(ctx: DomainContext, workspaceId: string, request: ChatRequest, signal: AbortSignal): Promise<Reply> {
  const chat = await prepareChat(ctx, workspaceId, request, ctx.reasoning?.onChat);
  if (!request.stream) {
    try {
      const { content } = await chat.run({ signal });
      return { status: 200, body: { content } };
    } catch (error) {
      // nobody is left to answer: no error to log (the chat's own report says it was aborted)
      if (signal.aborted) return { status: 499, body: { detail: 'The client closed the connection' } };
      throw error;
    }
  }
  return { status: 200, stream: streamChat(chat, signal) };
}

async function* streamChat(chat: Awaited<ReturnType<typeof prepareChat>>, signal: AbortSignal): AsyncGenerator<string> {
  const pieces: string[] = [];
  let wake: (() => void) | undefined;
  let finished = false;
  let failure: string | undefined;
  const running = chat
    .run({
      signal,
      onText: (text) => {
        pieces.push(deltaEvent(text));
        wake?.();
      },
    })
    .catch((error: unknown) => {
      // the database being away is said as a non-streamed chat's 503 says it
      const told = error instanceof DomainError || isStoreUnavailable(error);
      failure = told ? error.message : signal.aborted ? 'the client closed the connection' : 'An unexpected error occurred';
    })
    .finally(() => {
      finished = true;
      wake?.();
    });
  try {
    while (true) {
      if (pieces.length > 0) {
        yield pieces.splice(0, pieces.length).join('');
        continue;
      }
      if (finished) break;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
    yield failure !== undefined ? errorEvent(failure) : DONE_EVENT;
  } finally {
    await running;
  }
}
