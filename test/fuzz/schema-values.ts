import fc from 'fast-check';

/** The subset of JSON Schema that Engram's `/openapi.json` uses for parameters and bodies. */
export interface JsonSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  enum?: unknown[];
  nullable?: boolean;
}

/**
 * Ids that exist in the fixture of one fuzzed operation. For v1 routes `session` and `messages`
 * hold the v1 session's ids.
 */
export interface FixtureIds {
  workspace: string;
  peers: string[];
  session: string;
  messages: string[];
  conclusion: string;
  endpoint: string;
  app: string;
  user: string;
  metamessage: string;
}

/**
 * Field and parameter names whose values should usually be ids that exist, so that generated
 * requests get past the 404s and reach the deeper code.
 */
export function knownIdsFor(name: string, ids: FixtureIds): string[] | undefined {
  switch (name) {
    case 'workspace_id':
      return [ids.workspace];
    case 'peer_id':
    case 'observer_id':
    case 'observed_id':
    case 'observer':
    case 'observed':
    case 'target':
    case 'peer_target':
    case 'peer_perspective':
    case 'sender_id':
      return ids.peers;
    case 'session_id':
      return [ids.session];
    case 'message_id':
      return ids.messages;
    case 'conclusion_id':
    case 'observation_id':
      return [ids.conclusion];
    case 'endpoint_id':
      return [ids.endpoint];
    case 'app_id':
      return [ids.app];
    case 'user_id':
      return [ids.user];
    case 'metamessage_id':
      return [ids.metamessage];
    case 'name':
      return [ids.workspace, ids.peers[0]];
    default:
      return undefined;
  }
}

const ID_CHARS = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-');
const idString = (min: number, max: number) => fc.string({ unit: ID_CHARS, minLength: Math.max(1, min), maxLength: Math.min(max, 24) });

/**
 * Datetimes as clients send them, mostly of these years, some anywhere in the years pydantic
 * reads (0001 to 9999), and the edges: the epoch and before it, unix seconds and milliseconds as
 * text (a key minted with `expires_at=-1` once answered 500).
 */
const isoTime = fc.oneof(
  { weight: 6, arbitrary: fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
  { weight: 1, arbitrary: fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '-1',
      '0',
      '1969-12-31T23:59:59Z',
      '0001-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999999Z',
      '-62135596800',
      '253402300799',
      '1700000000',
      '1700000000000',
      '2024-02-29T12:00:00+14:00',
      '2024-01-01T00:00:00-23:59',
    ),
  },
);

/** Filters in the reference's filter language, mostly well-formed, over the columns Engram knows. */
const filterColumns = ['id', 'peer_id', 'session_id', 'observer_id', 'observed_id', 'created_at', 'is_active', 'content', 'source_ids', 'metadata', 'name', 'user_id', 'app_id'];
const filterOperators = ['gt', 'gte', 'lt', 'lte', 'ne', 'in', 'contains', 'icontains'];
const scalar = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), isoTime);

function filterValue(ids: FixtureIds): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    fc.constantFrom<unknown>(...ids.peers, ids.session, ...ids.messages),
    scalar,
    fc.array(scalar, { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...filterOperators, 'eq', '$gt', 'bogus'), scalar, { maxKeys: 2 }),
    fc.dictionary(fc.string({ maxLength: 8 }), scalar, { maxKeys: 3 }),
  );
  return leaf;
}

export function filterArbitrary(ids: FixtureIds): fc.Arbitrary<Record<string, unknown>> {
  const { tree } = fc.letrec<{ tree: Record<string, unknown> }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.dictionary(fc.constantFrom(...filterColumns), filterValue(ids), { maxKeys: 3 }),
      fc.record({ AND: fc.array(tie('tree'), { maxLength: 3 }) }),
      fc.record({ OR: fc.array(tie('tree'), { maxLength: 3 }) }),
      fc.record({ NOT: fc.array(tie('tree'), { maxLength: 2 }) }),
    ),
  }));
  return tree;
}

