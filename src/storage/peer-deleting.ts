/**
 * A write named a peer that is being deleted (DELETE /v3/workspaces/{w}/peers/{p}): the peer is
 * gone from reads and may not be created again until its purge has finished. Answered 409.
 */
export class PeerDeletingError extends Error {
  constructor(readonly peerId: string) {
    super(`Peer ${peerId} is being deleted`);
    this.name = 'PeerDeletingError';
  }
}
