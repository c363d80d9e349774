/*
 * Bearer-token authentication and route authorization (contract-v3 §2, v2 algorithm §9.2), in
 * auth/: claims.ts (the token's claims, reading and minting tokens), workspace-rules.ts (v2 and v3
 * route rules, the self-authorizing creates, the scope routes' rules), v1-rules.ts (contract-v1 §4).
 *
 * Only reached when auth is on: with auth off the app treats every request as ADMIN_CLAIMS and
 * never reads the Authorization header (§2.1).
 *
 * Deliberate differences from the reference (for docs/compatibility.md):
 * - Keys minted with an expiry carry a numeric `exp` (seconds since the epoch) and work until they
 *   expire. The reference writes an ISO string `exp`, which its JWT library refuses, so every
 *   expiring key it mints is unusable.
 * - A token whose `exp` is an ISO 8601 string (what the reference mints) is honoured: valid until
 *   that instant, then `Invalid JWT`. A string without an offset is read as UTC. Strings that are
 *   not ISO 8601 date-times (including "" and digit-only strings) stay `Invalid JWT`.
 * - A numeric `exp` in the future is accepted (the reference answers 500).
 * - `exp: null` means no expiry (the reference answers 500).
 * - `w`/`p`/`s` claims that are neither strings nor null make the token `Invalid JWT`; in the
 *   reference such a claim never equals a path ID, so the token is refused by every check that
 *   reads it, only with a different detail.
 * - `nbf` is checked (a non-number or a future value is `Invalid JWT`), as the reference's library
 *   does; other registered claims (`iat`, `aud`, `sub`, `jti`) are not inspected.
 */

export * from './auth/claims.js';
export * from './auth/workspace-rules.js';
export * from './auth/v1-rules.js';
