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
