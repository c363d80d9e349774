/*
 * `engram eval` as a process against a real Engram process, with the fake model server as every
 * model: the server's (deriver, chat) and the judge's. Chat's answers and the judge's verdicts are
 * scripted per question, so the accuracy per category is known before the run. A SIGKILL while
 * the judge answers, then a rerun: nothing stored or asked twice.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { heldAnswer, startFakeModelServer, type FakeModelServer, type RecordedRequest, type ScriptedAnswer } from '../support/fake-model-server.js';
import { REASONING_TEST_ENV } from '../support/reasoning-harness.js';
import { ENGRAM, runCli, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { databaseForProcesses, DIALECT } from '../support/test-app.js';
import { readDataset } from '../../src/cli/commands/eval-datasets.js';
import { readVerdict } from '../../src/cli/commands/eval-judge.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'engram-eval-'));
const databaseUrl = databaseForProcesses(dir);

/** What chat answers to each question (found in the chat model's prompt), and the judge's reply to each answer. */
const answers = new Map<string, string>();
const verdicts = new Map<string, ScriptedAnswer>();
const CHAT_USAGE = { input: 50, output: 5 };
const JUDGE_USAGE = { input: 100, output: 10 };

const userText = (request: RecordedRequest): string => (request.body.messages as { role: string; content: string }[]).map((m) => m.content).join('\n');
const isJudge = (request: RecordedRequest) => request.body.model === 'judge-model';
const givenAnswer = (request: RecordedRequest) => /<answer_given>\n([\s\S]*?)\n<\/answer_given>/.exec(userText(request))?.[1];
/** The questions a chat model request is about (none for the deriver's and other work). */
const questionsIn = (request: RecordedRequest) => [...answers.keys()].filter((q) => !isJudge(request) && userText(request).includes(q));

function respond(request: RecordedRequest): ScriptedAnswer {
  if (isJudge(request)) return { ...(verdicts.get(givenAnswer(request) ?? '') ?? { text: 'no verdict scripted' }), usage: JUDGE_USAGE };
  const [question] = questionsIn(request);
  if (question !== undefined) return { text: answers.get(question)!, usage: CHAT_USAGE };
  // the deriver and the other background work: nothing to conclude
  return { json: { explicit: [] } };
}

const CORRECT: ScriptedAnswer = { json: { verdict: 'correct', reason: 'it says the same' } };
const INCORRECT: ScriptedAnswer = { json: { verdict: 'incorrect', reason: 'it says otherwise' } };
/** Two malformed verdicts: prose, and a verdict outside the two allowed. */
const PROSE: ScriptedAnswer = { text: 'Looks right to me.' };
const MAYBE: ScriptedAnswer = { json: { verdict: 'maybe', reason: 'unsure' } };

function script(question: string, answer: string, verdict: ScriptedAnswer): void {
  answers.set(question, answer);
  verdicts.set(answer, verdict);
}

let fake: FakeModelServer;
let server: ServerProcess;
// the command asks a running server over HTTP and scores its answers: what it does does not depend
// on the server's store, so the PostgreSQL run leaves it out
const skipped = DIALECT === 'postgres';
beforeAll(async () => {
  if (skipped) return;
  fake = await startFakeModelServer();
  fake.script.defaultChat(respond);
  server = await startServerProcess({ ...fake.env(), ...REASONING_TEST_ENV, METRICS_ENABLED: 'true', DATABASE_URL: databaseUrl(), LOG_LEVEL: 'warn' });
}, 60_000);
afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The environment without any model setting of the suite's own. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^(LLM_|EMBEDDING_|DERIVER_|SUMMARY_|DIALECTIC_|DREAM_|EVAL_|ENGRAM_API_KEY)/.test(key)) env[key] = value;
  return { ...env, LOG_LEVEL: 'silent' };
}

