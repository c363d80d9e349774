/*
 * Python renderings and number parsing, so that filter errors read as the reference server's
 * (a Python service) do: type names, repr() and str() of JSON values, float() and int() of text.
 */
import type { FilterNumber } from '../../storage/store.js';

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Python type name of a JSON value (`str`, `int`, `NoneType` ...). */
export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'int' : 'float';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

function pyNumber(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
  if (Number.isSafeInteger(n)) return String(n === 0 ? 0 : n);
  const [mantissa, exp] = n.toExponential().split('e');
  const e = Number(exp);
  if (e >= -4 && e < 16) return Number.isInteger(n) ? `${BigInt(n)}.0` : String(n);
  const digits = String(Math.abs(e)).padStart(2, '0');
  return `${mantissa}e${e < 0 ? '-' : '+'}${digits}`;
}

function pyStringRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && /[\p{C}\p{Z}]/u.test(ch)) {
      const cp = ch.codePointAt(0) ?? 0;
      if (cp <= 0xff) out += `\\x${cp.toString(16).padStart(2, '0')}`;
      else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`;
      else out += `\\U${cp.toString(16).padStart(8, '0')}`;
    } else out += ch;
  }
  return out + quote;
}

/** Python repr() of a JSON value. */
export function pyRepr(v: unknown, depth = 0): string {
  if (depth > 100) return '...';
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNumber(v);
  if (typeof v === 'string') return pyStringRepr(v);
  if (Array.isArray(v)) return `[${v.map((x) => pyRepr(x, depth + 1)).join(', ')}]`;
  if (isObject(v)) {
    const items = Object.entries(v).map(([k, x]) => `${pyStringRepr(k)}: ${pyRepr(x, depth + 1)}`);
    return `{${items.join(', ')}}`;
  }
  return String(v);
}

/** Python str() of a JSON value. */
export function pyStr(v: unknown): string {
  return typeof v === 'string' ? v : pyRepr(v);
}

const PY_INT = /^[+-]?\d(?:_?\d)*$/;
const PY_FLOAT = /^[+-]?(?:\d(?:_?\d)*\.?(?:\d(?:_?\d)*)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const PY_SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/** A number operand; NaN is mapped to +Infinity (PostgreSQL's ordering of NaN). */
export function numberOperand(value: number): FilterNumber {
  if (Number.isNaN(value) || value === Infinity) return { value: Infinity, text: 'Infinity' };
  if (value === -Infinity) return { value: -Infinity, text: '-Infinity' };
  return { value, text: String(value) };
}

/** Python float(s)/int(s) of a string, or null when Python would raise ValueError. */
export function parsePyNumber(s: string): FilterNumber | null {
  const t = s.trim();
  const special = PY_SPECIAL.exec(t);
  if (special) {
    if (special[2].toLowerCase() === 'nan') return numberOperand(NaN);
    return numberOperand(special[1] === '-' ? -Infinity : Infinity);
  }
  if (!PY_FLOAT.test(t)) return null;
  const plain = t.replace(/_/g, '');
  const value = Number(plain);
  // Python int(): exact digits, kept as text so PostgreSQL compares them without rounding.
  if (PY_INT.test(t)) return { value, text: plain.replace(/^\+/, '') };
  return numberOperand(value);
}

/** Python float(v) for any JSON value; null for TypeError/ValueError. */
export function pyFloat(v: unknown): FilterNumber | null {
  if (typeof v === 'boolean') return numberOperand(v ? 1 : 0);
  if (typeof v === 'number') return numberOperand(v);
  if (typeof v === 'string') return parsePyNumber(v);
  return null;
}
