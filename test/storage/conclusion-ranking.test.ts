import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/runtime/database.js';
import { conclusionTerms, rankConclusionsByText, READ_WHOLE_COLLECTION, type ConclusionSearchSteps } from '../../src/domain/memory/conclusion-search.js';
import type { ConclusionRecord, Store } from '../../src/storage/store.js';
import { DIALECT, TEST_DATABASE_URL, uniqueId } from '../support/test-app.js';

let counter = 0;

/** Stores conclusions of one collection, the first the oldest. */
async function addConclusions(store: Store, workspaceId: string, observerId: string, observedId: string, contents: string[]) {
  const now = Date.UTC(2026, 0, 1) + counter * 1000;
  await store.transaction(async (tx) => {
    await tx.workspaces.createIfAbsent({ id: workspaceId, metadata: {}, configuration: {} }, new Date(now));
    await tx.peers.ensure(workspaceId, [...new Set([observerId, observedId])], new Date(now));
    const rows: ConclusionRecord[] = contents.map((content, i) => ({
      id: `r${++counter}-${uniqueId('c')}`.slice(0, 21),
      workspaceId,
      observerId,
      observedId,
      sessionId: null,
      content,
      level: 'explicit',
      sourceIds: null,
      timesDerived: 1,
      createdAt: new Date(now + i),
    }));
    for (let start = 0; start < rows.length; start += 100) await tx.memory.insertConclusions(rows.slice(start, start + 100));
  });
}

const rank = async (store: Store, collection: { workspaceId: string; observerId: string; observedId: string }, query: string, limit = 10, steps?: ConclusionSearchSteps) =>
  (await rankConclusionsByText(store, { ...collection, query, filter: null, limit }, steps)).map((c) => c.content);

/** A small deterministic generator (mulberry32), so both databases get the same facts. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PEOPLE = ['Rodrigo', 'Mei', 'Oskar', 'Amara', 'Tomasz', 'Ines'];
const ACTIVITIES = ['hiking', 'baking bread', 'painting', 'swimming', 'playing chess', 'gardening', 'running', 'reading novels'];
const PLACES = ['Lisbon', 'Porto', 'Kyoto', 'the lake house', 'the library', 'the community garden'];
const FEELINGS = ['loves', 'is worried about', 'talks often about', 'wants to get better at', 'spent the weekend'];

/** Generated facts about one person, each distinct: activities, places, people, numbers. */
function generatedFacts(seed: number, count: number): string[] {
  const next = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)];
  const facts = new Set<string>();
  while (facts.size < count) {
    const n = 1 + Math.floor(next() * 60);
    switch (Math.floor(next() * 4)) {
      case 0:
        facts.add(`She ${pick(FEELINGS)} ${pick(ACTIVITIES)} with ${pick(PEOPLE)} at ${pick(PLACES)} (${n})`);
        break;
      case 1:
        facts.add(`She went ${pick(ACTIVITIES)} ${n} times in ${2000 + n}`);
        break;
      case 2:
        facts.add(`${pick(PEOPLE)} and she were ${pick(ACTIVITIES)} near ${pick(PLACES)} on day ${n}`);
        break;
      default:
        facts.add(`Her friend ${pick(PEOPLE)} ${pick(FEELINGS)} ${pick(ACTIVITIES)}, she said ${n} times`);
    }
  }
  return [...facts];
}

const QUESTIONS = [
  'What does she love doing with Rodrigo?',
  'Where did she go hiking?',
  'How many times did she go swimming in 2014?',
  'Who was baking bread near Kyoto?',
  'What did her friend Mei say about painting?',
  'the weekend at the lake house',
  'Is she worried about running?',
  'what is she',
  'chess Porto Oskar 12',
  'Did Amara and she read novels at the library on day 7?',
];

