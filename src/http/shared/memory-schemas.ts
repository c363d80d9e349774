import { scopeField } from './scope-schemas.js';
import { conclusionTokenProblem } from '../../domain/memory/conclusions.js';
import { DEFAULT_MAX_CONCLUSIONS } from '../../domain/memory/representation.js';
import { FORGET_DEFAULT_LIMIT, FORGET_MAX_LIMIT, type ForgetRequest } from '../../domain/memory/forget.js';
import { invalidInput } from '../../domain/errors.js';
import { pyRepr } from '../../domain/filters/python-format.js';
import type { JsonObject } from '../../storage/store.js';
import { cleanText } from './fields.js';
import {
  bool,
  dict,
  float,
  int,
  isPlainObject,
  list,
  model,
  nullable,
  optional,
  refine,
  required,
  str,
  transform,
  type Infer,
} from './validate.js';

/*
 * Request bodies of conclusions (v3) / observations (v2), peer cards and representations
 * (shared/reference/openapi/v3.json and v2.json), and the session allowlist of §5.6.
 */

type Generation = 'v2' | 'v3';

/** Most characters in a conclusion (contract §7.5). */
export const MAX_CONCLUSION_CHARS = 65_535;

const conclusionContent = refine(transform(str({ minLength: 1, maxLength: MAX_CONCLUSION_CHARS }), cleanText), conclusionTokenProblem);

/** One conclusion; v2 requires its session, v3 makes it optional (contract §9.1). */
export function conclusionCreate(generation: Generation) {
  return model(
    {
      content: required(conclusionContent),
      observer_id: required(str()),
      observed_id: required(str()),
      session_id: generation === 'v3' ? optional(nullable(str()), () => null) : required(str()),
      // facts over time (docs/reasoning.md): the ids of current conclusions this one replaces
      ...(generation === 'v3' ? { supersedes: optional(transform(nullable(list(str({ minLength: 1 }), { maxLength: 100 })), (v) => v ?? [])) } : {}),
    },
    { title: generation === 'v3' ? 'ConclusionCreate' : 'ObservationCreate' },
  );
}

/** The contents of a conclusion batch's items, whatever else is wrong with it (for countAhead). */
export function conclusionContents(rawBody: unknown): string[] {
  if (!isPlainObject(rawBody)) return [];
  const out: string[] = [];
  for (const key of ['conclusions', 'observations']) {
    const items = Object.hasOwn(rawBody, key) ? rawBody[key] : undefined;
    if (!Array.isArray(items)) continue;
    for (const item of items) if (isPlainObject(item) && typeof item.content === 'string') out.push(item.content);
  }
  return out;
}

/** `{"conclusions": [...]}`; the key `observations` is accepted too (contract §7.5). */
export const conclusionBatchV3 = model(
  { conclusions: required(list(conclusionCreate('v3'), { minLength: 1, maxLength: 100 }), ['observations']) },
  { title: 'ConclusionBatchCreate' },
);

/** v2: `{"observations": [...]}`, each with a required session (contract §9.1). */
export const observationBatchV2 = model(
  { observations: required(list(conclusionCreate('v2'), { minLength: 1, maxLength: 100 })) },
  { title: 'ObservationBatchCreate' },
);

export const conclusionQuery = model(
  {
    query: required(transform(str(), cleanText)),
    top_k: optional(int({ ge: 1, le: 100 }), () => 10),
    distance: optional(nullable(float({ ge: 0, le: 1 })), () => null),
    filters: optional(nullable(dict()), () => null),
  },
  { title: 'ConclusionQuery' },
);

export const peerCardSet = model({ peer_card: required(list(transform(str(), cleanText))) }, { title: 'PeerCardSet' });

const optionalText = optional(transform(nullable(transform(str(), cleanText)), (v) => v ?? undefined));
const optionalTopK = optional(transform(nullable(int({ ge: 1, le: 100 })), (v) => v ?? undefined));
const optionalDistance = optional(nullable(float({ ge: 0, le: 1 })), () => null);
const optionalFlag = optional(nullable(bool()), () => null);
const maxConclusions = optional(
  transform(nullable(int({ ge: 1, le: 100 })), (v) => v ?? DEFAULT_MAX_CONCLUSIONS),
  () => DEFAULT_MAX_CONCLUSIONS,
);

export const representationGetV3 = model(
  {
    session_id: optionalText,
    filters: optional(nullable(dict()), () => null),
    target: optionalText,
    search_query: optionalText,
    search_top_k: optionalTopK,
    search_max_distance: optionalDistance,
    include_most_frequent: optionalFlag,
    max_conclusions: maxConclusions,
    // shared/reference/scopes.md S6.2
    scope: scopeField,
  },
  { title: 'PeerRepresentationGet' },
);

