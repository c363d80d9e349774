import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { parseFilter, WILDCARD_FILTER_RULES, CURRENT_FILTER_RULES, type ColumnKind, type FilterSchema } from '../../src/domain/filters/parse-filter.js';
import { compileFilter as compileSql } from '../../src/storage/sql/compile-filter.js';
import { addCaseFolding } from '../../src/storage/sqlite/sqlite-driver.js';
import type { DialectName } from '../../src/storage/sql/dialect.js';
import { DIALECTS } from '../../src/storage/sql/dialects.js';

/*
 * Filters parsed (domain/filters/parse-filter.ts) and compiled (storage/sql/compile-filter.ts).
 * Every case runs on a real SQLite database (in memory) and, when DATABASE_URL points to
 * PostgreSQL, on PostgreSQL too; the SQL generated for PostgreSQL is checked without a server
 * on every run. Expected ids are worked out from the rows below by hand.
 */

/** A model as the tests name it: columns with their SQL and kind, the metadata column, known keys. */
interface FilterModel {
  name: string;
  columns: Record<string, { sql: string; kind: ColumnKind }>;
  metadataSql: string;
  knownKeys: ReadonlySet<string> | 'all';
  /** The schema's names for the newer rules' messages (FilterSchema). */
  names?: Pick<FilterSchema, 'internal' | 'metadataName' | 'closedSets'>;
}

class FilterError extends Error {}

/** Parses by the generation's rules and compiles for the dialect; an invalid filter throws FilterError with the 422 detail. */
function compileFilter(filter: unknown, model: FilterModel, dialect: DialectName, params: unknown[], gen: 'v2' | 'v3' = 'v3'): string | null {
  const schema: FilterSchema = {
    name: model.name,
    columns: Object.fromEntries(Object.entries(model.columns).map(([key, c]) => [key, c.kind])),
    knownKeys: model.knownKeys,
    ...model.names,
  };
  const sqlDialect = DIALECTS[dialect];
  let parsed;
  try {
    parsed = parseFilter(filter, schema, gen === 'v2' ? WILDCARD_FILTER_RULES : CURRENT_FILTER_RULES, { likePatternBytes: sqlDialect.likePatternBytes });
  } catch (error) {
    if (error instanceof DomainError && error.code === 'invalid_input') throw new FilterError(error.message);
    throw error;
  }
  // the condition alone: the time limit's guard (filterCondition) is tested with the drivers
  const columns = { columns: Object.fromEntries(Object.entries(model.columns).map(([key, c]) => [key, c.sql])), metadata: model.metadataSql, key: 'pk' };
  const compiled = compileSql(parsed, columns, sqlDialect);
  if (compiled === null) return null;
  params.push(...compiled.values);
  return compiled.text;
}

const WPS_KEYS = new Set(['id', 'created_at', 'is_active', 'workspace_id', 'session_id', 'peer_id', 'metadata']);
const INTERNAL = { internal: { id: 'name', workspace_id: 'workspace_name', session_id: 'session_name', peer_id: 'peer_name' } };

const PEER: FilterModel = {
  name: 'Peer',
  columns: {
    id: { sql: 'p.id', kind: 'text' },
    created_at: { sql: 'p.created_at', kind: 'timestamp' },
    workspace_id: { sql: 'p.workspace_id', kind: 'text' },
  },
  metadataSql: 'p.metadata',
  knownKeys: WPS_KEYS,
  names: INTERNAL,
};

const SESSION: FilterModel = {
  name: 'Session',
  columns: {
    id: { sql: 's.id', kind: 'text' },
    created_at: { sql: 's.created_at', kind: 'timestamp' },
    is_active: { sql: 's.is_active', kind: 'bool' },
    workspace_id: { sql: 's.workspace_id', kind: 'text' },
  },
  metadataSql: 's.metadata',
  knownKeys: WPS_KEYS,
  names: INTERNAL,
};

const MESSAGE: FilterModel = {
  name: 'Message',
  columns: {
    workspace_id: { sql: 'm.workspace_id', kind: 'text' },
    session_id: { sql: 'm.session_id', kind: 'text' },
    peer_id: { sql: 'm.peer_id', kind: 'text' },
    token_count: { sql: 'm.token_count', kind: 'int' },
    created_at: { sql: 'm.created_at', kind: 'timestamp' },
  },
  metadataSql: 'm.metadata',
  knownKeys: new Set(),
  names: INTERNAL,
};

/** Conclusions as the reference's Document: `session_id`, `deleted_at` and `source_ids` may be unset. */
const DOCUMENT: FilterModel = {
  name: 'Document',
  columns: {
    id: { sql: 'd.id', kind: 'text' },
    session_id: { sql: 'd.session_id', kind: 'text' },
    level: { sql: 'd.level', kind: 'text' },
    times_derived: { sql: 'd.times_derived', kind: 'int' },
    created_at: { sql: 'd.created_at', kind: 'timestamp' },
    deleted_at: { sql: 'd.deleted_at', kind: 'timestamp' },
    source_ids: { sql: 'd.source_ids', kind: 'id_list' },
    embedding: { sql: 'd.no_such_column', kind: 'unfilterable' },
  },
  metadataSql: 'd.metadata',
  knownKeys: 'all',
  names: {
    internal: { session_id: 'session_name' },
    metadataName: 'internal_metadata',
    closedSets: { level: ['explicit', 'deductive', 'inductive', 'contradiction'] },
  },
};

type Table = 'peers' | 'sessions' | 'messages' | 'texts' | 'docs';
const MODELS: Record<Table, FilterModel> = { peers: PEER, sessions: SESSION, messages: MESSAGE, texts: PEER, docs: DOCUMENT };
const ALIAS: Record<Table, string> = { peers: 'p', sessions: 's', messages: 'm', texts: 'p', docs: 'd' };

const WEIRD = `weird key.with "quotes" and 'apostrophes'`;

interface PeerRow {
  id: string;
  workspace_id: string;
  created_at: string;
  metadata: Record<string, unknown>;
}

const PEERS: PeerRow[] = [
  {
    id: 'alice',
    workspace_id: 'w1',
    created_at: '2024-01-01T00:00:00Z',
    metadata: {
      tier: 'pro',
      score: 9,
      tags: ['a', 'b'],
      profile: { city: 'Paris', langs: ['fr', 'en'] },
      active: true,
      name: 'Hello Wörld',
    },
  },
  {
    id: 'bob',
    workspace_id: 'w1',
    created_at: '2024-02-01T12:00:00Z',
    metadata: { tier: 'free', score: '7.5', tags: ['b'], profile: { city: 'Berlin' }, active: false, name: 'bob_smith' },
  },
  {
    id: 'carol',
    workspace_id: 'w1',
    created_at: '2024-03-15T08:30:00.5Z',
    metadata: { tier: 'Pro', score: 'high', tags: [], active: 'yes', name: '100% legit' },
  },
  {
    id: 'dave',
    workspace_id: 'w1',
    created_at: '2023-12-31T23:59:59.999999Z',
    metadata: {
      score: 10.5,
      nested: { a: { b: { c: 1 } } },
      [WEIRD]: 'x',
      ünï: 'ç',
      empty: '',
      date: '2024-05-01',
    },
  },
  { id: 'erin', workspace_id: 'w1', created_at: '2024-06-01T00:00:00Z', metadata: {} },
  {
    id: 'frank',
    workspace_id: 'w2',
    created_at: '2025-01-01T00:00:00Z',
    metadata: {
      tier: null,
      score: '',
      in: 'op-named key',
      contains: 1,
      flag: true,
      'path\\back': 1,
      'a.b': 2,
      name: 'FRANK',
    },
  },
  {
    id: 'gina',
    workspace_id: 'w2',
    created_at: '2024-01-15T10:00:00Z',
    metadata: {
      score: -3,
      matrix: [
        [1, 2],
        [3],
      ],
      list: [{ k: 1, v: 2 }, { k: 2 }],
      name: 'a\\b_c',
      n: 1.5,
      big: 1e29,
    },
  },
  {
    id: 'h%_x',
    workspace_id: 'w2',
    created_at: '2024-01-01T00:00:00.000001Z',
    metadata: { score: '1e3', name: 'under_score', ws: ' 12 ' },
  },
];

const SESSIONS = [
  { id: 's1', workspace_id: 'w1', is_active: true, created_at: '2024-01-01T00:00:00Z', metadata: { topic: 'x' } },
  { id: 's2', workspace_id: 'w1', is_active: false, created_at: '2024-01-02T00:00:00Z', metadata: {} },
  { id: 's3', workspace_id: 'w2', is_active: true, created_at: '2024-01-03T00:00:00Z', metadata: { topic: 'y' } },
];

/** scopes.md S8's worked example: A in s1, B in s2, C in no session. */
const DOCS = [
  { id: 'A', session_id: 's1', level: 'explicit', times_derived: 1, created_at: '2024-01-01T00:00:00Z', deleted_at: null, source_ids: ['m1', 'm2'], metadata: {} },
  { id: 'B', session_id: 's2', level: 'deductive', times_derived: 3, created_at: '2024-01-02T00:00:00Z', deleted_at: '2024-02-01T00:00:00Z', source_ids: ['m2'], metadata: { kind: 'note' } },
  { id: 'C', session_id: null, level: 'inductive', times_derived: 2, created_at: '2024-01-03T00:00:00Z', deleted_at: null, source_ids: null, metadata: {} },
];

const MESSAGES = [
  { id: 'm1', workspace_id: 'w1', session_id: 's1', peer_id: 'alice', token_count: 10, created_at: '2024-01-01T00:00:00Z' },
  { id: 'm2', workspace_id: 'w1', session_id: 's1', peer_id: 'bob', token_count: 25, created_at: '2024-01-02T00:00:00Z' },
  { id: 'm3', workspace_id: 'w1', session_id: 's2', peer_id: 'alice', token_count: 0, created_at: '2024-01-03T00:00:00Z' },
];

/** Values of metadata `v` for the numeric-text recognition test (table `texts`, Peer columns). */
const TEXTS: [string, unknown, boolean][] = [
  ['n01', '12', true],
  ['n02', ' 12 ', true],
  ['n03', '+5', true],
  ['n04', '.5', true],
  ['n05', '5.', true],
  ['n06', '-5.5e-3', true],
  ['n07', '1e9999', true],
  ['n08', '1e10000', false],
  ['n09', '12abc', false],
  ['n10', '', false],
  ['n11', 'NaN', false],
  ['n12', 'Infinity', false],
  ['n13', '0x10', false],
  ['n14', '١٢', false],
  ['n15', '\t12', false],
  ['n16', '1 2', false],
  ['n17', 'e5', false],
  ['n18', '1.e5', true],
  ['n19', '-', false],
  ['n20', '9'.repeat(1001), false],
  ['n21', '9'.repeat(1000), true],
  ['n22', '1e-9999', true],
  ['n23', true, false],
  ['n24', { a: 1 }, false],
  ['n25', 7, true],
  ['n26', '1_000', false],
  ['n27', null, false],
];

const ALL_PEERS = PEERS.map((p) => p.id).sort();
const except = (...ids: string[]) => ALL_PEERS.filter((id) => !ids.includes(id));

