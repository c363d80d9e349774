import type { JsonObject } from '../../storage/store.js';
import { cleanText, withinSize } from '../shared/fields.js';
import {
  bool,
  dict,
  list,
  model,
  nullable,
  optional,
  refine,
  required,
  str,
  transform,
  type Field,
  type Schema,
  type ValidationItem,
} from '../shared/validate.js';

/*
 * v1 request bodies (shared/reference/openapi/v1.json, bounds from contract-v1 §1-§2). Unknown
 * keys are ignored. NUL characters are dropped from content, labels and metadata (PostgreSQL
 * cannot store them); a name with one is refused, since a name is an id.
 */

/** Longest app or user name (contract-v1 §2.1, §2.2). */
export const MAX_NAME = 100;

function name(): Schema<string> {
  return refine(str({ minLength: 1, maxLength: MAX_NAME }), (value) =>
    value.includes('\u0000') ? 'Name cannot contain NUL characters' : undefined,
  );
}

const metadata = transform(withinSize(dict(), 'Metadata'), cleanText);
const text = (maxLength: number) => transform(str({ maxLength }), cleanText);

/** Optional and nullable: null and absent both mean "leave unchanged" (seed 4.1). */
function unchangedWhenNull<T>(schema: Schema<T>, aliases?: string[]): Field<T | undefined> {
  return { ...optional(transform(nullable(schema), (value) => value ?? undefined)), aliases };
}

/** `filter`: metadata containment; null or absent is no filter (§0.4). */
const filter = optional(nullable(dict()), () => null as JsonObject | null);

export const AppCreate = model(
  { name: required(name()), metadata: optional(metadata, () => ({})) },
  { title: 'AppCreate' },
);

/** Engram bounds a new name like a created one (the reference takes any string, even ""). */
export const AppUpdate = model({ name: unchangedWhenNull(name()), metadata: unchangedWhenNull(metadata) }, { title: 'AppUpdate' });

export const UserCreate = model(
  { name: required(name()), metadata: optional(metadata, () => ({})) },
  { title: 'UserCreate' },
);

export const UserUpdate = model({ name: unchangedWhenNull(name()), metadata: unchangedWhenNull(metadata) }, { title: 'UserUpdate' });

/** AppGet, UserGet, MessageGet: `{filter}`. */
export const ListBody = model({ filter }, { title: 'ListBody' });

export const SessionCreate = model({ metadata: optional(metadata, () => ({})) }, { title: 'SessionCreate' });

export const SessionList = model({ filter, is_active: optional(bool(), () => false) }, { title: 'SessionGet' });

export const SessionUpdate = model({ metadata: required(metadata) }, { title: 'SessionUpdate' });

export const MessageCreate = model(
  { content: required(text(50_000)), is_user: required(bool()), metadata: optional(metadata, () => ({})) },
  { title: 'MessageCreate' },
);

/** At most 100 messages; an empty batch is a 422 here (the reference fails with a 500). */
export const MessageBatchCreate = model(
  { messages: required(list(MessageCreate, { minLength: 1, maxLength: 100 })) },
  { title: 'MessageBatchCreate' },
);

export const MessageUpdate = model({ metadata: required(metadata) }, { title: 'MessageUpdate' });

/**
 * `metamessage_type` is the documented key and `label` an accepted alias: when both are sent,
 * `metamessage_type` wins even if it is null or invalid, and errors name the key that was sent
 * (contract-v1 §1.0).
 */
const LABEL_ALIAS = ['label'];

export const MetamessageCreate = model(
  {
    metamessage_type: required(transform(str({ minLength: 1, maxLength: 50 }), cleanText), LABEL_ALIAS),
    content: required(text(50_000)),
    session_id: optional(nullable(str()), () => null),
    message_id: optional(nullable(str()), () => null),
    metadata: optional(metadata, () => ({})),
  },
  { title: 'MetamessageCreate' },
);

/**
 * Seed 4.1: all four fields optional and nullable, in the reference's validation order. Labels
 * up to the stored limit of 512 characters are accepted (the reference answers 500 above it).
 */
export const MetamessageUpdate = model(
  {
    session_id: unchangedWhenNull(str()),
    message_id: unchangedWhenNull(str()),
    metamessage_type: unchangedWhenNull(text(512), LABEL_ALIAS),
    metadata: unchangedWhenNull(metadata),
  },
  { title: 'MetamessageUpdate' },
);

/** `""` and null match everything (contract-v1 §1.4). */
const exactMatch = (aliases?: string[]) => ({
  ...optional(transform(nullable(str()), (value) => (value === null || value === '' ? undefined : value))),
  aliases,
});

export const MetamessageList = model(
  {
    metamessage_type: exactMatch(LABEL_ALIAS),
    session_id: exactMatch(),
    message_id: exactMatch(),
    filter,
  },
  { title: 'MetamessageGet' },
);

/** Path names are checked as a created name would be (the reference answers 500 past 100). */
export function checkPathName(value: string, param: string): ValidationItem[] {
  const errors: ValidationItem[] = [];
  name().parse(value, ['path', param], errors);
  return errors;
}
