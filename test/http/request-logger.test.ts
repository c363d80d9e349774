import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp, databaseOptions, openDatabase } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { requestLogger } from '../../src/http/shared/request-logger.js';
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
