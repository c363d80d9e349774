import { expect } from 'vitest';
import { uniqueId, type RequestOptions, type TestApi } from '../../support/test-app.js';

/*
 * Factories for the v1 tests: each call makes fresh, uniquely named records through the v1 API
 * and fails the test at once if the server refuses.
 */

/** `2025-05-01T12:00:00.123000Z` or `2025-05-01T12:00:00Z` (contract-v1 §0.2). */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$/;
/** v1 ids: 21 characters of the nanoid alphabet (contract-v1 §0.1). */
export const V1_ID = /^[A-Za-z0-9_-]{21}$/;

export interface V1App {
  id: string;
  name: string;
  metadata: Record<string, unknown>;
  created_at: string;
}
export interface V1User {
  id: string;
  name: string;
  app_id: string;
  metadata: Record<string, unknown>;
  created_at: string;
}
export interface V1Scope {
  app: V1App;
  user: V1User;
  /** `/v1/apps/{app}/users/{user}` */
  base: string;
}

async function ok(response: Promise<{ status: number; body: any; text: string }>) {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

export function makeApp(api: TestApi, metadata: Record<string, unknown> = {}, options?: RequestOptions): Promise<V1App> {
  return ok(api.post('/v1/apps', { name: uniqueId('app'), metadata }, options));
}

export function makeUser(api: TestApi, appId: string, name = uniqueId('user'), options?: RequestOptions): Promise<V1User> {
  return ok(api.post(`/v1/apps/${appId}/users`, { name }, options));
}

export async function makeScope(api: TestApi, options?: RequestOptions): Promise<V1Scope> {
  const app = await makeApp(api, {}, options);
  const user = await makeUser(api, app.id, uniqueId('user'), options);
  return { app, user, base: `/v1/apps/${app.id}/users/${user.id}` };
}

/** Another user of the same app. */
export async function makeOtherUser(api: TestApi, scope: V1Scope, options?: RequestOptions): Promise<V1Scope> {
  const user = await makeUser(api, scope.app.id, uniqueId('other'), options);
  return { app: scope.app, user, base: `/v1/apps/${scope.app.id}/users/${user.id}` };
}

export async function makeSession(
  api: TestApi,
  scope: V1Scope,
  metadata: Record<string, unknown> = {},
  options?: RequestOptions,
): Promise<{ id: string; is_active: boolean; metadata: Record<string, unknown> }> {
  return ok(api.post(`${scope.base}/sessions`, { metadata }, options));
}

export async function makeMessages(
  api: TestApi,
  scope: V1Scope,
  sessionId: string,
  messages: { content: string; is_user: boolean; metadata?: Record<string, unknown> }[],
  options?: RequestOptions,
): Promise<{ id: string; content: string; is_user: boolean }[]> {
  return ok(api.post(`${scope.base}/sessions/${sessionId}/messages/batch`, { messages }, options));
}

export async function makeMetamessage(
  api: TestApi,
  scope: V1Scope,
  body: Record<string, unknown> = {},
  options?: RequestOptions,
): Promise<Record<string, any>> {
  return ok(api.post(`${scope.base}/metamessages`, { metamessage_type: 'note', content: 'c', ...body }, options));
}
