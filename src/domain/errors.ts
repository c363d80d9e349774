/** The closed list of failure kinds the domain reports; each generation maps them to HTTP. */
export type DomainErrorCode =
  | 'not_found'
  | 'conflict'
  | 'invalid_input'
  | 'limit_exceeded'
  | 'unauthorized'
  | 'disabled'
  /** An upload over its size limit (413). */
  | 'too_large'
  /** An upload of a kind the server cannot read (415). */
  | 'unsupported_type'
  /** A feature that needs something this deployment lacks, e.g. a language model (400). */
  | 'not_configured'
  /** The store cannot serve right now (database down, file unwritable, disk full): try later (503). */
  | 'unavailable'
  /** The language model provider failed or gave an unusable answer (502). */
  | 'model_failed';

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);
export const invalidInput = (message: string) => new DomainError('invalid_input', message);
export const limitExceeded = (message: string) => new DomainError('limit_exceeded', message);
export const tooLarge = (message: string) => new DomainError('too_large', message);
export const unsupportedType = (message: string) => new DomainError('unsupported_type', message);
export const notConfigured = (message: string) => new DomainError('not_configured', message);
export const unavailable = (message: string) => new DomainError('unavailable', message);
