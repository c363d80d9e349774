import { domainLimits, reasoningRuntime, type Database } from '../../app.js';
import type { Config } from '../../config.js';
import { createDomainContext } from '../../domain/context.js';
import { queueReembedding } from '../../domain/reasoning/embeddings.js';
import { buildModels } from '../../llm/models.js';
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
  const reasoning = reasoningRuntime(config, buildModels(config.models));
  if (reasoning?.models.embedder === undefined) {
    lines.push('no embedding model is configured: nothing queued (semantic search falls back to full text)');
    return lines;
  }
  const ctx = createDomainContext(
    database.store,
    domainLimits(config),
    undefined,
    reasoning,
  );
  const queued = await queueReembedding(ctx);
  lines.push(
    `queued the embedding of ${queued.conclusions} conclusions and ${queued.messages} messages with ${reasoning.models.embedder.name}; ` +
      'the workers of `engram serve` or `engram worker` make the vectors',
  );
  return lines;
}
