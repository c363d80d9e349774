import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rowBuilder } from '../../src/storage/sqlite/row-builder.js';
import { SqliteDriver } from '../../src/storage/sqlite/sqlite-driver.js';

/*
 * The SQLite driver reads rows as arrays and makes their objects itself (row-builder.ts): the
 * objects must be the ones better-sqlite3 makes, whatever the column names and values.
 */

const native = new Database(':memory:');
afterAll(() => native.close());

/** better-sqlite3's own object of the statement's first row, and ours from its raw row. */
function both(sql: string, params: unknown[] = []) {
  const statement = native.prepare(sql);
  const expected = statement.get(...params) as Record<string, unknown>;
  const names = statement.columns().map((column) => column.name);
  const values = statement.raw(true).get(...params) as unknown[];
  return { expected, made: rowBuilder(names)(values) };
}

describe('rowBuilder', () => {
  it.each([
    ['plain names and every kind of value', `SELECT 1 AS a, 2.5 AS b, 'text' AS c, NULL AS d, x'00ff' AS e, 9007199254740993 AS f`],
    ['a repeated name (the later column wins)', 'SELECT 1 AS a, 2 AS a, 3 AS b'],
    ['names that look like indexes (ordered first, as V8 orders them)', 'SELECT 1 AS "2", 2 AS x, 3 AS "1", 4 AS "01"'],
    ['quotes, backslashes, line breaks, a closing brace, non-ASCII and an empty name', `SELECT 1 AS "a""b", 2 AS "c\\d", 3 AS "e\nf", 4 AS "}; throw 1; //", 5 AS "zoë 🦉", 6 AS ""`],
    ['__proto__ (a prototype set, dropped for a value that is not an object)', 'SELECT 1 AS "__proto__", 2 AS x'],
    ['names of Object.prototype', 'SELECT 1 AS "constructor", 2 AS "toString", 3 AS "hasOwnProperty"'],
  ])('makes the object better-sqlite3 makes: %s', (_, sql) => {
    const { expected, made } = both(sql);
    expect(made).toEqual(expected);
    expect(Object.keys(made)).toEqual(Object.keys(expected));
    expect(Object.getPrototypeOf(made)).toBe(Object.getPrototypeOf(expected));
  });

  it('makes a fresh object per row, the values read by position', () => {
    const build = rowBuilder(['x', 'y']);
    const first = build([1, 'a']);
    const second = build([2, 'b']);
    expect([first, second]).toEqual([{ x: 1, y: 'a' }, { x: 2, y: 'b' }]);
    expect(first).not.toBe(second);
  });
});

describe('the SQLite driver with rows made from arrays', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engram-rows-'));
  const driver = new SqliteDriver(join(dir, 'rows.db'), { checkpoints: 'inline', vectorScans: 'inline' });
  afterAll(async () => {
    await driver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives all, get and RETURNING rows as objects, and a statement of no rows none', async () => {
    await driver.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)');
    expect(await driver.get('INSERT INTO t (name) VALUES (?) RETURNING id, name', ['ann'])).toEqual({ id: 1, name: 'ann' });
    await driver.run('INSERT INTO t (name) VALUES (?), (?)', ['bob', 'cy']);
    expect(await driver.all('SELECT id, name FROM t ORDER BY id')).toEqual([
      { id: 1, name: 'ann' },
      { id: 2, name: 'bob' },
      { id: 3, name: 'cy' },
    ]);
    expect(await driver.get('SELECT name FROM t WHERE id = ?', [2])).toEqual({ name: 'bob' });
    expect(await driver.get('SELECT name FROM t WHERE id = ?', [9])).toBeUndefined();
    expect(await driver.all('SELECT name FROM t WHERE id > ?', [9])).toEqual([]);
    await expect(driver.all('UPDATE t SET name = name')).rejects.toThrow(/does not return data/);
  });

  it('names the columns a cached `SELECT *` has after the table gained one', async () => {
    await driver.exec('CREATE TABLE u (id INTEGER PRIMARY KEY, a TEXT)');
    await driver.run(`INSERT INTO u (a) VALUES ('x')`);
    expect(await driver.all('SELECT * FROM u')).toEqual([{ id: 1, a: 'x' }]);
    await driver.exec(`ALTER TABLE u ADD COLUMN b TEXT NOT NULL DEFAULT 'y'`);
    expect(await driver.all('SELECT * FROM u')).toEqual([{ id: 1, a: 'x', b: 'y' }]);
    expect(await driver.get('SELECT * FROM u')).toEqual({ id: 1, a: 'x', b: 'y' });
  });
});
