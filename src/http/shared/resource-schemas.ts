import type { JsonObject } from '../../storage/store.js';
import { MAX_MESSAGE_CHARS } from '../../domain/messages/file-upload.js';
import { USAGE_HOURS } from '../../domain/workspaces/workspace-statistics.js';
import { exceedsTokens } from '../../domain/text/token-count.js';
import type { SessionPeerConfig } from '../../domain/sessions/sessions.js';
import { metadata, optionalNullable, peerName, resourceId, cleanText, withinSize } from './fields.js';
import { scopeNames } from './scope-schemas.js';
import {
  INVALID,
  bool,
  datetime,
  dict,
  int,
  isPlainObject,
  list,
  model,
  nullable,
  optional,
  record,
  refine,
  required,
  setOwn,
  str,
  transform,
  type Schema,
  type ValidationItem,
} from './validate.js';
import { webhookUrlProblem } from '../../domain/webhooks/webhook-url.js';

/*
 * Request bodies of the workspace generations, built per generation where v2 and v3 differ
 * (id length, metadata limits, configuration key names). Each generation's schemas.ts picks.
 */

type Generation = 'v2' | 'v3';

const nullableBool = optional(nullable(bool()), () => null);

function dropNulls(value: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, inner] of Object.entries(value)) if (inner !== null && inner !== undefined) setOwn(out, key, inner);
  return out;
}

/** Longest `custom_instructions` in `o200k_base` tokens (contract §7.1). */
export const MAX_CUSTOM_INSTRUCTIONS_TOKENS = 2000;

/** `reasoning.custom_instructions`: a string of at most 2000 tokens, or null. */
const customInstructions = optional(
  refine(nullable(str()), (text) =>
    text !== null && exceedsTokens(text, MAX_CUSTOM_INSTRUCTIONS_TOKENS)
      ? `custom_instructions exceeds DERIVER.MAX_CUSTOM_INSTRUCTIONS_TOKENS (${MAX_CUSTOM_INSTRUCTIONS_TOKENS} tokens)`
      : undefined,
  ),
  () => null,
);

/**
 * Workspace/session configuration: known sections validated, unknown top-level keys kept
 * verbatim, null-valued fields dropped (contract §7.1).
 */
export function configuration(generation: Generation): Schema<JsonObject> {
  return withinSize(configurationObject(generation), 'Configuration');
}

function configurationObject(generation: Generation): Schema<JsonObject> {
  const reasoning = model({ enabled: nullableBool, custom_instructions: customInstructions });
  const summary = refine(
    model({
      enabled: nullableBool,
      messages_per_short_summary: optional(nullable(int({ ge: 10 })), () => null),
      messages_per_long_summary: optional(nullable(int({ ge: 20 })), () => null),
    }),
    (s) =>
      s.messages_per_short_summary !== null &&
      s.messages_per_long_summary !== null &&
      s.messages_per_short_summary >= s.messages_per_long_summary
        ? 'messages_per_short_summary must be less than messages_per_long_summary'
        : undefined,
  );
  // a Map, so that keys such as `constructor` or `__proto__` are free keys, not sections
  const sections = new Map<string, Schema<JsonObject>>([
    [generation === 'v3' ? 'reasoning' : 'deriver', reasoning],
    ['peer_card', model({ use: nullableBool, create: nullableBool })],
    ['summary', summary],
    ['dream', model({ enabled: nullableBool })],
  ]);
  return {
    parse(input, loc, errors) {
      if (!isPlainObject(input)) {
        errors.push({
          type: 'model_attributes_type',
          loc,
          msg: 'Input should be a valid dictionary or object to extract fields from',
          input,
        });
        return INVALID;
      }
      const out: JsonObject = {};
      let ok = true;
      for (const [key, value] of Object.entries(input)) {
        const section = sections.get(key);
        if (section === undefined) {
          setOwn(out, key, value);
          continue;
        }
        if (value === null) continue;
        const parsed = section.parse(value, [...loc, key], errors);
        if (parsed === INVALID) ok = false;
        else setOwn(out, key, dropNulls(parsed));
      }
      return ok ? out : INVALID;
    },
    jsonSchema: () => ({
      type: 'object',
      additionalProperties: true,
      properties: Object.fromEntries([...sections].map(([k, s]) => [k, s.jsonSchema()])),
    }),
  };
}

/** Session-level peer config; both keys always present in the result (contract §3.1). */
export const sessionPeerConfig: Schema<SessionPeerConfig> = model(
  { observe_me: nullableBool, observe_others: nullableBool },
  { title: 'SessionPeerConfig' },
);