describe('the ranking of conclusions', () => {
  let database: Database;
  beforeAll(async () => {
    database = await openDatabase(TEST_DATABASE_URL);
  });
  afterAll(async () => {
    await database?.driver.close();
  });

  it('takes the terms of message search: folded, stop words left out, stems; numbers, codes, names and CJK words exact', () => {
    expect(conclusionTerms('What did Alice say about her HIKES in Lisbon, in 2019?')).toEqual([
      { text: 'alice', stem: 'alic', exact: true },
      { text: 'say', stem: 'sai', exact: false },
      { text: 'hikes', stem: 'hike', exact: true },
      { text: 'lisbon', stem: 'lisbon', exact: true },
      { text: '2019', stem: '2019', exact: true },
    ]);
    // a capital at the start of a sentence is no name; stop words alone are kept
    expect(conclusionTerms('Cooking? Hiking.').map((t) => t.exact)).toEqual([false, false]);
    expect(conclusionTerms('who is she').map((t) => t.text)).toEqual(['who', 'is', 'she']);
    expect(conclusionTerms('code A113b').map((t) => [t.text, t.exact])).toEqual([
      ['code', false],
      ['a113b', true],
    ]);
    expect(conclusionTerms('東京に住んでいるのは誰ですか').filter((t) => t.stem === undefined)).toContainEqual({ text: '東京', exact: true });
  });

  it('finds a fact by a word in another form, and stop words do not decide the order', async () => {
    const ws = uniqueId();
    const collection = { workspaceId: ws, observerId: 'assistant', observedId: 'alice' };
    await addConclusions(database.store, ws, 'assistant', 'alice', [
      'Alice went on long hikes in the Alps with her brother',
      'What she did with his and her things was what they did',
      'Alice has a dog named Biscuit',
    ]);
    expect(await rank(database.store, collection, 'What did Alice do when she hiked?', 2)).toEqual([
      'Alice went on long hikes in the Alps with her brother',
      'Alice has a dog named Biscuit',
    ]);
  });

  it('ranks a question with a number or a name to the fact holding it first', async () => {
    const ws = uniqueId();
    const collection = { workspaceId: ws, observerId: 'assistant', observedId: 'alice' };
    await addConclusions(database.store, ws, 'assistant', 'alice', [
      'Alice moved to Porto in 2019 for a job at a bakery',
      'Alice joined the chess team; the team trains on Mondays and the team travels to tournaments',
      'Alice had lunch with Rodrigo after work',
      'Alice meets colleagues from work for lunch on Fridays at the office and talks about work',
      'Alice plays chess with colleagues',
    ]);
    const steps = {} as ConclusionSearchSteps;
    // "team" three times in one fact outweighs the year by BM25 alone
    expect((await rank(database.store, collection, 'Which team did Alice join in 2019?', 5, steps)).slice(0, 2)).toEqual([
      'Alice moved to Porto in 2019 for a job at a bakery',
      'Alice joined the chess team; the team trains on Mondays and the team travels to tournaments',
    ]);
    // the statistics are the collection's: "alice" is in all five facts, so it lifts none
    expect(steps.collectionSize).toBe(5);
    expect(steps.terms.map((t) => t.text)).toEqual(['team', 'alice', 'join', '2019']);
    expect(steps.matches).toEqual([1, 5, 1, 1]);
    expect((await rank(database.store, collection, 'When did she have lunch at work with Rodrigo?', 2))[0]).toBe('Alice had lunch with Rodrigo after work');
  });

  it.each([120, READ_WHOLE_COLLECTION + 50])('gives a workspace the same results whatever another workspace stores (a collection of %i)', async (size) => {
    const ws = uniqueId();
    const collection = { workspaceId: ws, observerId: 'assistant', observedId: 'alice' };
    await addConclusions(database.store, ws, 'assistant', 'alice', generatedFacts(7, size));
    const before = await Promise.all(QUESTIONS.map((question) => rank(database.store, collection, question)));
    expect(before.filter((found) => found.length > 0).length).toBeGreaterThan(QUESTIONS.length - 2);
    // another workspace (and another collection of this one) store facts whose words are
    // spread quite unlike this collection's: global statistics would reorder the results
    const skewed = Array.from({ length: 300 }, (_, i) => `hiking hiking swimming Rodrigo ${i} times near Porto and the library`);
    await addConclusions(database.store, uniqueId(), 'assistant', 'alice', skewed);
    await addConclusions(database.store, ws, 'assistant', 'bob', skewed);
    const after = await Promise.all(QUESTIONS.map((question) => rank(database.store, collection, question)));
    expect(after).toEqual(before);
  });

  it.runIf(DIALECT === 'postgres')('ranks alike on SQLite and PostgreSQL', async () => {
    const sqlite = await openDatabase(':memory:');
    try {
      // a collection read whole, and one searched through the words' index
      for (const size of [400, READ_WHOLE_COLLECTION + 100]) {
        const facts = generatedFacts(size, size);
        const collection = { workspaceId: uniqueId(), observerId: 'assistant', observedId: 'alice' };
        await addConclusions(database.store, collection.workspaceId, 'assistant', 'alice', facts);
        await addConclusions(sqlite.store, collection.workspaceId, 'assistant', 'alice', facts);
        let compared = 0;
        for (const question of [...QUESTIONS, ...facts.slice(0, 40)]) {
          const onPostgres = await rank(database.store, collection, question, 20);
          const onSqlite = await rank(sqlite.store, collection, question, 20);
          expect(onSqlite, question).toEqual(onPostgres);
          compared += onPostgres.length;
        }
        expect(compared).toBeGreaterThan(500);
      }
    } finally {
      await sqlite.driver.close();
    }
  });
});