/** ISO instant (always `Z`) to microseconds since the epoch. */
function micros(iso: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(iso);
  if (!m) throw new Error(`bad test date ${iso}`);
  return Date.parse(`${m[1]}Z`) * 1000 + Number((m[2] ?? '').padEnd(6, '0'));
}

/* ------------------------------------------------------------------------------------------
 * Backends
 * ---------------------------------------------------------------------------------------- */

interface Backend {
  dialect: DialectName;
  ids(table: Table, where: string | null, params: unknown[]): Promise<string[]>;
  close(): Promise<void>;
}

function selectSql(table: Table, where: string | null): string {
  const a = ALIAS[table];
  return `SELECT ${a}.id AS id FROM ${table} AS ${a}${where === null ? '' : ` WHERE ${where}`}`;
}

function sqliteBackend(): Backend {
  const db = new Database(':memory:');
  addCaseFolding(db);
  db.exec(`
    CREATE TABLE peers (pk INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, id TEXT NOT NULL,
      metadata TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL);
    CREATE TABLE sessions (pk INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, id TEXT NOT NULL,
      is_active INTEGER NOT NULL, metadata TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL);
    CREATE TABLE messages (pk INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, session_id TEXT NOT NULL,
      peer_id TEXT NOT NULL, id TEXT NOT NULL, token_count INTEGER NOT NULL,
      metadata TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL);
  `);
  const peer = db.prepare('INSERT INTO peers (workspace_id, id, metadata, created_at) VALUES (?, ?, ?, ?)');
  for (const p of PEERS) peer.run(p.workspace_id, p.id, JSON.stringify(p.metadata), micros(p.created_at));
  const session = db.prepare('INSERT INTO sessions (workspace_id, id, is_active, metadata, created_at) VALUES (?, ?, ?, ?, ?)');
  for (const s of SESSIONS) session.run(s.workspace_id, s.id, s.is_active ? 1 : 0, JSON.stringify(s.metadata), micros(s.created_at));
  const message = db.prepare(
    'INSERT INTO messages (workspace_id, session_id, peer_id, id, token_count, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  for (const m of MESSAGES) message.run(m.workspace_id, m.session_id, m.peer_id, m.id, m.token_count, micros(m.created_at));
  db.exec(`CREATE TABLE docs (pk INTEGER PRIMARY KEY, id TEXT NOT NULL, session_id TEXT, level TEXT NOT NULL, times_derived INTEGER NOT NULL,
    created_at INTEGER NOT NULL, deleted_at INTEGER, source_ids TEXT, metadata TEXT NOT NULL DEFAULT '{}')`);
  const doc = db.prepare('INSERT INTO docs (id, session_id, level, times_derived, created_at, deleted_at, source_ids, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  for (const d of DOCS) {
    doc.run(d.id, d.session_id, d.level, d.times_derived, micros(d.created_at), d.deleted_at === null ? null : micros(d.deleted_at), d.source_ids === null ? null : JSON.stringify(d.source_ids), JSON.stringify(d.metadata));
  }
  db.exec('CREATE TABLE texts (id TEXT NOT NULL, metadata TEXT NOT NULL)');
  const text = db.prepare('INSERT INTO texts (id, metadata) VALUES (?, ?)');
  for (const [id, v] of TEXTS) text.run(id, JSON.stringify({ v }));
  return {
    dialect: 'sqlite',
    async ids(table, where, params) {
      const rows = db.prepare(selectSql(table, where)).all(...params) as { id: string }[];
      return rows.map((r) => r.id).sort();
    },
    async close() {
      db.close();
    },
  };
}

/** `?` -> `$1..$n` (the compiler never emits `?` inside literals). */
function numbered(sqlText: string): string {
  let n = 0;
  return sqlText.replace(/\?/g, () => `$${++n}`);
}

async function postgresBackend(url: string): Promise<Backend> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const schema = `compile_filter_test_${process.pid}_${Date.now()}`;
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path TO ${schema}`);
  await client.query(`
    CREATE TABLE peers (pk serial PRIMARY KEY, workspace_id text NOT NULL, id text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL);
    CREATE TABLE sessions (pk serial PRIMARY KEY, workspace_id text NOT NULL, id text NOT NULL,
      is_active boolean NOT NULL, metadata jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL);
    CREATE TABLE messages (pk serial PRIMARY KEY, workspace_id text NOT NULL, session_id text NOT NULL,
      peer_id text NOT NULL, id text NOT NULL, token_count integer NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL);
  `);
  for (const p of PEERS) {
    await client.query('INSERT INTO peers (workspace_id, id, metadata, created_at) VALUES ($1, $2, $3::jsonb, $4)', [
      p.workspace_id,
      p.id,
      JSON.stringify(p.metadata),
      p.created_at,
    ]);
  }
  for (const s of SESSIONS) {
    await client.query(
      'INSERT INTO sessions (workspace_id, id, is_active, metadata, created_at) VALUES ($1, $2, $3, $4::jsonb, $5)',
      [s.workspace_id, s.id, s.is_active, JSON.stringify(s.metadata), s.created_at],
    );
  }
  for (const m of MESSAGES) {
    await client.query(
      'INSERT INTO messages (workspace_id, session_id, peer_id, id, token_count, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [m.workspace_id, m.session_id, m.peer_id, m.id, m.token_count, m.created_at],
    );
  }
  await client.query(`CREATE TABLE docs (pk serial PRIMARY KEY, id text NOT NULL, session_id text, level text NOT NULL, times_derived integer NOT NULL,
    created_at timestamptz NOT NULL, deleted_at timestamptz, source_ids jsonb, metadata jsonb NOT NULL DEFAULT '{}')`);
  for (const d of DOCS) {
    await client.query(
      'INSERT INTO docs (id, session_id, level, times_derived, created_at, deleted_at, source_ids, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)',
      [d.id, d.session_id, d.level, d.times_derived, d.created_at, d.deleted_at, d.source_ids === null ? null : JSON.stringify(d.source_ids), JSON.stringify(d.metadata)],
    );
  }
  await client.query('CREATE TABLE texts (id text NOT NULL, metadata jsonb NOT NULL)');
  for (const [id, v] of TEXTS) {
    await client.query('INSERT INTO texts (id, metadata) VALUES ($1, $2::jsonb)', [id, JSON.stringify({ v })]);
  }
  return {
    dialect: 'postgres',
    async ids(table, where, params) {
      const result = await client.query<{ id: string }>(numbered(selectSql(table, where)), params);
      return result.rows.map((r) => r.id).sort();
    },
    async close() {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

/* ------------------------------------------------------------------------------------------
 * Cases
 * ---------------------------------------------------------------------------------------- */

interface Case {
  filter: unknown;
  table?: Table;
  gen?: 'v2' | 'v3';
  /** expected ids, or a dialect-specific pair */
  ids?: string[] | { sqlite: string[]; postgres: string[] };
  error?: string;
}

const nest = (levels: number, leaf: unknown, op = 'AND'): unknown =>
  levels === 0 ? leaf : { [op]: [nest(levels - 1, leaf, op)] };
const deepList = (levels: number): unknown => (levels === 0 ? 1 : [deepList(levels - 1)]);

const STRUCTURE: Case[] = [
  { filter: null, ids: ALL_PEERS },
  { filter: {}, ids: ALL_PEERS },
  { filter: { AND: [] }, ids: ALL_PEERS },
  { filter: { OR: [] }, ids: ALL_PEERS },
  { filter: { NOT: [] }, ids: ALL_PEERS },
  { filter: { AND: [{}], OR: [{}], NOT: [{}] }, ids: ALL_PEERS },
  { filter: { id: 'alice' }, ids: ['alice'] },
  { filter: { id: 'Alice' }, ids: [] },
  { filter: { id: '*' }, ids: ALL_PEERS },
  { filter: { workspace_id: 'w2' }, ids: ['frank', 'gina', 'h%_x'] },
  { filter: { OR: [{ id: 'alice' }, { workspace_id: 'w2' }] }, ids: ['alice', 'frank', 'gina', 'h%_x'] },
  { filter: { NOT: [{ workspace_id: 'w1' }] }, ids: ['frank', 'gina', 'h%_x'] },
  { filter: { NOT: [{ id: 'alice' }, { id: 'bob' }] }, ids: except('alice', 'bob') },
  {
    filter: {
      AND: [{ workspace_id: 'w1' }, { OR: [{ id: 'alice' }, { NOT: [{ id: { in: ['alice', 'bob', 'carol'] } }] }] }],
    },
    ids: ['alice', 'dave', 'erin'],
  },
  // A wildcard member of OR imposes nothing and is dropped, leaving only the other member.
  { filter: { OR: [{ id: '*' }, { id: 'alice' }] }, ids: ['alice'] },
  { filter: { workspace_id: 'w1', OR: [{ id: 'bob' }, { id: 'frank' }] }, ids: ['bob'] },
  // contract §5.5 example
  {
    filter: {
      AND: [{ created_at: { gte: '2024-01-01' } }, { OR: [{ metadata: { tier: 'pro' } }, { metadata: { score: { gt: 8.5 } } }] }],
    },
    ids: ['alice', 'h%_x'],
  },
  // depth: five nested logical levels are fine, six are not (v3); v2 has no such limit
  { filter: nest(5, { id: 'alice' }), ids: ['alice'] },
  { filter: nest(6, { id: 'alice' }), error: 'Filter nesting exceeds maximum depth of 5' },
  { filter: nest(6, { id: 'alice' }, 'NOT'), error: 'Filter nesting exceeds maximum depth of 5' },
  { filter: nest(5, { AND: [] }), ids: ALL_PEERS },
  { filter: nest(6, { id: 'alice' }), gen: 'v2', ids: ['alice'] },
  { filter: nest(64, { id: 'alice' }, 'OR'), gen: 'v2', ids: ['alice'] },
  { filter: nest(65, { id: 'alice' }), gen: 'v2', error: 'Filter nesting exceeds maximum depth of 64' },
  { filter: nest(63, { NOT: [{ metadata: { list: [deepList(14)] } }] }, 'NOT'), gen: 'v2', ids: [] },
];

const COLUMNS: Case[] = [
  { filter: { id: ['alice', 'bob'] }, ids: ['alice', 'bob'] },
  { filter: { id: ['alice', 'bob'] }, gen: 'v2', ids: [] },
  { filter: { id: ['alice', '*'] }, ids: ALL_PEERS },
  { filter: { id: ['alice', '*'] }, gen: 'v2', ids: [] },
  { filter: { id: { in: ['alice', 'zed'] } }, ids: ['alice'] },
  { filter: { id: { in: [] } }, ids: [] },
  { filter: { id: { in: ['*'] } }, ids: ALL_PEERS },
  { filter: { id: { in: ['alice', 5, true, { a: 1 }] } }, gen: 'v2', ids: ['alice'] },
  { filter: { id: { in: ['alice', null] } }, gen: 'v2', ids: ['alice'] },
  // `IN (..., NULL)` is NULL for other rows, so NOT excludes them too (SQL semantics)
  { filter: { NOT: [{ id: { in: ['alice', null] } }] }, gen: 'v2', ids: [] },
  { filter: { id: { in: Array.from({ length: 20000 }, (_, i) => `x${i}`).concat('bob') } }, ids: ['bob'] },
  { filter: { id: { contains: 'AR' } }, ids: ['carol'] },
  { filter: { id: { icontains: 'AR' } }, ids: ['carol'] },
  { filter: { id: { contains: 'ar', icontains: 'ol' } }, ids: ['carol'] },
  { filter: { id: { contains: '*', icontains: 'ol' } }, ids: ['carol'] },
  { filter: { workspace_id: { icontains: 'W2' } }, ids: ['frank', 'gina', 'h%_x'] },
  // v3: % _ \ are literal; v2: they are LIKE wildcards / escape
  { filter: { id: { contains: '%' } }, ids: ['h%_x'] },
  { filter: { id: { contains: '%' } }, gen: 'v2', ids: ALL_PEERS },
  { filter: { id: { contains: '_' } }, ids: ['h%_x'] },
  { filter: { id: { icontains: '_' } }, gen: 'v2', ids: ALL_PEERS },
  { filter: { id: { contains: 'a_i' } }, ids: [] },
  { filter: { id: { contains: 'a_i' } }, gen: 'v2', ids: ['alice'] },
  { filter: { id: { contains: 'h\\%' } }, ids: [] },
  { filter: { id: { contains: 'h\\%' } }, gen: 'v2', ids: ['h%_x'] },
  { filter: { id: { contains: 5 } }, ids: [] },
  // type-mismatched equality matches nothing
  { filter: { id: 5 }, gen: 'v2', ids: [] },
  { filter: { id: true }, gen: 'v2', ids: [] },
  { filter: { id: null }, ids: [] },
  { filter: { NOT: [{ id: 5 }] }, gen: 'v2', ids: ALL_PEERS },
  // created_at
  { filter: { created_at: { gte: '2024-01-01' } }, ids: except('dave') },
  { filter: { created_at: { lt: '2024-01-01T00:00:00Z' } }, ids: ['dave'] },
  { filter: { created_at: { gt: '2024-01-01T00:00:00' } }, ids: ['bob', 'carol', 'erin', 'frank', 'gina', 'h%_x'] },
  { filter: { created_at: { lte: '2024-01-01T01:00:00+01:00' } }, ids: ['alice', 'dave'] },
  { filter: { created_at: { lte: '2024-01-01T01:00:00+0100' } }, ids: ['alice', 'dave'] },
  { filter: { created_at: { lte: '2023-12-31T18:59:59.999999-05:00' } }, ids: ['dave'] },
  { filter: { created_at: { gte: '2024-03-15 08:30:00.5', lt: '2024-06-01' } }, ids: ['carol'] },
  { filter: { created_at: { gt: '2024-01-01T00:00:00,000001Z' } }, ids: ['bob', 'carol', 'erin', 'frank', 'gina'] },
  { filter: { created_at: { gte: '  2025-01-01T00:00Z ' } }, ids: ['frank'] },
  { filter: { created_at: '2024-01-01T00:00:00Z' }, ids: ['alice'] },
  { filter: { created_at: '2023-12-31T23:59:59.999999Z' }, ids: ['dave'] },
  { filter: { created_at: 20240101 }, gen: 'v2', ids: [] },
  { filter: { created_at: { ne: '2024-01-01' } }, ids: except('alice') },
  { filter: { created_at: { in: ['2024-01-01', '2025-01-01T00:00:00Z'] } }, ids: ['alice', 'frank'] },
  { filter: { created_at: ['2024-01-01', '2025-01-01T00:00:00Z'] }, ids: ['alice', 'frank'] },
  { filter: { created_at: { in: ['2024-01-01', 5, '*'] } }, ids: ALL_PEERS },
  { filter: { created_at: { in: [] } }, ids: [] },
  // instants outside years 1..9999 once converted to UTC
  { filter: { created_at: { gt: '0001-01-01T00:30:00+01:00' } }, ids: ALL_PEERS },
  { filter: { created_at: { lt: '9999-12-31T23:00:00-05:00' } }, ids: ALL_PEERS },
  { filter: { created_at: { gt: '2024-02-29T23:59:59.999999-23:59' } }, ids: ['carol', 'erin', 'frank'] },
];

const METADATA: Case[] = [
  // containment
  { filter: { metadata: { tier: 'pro' } }, ids: ['alice'] },
  { filter: { metadata: { tier: null } }, ids: ['frank'] },
  { filter: { metadata: { tags: ['b'] } }, ids: ['alice', 'bob'] },
  { filter: { metadata: { tags: ['a', 'b'] } }, ids: ['alice'] },
  { filter: { metadata: { tags: ['b', 'a', 'b'] } }, ids: ['alice'] },
  { filter: { metadata: { tags: [] } }, ids: ['alice', 'bob', 'carol'] },
  { filter: { metadata: { tags: 'b' } }, ids: [] },
  { filter: { metadata: { tags: ['b', 'c'] } }, ids: [] },
  { filter: { metadata: { profile: { city: 'Paris' } } }, ids: ['alice'] },
  { filter: { metadata: { profile: {} } }, ids: ['alice', 'bob'] },
  { filter: { metadata: { profile: { langs: ['en'] } } }, ids: ['alice'] },
  { filter: { metadata: { profile: { city: 'paris' } } }, ids: [] },
  { filter: { metadata: { nested: { a: { b: { c: 1 } } } } }, ids: ['dave'] },
  { filter: { metadata: { nested: { a: { b: { c: '1' } } } } }, ids: [] },
  // only the first level knows operators: deeper levels are literal containment
  { filter: { metadata: { nested: { a: { b: { gt: 0 } } } } }, ids: [] },
  { filter: { metadata: { matrix: [[3]] } }, ids: ['gina'] },
  { filter: { metadata: { matrix: [[2], [3]] } }, ids: ['gina'] },
  { filter: { metadata: { matrix: [[1, 3]] } }, ids: [] },
  { filter: { metadata: { matrix: [1] } }, ids: [] },
  { filter: { metadata: { list: [{ k: 2 }] } }, ids: ['gina'] },
  { filter: { metadata: { list: [{ k: 1, v: 2 }, { k: 2 }] } }, ids: ['gina'] },
  { filter: { metadata: { list: [{ k: 2, v: 2 }] } }, ids: [] },
  { filter: { metadata: { list: [{}] } }, ids: ['gina'] },
  { filter: { metadata: { profile: [] } }, ids: [] },
  { filter: { metadata: { tags: {} } }, ids: [] },
  { filter: { metadata: { tier: { contains: 'R' } } }, ids: ['alice', 'bob', 'carol'] },
  { filter: { metadata: { active: true } }, ids: ['alice'] },
  { filter: { metadata: { active: false } }, ids: ['bob'] },
  { filter: { metadata: { active: 'yes' } }, ids: ['carol'] },
  { filter: { metadata: { score: 9 } }, ids: ['alice'] },
  { filter: { metadata: { score: 9.0 } }, ids: ['alice'] },
  { filter: { metadata: { score: '7.5' } }, ids: ['bob'] },
  { filter: { metadata: { score: 7.5 } }, ids: [] },
  { filter: { metadata: { big: 1e29 } }, ids: ['gina'] },
  { filter: { metadata: { [WEIRD]: 'x' } }, ids: ['dave'] },
  { filter: { metadata: { ünï: 'ç' } }, ids: ['dave'] },
  { filter: { metadata: { 'path\\back': 1 } }, ids: ['frank'] },
  { filter: { metadata: { 'a.b': 2 } }, ids: ['frank'] },
  { filter: { metadata: { a: { b: 2 } } }, ids: [] },
  { filter: { metadata: { tier: 'pro', score: 9 } }, ids: ['alice'] },
  { filter: { metadata: { tier: 'pro', score: 10 } }, ids: [] },
  { filter: { metadata: { tier: '*' } }, ids: ALL_PEERS },
  { filter: { metadata: '*' }, ids: ALL_PEERS },
  { filter: { metadata: {} }, ids: ALL_PEERS },
  { filter: { metadata: { missing: '*', tier: 'free' } }, ids: ['bob'] },
  // a non-object value is containment of the whole (object) metadata: never matches
  { filter: { metadata: 'pro' }, gen: 'v2', ids: [] },
  { filter: { metadata: ['a'] }, ids: [] },
  { filter: { metadata: null }, ids: [] },
  { filter: { metadata: 5 }, gen: 'v2', ids: [] },
  { filter: { metadata: ['a'] }, gen: 'v2', ids: [] },
  // explicit containment operator on the whole column
  { filter: { metadata: { contains: { tier: 'pro', tags: ['a'] } } }, ids: ['alice'] },
  { filter: { metadata: { contains: { contains: 1 } } }, ids: ['frank'] },
  { filter: { metadata: { contains: 1 } }, gen: 'v2', ids: [] },
  { filter: { metadata: { contains: '*' } }, ids: ALL_PEERS },
  { filter: { metadata: { in: ['*'] } }, ids: ALL_PEERS },
  { filter: { NOT: [{ metadata: { active: true } }] }, ids: except('alice') },
  // containment is never NULL, so NOT keeps the rows that lack the key
  { filter: { NOT: [{ metadata: { score: 9 } }] }, ids: except('alice') },
  { filter: { NOT: [{ metadata: { n: 1.5 } }] }, ids: except('gina') },
  { filter: { NOT: [{ metadata: { tier: null } }] }, ids: except('frank') },
  { filter: { NOT: [{ metadata: { tags: ['a'] } }] }, ids: except('alice') },
  { filter: { NOT: [{ metadata: { profile: { city: 'Paris' } } }] }, ids: except('alice') },
  { filter: { NOT: [{ metadata: { list: [{ k: 2 }] } }] }, ids: except('gina') },
  { filter: { NOT: [{ metadata: { contains: { tier: 'pro' } } }] }, ids: except('alice') },
  { filter: { NOT: [{ metadata: { tier: 'pro' } }, { metadata: { tier: 'free' } }] }, ids: except('alice', 'bob') },
  { filter: { metadata: { name: '\ud800' } }, ids: [] },
  { filter: { metadata: { k: deepList(15) } }, ids: [] },
  { filter: { metadata: { tags: Array.from({ length: 3000 }, () => 'b') } }, ids: ['alice', 'bob'] },
  // numeric comparisons on the text form
  { filter: { metadata: { score: { gt: 8 } } }, ids: ['alice', 'dave', 'h%_x'] },
  { filter: { metadata: { score: { gte: 7.5, lt: 10 } } }, ids: ['alice', 'bob'] },
  { filter: { metadata: { score: { lt: '0' } } }, ids: ['gina'] },
  { filter: { metadata: { score: { lt: ' -2.5e0 ' } } }, ids: ['gina'] },
  { filter: { metadata: { score: { ne: 9 } } }, ids: ['bob', 'dave', 'gina', 'h%_x'] },
  { filter: { metadata: { score: { gt: 'inf' } } }, ids: [] },
  { filter: { metadata: { score: { lt: 'nan' } } }, ids: ['alice', 'bob', 'dave', 'gina', 'h%_x'] },
  // rows whose value is missing or not numeric fall out, also under NOT
  { filter: { NOT: [{ metadata: { score: { gt: 8 } } }] }, gen: 'v2', ids: ['bob', 'gina'] },
  { filter: { metadata: { active: { gt: 0 } } }, ids: [] },
  { filter: { metadata: { profile: { gt: 0 } } }, ids: [] },
  { filter: { metadata: { tags: { gte: 0 } } }, ids: [] },
  { filter: { metadata: { empty: { gte: 0 } } }, ids: [] },
  { filter: { metadata: { ws: { gt: 11 } } }, ids: ['h%_x'] },
  { filter: { metadata: { big: { gt: 9.9e28 } } }, ids: ['gina'] },
  { filter: { metadata: { n: { lte: 1.5, gte: '1.5' } } }, ids: ['gina'] },
  { filter: { metadata: { score: { gt: '*' } } }, ids: ALL_PEERS },
  // string (byte-order) comparisons when the operand is a non-numeric string or a boolean
  { filter: { metadata: { score: { gt: 'g' } } }, ids: ['carol'] },
  { filter: { metadata: { tier: { gt: 'a' } } }, ids: ['alice', 'bob'] },
  { filter: { metadata: { tier: { lt: 'a' } } }, ids: ['carol'] },
  { filter: { metadata: { date: { gte: '2024-01-01' } } }, ids: ['dave'] },
  { filter: { metadata: { empty: { lt: 'a' } } }, ids: ['dave'] },
  { filter: { metadata: { tier: { ne: 'pro' } } }, ids: ['bob', 'carol'] },
  { filter: { metadata: { active: { ne: true } } }, ids: ['bob', 'carol'] },
  { filter: { metadata: { active: { gte: false } } }, ids: ['alice', 'bob', 'carol'] },
  { filter: { metadata: { flag: { lte: true } } }, ids: ['frank'] },
  // in: items converted with Python str()
  { filter: { metadata: { score: { in: [9, '7.5'] } } }, ids: ['alice', 'bob'] },
  { filter: { metadata: { score: { in: [10.5, -3] } } }, ids: ['dave', 'gina'] },
  { filter: { metadata: { active: { in: [true] } } }, ids: [] },
  { filter: { metadata: { active: { in: ['true', 'yes'] } } }, ids: ['alice', 'carol'] },
  { filter: { metadata: { tier: { in: ['pro', 'free'] } } }, ids: ['alice', 'bob'] },
  { filter: { metadata: { tier: { in: ['pro', 'free', '*'] } } }, ids: ALL_PEERS },
  { filter: { metadata: { tier: { in: [] } } }, ids: [] },
  { filter: { metadata: { tier: { in: [null] } } }, ids: [] },
  { filter: { metadata: { [WEIRD]: { in: ['x'] } } }, ids: ['dave'] },
  { filter: { metadata: { 'path\\back': { gte: 1 }, 'a.b': { lt: 3 } } }, ids: ['frank'] },
  // contains / icontains on the text form
  { filter: { metadata: { name: { icontains: 'wörld' } } }, ids: ['alice'] },
  { filter: { metadata: { name: { icontains: 'WÖRLD' } } }, ids: ['alice'] },
  { filter: { metadata: { name: { contains: 'WÖRLD' } } }, ids: ['alice'] },
  { filter: { metadata: { name: { icontains: 'hello WÖ' } } }, ids: ['alice'] },
  { filter: { metadata: { ünï: { icontains: 'Ç' } } }, ids: ['dave'] },
  { filter: { metadata: { name: { icontains: 'WÖRLD' } } }, gen: 'v2', ids: ['alice'] },
  { filter: { metadata: { name: { icontains: 'W_RLD' } } }, gen: 'v2', ids: ['alice'] },
  { filter: { metadata: { name: { icontains: 'WÖ%D' } } }, gen: 'v2', ids: ['alice'] },
  { filter: { metadata: { name: { contains: 'frank' } } }, ids: ['frank'] },
  { filter: { metadata: { name: { contains: 'BOB_' } } }, ids: ['bob'] },
  { filter: { metadata: { name: { contains: '%' } } }, ids: ['carol'] },
  { filter: { metadata: { name: { contains: '%' } } }, gen: 'v2', ids: ['alice', 'bob', 'carol', 'frank', 'gina', 'h%_x'] },
  { filter: { metadata: { name: { contains: '_' } } }, ids: ['bob', 'gina', 'h%_x'] },
  { filter: { metadata: { name: { contains: '_' } } }, gen: 'v2', ids: ['alice', 'bob', 'carol', 'frank', 'gina', 'h%_x'] },
  { filter: { metadata: { name: { contains: '\\' } } }, ids: ['gina'] },
  { filter: { metadata: { name: { contains: '\\' } } }, gen: 'v2', ids: [] },
  { filter: { metadata: { score: { contains: '.' } } }, ids: ['bob', 'dave'] },
  { filter: { metadata: { score: { contains: 9 } } }, ids: ['alice'] },
  { filter: { metadata: { flag: { contains: 'RU' } } }, ids: ['frank'] },
  { filter: { metadata: { nested: { contains: '{"b"' } } }, ids: ['dave'] },
  { filter: { metadata: { name: { contains: 'x'.repeat(60000) } } }, ids: [] },
];

const SESSION_CASES: Case[] = [
  { table: 'sessions', filter: { is_active: true }, ids: ['s1', 's3'] },
  { table: 'sessions', filter: { is_active: false }, ids: ['s2'] },
  { table: 'sessions', filter: { is_active: 'yes' }, gen: 'v2', ids: [] },
  { table: 'sessions', filter: { is_active: 1 }, gen: 'v2', ids: [] },
  { table: 'sessions', filter: { is_active: { ne: true } }, ids: ['s2'] },
  { table: 'sessions', filter: { is_active: { in: [false] } }, ids: ['s2'] },
  { table: 'sessions', filter: { is_active: { in: [true, 'x'] } }, gen: 'v2', ids: ['s1', 's3'] },
  { table: 'sessions', filter: { is_active: [true] }, ids: ['s1', 's3'] },
  { table: 'sessions', filter: { is_active: [true] }, gen: 'v2', ids: [] },
  { table: 'sessions', filter: { NOT: [{ is_active: true }] }, ids: ['s2'] },
  { table: 'sessions', filter: { is_active: true, metadata: { topic: 'y' } }, ids: ['s3'] },
  { table: 'sessions', filter: { created_at: { lt: '2024-01-03' }, workspace_id: 'w1' }, ids: ['s1', 's2'] },
  { table: 'sessions', filter: { is_active: { gt: 0 } }, gen: 'v2', error: "Operator 'gt' is not supported on column 'is_active'" },
  { table: 'sessions', filter: { is_active: { ne: 1 } }, gen: 'v2', error: "Operator 'ne' is not supported on column 'is_active'" },
  { table: 'sessions', filter: { is_active: { contains: 't' } }, gen: 'v2', error: "Operator 'contains' is not supported on column 'is_active'" },
  {
    table: 'sessions',
    filter: { is_active: { ne: 'true' } },
    gen: 'v2',
    error: 'Invalid numeric value: true. Expected a number, got str',
  },
  { table: 'sessions', filter: { peer_id: 'x' }, error: "Column 'peer_id' does not exist on Session" },
  { table: 'sessions', filter: { name: 'x' }, error: "Column 'name' is not allowed to be filtered on or does not exist on Session" },
];

const MESSAGE_CASES: Case[] = [
  { table: 'messages', filter: { token_count: { gt: 5 } }, ids: ['m1', 'm2'] },
  { table: 'messages', filter: { token_count: { gte: '10', lte: 25.0 } }, ids: ['m1', 'm2'] },
  { table: 'messages', filter: { token_count: { lt: true } }, ids: ['m3'] },
  { table: 'messages', filter: { token_count: { gt: '1_0' } }, ids: ['m2'] },
  { table: 'messages', filter: { token_count: { ne: 1e30 } }, ids: ['m1', 'm2', 'm3'] },
  { table: 'messages', filter: { token_count: { gt: 1e30 } }, ids: [] },
  { table: 'messages', filter: { token_count: { gt: '-inf' } }, ids: ['m1', 'm2', 'm3'] },
  { table: 'messages', filter: { token_count: { lt: 'NaN' } }, ids: ['m1', 'm2', 'm3'] },
  { table: 'messages', filter: { token_count: { gte: 'nan' } }, ids: [] },
  { table: 'messages', filter: { token_count: 10 }, ids: ['m1'] },
  { table: 'messages', filter: { token_count: 10.5 }, ids: [] },
  { table: 'messages', filter: { token_count: '10' }, gen: 'v2', ids: [] },
  { table: 'messages', filter: { token_count: { in: [0, 25, '10'] } }, gen: 'v2', ids: ['m2', 'm3'] },
  { table: 'messages', filter: { token_count: [0, 1e300] }, ids: ['m3'] },
  { table: 'messages', filter: { peer_id: 'alice', session_id: ['s1'] }, ids: ['m1'] },
  { table: 'messages', filter: { session_id: { contains: '2' } }, ids: ['m3'] },
  { table: 'messages', filter: { token_count: { gt: 'abc' } }, error: 'Invalid numeric value: abc. Expected a number, got str' },
  {
    table: 'messages',
    filter: { token_count: { contains: '1' } },
    gen: 'v2',
    error: "Operator 'contains' is not supported on column 'token_count'",
  },
  { table: 'messages', filter: { id: 'm1' }, error: "Column 'id' is not allowed to be filtered on or does not exist on Message" },
  {
    table: 'messages',
    filter: { is_active: true },
    error: "Column 'is_active' is not allowed to be filtered on or does not exist on Message",
  },
  {
    table: 'messages',
    filter: { content: 'x' },
    error: "Column 'content' is not allowed to be filtered on or does not exist on Message",
  },
];

const FAILED_NUMERIC = (op: string, v: string, type: string) =>
  `Failed to build numeric comparison condition for operator '${op}' with value '${v}': ` +
  `Failed to process numeric cast for value '${v}': Invalid value for numeric operator: ${v}. Expected a number, got ${type}`;
const WHOLE_METADATA = (op: string) =>
  `Operator '${op}' cannot be applied to the whole metadata object; compare a key instead, e.g. {"metadata": {"<key>": {"${op}": ...}}}`;
const IN_MESSAGE = (v: string, type: string) =>
  `Invalid value for 'in' operator: ${v}. Expected an iterable (list, tuple, set), got ${type}`;

const ERRORS: Case[] = [
  // keys (§5.1)
  { filter: { name: 'x' }, error: "Column 'name' is not allowed to be filtered on or does not exist on Peer" },
  { filter: { and: [] }, error: "Column 'and' is not allowed to be filtered on or does not exist on Peer" },
  { filter: { is_active: true }, error: "Column 'is_active' does not exist on Peer" },
  { filter: { session_id: '*' }, error: "Column 'session_id' does not exist on Peer" },
  { filter: { peer_id: 'alice' }, error: "Column 'peer_id' does not exist on Peer" },
  // structure (§5.2)
  { filter: { AND: {} }, error: 'AND operator must contain a list, got dict' },
  { filter: { OR: 'x' }, error: 'OR operator must contain a list, got str' },
  { filter: { AND: 1 }, error: 'AND operator must contain a list, got int' },
  { filter: { AND: 1.5 }, error: 'AND operator must contain a list, got float' },
  { filter: { OR: true }, error: 'OR operator must contain a list, got bool' },
  { filter: { AND: null }, error: 'AND operator must contain a list, got NoneType' },
  { filter: { NOT: null }, error: 'NOT operator cannot be None' },
  { filter: { NOT: {} }, error: 'NOT operator must contain a list, got dict' },
  // former 500s: non-object items in logical lists
  { filter: { AND: ['x'] }, gen: 'v2', error: 'Filter conditions inside AND must be objects, got str' },
  { filter: { OR: [{ id: 'a' }, null] }, gen: 'v2', error: 'Filter conditions inside OR must be objects, got NoneType' },
  { filter: { NOT: [[{ id: 'a' }]] }, gen: 'v2', error: 'Filter conditions inside NOT must be objects, got list' },
  { filter: { AND: [1] }, gen: 'v2', error: 'Filter conditions inside AND must be objects, got int' },
  // operators on plain columns (§5.3)
  { filter: { id: { ne: 'alice' } }, gen: 'v2', error: 'Invalid numeric value: alice. Expected a number, got str' },
  { filter: { id: { gt: 'x\ny' } }, gen: 'v2', error: 'Invalid numeric value: x\ny. Expected a number, got str' },
  { filter: { id: { eq: 'alice', in: ['a'] } }, error: 'Unsupported comparison operator: eq' },
  { filter: { id: { in: ['a'], eq: 'alice' } }, error: 'Unsupported comparison operator: eq' },
  { filter: { id: { in: 'alice' } }, error: IN_MESSAGE('alice', 'str') },
  { filter: { id: { in: 5 } }, error: IN_MESSAGE('5', 'int') },
  { filter: { id: { in: 0.5 } }, error: IN_MESSAGE('0.5', 'float') },
  { filter: { id: { in: 1e-7 } }, error: IN_MESSAGE('1e-07', 'float') },
  { filter: { id: { in: 1e16 } }, error: IN_MESSAGE('1e+16', 'float') },
  { filter: { id: { in: true } }, error: IN_MESSAGE('True', 'bool') },
  { filter: { id: { in: null } }, gen: 'v2', error: IN_MESSAGE('None', 'NoneType') },
  {
    filter: { id: { in: { a: 1, b: [1, 2.5, true, null, "x'y", 'q"r', 'n\n'] } } },
    error: IN_MESSAGE(`{'a': 1, 'b': [1, 2.5, True, None, "x'y", 'q"r', 'n\\n']}`, 'dict'),
  },
  // former 500s on plain columns
  { filter: { id: { gte: null } }, gen: 'v2', error: 'Invalid numeric value: None. Expected a number, got NoneType' },
  { filter: { id: { lt: ['a\n', 'é', '\u00a0'] } }, gen: 'v2', error: "Invalid numeric value: ['a\\n', 'é', '\\xa0']. Expected a number, got list" },
  { filter: { id: { lt: { a: 'x' } } }, gen: 'v2', error: "Invalid numeric value: {'a': 'x'}. Expected a number, got dict" },
  { filter: { id: { gt: 5 } }, gen: 'v2', error: "Operator 'gt' is not supported on column 'id'" },
  { filter: { id: { ne: '5' } }, gen: 'v2', error: "Operator 'ne' is not supported on column 'id'" },
  {
    filter: { id: { eq: 'alice' } },
    gen: 'v2',
    error:
      "Invalid filter for column 'id': an object value must use at least one operator (gte, lte, gt, lt, ne, in, contains, icontains)",
  },
  {
    filter: { id: {} },
    gen: 'v2',
    error:
      "Invalid filter for column 'id': an object value must use at least one operator (gte, lte, gt, lt, ne, in, contains, icontains)",
  },
  // created_at
  { filter: { created_at: { gt: 'yesterday' } }, error: 'Invalid datetime value: yesterday' },
  { filter: { created_at: { gt: 5 } }, gen: 'v2', error: 'Invalid datetime value: 5' },
  { filter: { created_at: { gte: null } }, gen: 'v2', error: 'Invalid datetime value: None' },
  { filter: { created_at: { lt: true } }, gen: 'v2', error: 'Invalid datetime value: True' },
  { filter: { created_at: { in: ['2024-01-01', 'nope'] } }, gen: 'v2', error: 'Invalid datetime value in list: nope' },
  { filter: { created_at: { in: '2024-01-01' } }, error: IN_MESSAGE('2024-01-01', 'str') },
  { filter: { created_at: { in: 'garbage' } }, gen: 'v2', error: 'Invalid datetime value: garbage' },
  { filter: { created_at: '2024-13-01' }, error: 'Invalid datetime value: 2024-13-01' },
  { filter: { created_at: '2023-02-29' }, error: 'Invalid datetime value: 2023-02-29' },
  { filter: { created_at: { lt: '2024-01-01T24:00:00' } }, error: 'Invalid datetime value: 2024-01-01T24:00:00' },
  { filter: { created_at: { lt: '0000-01-01' } }, error: 'Invalid datetime value: 0000-01-01' },
  { filter: { created_at: { lt: '2024-01-01T00:00:00+24:00' } }, error: 'Invalid datetime value: 2024-01-01T00:00:00+24:00' },
  { filter: { created_at: { contains: '2024' } }, gen: 'v2', error: 'Invalid datetime value: 2024' },
  { filter: { created_at: { contains: '2024-01-01' } }, gen: 'v2', error: "Operator 'contains' is not supported on column 'created_at'" },
  { filter: { created_at: { icontains: 5 } }, gen: 'v2', error: "Operator 'icontains' is not supported on column 'created_at'" },
  // metadata (§5.4)
  { filter: { metadata: { score: { gt: 1, foo: 2 } } }, error: 'Unsupported comparison operator: foo' },
  { filter: { metadata: { score: { in: '9' } } }, error: IN_MESSAGE('9', 'str') },
  { filter: { metadata: { score: { in: { a: 1 } } } }, error: IN_MESSAGE("{'a': 1}", 'dict') },
  { filter: { metadata: { score: { gt: null } } }, error: FAILED_NUMERIC('gt', 'None', 'NoneType') },
  { filter: { metadata: { score: { lte: [1] } } }, error: FAILED_NUMERIC('lte', '[1]', 'list') },
  { filter: { metadata: { score: { ne: { a: 'b' } } } }, error: FAILED_NUMERIC('ne', "{'a': 'b'}", 'dict') },
  { filter: { metadata: { contains: { tier: 'pro' }, tier: 'pro' } }, error: 'Unsupported comparison operator: tier' },
  { filter: { metadata: { in: 'op-named key' } }, error: IN_MESSAGE('op-named key', 'str') },
  { filter: { metadata: { in: { contains: 'op' } } }, error: IN_MESSAGE("{'contains': 'op'}", 'dict') },
  { filter: { metadata: { gt: 'abc' } }, gen: 'v2', error: 'Invalid numeric value: abc. Expected a number, got str' },
  // former 500s on the whole metadata column
  { filter: { metadata: { gt: 5 } }, gen: 'v2', error: WHOLE_METADATA('gt') },
  { filter: { metadata: { gte: '5' } }, gen: 'v2', error: WHOLE_METADATA('gte') },
  { filter: { metadata: { ne: null } }, gen: 'v2', error: WHOLE_METADATA('ne') },
  { filter: { metadata: { lt: true } }, gen: 'v2', error: WHOLE_METADATA('lt') },
  { filter: { metadata: { in: ['a'] } }, gen: 'v2', error: WHOLE_METADATA('in') },
  { filter: { metadata: { icontains: 'x' } }, gen: 'v2', error: WHOLE_METADATA('icontains') },
  // hygiene and size guards
  { filter: { id: 'a\u0000b' }, error: 'Filter values cannot contain NUL characters' },
  { filter: { metadata: { 'k\u0000': 1 } }, error: 'Filter values cannot contain NUL characters' },
  { filter: { metadata: { name: { contains: '\u0000' } } }, error: 'Filter values cannot contain NUL characters' },
  { filter: { metadata: { k: deepList(16) } }, error: 'Filter value nesting exceeds maximum depth of 16' },
  { filter: { metadata: { tags: Array.from({ length: 10001 }, () => 'b') } }, error: 'Filter is too large' },
  { filter: { OR: Array.from({ length: 10001 }, (_, i) => ({ id: `x${i}` })) }, error: 'Filter is too large' },
  // at most 500 conditions (MAX_CONDITIONS); an object or array inside a containment array is one
  { filter: { OR: Array.from({ length: 501 }, (_, i) => ({ id: `x${i}` })) }, error: 'Filter is too large' },
  { filter: { OR: Array.from({ length: 500 }, (_, i) => ({ id: i === 499 ? 'alice' : `x${i}` })) }, ids: ['alice'] },
  { filter: { AND: [{ metadata: { tier: 'pro' } }, { OR: Array.from({ length: 500 }, (_, i) => ({ metadata: { [`k${i}`]: { gt: i } } })) }] }, error: 'Filter is too large' },
  { filter: { metadata: { list: Array.from({ length: 500 }, (_, i) => [i]) } }, error: 'Filter is too large' },
  { filter: { metadata: { list: Array.from({ length: 500 }, (_, i) => ({ n: i })) } }, error: 'Filter is too large' },
  { filter: { metadata: { list: Array.from({ length: 499 }, (_, i) => [i]) } }, ids: [] },
  // scalars in a containment value are one condition, however many
  { filter: { metadata: { tags: [...Array.from({ length: 9000 }, (_, i) => `t${i}`), 'b'] } }, ids: [] },
  { filter: { metadata: { profile: { city: 'Paris', ...Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`k${i}`, i])) } } }, ids: [] },
];

/* The newer reference's rules (scopes.md S8), v3 only; the same filters keep their v2 answers above. */
const JSONB = (column: string) => `Invalid filter for column '${column}': a JSONB column takes an object, optionally under 'contains'`;
const NULL_OPERAND = (op: string) => `Operator '${op}' does not accept null. Use {"ne": null} for a not-null check, or null on its own for a null check.`;
const NOT_TEXT = (op: string, column: string, type: string) => `Operator '${op}' requires a text column, but '${column}' is ${type}`;
const OPERATOR_LIST = "['contains', 'gt', 'gte', 'icontains', 'in', 'lt', 'lte', 'ne']";
const NOT_AN_OPERATOR = (key: string, keys: string) => `Invalid filter for column '${key}': unsupported operator(s) ${keys}. Expected one of ${OPERATOR_LIST} or a scalar value.`;

const NEWER: Case[] = [
  // S8 worked example: A (s1), B (s2), C (no session); v2 keeps v3.0.12's answers
  { table: 'docs', filter: { session_id: 's1' }, ids: ['A'] },
  { table: 'docs', filter: { session_id: { ne: 's1' } }, ids: ['B', 'C'] },
  { table: 'docs', filter: { session_id: { ne: 's1' } }, gen: 'v2', error: 'Invalid numeric value: s1. Expected a number, got str' },
  { table: 'docs', filter: { NOT: [{ session_id: 's1' }] }, ids: ['B', 'C'] },
  { table: 'docs', filter: { NOT: [{ session_id: 's1' }] }, gen: 'v2', ids: ['B'] },
  { table: 'docs', filter: { session_id: null }, ids: ['C'] },
  { table: 'docs', filter: { session_id: null }, gen: 'v2', ids: ['C'] },
  { table: 'docs', filter: { session_id: { ne: null } }, ids: ['A', 'B'] },
  { table: 'docs', filter: { session_id: { ne: null } }, gen: 'v2', error: 'Invalid numeric value: None. Expected a number, got NoneType' },
  { table: 'docs', filter: { AND: [{ session_id: { ne: 's1' } }, { session_id: { ne: null } }] }, ids: ['B'] },
  // S11 "Filters and allowlists"
  { table: 'docs', filter: { NOT: [{ session_id: 'other' }] }, ids: ['A', 'B', 'C'] },
  { table: 'docs', filter: { session_id: { ne: 'other' } }, ids: ['A', 'B', 'C'] },
  { table: 'docs', filter: { NOT: [{ session_id: 'other' }], session_id: { ne: null } }, ids: ['A', 'B'] },
  { table: 'docs', filter: { session_id: { in: [] } }, ids: [] },
  { table: 'docs', filter: { session_id: [] }, ids: [] },
  { table: 'docs', filter: { NOT: [{ session_id: { in: ['s1', 's2'] } }] }, ids: ['C'] },
  { table: 'docs', filter: { NOT: [{ session_id: { contains: '1' } }] }, ids: ['B', 'C'] },
  { table: 'docs', filter: { NOT: [{ OR: [{ session_id: 's1' }, { level: 'deductive' }] }] }, ids: ['C'] },
  { table: 'docs', filter: { NOT: [{ NOT: [{ session_id: 's1' }] }] }, ids: ['A'] },
  { table: 'docs', filter: { deleted_at: null }, ids: ['A', 'C'] },
  { table: 'docs', filter: { deleted_at: { ne: '2024-02-01' } }, ids: ['A', 'C'] },
  { table: 'docs', filter: { NOT: [{ deleted_at: { gt: '2024-01-01' } }] }, ids: ['A', 'C'] },
  { table: 'docs', filter: { NOT: [{ deleted_at: { gt: '2024-01-01' } }] }, gen: 'v2', ids: [] },
  { table: 'docs', filter: { level: 'explicit' }, ids: ['A'] },
  { table: 'docs', filter: { level: 'deductive' }, ids: ['B'] },
  { table: 'docs', filter: { level: 'inductive' }, ids: ['C'] },
  { table: 'docs', filter: { level: 'contradiction' }, ids: [] },
  { table: 'docs', filter: { level: { in: ['explicit', 'inductive'] } }, ids: ['A', 'C'] },
  { table: 'docs', filter: { level: { contains: 'duct' } }, ids: ['B', 'C'] },
  { table: 'docs', filter: { level: 'banana' }, error: "Invalid value for column 'level': 'banana'. Expected one of ['contradiction', 'deductive', 'explicit', 'inductive']" },
  { table: 'docs', filter: { level: { in: ['explicit', 'banana'] } }, error: "Invalid value for column 'level': 'banana'. Expected one of ['contradiction', 'deductive', 'explicit', 'inductive']" },
  { table: 'docs', filter: { level: 'banana' }, gen: 'v2', ids: [] },
  { table: 'docs', filter: { times_derived: { gte: '2' } }, ids: ['B', 'C'] },
  { table: 'docs', filter: { times_derived: true }, ids: ['A'] },
  { table: 'docs', filter: { metadata: { kind: 'note' } }, ids: ['B'] },
  { table: 'docs', filter: { metadata: { contains: { kind: 'note' } } }, ids: ['B'] },
  { table: 'docs', filter: { metadata: { gte: 5 } }, error: JSONB('internal_metadata') },
  { table: 'docs', filter: { metadata: null }, ids: [] },
  { table: 'docs', filter: { session_id: 5 }, error: "Invalid value for column 'session_name': expected a string, got int" },
  { table: 'docs', filter: { session_id: true }, error: "Invalid value for column 'session_name': expected a string, got bool" },
  { table: 'docs', filter: { session_id: { operator: 'null' } }, error: NOT_AN_OPERATOR('session_id', "['operator']") },
  { table: 'docs', filter: { session_id: { ne: { a: 1 } } }, error: "Invalid value for column 'session_name': expected a string, got dict" },
  { table: 'docs', filter: { embedding: 5 }, error: "Column 'embedding' cannot be filtered on" },
  { table: 'docs', filter: { embedding: '*' }, ids: ['A', 'B', 'C'] },
  { table: 'docs', filter: { embedding: 5 }, gen: 'v2', error: "Column 'embedding' does not exist on Document" },
  // source_ids: a JSON list of ids
  { table: 'docs', filter: { source_ids: 'abc' }, error: JSONB('source_ids') },
  { table: 'docs', filter: { source_ids: { kind: 'note' } }, ids: [] },
  { table: 'docs', filter: { source_ids: ['m2'] }, ids: ['A', 'B'] },
  { table: 'docs', filter: { source_ids: ['m1', 'm2'] }, ids: ['A'] },
  { table: 'docs', filter: { source_ids: [] }, ids: ['A', 'B'] },
  { table: 'docs', filter: { source_ids: [5] }, ids: [] },
  { table: 'docs', filter: { source_ids: { contains: 'm1' } }, ids: ['A'] },
  { table: 'docs', filter: { source_ids: { contains: ['m2'] } }, ids: ['A', 'B'] },
  { table: 'docs', filter: { source_ids: { contains: 5 } }, error: JSONB('source_ids') },
  { table: 'docs', filter: { source_ids: { gt: 1 } }, error: JSONB('source_ids') },
  { table: 'docs', filter: { source_ids: { ne: null } }, ids: ['A', 'B'] },
  { table: 'docs', filter: { source_ids: null }, ids: ['C'] },
  { table: 'docs', filter: { NOT: [{ source_ids: { contains: 'm1' } }] }, ids: ['B', 'C'] },
  { table: 'docs', filter: { source_ids: { contains: 'm1' } }, gen: 'v2', ids: ['A'] },
  // fail closed: non-objects in logical lists
  { filter: { AND: [null] }, error: 'Invalid filter configuration' },
  { filter: { AND: [[]] }, error: 'Invalid filter configuration' },
  { filter: { OR: [1] }, error: 'Invalid filter configuration' },
  { filter: { NOT: [null] }, error: 'Invalid filter configuration' },
  { filter: { AND: ['x'] }, error: 'Invalid filter configuration' },
  { filter: { OR: [{ id: 'a' }, null] }, error: 'Invalid filter configuration' },
  { filter: { NOT: [[{ id: 'a' }]] }, error: 'Invalid filter configuration' },
  { filter: { AND: [1] }, error: 'Invalid filter configuration' },
  // operand typing: text columns
  { filter: { id: 5 }, error: "Invalid value for column 'name': expected a string, got int" },
  { filter: { id: true }, error: "Invalid value for column 'name': expected a string, got bool" },
  { filter: { NOT: [{ id: 5 }] }, error: "Invalid value for column 'name': expected a string, got int" },
  { filter: { workspace_id: 1.5 }, error: "Invalid value for column 'workspace_name': expected a string, got float" },
  { filter: { id: { in: ['alice', 5, true, { a: 1 }] } }, error: "Invalid value for column 'name': expected a string, got int" },
  { filter: { id: { in: ['alice', null] } }, error: "Invalid value for column 'name': expected a string, got NoneType" },
  { filter: { id: { gt: 5 } }, error: "Invalid value for column 'name': expected a string, got int" },
  { filter: { id: { lt: ['a\n', 'é', '\u00a0'] } }, error: "Invalid value for column 'name': expected a string, got list" },
  { filter: { id: { lt: { a: 'x' } } }, error: "Invalid value for column 'name': expected a string, got dict" },
  { filter: { id: { contains: 5 } }, ids: [] },
  { filter: { id: { contains: 'ob' } }, ids: ['bob'] },
  // text comparisons, in byte order on both dialects
  { filter: { id: { ne: 'alice' } }, ids: except('alice') },
  { filter: { id: { ne: '5' } }, ids: ALL_PEERS },
  { filter: { id: { gt: 'd' } }, ids: ['dave', 'erin', 'frank', 'gina', 'h%_x'] },
  { filter: { id: { gte: 'bob', lt: 'dave' } }, ids: ['bob', 'carol'] },
  { filter: { id: { lt: 'B' } }, ids: [] },
  { filter: { id: { gt: 'x\ny' } }, ids: [] },
  { filter: { workspace_id: { gt: 'w1' } }, ids: ['frank', 'gina', 'h%_x'] },
  // objects on scalar columns
  { filter: { id: { eq: 'alice' } }, error: NOT_AN_OPERATOR('id', "['eq']") },
  { filter: { id: {} }, error: NOT_AN_OPERATOR('id', '[]') },
  { filter: { id: { zed: 1, Abc: 2 } }, error: NOT_AN_OPERATOR('id', "['Abc', 'zed']") },
  { filter: { id: { eq: 'alice', in: ['a'] } }, error: 'Unsupported comparison operator: eq' },
  // null
  { filter: { id: null }, ids: [] },
  { filter: { id: { ne: null } }, ids: ALL_PEERS },
  { filter: { id: { gte: null } }, error: NULL_OPERAND('gte') },
  { filter: { id: { in: null } }, error: NULL_OPERAND('in') },
  { filter: { id: { contains: null } }, error: NULL_OPERAND('contains') },
  { filter: { created_at: null }, ids: [] },
  { filter: { created_at: { gte: null } }, error: NULL_OPERAND('gte') },
  { filter: { metadata: null }, ids: [] },
  { filter: { metadata: { ne: null } }, ids: ALL_PEERS },
  { filter: { metadata: { gt: null } }, error: NULL_OPERAND('gt') },
  // timestamps
  { filter: { created_at: 20240101 }, error: "Invalid value for column 'created_at': expected a datetime, got int" },
  { filter: { created_at: { gt: 5 } }, error: "Invalid value for column 'created_at': expected a datetime, got int" },
  { filter: { created_at: { lt: true } }, error: "Invalid value for column 'created_at': expected a datetime, got bool" },
  { filter: { created_at: { in: ['2024-01-01', 'nope'] } }, error: 'Invalid datetime value: nope' },
  { filter: { created_at: { in: 'garbage' } }, error: IN_MESSAGE('garbage', 'str') },
  { filter: { created_at: { contains: '2024' } }, error: NOT_TEXT('contains', 'created_at', 'datetime') },
  { filter: { created_at: { icontains: 5 } }, error: NOT_TEXT('icontains', 'created_at', 'datetime') },
  { filter: { created_at: '2024-01-01' }, ids: ['alice'] },
  { filter: { created_at: '2026-01-01' }, ids: [] },
  // metadata: an object, a list, or `contains`
  { filter: { metadata: 'pro' }, error: JSONB('h_metadata') },
  { filter: { metadata: 5 }, error: JSONB('h_metadata') },
  { filter: { metadata: { contains: 1 } }, error: JSONB('h_metadata') },
  { filter: { metadata: { contains: 'x' } }, error: JSONB('h_metadata') },
  { filter: { metadata: { gt: 'abc' } }, error: JSONB('h_metadata') },
  { filter: { metadata: { gt: 5 } }, error: JSONB('h_metadata') },
  { filter: { metadata: { gte: '5' } }, error: JSONB('h_metadata') },
  { filter: { metadata: { lt: true } }, error: JSONB('h_metadata') },
  { filter: { metadata: { ne: { tier: 'pro' } } }, error: JSONB('h_metadata') },
  { filter: { metadata: { in: ['a'] } }, error: JSONB('h_metadata') },
  { filter: { metadata: { in: [] } }, ids: [] },
  { filter: { metadata: { icontains: 'x' } }, error: JSONB('h_metadata') },
  { filter: { metadata: { contains: ['a'] } }, ids: [] },
  // a metadata key's `ne` still leaves out rows without the key; NOT over a key's comparison does not
  { filter: { metadata: { tier: { ne: 'pro' } } }, ids: ['bob', 'carol'] },
  { filter: { NOT: [{ metadata: { score: { gt: 8 } } }] }, ids: ['bob', 'carol', 'erin', 'frank', 'gina'] },
  { filter: { NOT: [{ metadata: { tier: { in: ['pro'] } } }] }, ids: except('alice') },
  // booleans
  { table: 'sessions', filter: { is_active: true }, ids: ['s1', 's3'] },
  { table: 'sessions', filter: { is_active: 'true' }, error: "Invalid value for column 'is_active': expected true or false, got str" },
  { table: 'sessions', filter: { is_active: 'yes' }, error: "Invalid value for column 'is_active': expected true or false, got str" },
  { table: 'sessions', filter: { is_active: 1 }, error: "Invalid value for column 'is_active': expected true or false, got int" },
  { table: 'sessions', filter: { is_active: { ne: 'true' } }, error: "Invalid value for column 'is_active': expected true or false, got str" },
  { table: 'sessions', filter: { is_active: { ne: 1 } }, error: "Invalid value for column 'is_active': expected true or false, got int" },
  { table: 'sessions', filter: { is_active: { gt: 0 } }, error: "Invalid value for column 'is_active': expected true or false, got int" },
  { table: 'sessions', filter: { is_active: { in: [true, 'x'] } }, error: "Invalid value for column 'is_active': expected true or false, got str" },
  { table: 'sessions', filter: { is_active: { ne: true } }, ids: ['s2'] },
  { table: 'sessions', filter: { is_active: { in: [true, false] } }, ids: ['s1', 's2', 's3'] },
  { table: 'sessions', filter: { is_active: { gt: false } }, ids: ['s1', 's3'] },
  { table: 'sessions', filter: { is_active: { contains: 't' } }, error: NOT_TEXT('contains', 'is_active', 'bool') },
  { table: 'sessions', filter: { is_active: null }, ids: [] },
  // numbers
  { table: 'messages', filter: { token_count: '10' }, ids: ['m1'] },
  { table: 'messages', filter: { token_count: '5' }, ids: [] },
  { table: 'messages', filter: { token_count: true }, ids: [] },
  { table: 'messages', filter: { token_count: { in: [0, 25, '10'] } }, ids: ['m1', 'm2', 'm3'] },
  { table: 'messages', filter: { token_count: { in: [1, 'nope'] } }, error: 'Invalid numeric value: nope. Expected a number, got str' },
  { table: 'messages', filter: { token_count: { gt: 'nope' } }, error: 'Invalid numeric value: nope. Expected a number, got str' },
  { table: 'messages', filter: { token_count: { gt: null } }, error: NULL_OPERAND('gt') },
  { table: 'messages', filter: { token_count: { gt: [1] } }, error: 'Invalid numeric value: [1]. Expected a number, got list' },
  { table: 'messages', filter: { token_count: { gt: '5' } }, ids: ['m1', 'm2'] },
  { table: 'messages', filter: { token_count: { gt: 9007199254740993 } }, ids: [] },
  { table: 'messages', filter: { token_count: { gt: 2147483648 } }, ids: [] },
  { table: 'messages', filter: { token_count: { lt: 5.5 } }, ids: ['m3'] },
  { table: 'messages', filter: { token_count: { contains: 5 } }, error: NOT_TEXT('contains', 'token_count', 'int') },
  { table: 'messages', filter: { token_count: { contains: '1' } }, error: NOT_TEXT('contains', 'token_count', 'int') },
  { table: 'messages', filter: { token_count: null }, ids: [] },
  { table: 'messages', filter: { session_id: 5 }, error: "Invalid value for column 'session_name': expected a string, got int" },
  { table: 'messages', filter: { peer_id: { ne: 'alice' } }, ids: ['m2'] },
];

// The v2 LIKE pattern guard only exists on SQLite (its LIKE patterns are limited to 50000 bytes).
const V2_LONG_PATTERN: Case = { filter: { id: { contains: 'é'.repeat(25000) } }, gen: 'v2' };

const ALL_CASES: [string, Case][] = [
  ...STRUCTURE,
  ...COLUMNS,
  ...METADATA,
  ...SESSION_CASES,
  ...MESSAGE_CASES,
  ...ERRORS,
  ...NEWER,
].map((c) => {
  const shown = JSON.stringify(c.filter) ?? 'undefined';
  const label = `${c.table ?? 'peers'} ${c.gen ?? 'v3'} ${shown.length > 140 ? `${shown.slice(0, 140)}…` : shown}`;
  return [label, c];
});

/* ------------------------------------------------------------------------------------------
 * Random filters: never a database error, and both dialects agree.
 * ---------------------------------------------------------------------------------------- */

function randomFilters(count: number, seed: number): unknown[] {
  let state = seed >>> 0;
  const rand = () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  const some = <T>(make: () => T, max: number): T[] => Array.from({ length: Math.floor(rand() * (max + 1)) }, make);
  const odd = [null, true, 5, '*', 'nope'] as const;
  const pools: Record<string, readonly unknown[]> = {
    id: ['alice', 'bob', 'carol', 'h%_x', 'zed', 'a', 'AR', '%', '_', 'h\\%'],
    workspace_id: ['w1', 'w2', 'W'],
    created_at: [
      '2024-01-01',
      '2024-01-01T00:00:00.000001Z',
      '2024-02-01T12:00:00Z',
      '2024-03-15 08:30:00.5',
      '2023-12-31T19:00:00-05:00',
      '2025-01-01T00:00:00+00:00',
    ],
    metadata: [
      'pro', 'Pro', 'free', '7.5', '9', '-3', '1e3', ' 12 ', '', 'high', 'a', 'g', '%', '_', '\\', 'é', 'true',
      '2024-01-01', 5, 9, 7.5, -3, 0, 1.5, 1e29, true, false,
    ],
  };
  // Keys whose values are scalars (the text form of nested values differs between dialects).
  const scalarKeys = ['tier', 'score', 'active', 'name', 'empty', 'date', 'n', 'ws', 'flag', 'in', WEIRD, 'a.b', 'missing'];
  const allKeys = [...scalarKeys, 'tags', 'profile', 'nested', 'matrix', 'list', 'big', 'k', 'v', 'city', 'langs'];
  const scalar = (pool: readonly unknown[]) => (rand() < 0.08 ? pick(odd) : pick(pool));
  const json = (depth: number): unknown => {
    const r = rand();
    if (r < 0.55 || depth > 3) return scalar([...pools.metadata, 'a', 'b', 'fr', 'en', 'Paris', 1, 2, 3]);
    if (r < 0.8) return some(() => json(depth + 1), 2);
    return Object.fromEntries(some(() => [pick(allKeys), json(depth + 1)], 2));
  };
  const operators = (pool: readonly unknown[], ops: readonly string[]): Record<string, unknown> =>
    Object.fromEntries(
      Array.from({ length: 1 + Math.floor(rand() * 2) }, () => {
        const op = rand() < 0.03 ? 'eq' : pick(ops);
        return [op, op === 'in' ? (rand() < 0.9 ? some(() => scalar(pool), 3) : scalar(pool)) : scalar(pool)];
      }),
    );
  const field = (): [string, unknown] => {
    if (rand() < 0.02) return [pick(['bogus', 'is_active', 'peer_id']), 'x'];
    const key = pick(['id', 'workspace_id', 'created_at', 'metadata', 'metadata', 'metadata']);
    const r = rand();
    if (key === 'id' || key === 'workspace_id') {
      const textOps = rand() < 0.95 ? ['in', 'contains', 'icontains'] : ['gt', 'ne'];
      return [key, r < 0.4 ? scalar(pools[key]) : r < 0.6 ? some(() => scalar(pools[key]), 3) : operators(pools[key], textOps)];
    }
    if (key === 'created_at') {
      const ops = ['gte', 'lte', 'gt', 'lt', 'ne', 'in'];
      const pool = pools.created_at;
      return [key, r < 0.2 ? scalar(pool) : r < 0.3 ? some(() => scalar(pool), 2) : operators(pool, ops)];
    }
    if (r < 0.1) return [key, json(1)];
    if (r < 0.15) return [key, { contains: json(1) }];
    const ops = ['gte', 'lte', 'gt', 'lt', 'ne', 'in', 'contains', 'icontains'];
    const entry = (): [string, unknown] =>
      rand() < 0.6 ? [pick(scalarKeys), operators(pools.metadata, ops)] : [pick(allKeys), json(1)];
    const entries = some(entry, 2);
    return [key, Object.fromEntries(entries)];
  };
  const filter = (depth: number): unknown => {
    const entries: [string, unknown][] = some(field, 2);
    if (depth < 3 && rand() < 0.5) {
      const op = pick(['AND', 'OR', 'NOT']);
      entries.push([op, some(() => (rand() < 0.02 ? 'oops' : filter(depth + 1)), 3)]);
    }
    return Object.fromEntries(entries);
  };
  return Array.from({ length: count }, () => filter(0));
}

/** Random Document filters over columns that may be unset (session_id, deleted_at, source_ids), under NOT and ne. */
function randomDocFilters(count: number, seed: number): unknown[] {
  let state = seed >>> 0;
  const rand = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  const pools: Record<string, readonly unknown[]> = {
    id: ['A', 'B', 'C', 'b', 'Z', null, 5, '*'],
    session_id: ['s1', 's2', 's3', 'S1', '', null, '*', 1, ['s1'], { a: 1 }],
    level: ['explicit', 'deductive', 'inductive', 'contradiction', 'banana', null],
    times_derived: [0, 1, 2, '2', 2.5, true, 'x', null],
    created_at: ['2024-01-01', '2024-01-02T00:00:00Z', '2024-01-03', 'nope', 5, null],
    deleted_at: ['2024-01-01', '2024-02-01', '2024-03-01', null, 'x'],
    source_ids: ['m1', 'm2', 'm3', ['m1'], ['m2', 'm1'], [], null, 5, { k: 1 }],
  };
  const ops = ['ne', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'contains', 'icontains'];
  const field = (): [string, unknown] => {
    const key = pick(Object.keys(pools));
    const pool = pools[key];
    const r = rand();
    if (r < 0.35) return [key, pick(pool)];
    if (r < 0.45) return [key, Array.from({ length: Math.floor(rand() * 3) }, () => pick(pool))];
    const op = pick(ops);
    return [key, { [op]: op === 'in' && rand() < 0.9 ? Array.from({ length: Math.floor(rand() * 3) }, () => pick(pool)) : pick(pool) }];
  };
  const filter = (depth: number): unknown => {
    const entries: [string, unknown][] = Array.from({ length: Math.floor(rand() * 3) }, field);
    if (depth < 3 && rand() < 0.6) entries.push([pick(['NOT', 'NOT', 'AND', 'OR']), Array.from({ length: 1 + Math.floor(rand() * 2) }, () => filter(depth + 1))]);
    return Object.fromEntries(entries);
  };
  return Array.from({ length: count }, () => filter(0));
}

/** Arbitrary JSON in every position (for the "no database error" property only). */
function hostileFilters(count: number, seed: number): unknown[] {
  let state = seed >>> 0;
  const rand = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)];
  const strings = [
    '', '*', ' ', 'alice', 'w1', '2024-01-01', '2024-01-01T00:00:00+05:30', '9999-12-31T23:59:59.999999-23:59',
    '0001-01-01T00:00:00+23:59', '1e3', '1e99999', '-0', 'NaN', 'inf', '1_000', '0x1F', '１２', "'", '"', '\\', '\\"',
    "'; DROP TABLE peers; --", '?', '$1', '%', '_', '[', ']', '.', '$."a"', 'ünï', 'Ç', '😀', '\ud83d', '\n\t', 'x'.repeat(2000),
  ];
  const keys = [
    'AND', 'OR', 'NOT', 'id', 'workspace_id', 'created_at', 'metadata', 'gt', 'gte', 'lt', 'lte', 'ne', 'in', 'contains',
    'icontains', 'tier', 'score', 'tags', 'profile', 'a.b', 'path\\back', WEIRD, ...strings.slice(0, 30),
  ];
  const ops = ['gt', 'gte', 'lt', 'lte', 'ne', 'in', 'contains', 'icontains'];
  const some = <T>(make: () => T, max: number): T[] => Array.from({ length: Math.floor(rand() * (max + 1)) }, make);
  const value = (depth: number): unknown => {
    const r = rand();
    if (r < 0.3 || depth > 6) return pick(strings);
    if (r < 0.45) return pick([0, -1, 1.5, 1e-7, 1e16, 1e29, -1e308, 2 ** 53 + 2, 12345678901234567890]);
    if (r < 0.55) return pick([true, false, null]);
    if (r < 0.75) return some(() => value(depth + 1), 3);
    return Object.fromEntries(some(() => [pick(keys), value(depth + 1)], 3));
  };
  const operators = () => Object.fromEntries(some(() => [rand() < 0.05 ? pick(keys) : pick(ops), value(1)], 3));
  const filter = (depth: number): Record<string, unknown> =>
    Object.fromEntries(
      some((): [string, unknown] => {
        const key = rand() < 0.03 ? pick(keys) : pick(['AND', 'OR', 'NOT', 'id', 'workspace_id', 'created_at', 'metadata', 'metadata']);
        const r = rand();
        if (key === 'AND' || key === 'OR' || key === 'NOT') {
          return [key, r < 0.9 && depth < 4 ? some(() => (rand() < 0.9 ? filter(depth + 1) : value(2)), 3) : value(2)];
        }
        if (key !== 'metadata') return [key, r < 0.5 ? operators() : value(0)];
        if (r < 0.5) return [key, Object.fromEntries(some(() => [pick(keys), rand() < 0.5 ? operators() : value(1)], 3))];
        return [key, r < 0.7 ? operators() : value(0)];
      }, 3),
    );
  return Array.from({ length: count }, () => filter(0));
}

type Outcome = { error: string } | { ids: string[] };

async function outcome(backend: Backend, filter: unknown, gen: 'v2' | 'v3' = 'v3', table: Table = 'peers'): Promise<Outcome> {
  const params: unknown[] = [];
  let where: string | null;
  try {
    where = compileFilter(filter, MODELS[table], backend.dialect, params, gen);
  } catch (error) {
    if (error instanceof FilterError) {
      expect(params).toEqual([]);
      return { error: error.message };
    }
    throw error;
  }
  expect(where === null ? 0 : where.split('?').length - 1).toBe(params.length);
  // Any database error fails the test here.
  return { ids: await backend.ids(table, where, params) };
}

/* ------------------------------------------------------------------------------------------
 * Suites
 * ---------------------------------------------------------------------------------------- */

/** Checks of the generated SQL and bound values, which need no database. */
function sqlChecks(dialect: DialectName): void {
  it('returns null and binds nothing when no condition applies', () => {
    for (const filter of [null, undefined, {}, { id: '*' }, { AND: [{ OR: [] }] }, { metadata: { a: '*' } }]) {
      const params: unknown[] = ['kept'];
      expect(compileFilter(filter, PEER, dialect, params)).toBeNull();
      expect(params).toEqual(['kept']);
    }
  });

  it('appends to existing params and leaves them alone on error', () => {
    const params: unknown[] = ['first'];
    const where = compileFilter({ id: 'alice' }, PEER, dialect, params);
    expect(where).toContain('?');
    expect(params).toEqual(['first', 'alice']);
    expect(() => compileFilter({ id: 'alice', bogus: 1 }, PEER, dialect, params)).toThrow(FilterError);
    expect(params).toEqual(['first', 'alice']);
  });

  it('tests any number of scalars of a containment array or object with one subquery', () => {
    const sizeOf = (n: number) => {
      const params: unknown[] = [];
      const wanted = { tags: Array.from({ length: n }, (_, i) => (i % 3 === 0 ? i : i % 3 === 1 ? `t${i}` : i % 2 === 0)), profile: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])) };
      const where = compileFilter({ metadata: wanted }, PEER, dialect, params);
      return { text: where!.length, params: params.length };
    };
    expect(sizeOf(2000)).toEqual(sizeOf(3));
  });

  it('rejects a non-object filter', () => {
    expect(() => compileFilter([{ id: 'a' }], PEER, dialect, [])).toThrow(new FilterError('Filters must be an object, got list'));
    expect(() => compileFilter('x', PEER, dialect, [])).toThrow('Filters must be an object, got str');
  });

  it('binds timestamps and booleans in the dialect representation', () => {
    const params: unknown[] = [];
    compileFilter({ created_at: { gte: '2024-01-01T01:00:00+01:00' }, is_active: true }, SESSION, dialect, params);
    if (dialect === 'sqlite') expect(params).toEqual([micros('2024-01-01T00:00:00Z'), 1]);
    else expect(params).toEqual(['2024-01-01 00:00:00.000000+00', true]);
  });

}

function suite(dialect: DialectName, open: () => Promise<Backend>): void {
  let backend: Backend;
  beforeAll(async () => {
    backend = await open();
  });
  afterAll(async () => {
    await backend?.close();
  });

  it.each(ALL_CASES)('%s', async (_label, c) => {
    const result = await outcome(backend, c.filter, c.gen, c.table);
    if (c.error !== undefined) {
      expect(result).toEqual({ error: c.error });
    } else {
      const ids = Array.isArray(c.ids) ? c.ids : c.ids?.[dialect];
      expect(result).toEqual({ ids: [...(ids ?? [])].sort() });
    }
  });

  it('guards the SQLite LIKE pattern length in v2 (PostgreSQL has no such limit)', async () => {
    const result = await outcome(backend, V2_LONG_PATTERN.filter, 'v2');
    if (dialect === 'sqlite') expect(result).toEqual({ error: "Filter value for 'contains' is too long" });
    else expect(result).toEqual({ ids: [] });
  });

  it('recognises the same numeric texts in metadata on both dialects', async () => {
    const numeric = TEXTS.filter(([, , isNumeric]) => isNumeric).map(([id]) => id);
    expect(await outcome(backend, { metadata: { v: { ne: 123456 } } }, 'v3', 'texts')).toEqual({ ids: numeric });
    expect(await outcome(backend, { metadata: { v: { gt: -1e308 } } }, 'v3', 'texts')).toEqual({ ids: numeric });
    expect(await outcome(backend, { metadata: { v: { lte: 0.5, gt: -1 } } }, 'v3', 'texts')).toEqual({ ids: ['n04', 'n06', 'n22'] });
  });

  it('never raises a database error on random filters', async () => {
    for (const filter of [...randomFilters(300, 7), ...hostileFilters(1000, 11)]) {
      for (const gen of ['v3', 'v2'] as const) {
        for (const table of ['peers', 'sessions', 'messages', 'docs'] as const) await outcome(backend, filter, gen, table);
      }
    }
    for (const filter of randomDocFilters(500, 5)) {
      for (const gen of ['v3', 'v2'] as const) await outcome(backend, filter, gen, 'docs');
    }
  });
}

describe('compileFilter on SQLite', () => {
  suite('sqlite', async () => sqliteBackend());
  sqlChecks('sqlite');
});

describe('compileFilter for PostgreSQL, without a server', () => {
  sqlChecks('postgres');

  it('refuses the same filters as on SQLite and binds one value per placeholder', () => {
    for (const [, c] of ALL_CASES) {
      const outcomes = (['sqlite', 'postgres'] as const).map((dialect) => {
        const params: unknown[] = [];
        try {
          const where = compileFilter(c.filter, MODELS[c.table ?? 'peers'], dialect, params, c.gen);
          expect(where === null ? 0 : where.split('?').length - 1).toBe(params.length);
          return { compiled: where !== null };
        } catch (error) {
          if (error instanceof FilterError) return { error: error.message };
          throw error;
        }
      });
      expect({ filter: c.filter, outcome: outcomes[1] }).toEqual({ filter: c.filter, outcome: outcomes[0] });
      if (c.error !== undefined) expect(outcomes[1]).toEqual({ error: c.error });
    }
  });
});

const pgUrl = process.env.DATABASE_URL ?? '';
describe.skipIf(!pgUrl.startsWith('postgres'))('compileFilter on PostgreSQL', () => {
  suite('postgres', () => postgresBackend(pgUrl));

  it('selects the same rows as SQLite on random filters', async () => {
    const postgres = await postgresBackend(pgUrl);
    const sqlite = sqliteBackend();
    try {
      for (const filter of randomFilters(1500, 42)) {
        for (const gen of ['v3', 'v2'] as const) {
          const expected = await outcome(sqlite, filter, gen);
          const actual = await outcome(postgres, filter, gen);
          expect({ filter, gen, result: actual }).toEqual({ filter, gen, result: expected });
        }
      }
    } finally {
      await postgres.close();
      await sqlite.close();
    }
  });

  it('selects the same rows as SQLite on random filters over fields that may be unset', async () => {
    const postgres = await postgresBackend(pgUrl);
    const sqlite = sqliteBackend();
    try {
      let compared = 0;
      for (const filter of randomDocFilters(1500, 99)) {
        for (const gen of ['v3', 'v2'] as const) {
          const expected = await outcome(sqlite, filter, gen, 'docs');
          const actual = await outcome(postgres, filter, gen, 'docs');
          expect({ filter, gen, result: actual }).toEqual({ filter, gen, result: expected });
          if ('ids' in expected) compared++;
        }
      }
      // most filters compile: the comparison is about rows, not errors
      expect(compared).toBeGreaterThan(1000);
    } finally {
      await postgres.close();
      await sqlite.close();
    }
  });
});
