/**
 * SQL fragments: text with `?` placeholders plus the values bound to them, in order. Built with
 * the `sql` tag, whose interpolations are fragments themselves (`bind(v)` for a value, `raw(s)`
 * for trusted text), so a value can never be spliced into the text by accident.
 */
export interface Sql {
  readonly text: string;
  readonly values: readonly unknown[];
}

export const raw = (text: string): Sql => ({ text, values: [] });

export const bind = (value: unknown): Sql => ({ text: '?', values: [value] });

export function sql(strings: TemplateStringsArray, ...parts: Sql[]): Sql {
  let text = strings[0];
  const values: unknown[] = [];
  parts.forEach((part, i) => {
    text += part.text + strings[i + 1];
    for (const v of part.values) values.push(v);
  });
  return { text, values };
}

/** Joins conditions; long lists are grouped as a balanced tree to keep SQLite's expression depth low. */
export function join(parts: readonly Sql[], op: 'AND' | 'OR'): Sql {
  if (parts.length === 1) return parts[0];
  if (parts.length <= 8) {
    const values: unknown[] = [];
    for (const p of parts) for (const v of p.values) values.push(v);
    return { text: `(${parts.map((p) => p.text).join(` ${op} `)})`, values };
  }
  const mid = Math.ceil(parts.length / 2);
  return join([join(parts.slice(0, mid), op), join(parts.slice(mid), op)], op);
}
