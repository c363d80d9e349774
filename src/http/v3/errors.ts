import type { DomainError } from '../../domain/errors.js';
import { UNAVAILABLE_HEADERS, type Reply } from '../shared/route.js';

/** Domain failure -> status and body for v3. A new code fails to compile until mapped here. */
export function mapV3Error(error: DomainError): Reply {
  const body = { detail: error.message };
  switch (error.code) {
    case 'not_found':
      return { status: 404, body };
    case 'conflict':
      return { status: 409, body };
    case 'invalid_input':
      return { status: 422, body };
    case 'limit_exceeded':
      return { status: 400, body };
    case 'unauthorized':
      return { status: 401, body };
    case 'disabled':
      return { status: 405, body };
    case 'too_large':
      return { status: 413, body };
    case 'unsupported_type':
      return { status: 415, body };
    case 'not_configured':
      return { status: 400, body };
    case 'unavailable':
      return { status: 503, body, headers: UNAVAILABLE_HEADERS };
    case 'model_failed':
      return { status: 502, body };
    default: {
      const unmapped: never = error.code;
      throw new Error(`unmapped domain error code ${String(unmapped)}`);
    }
  }
}
