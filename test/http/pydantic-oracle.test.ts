import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  bool,
  choice,
  datetime,
  dict,
  float,
  int,
  INVALID,
  list,
  model,
  nullable,
  optional,
  record,
  required,
  str,
  type Schema,
  type ValidationItem,
} from '../../src/http/shared/validate.js';
import { epochMicros } from '../../src/storage/precise-date.js';

/*
 * Engram's validators against pydantic's own answers: test/support/pydantic-oracle.json holds
 * what pydantic v2 answered for each input (written by scripts/pydantic-oracle.py, with the
 * pydantic the reference runs on), the value or the first error's type, msg and ctx. Inputs are
 * JSON texts, parsed here as a request body is.
 */

interface OracleCase {
  field: {
    kind: 'bool' | 'int' | 'float' | 'str' | 'datetime' | 'list' | 'literal' | 'enum' | 'dict' | 'record' | 'nullable' | 'model';
    ge?: number;
    le?: number;
    minLength?: number;
    maxLength?: number;
    pattern?: string;
    values?: string[];
  };
  input: string;
  value?: unknown;
  errors?: { type: string; loc: (string | number)[]; msg: string; input: unknown; ctx?: Record<string, unknown> }[];
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
    case 'list':
      return list(int(), { minLength: field.minLength, maxLength: field.maxLength });
    case 'literal':
      return choice(field.values ?? []);
    case 'enum':
      return choice(field.values ?? [], 'enum');
    case 'dict':
      return dict();
    case 'record':
      return record(bool());
    case 'nullable':
      return nullable(int());
    case 'model':
      // pydantic: a: int (required), b: str = 'x', c: Optional[list[int]] = None
      return model({ a: required(int()), b: optional(str(), () => 'x'), c: optional(nullable(list(int())), () => null) });
  }
}

/** A value as JSON gives it back: what the wire shows of an error's input. */
const wire = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

const label = (c: OracleCase) => `${c.field.kind}${c.field.ge !== undefined ? ` ${c.field.ge}..${c.field.le}` : ''}${c.field.pattern !== undefined ? ' id' : ''} ${c.input}`;

describe(`validators against pydantic ${oracle.pydantic}`, () => {
  it('holds enough cases of each kind to mean something', () => {
    for (const kind of ['bool', 'int', 'float', 'str', 'datetime', 'list', 'literal', 'enum', 'dict', 'record', 'nullable', 'model']) {
      expect(oracle.cases.filter((c) => c.field.kind === kind).length, kind).toBeGreaterThanOrEqual(15);
    }
  });

  it.each(oracle.cases.map((c) => [label(c), c] as const))('%s', (_name, c) => {
    const errors: ValidationItem[] = [];
    const parsed = schemaOf(c.field).parse(JSON.parse(c.input), ['v'], errors);
    if (c.errors !== undefined) {
      expect(parsed).toBe(INVALID);
      const ours = errors.map((e) => ({ type: e.type, loc: e.loc.slice(1), msg: e.msg, input: wire(e.input), ...(e.ctx !== undefined ? { ctx: e.ctx } : {}) }));
      expect(ours).toEqual(c.errors);
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
