import { createServer, connect, type Socket } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that can hold the server's answers back: while held, what
 * the clients send still reaches the server, and the proxy counts the statements among it (a
 * simple query `Q` or an extended query's `Sync`), so a test sees how many statements a client
 * sent before it had any answer, without timing anything. `release` lets the answers through.
 */
export interface HoldingProxy {
  /** postgres://... through the proxy, for the target's URL. */
  url: string;
  hold(): void;
  release(): void;
  /** Statements the clients sent since `hold`. */
  statementsSent(): number;
  close(): Promise<void>;
}

export async function holdingProxy(targetUrl: string): Promise<HoldingProxy> {
  const target = new URL(targetUrl);
  let holding = false;
  let statements = 0;
  const held: { to: Socket; chunk: Buffer }[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    // the frontend's messages since the hold began: a type byte, then a length that counts itself
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      if (holding) {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 5) {
          const length = pending.readInt32BE(1);
          if (pending.length < 1 + length) break;
          const type = String.fromCharCode(pending[0]);
          if (type === 'Q' || type === 'S') statements++;
          pending = pending.subarray(1 + length);
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (holding) held.push({ to: client, chunk });
      else client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);

  return {
    url: url.toString(),
    hold() {
      holding = true;
      statements = 0;
    },
    release() {
      holding = false;
      for (const { to, chunk } of held.splice(0)) to.write(chunk);
    },
    statementsSent: () => statements,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
