import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, Gauge, collectDefaultMetrics } from 'prom-client';
import type { Store } from '../../storage/store.js';

/**
 * Prometheus metrics at `GET /metrics` (contract §7.8): request counts and latencies per route
 * pattern and status, process metrics, and the work queue's depth by job status.
 */
export function mountMetrics(app: FastifyInstance, store: Store, enabled: boolean): void {
  if (!enabled) {
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
      reply.code(404).header('content-type', 'text/plain; charset=utf-8').send('Metrics are disabled'),
    );
    return;
  }
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'engram_' });
  const requests = new Counter({
    name: 'engram_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'engram_http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method and route pattern',
    labelNames: ['method', 'route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  new Gauge({
    name: 'engram_queue_jobs',
    help: 'Background jobs in the queue, by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [status, count] of Object.entries(await store.jobs.countByStatus())) this.set({ status }, count);
    },
  });

  app.addHook('onResponse', (request, reply, done) => {
    // the route pattern, not the URL: ids must not become label values
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    durations.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('content-type', registry.contentType).send(await registry.metrics()),
  );
}