export const representationGetV2 = model(
  {
    session_id: optionalText,
    target: optionalText,
    search_query: optionalText,
    search_top_k: optionalTopK,
    search_max_distance: optionalDistance,
    include_most_derived: optionalFlag,
    max_observations: maxConclusions,
  },
  { title: 'PeerRepresentationGet' },
);

const peerContextCommon = {
  target: optional(str()),
  search_query: optional(transform(str(), cleanText)),
  search_top_k: optional(int({ ge: 1, le: 100 })),
  search_max_distance: optional(float({ ge: 0, le: 1 })),
};

/** Query parameters of `GET .../peers/{p}/context` (contract §7.2). */
export const peerContextQueryV3 = {
  ...peerContextCommon,
  include_most_frequent: optional(bool(), () => true),
  max_conclusions: optional(int({ ge: 1, le: 100 })),
};

/** v2 names two of them differently (contract §9.1). */
export const peerContextQueryV2 = {
  ...peerContextCommon,
  include_most_derived: optional(bool(), () => true),
  max_observations: optional(int({ ge: 1, le: 100 })),
};

/** Most sessions in a `filters.session_id` allowlist (contract §5.6). */
const MAX_ALLOWLIST = 1000;

/** The id pattern every allowlist entry must match (scopes.md S8, point 10). */
const SESSION_ID = /^[a-zA-Z0-9_-]+$/;

function pyStringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  return quote + text.replace(/\\/g, '\\\\').replace(new RegExp(quote, 'g'), `\\${quote}`) + quote;
}

/**
 * The session allowlist of chat and representation bodies (contract §5.6): `filters` may only
 * hold `session_id`, as an id, a list of ids or `{"in": [...]}`; duplicates collapse. Each entry
 * must be a session id (`^[a-zA-Z0-9_-]+$`, scopes.md S8 point 10). A body `session_id` must be
 * in the list. Returns undefined when there are no filters.
 */
export function sessionAllowlist(filters: JsonObject | null | undefined, sessionId: string | undefined): string[] | undefined {
  if (filters === null || filters === undefined) return undefined;
  const unsupported = Object.keys(filters).filter((key) => key !== 'session_id').sort();
  if (unsupported.length > 0) {
    throw invalidInput(
      `Unsupported filter key(s) for this endpoint: [${unsupported.map(pyStringRepr).join(', ')}]. Only 'session_id' is supported.`,
    );
  }
  if (!('session_id' in filters)) throw invalidInput("filters must contain 'session_id'");
  let value = filters.session_id;
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (keys.length !== 1 || keys[0] !== 'in') value = undefined;
    else value = Array.isArray(value.in) ? value.in : undefined;
  } else if (typeof value === 'string') {
    value = [value];
  } else if (!Array.isArray(value)) {
    value = undefined;
  }
  if (value === undefined) {
    throw invalidInput('filters.session_id must be a session id, a list of session ids, or {"in": [...]}');
  }
  // the entries as sent are counted, before their checks and before duplicates collapse (contract §5.6)
  const entries = value as unknown[];
  if (entries.length > MAX_ALLOWLIST) {
    throw invalidInput(`filters.session_id supports at most ${MAX_ALLOWLIST} sessions per request`);
  }
  for (const entry of entries) {
    if (typeof entry !== 'string' || entry === '') throw invalidInput('filters.session_id entries must be non-empty strings');
    // only names a session can have: `*` and the like are refused, not read as a wildcard
    if (!SESSION_ID.test(entry)) {
      throw invalidInput(`Invalid session id in filters.session_id: ${pyRepr(entry)}. Session ids match ^[a-zA-Z0-9_-]+$`);
    }
  }
  const sessions = [...new Set(entries as string[])];
  if (sessionId !== undefined && !sessions.includes(sessionId)) {
    throw invalidInput('session_id must be included in filters.session_id');
  }
  return sessions;
}

/** A forget (docs/forgetting.md): whose memory (`observed`, and `observer` or every observer), what (a query and/or filters), and the preview's token. */
export const ForgetBody = model(
  {
    observed: required(str({ minLength: 1 })),
    observer: optional(nullable(str({ minLength: 1 }))),
    query: optional(nullable(str({ minLength: 1, maxLength: 10_000 }))),
    filters: optional(nullable(dict())),
    include_messages: optional(bool(), () => false),
    limit: optional(int({ ge: 1, le: FORGET_MAX_LIMIT }), () => FORGET_DEFAULT_LIMIT),
    token: optional(nullable(str({ minLength: 1, maxLength: 200 }))),
  },
  { title: 'ForgetRequest' },
);

/** A forget's body as the domain takes it. */
export function forgetRequestOf(body: Infer<typeof ForgetBody>): ForgetRequest {
  return {
    observedId: body.observed,
    observerId: body.observer ?? undefined,
    query: body.query ?? undefined,
    filters: body.filters ?? undefined,
    includeMessages: body.include_messages,
    limit: body.limit,
  };
}