/**
 * A value that satisfies `schema` (or is null where the schema allows it). Names of properties
 * and parameters pick fixture ids; `filters` get the filter language.
 */
export function valueFor(schema: JsonSchema, ids: FixtureIds, name = ''): fc.Arbitrary<unknown> {
  const known = knownIdsFor(name, ids);
  const base = baseValueFor(schema, ids, name);
  const withKnown = known !== undefined && schema.type === 'string' ? fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 4 }, { arbitrary: base, weight: 1 }) : base;
  return schema.nullable === true ? fc.oneof({ arbitrary: withKnown, weight: 5 }, { arbitrary: fc.constant(null), weight: 1 }) : withKnown;
}

function baseValueFor(schema: JsonSchema, ids: FixtureIds, name: string): fc.Arbitrary<unknown> {
  if (schema.enum !== undefined && schema.enum.length > 0) return fc.constantFrom(...schema.enum);
  if (name === 'filters' || name === 'filter') return filterArbitrary(ids);
  switch (schema.type) {
    case 'string': {
      if (schema.format === 'date-time') return isoTime;
      if (schema.pattern !== undefined) return idString(schema.minLength ?? 1, schema.maxLength ?? 24);
      const maxLength = Math.min(schema.maxLength ?? 40, 40);
      const minLength = Math.min(schema.minLength ?? 0, maxLength);
      // mostly printable ASCII, some any Unicode text (emoji, combining marks, other scripts)
      return fc.oneof(
        { arbitrary: fc.string({ minLength, maxLength }), weight: 3 },
        { arbitrary: fc.string({ unit: 'grapheme', minLength, maxLength }), weight: 1 },
      );
    }
    case 'integer': {
      const small = fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 1000, 1_000_000) });
      if (schema.maximum !== undefined) return small;
      // no upper bound: the large values it allows too (32-bit and 2^53 edges)
      const large = [2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, -(2 ** 31), -(2 ** 53 - 1)].filter((n) => n >= (schema.minimum ?? -Infinity));
      return fc.oneof({ arbitrary: small, weight: 8 }, { arbitrary: fc.constantFrom(...large), weight: 1 });
    }
    case 'number': {
      const min = schema.minimum ?? -10;
      const max = schema.maximum ?? 10;
      // and the edges a bound allows: the bounds themselves, zero, -0, the smallest double
      const edges = [min, max, 0, -0, 5e-324].filter((n) => n >= min && n <= max);
      return fc.oneof({ arbitrary: fc.double({ min, max, noNaN: true }), weight: 6 }, { arbitrary: fc.constantFrom(...edges), weight: 1 });
    }
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const min = schema.minItems ?? 0;
      const max = Math.min(schema.maxItems ?? 4, Math.max(min, 4));
      return fc.array(valueFor(schema.items ?? {}, ids, name), { minLength: min, maxLength: max });
    }
    case 'object':
      return objectFor(schema, ids);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectFor(schema: JsonSchema, ids: FixtureIds): fc.Arbitrary<unknown> {
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0 && typeof schema.additionalProperties === 'object') {
    // maps keyed by id, such as the peer map of add-peers
    const value = valueFor(schema.additionalProperties, ids);
    return fc.dictionary(fc.oneof({ arbitrary: fc.constantFrom(...ids.peers), weight: 3 }, { arbitrary: idString(1, 12), weight: 1 }), value, { minKeys: 1, maxKeys: 3 });
  }
  if (properties.length === 0) {
    // free-form maps: metadata, configuration, peer maps of add-peers
    return fc.dictionary(fc.oneof(fc.constantFrom(...ids.peers), fc.string({ maxLength: 10 })), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
  }
  const required = new Set(schema.required ?? []);
  const fields = Object.fromEntries(properties.map(([key, sub]) => [key, valueFor(sub, ids, key)]));
  return fc.record(fields, { requiredKeys: properties.map(([key]) => key).filter((key) => required.has(key)) });
}
