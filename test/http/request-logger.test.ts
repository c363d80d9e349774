import { spawn } from 'node:child_process';
import { pbkdf2 } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { databaseOptions, openDatabase } from '../../src/runtime/database.js';
import { loadConfig } from '../../src/config/config.js';
import { requestLogger } from '../../src/http/shared/request-logger.js';
import { FLUSH_MS, processLog } from '../../src/server/logging.js';
import { TEST_DATABASE_URL } from '../support/test-app.js';

/** A stream keeping the JSON lines written to it. */
function lines(): { stream: Writable; read: () => Record<string, unknown>[] } {
  const kept: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      kept.push(chunk.toString());
      done();
    },
  });
  const read = () =>
    kept
      .join('')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, read };
}

describe("a request's logger", () => {
  const log = lines();
  const parent = pino({ level: 'warn' }, log.stream);
  // the request children pino makes (bound to a request id), counted; children inherit the method
  const makeChild = parent.child;
  let children = 0;
  parent.child = function (this: typeof parent, ...args: Parameters<typeof makeChild>) {
    if ('reqId' in args[0]) children++;
    return makeChild.apply(this, args);
  } as typeof parent.child;
  const app = Fastify({ loggerInstance: parent, childLoggerFactory: requestLogger, requestIdHeader: 'x-request-id', logController: new LogController({ disableRequestLogging: true }) });
  app.get('/quiet', async () => 'ok');
  app.get('/below-level', async (request) => {
    request.log.info({ n: 1 }, 'not written at warn');
    request.log.debug('nor this');
    return 'ok';
  });
  app.get('/loud', async (request) => {
    request.log.warn({ n: 2 }, 'written');
    request.log.error('and this');
    return 'ok';
  });
  app.get('/nested', async (request) => {
    request.log.child({ step: 'inner' }).warn('from a child');
    return { level: request.log.level };
  });
  afterAll(() => app.close());

  it('is made only for a request that writes a line, and its lines carry the request id', async () => {
    await app.ready();
    children = 0;
    for (let i = 0; i < 20; i++) {
      expect((await app.inject({ url: '/quiet', headers: { 'x-request-id': `q${i}` } })).statusCode).toBe(200);
      expect((await app.inject({ url: '/below-level', headers: { 'x-request-id': `b${i}` } })).statusCode).toBe(200);
    }
    expect(children).toBe(0);
    expect(log.read()).toEqual([]);

    expect((await app.inject({ url: '/loud', headers: { 'x-request-id': 'loud-1' } })).statusCode).toBe(200);
    expect(children).toBe(1);
    const written = log.read();
    expect(written.map((line) => [line.reqId, line.msg, line.level])).toEqual([
      ['loud-1', 'written', 40],
      ['loud-1', 'and this', 50],
    ]);
    expect(written[0].n).toBe(2);
  });

  it("passes its level and its children's bindings on", async () => {
    const before = log.read().length;
    const response = await app.inject({ url: '/nested', headers: { 'x-request-id': 'nest-1' } });
    expect(response.json()).toEqual({ level: 'warn' });
    const [line] = log.read().slice(before);
    expect([line.reqId, line.step, line.msg]).toEqual(['nest-1', 'inner', 'from a child']);
  });
});

describe("the server's request lines", () => {
  it("are the line a pino child bound to the request id would write, key for key", async () => {
    const log = lines();
    const config = loadConfig({ DATABASE_URL: TEST_DATABASE_URL, LOG_LEVEL: 'info' }, '/nonexistent/.env');
    const database = await openDatabase(config.databaseUrl, databaseOptions(config));
    const { app } = await buildApp({ config, database, logger: { level: 'info', stream: log.stream } });
    try {
      const url = '/v3/workspaces/a%20%22quoted%22%20one/peers/list?size=5&x=%C3%A9';
      const response = await app.inject({ url, method: 'POST', headers: { 'x-request-id': 'id "with" quotes\\' } });
      expect(response.statusCode).toBe(200);
      const written = log.read().find((line) => line.msg === 'request')!;
      // pino itself, with the same values, to a second stream
      const reference = lines();
      pino({ level: 'info' }, reference.stream).child({ reqId: written.reqId }).info({ method: written.method, url: written.url, status: written.status, ms: written.ms }, 'request');
      const expected = reference.read()[0];
      expect(JSON.stringify({ ...written, time: 0 })).toBe(JSON.stringify({ ...expected, time: 0 }));
      expect(written).toMatchObject({ reqId: 'id "with" quotes\\', method: 'POST', url, status: 200 });
      expect(typeof written.time).toBe('number');
    } finally {
      await app.close();
      await database.driver.close();
    }
  });

  it('carry the request id, as with a child made for every request', async () => {
    const log = lines();
    const config = loadConfig({ DATABASE_URL: TEST_DATABASE_URL, LOG_LEVEL: 'info' }, '/nonexistent/.env');
    const database = await openDatabase(config.databaseUrl, databaseOptions(config));
    const { app } = await buildApp({ config, database, logger: { level: 'info', stream: log.stream } });
    try {
      const response = await app.inject({ url: '/v3/workspaces/nowhere/peers/list', method: 'POST', headers: { 'x-request-id': 'line-1' } });
      expect(response.statusCode).toBe(200);
      const request = log.read().find((line) => line.msg === 'request');
      expect(request).toMatchObject({ reqId: 'line-1', method: 'POST', url: '/v3/workspaces/nowhere/peers/list', status: 200, level: 30 });
    } finally {
      await app.close();
      await database.driver.close();
    }
  });
});

describe('the process log', () => {
  const dir = mkdtempSync(join(tmpdir(), 'engram-log-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const read = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it('hands lines to the file in batches, within FLUSH_MS, and all at once on flush', async () => {
    const file = join(dir, 'batched.log');
    const log = processLog('info', file);
    for (let i = 0; i < 100; i++) log.logger.info({ i }, 'line');
    // not written while the request path runs on
    expect(read(file)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, FLUSH_MS * 4));
    expect(read(file).map((line) => line.i)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    // the thread pool kept busy: a line handed to an asynchronous write would not be in the file yet
    const busy = Array.from({ length: 8 }, () => new Promise((resolve) => pbkdf2('p', 's', 200_000, 32, 'sha256', resolve)));
    log.logger.warn('last words');
    log.flush();
    expect(read(file).at(-1)).toMatchObject({ msg: 'last words', level: 40 });
    await Promise.all(busy);
  });

  it('writes out what is pending when the process exits', async () => {
    const file = join(dir, 'exit.log');
    const script = `import { processLog } from './src/server/logging.ts'; const log = processLog('info', ${JSON.stringify(file)}); for (let i = 0; i < 1000; i++) log.logger.info({ i }, 'line'); process.exit(0);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: 'inherit' });
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
    expect(read(file)).toHaveLength(1000);
  });

  it('on close, writes out what is pending after the batches still being written, in the order logged', async () => {
    // batches of 64 KiB are handed to the pipe asynchronously while the lines are logged; the last
    // line must not overtake them
    const script = `import { processLog } from './src/server/logging.ts'; const log = processLog('info'); const pad = 'x'.repeat(200); for (let i = 0; i < 3000; i++) log.logger.info({ i, pad }, 'line'); log.logger.info('stopped'); await log.close(); log.logger.info('after the close'); process.exit(0);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    expect(await new Promise((resolve) => child.on('close', resolve))).toBe(0);
    const lines = out
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { i?: number; msg: string });
    expect(lines.map((line) => line.i ?? line.msg)).toEqual([...Array.from({ length: 3000 }, (_, i) => i), 'stopped']);
  });
});
