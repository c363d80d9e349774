import { MAX_SESSIONS_PER_ADD } from '../../domain/scopes/scopes.js';
import { scopeNameProblem } from '../../domain/scopes/scope-names.js';
import { metadata, optionalNullable } from './fields.js';
import { INVALID, list, model, nullable, optional, refine, required, str, transform, type Schema, type ValidationItem } from './validate.js';

/*
 * The wire shapes of scopes (shared/reference/scopes.md S2, S6, S7), v3 only.
 */

/** Most scope names in a session create's `scopes` and in a list-form `scope` option. */
export const MAX_SCOPE_NAMES = 100;

/** A scope name: at least one character, then the reference's rules (`Value error, ...`). */
export const scopeName = refine(str({ minLength: 1 }), scopeNameProblem);

/** `scopes` of a session create: at most 100 names; the first bad one is reported at the list. */
export const scopeNames = refine(list(str(), { maxLength: MAX_SCOPE_NAMES }), (names) => {
  for (const name of names) {
    const problem = scopeNameProblem(name);
    if (problem !== undefined) return problem;
  }
  return undefined;
});

export const ScopeCreate = model(
  { id: required(scopeName, ['name']), metadata: optionalNullable(metadata('v3')) },
  { title: 'ScopeCreate' },
);

export const ScopeSessionsAdd = model(
  // duplicates collapse after the list's checks (its limits count the ids as sent)
  { session_ids: required(transform(list(str(), { minLength: 1, maxLength: MAX_SESSIONS_PER_ADD }), (ids) => [...new Set(ids)])) },
  { title: 'ScopeSessionsAdd' },
);


/**
 * The `scope` read option of chat and representation: a name, or a list of 1 to 100 names. A
 * value that fails reports once per branch of the union, as pydantic does: the branch of the
 * JSON type sent carries the rule, the other a type error.
 */
export const scopeOption: Schema<string | string[]> = {
  parse(input, loc, errors) {
    const asName: ValidationItem[] = [];
    const name = scopeName.parse(input, [...loc, 'str'], asName);
    if (name !== INVALID) return name;
    const asList: ValidationItem[] = [];
    const names = scopeNames.parse(input, [...loc, 'list[str]'], asList);
    if (names !== INVALID) {
      if (names.length > 0) return names;
      asList.push({
        type: 'too_short',
        loc: [...loc, 'list[str]'],
        msg: 'List should have at least 1 item after validation, not 0',
        input,
        ctx: { field_type: 'List', min_length: 1, actual_length: 0 },
      });
    }
    errors.push(...asName, ...asList);
    return INVALID;
  },
  jsonSchema: () => ({ anyOf: [scopeName.jsonSchema(), { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: MAX_SCOPE_NAMES }] }),
};

/** The optional `scope` field of chat and representation bodies. */
export const scopeField = optional(nullable(scopeOption));
