import { describe, expect, it } from 'vitest';
import { createDomainContext } from '../../../src/domain/context.js';
import { EMBED_MESSAGES, type EmbedMessagesPayload } from '../../../src/domain/job-kinds.js';
import { embedStoredMessageBatch } from '../../../src/domain/search/embeddings.js';
import { buildModels } from '../../../src/llm/models.js';
import { reasoningRuntime } from '../../../src/runtime/runtime.js';
import type { SqlDriver } from '../../../src/storage/sql/driver.js';
import { SqlStore } from '../../../src/storage/sql/sql-store.js';
import { reasoningSuite } from '../../support/reasoning-harness.js';
import { recordingExecutor, type IssuedStatement } from '../../support/recording-executor.js';

/*
 * What an embedding run writes: its vectors, in one transaction where the put is several
 * statements (SQLite, or more chunks than one PostgreSQL statement takes), and on PostgreSQL in
 * one statement without BEGIN and COMMIT around it when its chunks fit one: each is a round
 * trip, and the soak's runs put about fifteen chunks each.
 */

const { apps } = reasoningSuite();

/** The driver, with every statement and every transaction it is given written down in order. */
function recordingDriver(inner: SqlDriver): { driver: SqlDriver; sent: IssuedStatement[] } {
  const sent: IssuedStatement[] = [];
  const driver = new Proxy(inner, {
    get(target, name) {
      if (name === 'all' || name === 'get' || name === 'run') return recordingExecutor(target, sent).executor[name];
      if (name === 'transaction') {
        return async <T>(fn: (tx: SqlDriver) => Promise<T>) => {
          sent.push({ sql: 'BEGIN', params: [] });
          const result = await target.transaction((tx) => fn({ ...tx, ...recordingExecutor(tx, sent).executor } as SqlDriver));
          sent.push({ sql: 'COMMIT', params: [] });
          return result;
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { driver, sent };
}

describe('an embedding run', () => {
  it('puts the vectors of its messages in one statement on PostgreSQL, in a transaction where the put is several', async () => {
    const s = await apps.start({ DERIVER_FLUSH_ENABLED: 'false' });
    const { api, ws } = s;
    const inner = api.database.driver;
    const { driver, sent } = recordingDriver(inner);
    const ctx = createDomainContext(SqlStore.over(driver), { sessionObservers: 10, webhookEndpoints: 10, jobMaxAttempts: 2 }, undefined, reasoningRuntime(api.config, buildModels(api.config.models)));
    expect((await api.post(`/v3/workspaces/${ws}/sessions`, { id: 's1', peers: { alice: {} } })).status).toBe(201);
    // a write of one message, then two of 60: a job each (the worker is not started, so they wait)
    for (const [from, count] of [[0, 1], [1, 60], [61, 60]]) {
      const messages = Array.from({ length: count }, (_, i) => ({ peer_id: 'alice', content: `turn ${from + i} about the harbour` }));
      expect((await api.post(`/v3/workspaces/${ws}/sessions/s1/messages`, { messages })).status).toBe(201);
    }
    const jobs = await inner.all<{ payload: unknown }>('SELECT payload FROM jobs WHERE workspace_id = ? AND kind = ? ORDER BY pk', [ws, EMBED_MESSAGES]);
    const [first, ...payloads] = jobs.map((job) => (typeof job.payload === 'string' ? JSON.parse(job.payload) : job.payload) as EmbedMessagesPayload);
    expect([first, ...payloads].map((p) => p.messageIds.length)).toEqual([1, 60, 60]);
    // the database is the test's own: every vector in it is of these messages
    const stored = async () => Number((await inner.get<{ n: number | string }>(`SELECT count(*) AS n FROM ${inner.dialect === 'postgres' ? 'message_vectors' : 'message_embeddings'}`))?.n);
    const writes = () => sent.map((statement) => statement.sql.replace(/\s+/g, ' ')).filter((sql) => sql === 'BEGIN' || sql === 'COMMIT' || /^INSERT INTO message_(vectors|embeddings)|^DELETE FROM message_embeddings/.test(sql));
    // the first vectors fix the size (on PostgreSQL the columns typed in a transaction of their own)
    expect(await embedStoredMessageBatch(ctx, [first])).toEqual([{ kind: 'done', chunks: 1 }]);
    expect(await stored()).toBe(1);

    // one job's 60 chunks
    sent.length = 0;
    expect(await embedStoredMessageBatch(ctx, payloads.slice(0, 1))).toEqual([{ kind: 'done', chunks: 60 }]);
    expect(await stored()).toBe(61);
    if (inner.dialect === 'postgres') expect(writes()).toEqual(['INSERT INTO message_vectors (message_pk, chunk, workspace_id, session_id, peer_id, embedding) SELECT m.pk, r.chunk, m.workspace_id, m.session_id, m.peer_id, r.embedding::vector FROM unnest(?::text[], ?::text[], ?::int[], ?::text[]) WITH ORDINALITY AS r(workspace_id, id, chunk, embedding, at) JOIN messages m ON m.workspace_id = r.workspace_id AND m.id = r.id ORDER BY r.at FOR KEY SHARE OF m ON CONFLICT (message_pk, chunk) DO UPDATE SET embedding = excluded.embedding']);
    else expect([writes()[0], writes().at(-1)]).toEqual(['BEGIN', 'COMMIT']);

    // both jobs' 120 chunks, the first 60 again: more than one PostgreSQL statement takes
    sent.length = 0;
    expect(await embedStoredMessageBatch(ctx, payloads)).toEqual([
      { kind: 'done', chunks: 60 },
      { kind: 'done', chunks: 60 },
    ]);
    expect(await stored()).toBe(121);
    const second = writes();
    expect([second[0], second.at(-1)]).toEqual(['BEGIN', 'COMMIT']);
    if (inner.dialect === 'postgres') expect(second.filter((sql) => sql.startsWith('INSERT INTO message_vectors'))).toHaveLength(2);
  });
});
