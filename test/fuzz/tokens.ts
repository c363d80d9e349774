import { mintToken } from '../../src/http/shared/auth.js';
import type { FuzzOptions } from './fuzz-engine.js';

/** The Authorization headers an auth-on fuzz run mixes: an admin's, another workspace's, and broken ones. */
export function fuzzTokens(secret: string): NonNullable<FuzzOptions['auth']> {
  const bearer = (token: string) => `Bearer ${token}`;
  return {
    admin: bearer(mintToken(secret, { isAdmin: true })),
    foreign: bearer(mintToken(secret, { workspaceId: 'elsewhere' })),
    others: [
      bearer(mintToken(secret, { workspaceId: 'elsewhere', peerId: 'alice' })),
      bearer(mintToken(secret, { workspaceId: 'elsewhere', expiresAt: new Date('2020-01-01T00:00:00Z') })),
      bearer(mintToken(`another-${secret}`, { isAdmin: true })),
      bearer(`${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"ad":true}').toString('base64url')}.`),
      'Bearer not-a-token',
      'Bearer ',
      `Bearer ${'a'.repeat(6_000)}`,
      'Basic YWxpY2U6c2VjcmV0',
    ],
  };
}
