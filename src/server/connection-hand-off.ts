import type { Worker as ClusterWorker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import { createServer, Socket, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * The connections of a process group (`engram serve --processes N`), handed out by the primary to
 * the server process holding the fewest open connections (docs/decisions/0016-fewest-connections.md). node:cluster's round-robin gives a new connection to
 * whichever process confirmed its last one first, so keep-alive connections opened while the
 * processes are busy split unevenly (11 / 6 of 17 seen under a search load), and the process
 * with more of them answers each of them less often. No library hands connections out this way,
 * so it is done here over the cluster's IPC channel, with Node's documented handle passing
 * (`worker.send(message, socket)`):
 *
 *   process -> primary  READY                           once it can serve connections
 *   primary -> process  HAND_OFF {id} with the socket   the process serves it, answers TAKEN {id}
 *   process -> primary  CLOSED                          when a connection it served has closed
 *
 * The primary keeps its own copy of a connection (`keepOpen`) until the process says TAKEN: a
 * process killed before that never takes it, and the primary then closes its copy so the client
 * sees the connection close at once instead of waiting for good.
 */

const READY = 'engram:connection:ready';
const HAND_OFF = 'engram:connection:hand-off';
const TAKEN = 'engram:connection:taken';
const CLOSED = 'engram:connection:closed';

interface Message {
  type?: unknown;
  id?: unknown;
}

/** A process that has not taken a connection handed to it this long ago is busy (ConnectionBalancer.fewestOpen). */
const BUSY_MS = 20;

/** Connections held while no process is ready; past this many, new ones are closed. */
const MAX_WAITING = 1_000;

const isMessage = (value: unknown): value is Message => typeof value === 'object' && value !== null;

/** Whether a server process's message says it is ready to be handed connections. */
export const isReady = (message: unknown): boolean => isMessage(message) && message.type === READY;

interface Member {
  worker: ClusterWorker;
  /** Connections handed to it and not yet reported closed. */
  open: number;
  /** Connections handed to it that it has not yet said it took, by hand-off id, oldest first, with when. */
  unconfirmed: Map<number, { socket: Socket; at: number }>;
  onMessage(message: unknown): void;
}

/** The primary's side: its listening socket and the server processes it hands connections to. */
export class ConnectionBalancer {
  private readonly members: Member[] = [];
  /** Connections that came while no process was ready (start-up, or all of them restarting). */
  private readonly waiting: Socket[] = [];
  private readonly server: Server;
  private nextId = 0;
  /** Where the search for the fewest open starts, so that ties go to each process in turn. */
  private turn = 0;

  /** `onError`: an error of the listening socket once it listens (an accept that failed, e.g. out of file descriptors). */
  constructor(onError: (error: Error) => void) {
    // the primary only passes connections on: it never reads from one
    this.server = createServer({ pauseOnConnect: true }, (socket) => this.handOff(socket));
    this.server.on('error', (error: Error) => {
      if (this.server.listening) onError(error);
    });
  }

  /** Starts accepting on `port` and `host`; rejects when it cannot (the port is taken). */
  listen(port: number, host: string): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const failed = (error: Error) => reject(error);
      this.server.once('error', failed);
      this.server.listen({ port, host }, () => {
        this.server.off('error', failed);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /** Accepts no more connections (those handed out stay with their processes; waiting ones are closed). */
  close(): void {
    if (this.server.listening) this.server.close();
    for (const socket of this.waiting.splice(0)) socket.destroy();
  }

  /** The server processes ready to take connections, in the order they became ready. */
  get ready(): ClusterWorker[] {
    return this.members.map((member) => member.worker);
  }

  /** Whether `worker` is among the ready processes. */
  has(worker: ClusterWorker): boolean {
    return this.members.some((member) => member.worker === worker);
  }

  /** A server process ready to take connections. */
  add(worker: ClusterWorker): void {
    const member: Member = {
      worker,
      open: 0,
      unconfirmed: new Map(),
      onMessage: (message: unknown) => {
        if (!isMessage(message)) return;
        if (message.type === CLOSED) member.open = Math.max(0, member.open - 1);
        else if (message.type === TAKEN && typeof message.id === 'number') {
          // the process holds its own copy now; the primary's goes
          member.unconfirmed.get(message.id)?.socket.destroy();
          member.unconfirmed.delete(message.id);
        }
      },
    };
    worker.on('message', member.onMessage);
    this.members.push(member);
    for (const socket of this.waiting.splice(0)) this.handOff(socket);
  }

  /**
   * A server process that exited (or is stopping): it gets no more connections, and those it was
   * handed but never took are closed.
   */
  remove(worker: ClusterWorker): void {
    const at = this.members.findIndex((member) => member.worker === worker);
    if (at === -1) return;
    const [member] = this.members.splice(at, 1);
    worker.off('message', member.onMessage);
    for (const { socket } of member.unconfirmed.values()) socket.destroy();
    member.unconfirmed.clear();
  }

  private handOff(socket: Socket): void {
    const member = this.fewestOpen();
    if (member === undefined) {
      // no process ready yet: the connection waits for the first (a client that gives up closes it)
      if (this.waiting.length < MAX_WAITING && !socket.destroyed) this.waiting.push(socket);
      else socket.destroy();
      return;
    }
    if (socket.destroyed) return;
    const id = this.nextId++;
    member.open++;
    member.unconfirmed.set(id, { socket, at: performance.now() });
    member.worker.send({ type: HAND_OFF, id }, socket, { keepOpen: true }, (error: Error | null) => {
      if (error === null) return;
      // the process is gone; its exit closes what it was handed
      socket.destroy();
    });
  }

  /**
   * The process to hand the next connection to: of those not busy, the one with the fewest open.
   * A process is busy while a connection handed to it more than BUSY_MS ago is still not taken: it
   * is in a long piece of work (or stopped), and a new client would wait for it. When every
   * process is busy, the one holding the fewest connections not yet taken.
   */
  private fewestOpen(): Member | undefined {
    const count = this.members.length;
    if (count === 0) return undefined;
    const busySince = performance.now() - BUSY_MS;
    let best: Member | undefined;
    let bestBusy = true;
    for (let step = 0; step < count; step++) {
      const member = this.members[(this.turn + step) % count];
      const oldest = member.unconfirmed.values().next();
      const busy = oldest.done !== true && oldest.value.at < busySince;
      const better =
        best === undefined ||
        (bestBusy && !busy) ||
        (busy === bestBusy && (busy ? member.unconfirmed.size < best.unconfirmed.size : member.open < best.open));
      if (better) {
        best = member;
        bestBusy = busy;
      }
    }
    this.turn = (this.turn + 1) % count;
    return best;
  }
}

/** Whether `open` connections leave no room under a server's `maxConnections` (unset, 0 or Infinity: no limit). */
function overLimit(maxConnections: number | undefined, open: number): boolean {
  return maxConnections !== undefined && maxConnections > 0 && open >= maxConnections;
}

/**
 * A server process's side: serves on `server` the connections the primary hands over, up to the
 * server's `maxConnections` open at once (as a server's own listening socket would). The
 * server listens on a socket of its own that no client knows (an abstract socket on Linux, else a
 * file in the temporary folder): listening is what starts Node's tracking of the server's
 * connections, which enforces the request and header timeouts and lets a stop close the idle
 * ones. Resolves once it listens and has told the primary it is ready; `drained` resolves when
 * every handed connection has closed (a server's own count and close() know nothing of them).
 */
export async function serveHandedConnections(server: HttpServer): Promise<{ drained(): Promise<void> }> {
  const path = process.platform === 'linux' ? `\0engram-${process.pid}-${randomUUID()}` : join(tmpdir(), `engram-${process.pid}-${randomUUID()}.sock`);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ path, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (!path.startsWith('\0')) server.once('close', () => rmSync(path, { force: true }));

  const open = new Set<Socket>();
  let onDrained: (() => void) | undefined;
  // a message to a primary that is gone is of no use to anyone: its error is dropped
  const tell = (message: Message) => {
    if (process.connected) process.send?.(message, undefined, undefined, () => undefined);
  };
  process.on('message', (message: unknown, socket: unknown) => {
    if (!isMessage(message) || message.type !== HAND_OFF) return;
    tell({ type: TAKEN, id: message.id });
    if (!(socket instanceof Socket)) {
      // the connection did not come with the message (the process is out of file descriptors):
      // taken and closed at once, so the primary closes its copy and counts it no more
      tell({ type: CLOSED });
      return;
    }
    // the server's `maxConnections` (MAX_CONNECTIONS), which Node applies only to connections its
    // own listening socket accepts: a connection over it is closed unanswered, as there
    if (overLimit(server.maxConnections, open.size)) {
      socket.destroy();
      tell({ type: CLOSED });
      return;
    }
    // as an HTTP server sets up a connection it accepts itself: no Nagle delay (its `noDelay`
    // default), and a client's half-close left to the HTTP layer
    socket.setNoDelay(true);
    socket.allowHalfOpen = true;
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      tell({ type: CLOSED });
      if (open.size === 0) onDrained?.();
    });
    server.emit('connection', socket);
  });
  tell({ type: READY });
  return {
    drained: () =>
      open.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            onDrained = resolve;
          }),
  };
}
