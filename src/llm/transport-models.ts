import type { CallContext } from './http-call.js';
import { ModelError, type CompletionRequest, type StructuredOutputMode } from './provider.js';
import type { ChatModelSettings, EmbeddingSettings } from './settings.js';

/*
 * What the transports' models (openai/, anthropic/, gemini/) have in common: a name
 * `<transport>/<model>`, their settings and call context; an embedder's size, learnt from its
 * first answer unless set, and its batches.
 */

/**
 * A conversation for an API whose turns must alternate: `add` appends a part to the last turn
 * when it has the same role (consecutive tool results go in one user turn), else opens a turn.
 */
export function alternatingTurns<R extends string>(): { turns: { role: R; parts: unknown[] }[]; add(role: R, part: unknown): void } {
  const turns: { role: R; parts: unknown[] }[] = [];
  const add = (role: R, part: unknown) => {
    const last = turns[turns.length - 1];
    if (last?.role === role) last.parts.push(part);
    else turns.push({ role, parts: [part] });
  };
  return { turns, add };
}

export abstract class TransportChatModel {
  readonly name: string;
  readonly structuredOutputMode: StructuredOutputMode;

  constructor(
    transport: string,
    protected readonly settings: ChatModelSettings,
    private readonly context: Omit<CallContext, 'module'>,
  ) {
    this.name = `${transport}/${settings.model}`;
    this.structuredOutputMode = settings.structuredOutputMode;
  }

  /** The call context of one request: the module that asks, and the workspace it asks for. */
  protected callContext(request: CompletionRequest): CallContext {
    return { ...this.context, module: request.module, workspaceId: request.workspaceId };
  }
}

export abstract class TransportEmbedder {
  readonly name: string;
  private learnt: number | undefined;

  constructor(
    transport: string,
    protected readonly settings: EmbeddingSettings,
    protected readonly context: CallContext,
    /** Most texts in one request. */
    private readonly batchSize: number,
  ) {
    this.name = `${transport}/${settings.model}`;
    this.learnt = settings.dimensions;
  }

  dimensions(): number | undefined {
    return this.learnt;
  }

  /** Called by `checkDimensions` the first time a size is seen. */
  learn(size: number): void {
    this.learnt = size;
  }

  async embed(texts: string[], signal?: AbortSignal, workspaceId?: string): Promise<number[][]> {
    const vectors: number[][] = [];
    for (let start = 0; start < texts.length; start += this.batchSize) {
      vectors.push(...(await this.embedBatch(texts.slice(start, start + this.batchSize), signal, workspaceId)));
    }
    return vectors;
  }

  /** The vectors of at most `batchSize` texts, in one request (its usage counted for `workspaceId`). */
  protected abstract embedBatch(texts: string[], signal: AbortSignal | undefined, workspaceId: string | undefined): Promise<number[][]>;
}

/** Fixes the size on the first answer; a later answer of another size is an error naming the setting. */
export function checkDimensions(size: number, embedder: { dimensions(): number | undefined; learn(size: number): void; name: string }): void {
  const expected = embedder.dimensions();
  if (expected === undefined) {
    embedder.learn(size);
    return;
  }
  if (size !== expected) {
    throw new ModelError(
      `${embedder.name} returned vectors of ${size} dimensions, expected ${expected} (EMBEDDING_VECTOR_DIMENSIONS or the size of its first answer)`,
      false,
      undefined,
      undefined,
      { reason: 'bad_response' },
    );
  }
}
