import type { Database } from '../../runtime/database.js';
import { composeRuntime } from '../../runtime/runtime.js';
import type { Config } from '../../config/config.js';
import { queueReembedding } from '../../domain/search/embeddings.js';
import type { Store } from '../../storage/store.js';

/**
 * `engram reembed`, the storage step: drops every stored vector and the fixed vector size in one
 * transaction, so vectors of the configured size can be stored again. Conclusions and messages
 * themselves are kept. Returns the size the vectors had (undefined: there were none).
 */
export async function clearVectors(store: Store): Promise<number | undefined> {
  return store.transaction(async (tx) => {
    const previous = await tx.vectors.dimensions();
    await tx.vectors.clear();
    return previous;
  });
}

/**
 * `engram reembed`: drops the vectors, then queues jobs that embed every live conclusion and
 * message again with the configured model; the workers of `engram serve` / `engram worker` run
 * them (durable and retried like all embedding work, at the provider's call limit, without this
 * command having to stay up for hours on a large store). Returns the lines to print.
 */
export async function reembed(config: Config, database: Database): Promise<string[]> {
  const previous = await clearVectors(database.store);
  const lines = [previous === undefined ? 'no vectors were stored' : `dropped the stored vectors (${previous} dimensions)`];
  const { ctx } = composeRuntime(config, database);
  const embedder = ctx.reasoning?.models.embedder;
  if (embedder === undefined) {
    lines.push('no embedding model is configured: nothing queued (semantic search falls back to full text)');
    return lines;
  }
  const queued = await queueReembedding(ctx);
  lines.push(
    `queued the embedding of ${queued.conclusions} conclusions and ${queued.messages} messages with ${embedder.name}; ` +
      'the workers of `engram serve` or `engram worker` make the vectors',
  );
  return lines;
}
