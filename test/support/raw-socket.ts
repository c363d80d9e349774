import { connect, type Socket } from 'node:net';

/*
 * Raw connections for tests of what node:http enforces per connection (open-connection caps,
 * hand-off between processes): fetch and inject hide when a connection opens and closes.
 */

/** A connection to 127.0.0.1:`port`, once it is open. */
export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

/**
 * One keep-alive `GET /health` on `socket`: the answer's status, 'closed' when the server closes
 * the connection unanswered, 'unanswered' when nothing comes within `timeoutMs`.
 */
export function askHealth(socket: Socket, timeoutMs = 5_000): Promise<number | 'closed' | 'unanswered'> {
  return new Promise((resolve) => {
    let text = '';
    const finish = (outcome: number | 'closed' | 'unanswered') => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(outcome);
    };
    const timer = setTimeout(() => finish('unanswered'), timeoutMs);
    const onData = (data: Buffer) => {
      text += data.toString();
      if (text.includes('{"status":"ok"}')) finish(Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1]));
    };
    const onClose = () => finish('closed');
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.on('error', () => undefined);
    socket.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n');
  });
}
