import cluster, { type Worker as ClusterWorker } from 'node:cluster';
import { AggregatorRegistry, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/*
 * Metrics of a process group (`engram serve --processes N`). The N processes share one port, so
 * a scrape of /metrics reaches any one of them, and each counts only what it served: answered
 * alone, a scrape would show a different process's counters every time (requests undercounted N
 * times over, counters going down). So a process of a group answers with the whole group's
 * metrics: it asks the primary, which asks every listening process for its own (as JSON), adds
 * them up by each metric's aggregator (counters and histograms summed; prom-client's process
 * metrics say their own, e.g. the event loop lag averaged) and sends back the text. Metrics read
 * from the shared database (the queue depth) are not per process: the answering process reads
 * them once and adds them to the group's.
 *
 * Messages go over the cluster's IPC channel, each tagged with `type` and a request id.
 */

const GROUP_REQUEST = 'engram:metrics:group-request'; // process -> primary
const GROUP_REPLY = 'engram:metrics:group-reply'; // primary -> process
const LOCAL_REQUEST = 'engram:metrics:local-request'; // primary -> every process
const LOCAL_REPLY = 'engram:metrics:local-reply'; // every process -> primary

type LocalMetrics = MetricObjectWithValues<MetricValue<string>>[];

interface Message {
  type?: unknown;
  id?: unknown;
  text?: unknown;
  error?: unknown;
  metrics?: unknown;
}

const isMessage = (value: unknown): value is Message => typeof value === 'object' && value !== null;

/** Thrown when the group's metrics could not be gathered (a process did not answer in time). */
export class GroupMetricsError extends Error {}

/**
 * The text a scrape gets: `perProcess` (this process's own metrics) with the other processes'
 * added when this process is one of a group, then `shared` (read from the database, once).
 */
export function metricsSource(perProcess: Registry, shared: Registry, timeoutMs = 5_000): { contentType: string; text(): Promise<string> } {
  const contentType = perProcess.contentType;
  if (!cluster.isWorker) {
    const merged = Registry.merge([perProcess, shared]);
    return { contentType, text: () => merged.metrics() };
  }
  const pending = new Map<number, { resolve(text: string): void; reject(error: Error): void; timer: NodeJS.Timeout }>();
  let nextId = 0;
  process.on('message', (message: unknown) => {
    if (!isMessage(message) || typeof message.id !== 'number') return;
    if (message.type === LOCAL_REQUEST) {
      const id = message.id;
      perProcess.getMetricsAsJSON().then(
        (metrics) => process.send?.({ type: LOCAL_REPLY, id, metrics }),
        (error: Error) => process.send?.({ type: LOCAL_REPLY, id, error: error.message }),
      );
      return;
    }
    if (message.type === GROUP_REPLY) {
      const request = pending.get(message.id);
      if (request === undefined) return;
      pending.delete(message.id);
      clearTimeout(request.timer);
      if (typeof message.text === 'string') request.resolve(message.text);
      else request.reject(new GroupMetricsError(String(message.error ?? 'no metrics')));
    }
  });
  const groupText = () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new GroupMetricsError(`the primary did not send the group's metrics within ${timeoutMs} ms`));
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      process.send?.({ type: GROUP_REQUEST, id });
    });
  return {
    contentType,
    async text() {
      const [group, own] = await Promise.all([groupText(), shared.metrics()]);
      return joinExpositions(group, own);
    },
  };
}

/** Two texts in the exposition format, each a whole set of metrics, as one. */
function joinExpositions(a: string, b: string): string {
  if (a === '') return b;
  return a.endsWith('\n') ? a + b : `${a}\n${b}`;
}

/**
 * The primary's part: answers a process's request for the group's metrics by asking every
 * process in `listening()` for its own and aggregating them. A process that exits meanwhile is
 * left out (its counts went with it); one that does not answer within `timeoutMs` (it hangs)
 * fails the request rather than send a sum that misses it.
 */
export function answerGroupMetrics(listening: () => Iterable<ClusterWorker>, timeoutMs = 3_000): void {
  interface Gathering {
    requester: ClusterWorker;
    requestId: number;
    waiting: Set<number>;
    replies: LocalMetrics[];
    timer: NodeJS.Timeout;
  }
  const gatherings = new Map<number, Gathering>();
  let nextId = 0;

  const reply = (id: number, outcome: { text: string } | { error: string }) => {
    const gathering = gatherings.get(id);
    if (gathering === undefined) return;
    gatherings.delete(id);
    clearTimeout(gathering.timer);
    // a requester that has just died cannot be answered: its pipe's error is dropped, not thrown
    if (gathering.requester.isConnected()) gathering.requester.send({ type: GROUP_REPLY, id: gathering.requestId, ...outcome }, undefined, {}, () => undefined);
  };
  const finishIfComplete = (id: number, gathering: Gathering) => {
    if (gathering.waiting.size > 0) return;
    AggregatorRegistry.aggregate(gathering.replies)
      .metrics()
      .then(
        (text) => reply(id, { text }),
        (error: Error) => reply(id, { error: error.message }),
      );
  };

  cluster.on('message', (worker: ClusterWorker, message: unknown) => {
    if (!isMessage(message) || typeof message.id !== 'number') return;
    if (message.type === LOCAL_REPLY) {
      const gathering = gatherings.get(message.id);
      if (gathering === undefined || !gathering.waiting.delete(worker.id)) return;
      if (!Array.isArray(message.metrics)) return reply(message.id, { error: `process ${worker.process.pid} could not read its metrics: ${String(message.error)}` });
      gathering.replies.push(message.metrics as LocalMetrics);
      finishIfComplete(message.id, gathering);
      return;
    }
    if (message.type !== GROUP_REQUEST) return;
    const id = nextId++;
    const workers = [...listening()];
    const timer = setTimeout(() => reply(id, { error: `${gatherings.get(id)?.waiting.size} server process(es) did not send their metrics within ${timeoutMs} ms` }), timeoutMs);
    const gathering: Gathering = { requester: worker, requestId: message.id, waiting: new Set(workers.map((w) => w.id)), replies: [], timer };
    gatherings.set(id, gathering);
    for (const w of workers) {
      if (!w.isConnected()) {
        gathering.waiting.delete(w.id);
        continue;
      }
      // a process killed before its exit was seen: the write fails (EPIPE), and it is left out as
      // one that exited (without the callback the error would be thrown in the primary)
      w.send({ type: LOCAL_REQUEST, id }, undefined, {}, (error) => {
        if (error && gatherings.get(id) === gathering && gathering.waiting.delete(w.id)) finishIfComplete(id, gathering);
      });
    }
    finishIfComplete(id, gathering);
  });
  cluster.on('exit', (worker: ClusterWorker) => {
    for (const [id, gathering] of gatherings) if (gathering.waiting.delete(worker.id)) finishIfComplete(id, gathering);
  });
}
