import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bool, datetime, float, int, INVALID, str, type Schema, type ValidationItem } from '../../src/http/shared/validate.js';
import { epochMicros } from '../../src/storage/precise-date.js';

/*
 * Engram's validators against pydantic's own answers: test/support/pydantic-oracle.json holds
 * what pydantic v2 answered for each input (written by scripts/pydantic-oracle.py, with the
 * pydantic the reference runs on), the value or the first error's type, msg and ctx. Inputs are
 * JSON texts, parsed here as a request body is.
 */

interface OracleCase {
  field: { kind: 'bool' | 'int' | 'float' | 'str' | 'datetime'; ge?: number; le?: number; minLength?: number; maxLength?: number; pattern?: string };
  input: string;
  value?: unknown;
  error?: { type: string; msg: string; ctx?: Record<string, unknown> };
}

const oracle = JSON.parse(readFileSync(new URL('../support/pydantic-oracle.json', import.meta.url), 'utf8')) as { pydantic: string; cases: OracleCase[] };

function schemaOf(field: OracleCase['field']): Schema<unknown> {
  switch (field.kind) {
    case 'bool':
      return bool();
    case 'int':
      return int({ ge: field.ge, le: field.le });
    case 'float':
      return float({ ge: field.ge, le: field.le });
    case 'str':
      return str({ minLength: field.minLength, maxLength: field.maxLength, pattern: field.pattern });
    case 'datetime':
      return datetime();
  }
}

const label = (c: OracleCase) => `${c.field.kind}${c.field.ge !== undefined ? ` ${c.field.ge}..${c.field.le}` : ''}${c.field.pattern !== undefined ? ' id' : ''} ${c.input}`;

describe(`validators against pydantic ${oracle.pydantic}`, () => {
  it('holds enough cases of each kind to mean something', () => {
    for (const kind of ['bool', 'int', 'float', 'str', 'datetime']) {
      expect(oracle.cases.filter((c) => c.field.kind === kind).length, kind).toBeGreaterThanOrEqual(20);
    }
  });

  it.each(oracle.cases.map((c) => [label(c), c] as const))('%s', (_name, c) => {
    const errors: ValidationItem[] = [];
    const parsed = schemaOf(c.field).parse(JSON.parse(c.input), ['v'], errors);
    if (c.error !== undefined) {
      expect(parsed).toBe(INVALID);
      const first = errors[0];
      expect({ type: first.type, msg: first.msg }).toEqual({ type: c.error.type, msg: c.error.msg });
      if (c.error.ctx !== undefined) expect(first.ctx).toEqual(c.error.ctx);
      return;
    }
    expect(errors).toEqual([]);
    if (c.field.kind === 'datetime') {
      expect(epochMicros(parsed as Date)).toBe((c.value as { micros: number }).micros);
    } else {
      expect(parsed).toEqual(c.value);
    }
  });
});
