import { z } from 'zod';
import { dateOfEpochMicros, epochMicros } from '../../storage/precise-date.js';
import type { PortableKind, PortableRows } from '../../storage/portable.js';

/*
 * The export format (docs/portability.md): NDJSON, one JSON object a line. The first line is the
 * header; every other line is one row, `{"type": <kind>, ...its fields}`, written in a fixed key
 * order, times as ISO 8601 with six fractional digits in UTC, and the keys of metadata and
 * configuration objects sorted (PostgreSQL's jsonb keeps no key order), so the same rows make
 * the same bytes whichever store they are read from.
 */

export const FORMAT = 'engram-export';
export const FORMAT_VERSION = 1;
export const ENGRAM_VERSION = '0.1.0';

export interface ExportHeader {
  type: 'header';
  format: typeof FORMAT;
  format_version: number;
  engram_version: string;
  exported_at: string;
  /** The workspaces asked for; null: every workspace of the store. */
  workspaces: string[] | null;
  /** The kinds of rows that follow (vectors only with --with-vectors). */
  includes: PortableKind[];
  vectors: boolean;
}

/** A time as the format writes it: `2026-01-02T03:04:05.123456Z`. */
export function isoMicros(date: Date): string {
  const micros = epochMicros(date);
  const ms = Math.floor(micros / 1000);
  const rest = micros - ms * 1000;
  return `${new Date(ms).toISOString().slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}

const ISO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})$/;

/** The Date of an ISO 8601 time with a zone, to the microsecond; undefined when it is not one. */
export function parseIsoMicros(text: string): Date | undefined {
  const match = ISO.exec(text);
  if (match === null) return undefined;
  const seconds = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(seconds)) return undefined;
  return dateOfEpochMicros(seconds * 1000 + Number((match[2] ?? '').padEnd(6, '0')));
}

/** A JSON value with every object's keys sorted (arrays keep their order). */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortedKeys((value as Record<string, unknown>)[key]);
  return out;
}

/** One row as its line (without the newline): dates as ISO microseconds, objects with sorted keys. */
export function rowLine<K extends PortableKind>(kind: K, row: PortableRows[K]): string {
  const out: Record<string, unknown> = { type: kind };
  for (const [key, value] of Object.entries(row)) {
    out[key] = value instanceof Date ? isoMicros(value) : typeof value === 'object' && value !== null && !Array.isArray(value) ? sortedKeys(value) : value;
  }
  return JSON.stringify(out);
}

// ------------------------------------------------------------------ reading lines back

const time = z.string().transform((text, ctx) => {
  const date = parseIsoMicros(text);
  if (date === undefined) {
    ctx.addIssue({ code: 'custom', message: `not an ISO 8601 time with a zone: ${JSON.stringify(text.slice(0, 40))}` });
    return z.NEVER;
  }
  return date;
});
const id = z.string().min(1).max(512);
const object = z.record(z.string(), z.unknown());
const ids = z.array(z.string()).nullable();
const count = z.number().int().min(0);
const vector = z.array(z.number().finite()).min(1).max(16000);

const ROWS = {
  workspace: z.strictObject({ id, v1_id: id, metadata: object, configuration: object, created_at: time }),
  peer: z.strictObject({ workspace_id: id, id, v1_id: id, kind: z.literal('scope').nullable(), metadata: object, configuration: object, created_at: time }),
  session: z.strictObject({ workspace_id: id, id, v1_id: id, is_active: z.boolean(), metadata: object, configuration: object, created_at: time }),
  membership: z.strictObject({ workspace_id: id, session_id: id, peer_id: id, configuration: object, joined_at: time, left_at: time.nullable() }),
  message: z.strictObject({
    workspace_id: id,
    session_id: id,
    id,
    peer_id: id,
    content: z.string(),
    metadata: object,
    token_count: count,
    created_at: time,
  }),
  metamessage: z.strictObject({
    workspace_id: id,
    id,
    peer_id: id,
    session_id: id.nullable(),
    message_id: id.nullable(),
    label: z.string(),
    content: z.string(),
    metadata: object,
    created_at: time,
  }),
  conclusion: z.strictObject({
    workspace_id: id,
    id,
    observer_id: id,
    observed_id: id,
    session_id: id.nullable(),
    level: z.enum(['explicit', 'deductive', 'inductive', 'contradiction']),
    content: z.string(),
    source_ids: ids,
    source_session_ids: ids,
    times_derived: z.number().int().min(1),
    metadata: object,
    copied_from: id.nullable(),
    created_at: time,
    /** When the fact became true; null where it was never recorded (rows older than the field). */
    valid_from: time.nullable(),
    /** When a newer fact replaced it, and which (a superseded fact stays in its history). */
    superseded_at: time.nullable(),
    superseded_by: id.nullable(),
  }),
  peer_card: z.strictObject({ workspace_id: id, observer_id: id, target_id: id, card: z.array(z.string()), updated_at: time }),
  summary: z.strictObject({
    workspace_id: id,
    session_id: id,
    summary_type: z.enum(['short', 'long']),
    content: z.string(),
    message_id: id,
    message_seq: count,
    token_count: count,
    created_at: time,
  }),
  dream_state: z.strictObject({ workspace_id: id, observer_id: id, observed_id: id, last_dream_at: time, explicit_at_last_dream: count }),
  scope_backfill: z.strictObject({
    workspace_id: id,
    scope_peer_id: id,
    session_id: id,
    state: z.enum(['pending', 'completed', 'failed']),
    updated_at: time,
    docs_copied: count.nullable(),
  }),
  webhook: z.strictObject({ workspace_id: id, id, url: z.string().min(1).max(2048), created_at: time }),
  conclusion_vector: z.strictObject({ workspace_id: id, conclusion_id: id, vector }),
  message_vector: z.strictObject({ workspace_id: id, message_id: id, chunk: count, vector }),
} satisfies { [K in PortableKind]: z.ZodType };

const HEADER = z.strictObject({
  type: z.literal('header'),
  format: z.literal(FORMAT),
  format_version: z.literal(FORMAT_VERSION),
  engram_version: z.string(),
  exported_at: z.string(),
  workspaces: z.array(z.string()).nullable(),
  includes: z.array(z.string()),
  vectors: z.boolean(),
});

export type ParsedLine = { kind: 'header'; header: ExportHeader } | { [K in PortableKind]: { kind: K; row: PortableRows[K] } }[PortableKind];

/** A line of an import file that is not what the format allows. */
export class ImportLineError extends Error {
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(`line ${line}: ${problem}`);
    this.name = 'ImportLineError';
  }
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

/** Parses and checks one line; throws ImportLineError naming `lineNumber` and what is wrong. */
export function parseLine(text: string, lineNumber: number): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ImportLineError(lineNumber, `not JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ImportLineError(lineNumber, 'not a JSON object');
  const { type, ...fields } = value as Record<string, unknown>;
  if (type === 'header') {
    const header = HEADER.safeParse(value);
    if (!header.success) throw new ImportLineError(lineNumber, `header: ${describe(header.error)}`);
    return { kind: 'header', header: header.data as ExportHeader };
  }
  if (typeof type !== 'string' || !Object.hasOwn(ROWS, type)) {
    throw new ImportLineError(lineNumber, `unknown "type" ${JSON.stringify(type)}; one of header, ${Object.keys(ROWS).join(', ')}`);
  }
  const kind = type as PortableKind;
  const row = ROWS[kind].safeParse(fields);
  if (!row.success) throw new ImportLineError(lineNumber, `${kind}: ${describe(row.error)}`);
  return { kind, row: row.data } as ParsedLine;
}
