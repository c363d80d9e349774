import { expect } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';

/** The DomainError a domain verb's promise rejects with (the test fails if it resolves or throws anything else). */
export async function domainError(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
}