/**
 * `{peerId: config}` as an insertion-ordered map (JSON's last duplicate key already won). Keys
 * are checked as peer ids; the reference lets bad ones through to a 500.
 */
export function peerConfigMap(generation: Generation): Schema<Map<string, SessionPeerConfig>> {
  const entries = record(sessionPeerConfig);
  const peerId = peerName(generation);
  return {
    parse(input, loc, errors) {
      const parsed = entries.parse(input, loc, errors);
      if (parsed === INVALID) return INVALID;
      let ok = true;
      for (const key of Object.keys(parsed)) if (peerId.parse(key, [...loc, key], errors) === INVALID) ok = false;
      return ok ? new Map(Object.entries(parsed)) : INVALID;
    },
    jsonSchema: () => entries.jsonSchema(),
  };
}

export function workspaceCreate(generation: Generation) {
  return model(
    {
      id: required(resourceId(generation), ['name']),
      metadata: optional(metadata(generation), () => ({})),
      configuration: optional(configuration(generation), () => ({})),
    },
    { title: 'WorkspaceCreate' },
  );
}

export function workspaceUpdate(generation: Generation) {
  return model(
    { metadata: optionalNullable(metadata(generation)), configuration: optionalNullable(configuration(generation)) },
    { title: 'WorkspaceUpdate' },
  );
}

export function peerCreate(generation: Generation) {
  return model(
    {
      id: required(resourceId(generation), ['name']),
      metadata: optionalNullable(metadata(generation)),
      configuration: optionalNullable(withinSize(dict(), 'Configuration')),
    },
    { title: 'PeerCreate' },
  );
}

export function peerUpdate(generation: Generation) {
  return model(
    { metadata: optionalNullable(metadata(generation)), configuration: optionalNullable(withinSize(dict(), 'Configuration')) },
    { title: 'PeerUpdate' },
  );
}

export function sessionCreate(generation: Generation) {
  return model(
    {
      id: required(resourceId(generation), ['name']),
      metadata: optionalNullable(metadata(generation)),
      peers: { ...optionalNullable(peerConfigMap(generation)), aliases: ['peer_names'] },
      configuration: optionalNullable(configuration(generation)),
      // scopes the session joins (shared/reference/scopes.md S7.1)
      ...(generation === 'v3' ? { scopes: optionalNullable(scopeNames) } : {}),
    },
    { title: 'SessionCreate' },
  );
}

export function sessionUpdate(generation: Generation) {
  return model(
    { metadata: optionalNullable(metadata(generation)), configuration: optionalNullable(configuration(generation)) },
    { title: 'SessionUpdate' },
  );
}

export const peerIdList = list(str());


export function messageCreate(generation: Generation) {
  return model(
    {
      content: required(transform(str({ maxLength: MAX_MESSAGE_CHARS }), cleanText)),
      // the reference lets any string through to a 500 on peer creation; Engram checks it as a peer id
      peer_id: required(peerName(generation)),
      metadata: optionalNullable(metadata(generation)),
      configuration: optionalNullable(
        model({ reasoning: optionalNullable(model({ enabled: nullableBool, custom_instructions: customInstructions })) }),
      ),
      created_at: optionalNullable(datetime()),
    },
    { title: 'MessageCreate' },
  );
}

export function messageBatch(generation: Generation) {
  return model({ messages: required(list(messageCreate(generation), { minLength: 1, maxLength: 100 })) }, { title: 'MessageBatchCreate' });
}

export const messageSearchFields = {
  query: required(transform(str(), cleanText)),
  filters: optional(nullable(dict())),
  limit: optional(int({ ge: 1, le: 100 }), () => 10),
};

export const messageSearch = model(messageSearchFields, { title: 'MessageSearchOptions' });

export function messageUpdate(generation: Generation) {
  return model({ metadata: optionalNullable(metadata(generation)) }, { title: 'MessageUpdate' });
}

export function webhookCreate(generation: Generation) {
  return model(
    {
      url: required(refine(str({ maxLength: 2048 }), (url) => webhookUrlProblem(url, generation === 'v3'))),
    },
    { title: 'WebhookEndpointCreate' },
  );
}

/** Validates a path id the way the reference's create schemas would (it answers 500 instead). */
export function checkPathId(generation: Generation, value: string, name: string): JsonObject | undefined {
  const errors: ValidationItem[] = [];
  resourceId(generation).parse(value, ['path', name], errors);
  return errors.length > 0 ? { detail: errors } : undefined;
}

/** The query of a workspace's statistics: the hours of model usage counted. */
export const statisticsQuery = {
  hours: optional(int({ ge: USAGE_HOURS.min, le: USAGE_HOURS.max, description: 'Hours of model usage counted, the current one included' }), () => USAGE_HOURS.default),
};
