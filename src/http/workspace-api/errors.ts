import type { DomainError, DomainErrorCode } from '../../domain/errors.js';
import { UNAVAILABLE_HEADERS, type Reply } from '../shared/route.js';
import type { WorkspaceGeneration } from './generations.js';

/** Status of each domain failure (contract-v3 §1.2). A new code fails to compile until it has one. */
const STATUS: Record<DomainErrorCode, number> = {
  not_found: 404,
  conflict: 409,
  invalid_input: 422,
  limit_exceeded: 400,
  unauthorized: 401,
  disabled: 405,
  too_large: 413,
  unsupported_type: 415,
  not_configured: 400,
  unavailable: 503,
  model_failed: 502,
};

/** Where a generation answers a code otherwise: none yet, v2 and v3 agree on every code. */
const OVERRIDES: Record<WorkspaceGeneration['name'], Partial<Record<DomainErrorCode, number>>> = { v2: {}, v3: {} };

/** Domain failure → status and `{"detail": message}` for one generation (503 asks to retry later). */
export function domainErrorReplies(generation: WorkspaceGeneration): (error: DomainError) => Reply {
  const status: Record<DomainErrorCode, number> = { ...STATUS, ...OVERRIDES[generation.name] };
  return (error) => ({
    status: status[error.code],
    body: { detail: error.message },
    headers: error.code === 'unavailable' ? UNAVAILABLE_HEADERS : undefined,
  });
}
