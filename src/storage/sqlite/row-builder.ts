/**
 * Row objects made in JavaScript from better-sqlite3's raw rows (arrays of values).
 *
 * better-sqlite3 builds each row object in native code, one property set at a time through V8's
 * API, which costs more than SQLite's own work on most of our reads: a page of 50 messages of 9
 * columns took 240 µs as objects against 85 µs as arrays, and 93 µs as arrays turned into
 * objects by a function made for the statement's columns (bench/README.md, "Rows as arrays").
 * The function is an object literal of the column names, so every row of a statement gets the
 * same shape at once, and the objects are what better-sqlite3 made: properties in column order,
 * a later column of the same name replacing an earlier one, `__proto__` setting the prototype
 * as a property set does.
 */
export type RowBuilder = (values: readonly unknown[]) => Record<string, unknown>;

/** A function that makes the object of a raw row whose columns are `names`. */
export function rowBuilder(names: readonly string[]): RowBuilder {
  // the names are JSON string literals (JSON.stringify quotes and escapes them) and the values
  // are read by index: nothing of the SQL's text but its column names reaches the function
  const properties = names.map((name, index) => `${JSON.stringify(name)}: values[${index}]`).join(', ');
  return new Function('values', `return { ${properties} };`) as RowBuilder;
}
