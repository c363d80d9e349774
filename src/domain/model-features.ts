import { DomainError, notConfigured } from './errors.js';

/*
 * Answers that need a language model (chat, dreams) until a model provider is configured:
 * a clear refusal instead of a 500.
 */

export function refuseChat(): never {
  throw new DomainError('disabled', 'Chat needs a language model provider, and none is configured on this server');
}

export function refuseDream(): never {
  throw notConfigured('Dreams are not enabled in the system configuration');
}