const judgeArgs = () => ['--url', server.baseUrl, '--judge-model', 'judge-model', '--judge-base-url', `${fake.url}/v1`, '--judge-api-key', 'judge-key'];

async function messageTotal(workspace: string, session: string): Promise<number> {
  const response = await fetch(`${server.baseUrl}/v3/workspaces/${workspace}/sessions/${session}/messages/list?size=100`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(response.status).toBe(200);
  return ((await response.json()) as { total: number }).total;
}

const LOCOMO = [
  {
    sample_id: 'conv-1',
    conversation: {
      speaker_a: 'Alice',
      speaker_b: 'Bob',
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: [
        { speaker: 'Alice', dia_id: 'D1:1', text: 'Morning! Green tea again for me.' },
        { speaker: 'Bob', dia_id: 'D1:2', text: 'I start at the harbour office tomorrow.' },
        { speaker: 'Alice', dia_id: 'D1:3', text: 'Look who joined us!', img_url: ['x'], blip_caption: 'a photo of a grey kitten' },
      ],
      session_2_date_time: '10:05 am on 20 June, 2023',
      session_2: [
        { speaker: 'Bob', dia_id: 'D2:1', text: 'How is the kitten?' },
        { speaker: 'Alice', dia_id: 'D2:2', text: 'Growing fast, we named her Ash.' },
      ],
    },
    qa: [
      { question: 'What does Alice drink in the morning?', answer: 'Green tea', evidence: ['D1:1'], category: 1 },
      { question: 'Where does Bob work?', answer: 'At the harbour office', evidence: ['D1:2'], category: 1 },
      { question: 'When did Alice get a kitten?', answer: 'May 2023', evidence: ['D1:3'], category: 2 },
      { question: 'When was the kitten named?', answer: 2023, evidence: ['D2:2'], category: 2 },
    ],
  },
  {
    sample_id: 'conv-2',
    conversation: {
      speaker_a: 'Carol',
      speaker_b: 'Alice',
      session_1_date_time: '7:00 pm on 1 March, 2024',
      session_1: [
        { speaker: 'Carol', dia_id: 'D1:1', text: 'My violin recital is on Friday.' },
        { speaker: 'Alice', dia_id: 'D1:2', text: 'I will bring flowers.' },
      ],
    },
    qa: [
      { question: 'What instrument does Carol play?', answer: 'Violin', evidence: ['D1:1'], category: 4 },
      { question: 'What will Alice bring to the recital?', answer: 'Flowers', evidence: ['D1:2'], category: 4 },
      { question: 'What did Carol say about her cello?', adversarial_answer: 'It is new', evidence: [], category: 5 },
      { question: 'Which recital did Alice play in?', adversarial_answer: 'The Friday one', evidence: [], category: 5 },
    ],
  },
];

describe.skipIf(skipped)('engram eval', { timeout: 120_000 }, () => {
  it('LoCoMo: stores the sessions with their dates, asks each question, and reports the accuracy per category, tokens and cost; malformed verdicts are counted as such', async () => {
    onTestFailed(() => console.error(`engram serve, last output:\n${server.output().slice(-10_000)}`));
    script('What does Alice drink in the morning?', 'Alice drinks green tea.', CORRECT);
    script('Where does Bob work?', 'Bob works at the harbour office.', CORRECT);
    script('When did Alice get a kitten?', 'In 2022.', INCORRECT);
    script('When was the kitten named?', 'In June 2023.', CORRECT);
    script('What instrument does Carol play?', 'The violin.', PROSE);
    script('What will Alice bring to the recital?', 'Flowers.', CORRECT);
    script('What did Carol say about her cello?', 'Nothing in the conversations mentions a cello.', CORRECT);
    script('Which recital did Alice play in?', 'None: Alice did not play.', MAYBE);
    const file = join(dir, 'locomo-mini.json');
    writeFileSync(file, JSON.stringify(LOCOMO));
    const report = join(dir, 'locomo-report.json');
    const args = ['eval', file, ...judgeArgs(), '--state', join(dir, 'locomo.state.json'), '--json', report];
    const run = await runCli([...args, '--price-input', '2', '--price-output', '10', '--judge-price-input', '1', '--judge-price-output', '1'], cleanEnv());
    expect(run.code, run.stderr).toBe(0);

    const result = JSON.parse(readFileSync(report, 'utf8'));
    expect(result).toMatchObject({ format: 'locomo', workspace: 'eval-locomo-mini', questions: 8, correct: 5, incorrect: 1, malformed: 2, accuracy: 5 / 8 });
    expect(result.categories).toEqual({
      '1': { questions: 2, correct: 2, incorrect: 0, malformed: 0, accuracy: 1 },
      '2': { questions: 2, correct: 1, incorrect: 1, malformed: 0, accuracy: 0.5 },
      '4': { questions: 2, correct: 1, incorrect: 0, malformed: 1, accuracy: 0.5 },
      '5': { questions: 2, correct: 1, incorrect: 0, malformed: 1, accuracy: 0.5 },
    });
    // every answer is chat's, every token count Engram's (/metrics) or the judge's, priced as given
    expect(result.items.map((i: { answer: string }) => i.answer)).toEqual([...answers.values()].slice(0, 8));
    for (const item of result.items) expect(item).toMatchObject({ input_tokens: 50, output_tokens: 5, cost: (50 * 2 + 5 * 10) / 1e6 });
    expect(result.per_question).toMatchObject({ input_tokens_mean: 50, output_tokens_mean: 5, cost_mean: (50 * 2 + 5 * 10) / 1e6 });
    expect(result.judge).toEqual({ input_tokens: 800, output_tokens: 80, cost: (800 + 80) / 1e6 });
    expect(result.ingest.messages).toBe(7);
    // the malformed verdicts say what came back; the adversarial question's reference says it is unanswerable
    expect(result.items[4]).toMatchObject({ verdict: 'malformed', reason: 'the reply is not a JSON object', raw: 'Looks right to me.' });
    expect(result.items[7]).toMatchObject({ verdict: 'malformed', reason: '"verdict" is "maybe", not "correct" or "incorrect"' });
    expect(result.items[6].reference).toContain('does not say');
    expect(run.stdout).toMatch(/^2\s+2\s+1\s+1\s+0\s+50\.0%$/m);
    expect(run.stdout).toMatch(/^all\s+8\s+5\s+1\s+2\s+62\.5%$/m);
    expect(run.stdout).toContain('malformed verdicts (2, counted as not correct):');

    // the judge got the key; the sessions' messages carry their dates; a name in two samples is two peers
    expect(fake.requests('chat').filter(isJudge)[0].headers.authorization).toBe('Bearer judge-key');
    const listed = await fetch(`${server.baseUrl}/v3/workspaces/eval-locomo-mini/sessions/conv-1-session_1/messages/list`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const messages = ((await listed.json()) as { items: { created_at: string; peer_id: string; content: string }[] }).items;
    expect(messages.map((m) => [new Date(m.created_at).toISOString(), m.peer_id])).toEqual([
      ['2023-05-08T13:56:00.000Z', 'Alice-conv-1'],
      ['2023-05-08T13:56:01.000Z', 'Bob'],
      ['2023-05-08T13:56:02.000Z', 'Alice-conv-1'],
    ]);
    expect(messages[2].content).toBe('Look who joined us! [shared an image: a photo of a grey kitten]');
  });

  it('LongMemEval: killed while the judge answers, a rerun stores nothing again and asks no question twice', async () => {
    const types = ['single-session-user', 'single-session-user', 'knowledge-update', 'knowledge-update', 'temporal-reasoning', 'temporal-reasoning'];
    const held = heldAnswer();
    const items = types.map((type, i) => {
      const question = `What is fact number ${i + 1} about the user?`;
      script(question, `Fact ${i + 1} is ${i === 3 ? 'wrong' : 'right'}.`, i === 3 ? INCORRECT : CORRECT);
      return {
        question_id: `q${i + 1}${i === 5 ? '_abs' : ''}`,
        question_type: type,
        question,
        answer: `fact ${i + 1}`,
        question_date: '2023/06/01 (Thu) 09:30',
        haystack_session_ids: [`s${i}a`, `s${i}b`],
        haystack_dates: ['2023/05/20 (Sat) 02:21', '2023/05/28 (Sun) 18:05'],
        haystack_sessions: [
          [
            { role: 'user', content: `Fact ${i + 1} is right.`, has_answer: true },
            { role: 'assistant', content: 'Noted.' },
          ],
          [{ role: 'user', content: 'Thanks.' }],
        ],
        answer_session_ids: [`s${i}a`],
      };
    });
    // the judge holds its verdict on the third question until the run is killed
    verdicts.set('Fact 3 is right.', { ...CORRECT, until: held.until });
    const file = join(dir, 'lme-mini.json');
    writeFileSync(file, JSON.stringify(items));
    const args = ['eval', file, ...judgeArgs(), '--state', join(dir, 'lme.state.json'), '--format', 'json'];
    // a run killed after writing a session's first message but before its state file said so
    const first = await fetch(`${server.baseUrl}/v3/workspaces/eval-lme-mini/sessions/q1-s0a/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ peer_id: 'user-q1', content: 'Fact 1 is right.', created_at: '2023-05-20T02:21:00Z' }] }),
    });
    expect(first.status).toBe(201);
    const before = fake.requests('chat').length;
    const asked = () => fake.requests('chat').slice(before);

    const child = spawn(process.execPath, [...ENGRAM, ...args], { cwd: ROOT, env: cleanEnv(), stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    for (const started = Date.now(); !asked().some((r) => isJudge(r) && givenAnswer(r) === 'Fact 3 is right.'); ) {
      if (Date.now() - started > 60_000) throw new Error('the judge was never asked about the third question');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill('SIGKILL');
    await exited;
    held.release();
    verdicts.set('Fact 3 is right.', CORRECT);

    const rerun = await runCli(args, cleanEnv());
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toContain('(2 judged before)');
    const result = JSON.parse(rerun.stdout);
    expect(result).toMatchObject({ format: 'longmemeval', questions: 6, correct: 5, incorrect: 1, malformed: 0 });
    expect(result.categories).toEqual({
      'knowledge-update': { questions: 2, correct: 1, incorrect: 1, malformed: 0, accuracy: 0.5 },
      'single-session-user': { questions: 2, correct: 2, incorrect: 0, malformed: 0, accuracy: 1 },
      'temporal-reasoning': { questions: 2, correct: 2, incorrect: 0, malformed: 0, accuracy: 1 },
    });
    // each question went to chat once (with its date), each answer to the judge once but the one killed
    for (const [i, { question }] of items.entries()) {
      const chats = asked().filter((r) => questionsIn(r).includes(question));
      expect(chats, question).toHaveLength(1);
      expect(userText(chats[0])).toContain(`(Asked on 2023/06/01 (Thu) 09:30.) ${question}`);
      expect(asked().filter((r) => isJudge(r) && givenAnswer(r) === answers.get(question)), question).toHaveLength(i === 2 ? 2 : 1);
    }
    // and every message was stored once
    for (const item of items) {
      expect(await messageTotal('eval-lme-mini', `${item.question_id}-${item.haystack_session_ids[0]}`)).toBe(2);
      expect(await messageTotal('eval-lme-mini', `${item.question_id}-${item.haystack_session_ids[1]}`)).toBe(1);
    }
    // the message stored before the first run is not stored again
    expect(result.ingest.messages).toBe(17);
  });

  it('a file in neither format, or with a mistake, is refused with exit 2 saying what was expected', async () => {
    const cases: [string, RegExp][] = [
      ['not json', /is not JSON .*expected a LoCoMo file .* or a LongMemEval file/],
      ['{"conversation": {}}', /holds an object; expected a LoCoMo file/],
      ['[{"dialogue": [], "questions": []}]', /neither format \(its first item has the keys: dialogue, questions\); expected a LoCoMo file/],
      [JSON.stringify([{ ...LOCOMO[0], conversation: { ...LOCOMO[0].conversation, session_2_date_time: 'sometime in June' } }]), /sample 1: conversation.session_2_date_time: "sometime in June" is not a LoCoMo date/],
      [JSON.stringify([{ question_id: 'q', question_type: 't', question: 'x', answer: 'y', haystack_dates: [], haystack_sessions: [[{ role: 'system', content: 'z' }]] }]), /question 1.haystack_dates must be a list with one date per session \(1\)/],
    ];
    for (const [i, [content, message]] of cases.entries()) {
      const file = join(dir, `bad-${i}.json`);
      writeFileSync(file, content);
      const run = await runCli(['eval', file, ...judgeArgs(), '--state', join(dir, `bad-${i}.state.json`)], cleanEnv());
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(message);
    }
    // a state file of another file or workspace is not continued
    const foreignState = join(dir, 'foreign.state.json');
    writeFileSync(foreignState, JSON.stringify({ version: 1, dataset: 'another', workspace: 'eval-eval-sample', format: 'locomo' }));
    const foreign = await runCli(['eval', join(ROOT, 'examples', 'eval-sample.json'), ...judgeArgs(), '--state', foreignState], cleanEnv());
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain(`engram: the state file ${foreignState} belongs to another dataset file or workspace`);
    const usage = await runCli(['eval', join(dir, 'bad-0.json'), '--judge-modle', 'x'], cleanEnv());
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/eval: unknown option "--judge-modle"; valid: --url <engram url>, .*--judge-model <model>/);
    const noJudge = await runCli(['eval', join(dir, 'bad-0.json'), '--url', server.baseUrl], cleanEnv());
    expect(noJudge.code).toBe(2);
    expect(noJudge.stderr).toContain('eval needs a judge model: --judge-model <model> (or EVAL_JUDGE_MODEL)');
  });
});

describe('engram eval: who is asked, and what counts as a verdict', () => {
  it('a LoCoMo question goes to the speaker it names (speaker_a when it names both or neither); a name in two samples is two peers', () => {
    const dataset = readDataset(JSON.stringify(LOCOMO));
    expect(dataset.questions.map((q) => q.peerId)).toEqual(['Alice-conv-1', 'Bob', 'Alice-conv-1', 'Alice-conv-1', 'Carol', 'Alice-conv-2', 'Carol', 'Alice-conv-2']);
    expect(dataset.groups.map((g) => g.sessions.map((s) => [s.id, s.peerIds]))).toEqual([
      [
        ['conv-1-session_1', ['Alice-conv-1', 'Bob']],
        ['conv-1-session_2', ['Alice-conv-1', 'Bob']],
      ],
      [['conv-2-session_1', ['Carol', 'Alice-conv-2']]],
    ]);
  });

  it('only a JSON object whose verdict is "correct" or "incorrect" is a verdict', () => {
    expect(readVerdict('{"verdict": "correct", "reason": "same"}')).toEqual({ verdict: 'correct', reason: 'same' });
    expect(readVerdict('```json\n{"verdict": "incorrect"}\n```')).toEqual({ verdict: 'incorrect', reason: '' });
    for (const reply of ['correct', '{"verdict": "Correct"}', '{"verdict": "correct", "reason": 5}', '["correct"]', '{"verdict": "correct"} and more', '']) {
      expect(readVerdict(reply).verdict, reply).toBe('malformed');
    }
  });
});
