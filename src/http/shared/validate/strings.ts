import { INVALID, JsonObject, Schema, codePointLength, item, plural } from './core.js';

export interface StringRules {
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  description?: string;
}

interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * The text with U+FFFD in place of each unpaired UTF-16 surrogate. JSON can spell one
 * (`"\ud83d"`: what `JSON.stringify` writes for a string cut inside an emoji), UTF-8 cannot, so
 * the store would keep U+FFFD (or worse, one per byte of its encoding); reading it so here makes
 * the answer to a write the same as what is read back later.
 */
export function wellFormed(text: string): string {
  return (text as unknown as WellFormed).isWellFormed() ? text : (text as unknown as WellFormed).toWellFormed();
}

export function str(rules: StringRules = {}): Schema<string> {
  const regex = rules.pattern === undefined ? undefined : new RegExp(rules.pattern);
  return {
    parse(raw, loc, errors) {
      if (typeof raw !== 'string') {
        errors.push(item('string_type', loc, 'Input should be a valid string', raw));
        return INVALID;
      }
      const input = wellFormed(raw);
      if (rules.minLength !== undefined || rules.maxLength !== undefined) {
        const length = codePointLength(input);
        if (rules.minLength !== undefined && length < rules.minLength) {
          errors.push(
            item('string_too_short', loc, `String should have at least ${plural(rules.minLength, 'character')}`, raw, {
              min_length: rules.minLength,
            }),
          );
          return INVALID;
        }
        if (rules.maxLength !== undefined && length > rules.maxLength) {
          errors.push(
            item('string_too_long', loc, `String should have at most ${plural(rules.maxLength, 'character')}`, raw, {
              max_length: rules.maxLength,
            }),
          );
          return INVALID;
        }
      }
      if (regex !== undefined && !regex.test(input)) {
        errors.push(
          item('string_pattern_mismatch', loc, `String should match pattern '${rules.pattern}'`, raw, {
            pattern: rules.pattern,
          }),
        );
        return INVALID;
      }
      return input;
    },
    jsonSchema() {
      const schema: JsonObject = { type: 'string' };
      if (rules.minLength !== undefined) schema.minLength = rules.minLength;
      if (rules.maxLength !== undefined) schema.maxLength = rules.maxLength;
      if (rules.pattern !== undefined) schema.pattern = rules.pattern;
      if (rules.description !== undefined) schema.description = rules.description;
      return schema;
    },
  };
}
