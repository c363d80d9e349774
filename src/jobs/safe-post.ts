import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { isBlockedAddress } from '../domain/webhooks/webhook-url.js';

export type PostOutcome =
  | { kind: 'delivered'; status: number }
  | { kind: 'rejected'; status: number }
  | { kind: 'failed'; error: string; retryable: boolean };

export interface PostOptions {
  headers: Record<string, string>;
  timeoutMs: number;
  /** Allow private, loopback and link-local destinations (development and tests). */
  allowPrivate: boolean;
  /** Response bytes read at most; the rest is discarded. */
  maxResponseBytes?: number;
}

class BlockedDestination extends Error {}

/**
 * POSTs `body` to `url` without following redirects. The destination is checked after DNS
 * resolution, at connect time, so a name that resolves (or re-resolves) to a private address
 * is refused too.
 */
export function safePost(url: string, body: string, options: PostOptions): Promise<PostOutcome> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ kind: 'failed', error: `invalid URL ${url}`, retryable: false });
  }
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivate && isIP(host) !== 0 && isBlockedAddress(host)) {
    return Promise.resolve({ kind: 'failed', error: `${host} is a private address`, retryable: false });
  }
  const lookup = (hostname: string, lookupOptions: object, callback: (...args: any[]) => void) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error);
      const allowed = options.allowPrivate ? addresses : addresses.filter((a) => !isBlockedAddress(a.address));
      if (allowed.length === 0) return callback(new BlockedDestination(`${hostname} resolves only to private addresses`));
      if ((lookupOptions as { all?: boolean }).all) return callback(null, allowed);
      return callback(null, allowed[0].address, allowed[0].family);
    });
  };
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const limit = options.maxResponseBytes ?? 64 * 1024;
  return new Promise((resolve) => {
    const request = send(
      target,
      {
        method: 'POST',
        headers: { ...options.headers, 'content-length': Buffer.byteLength(body) },
        timeout: options.timeoutMs,
        lookup: lookup as never,
      },
      (response) => {
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > limit) response.destroy();
        });
        const finish = () => {
          const status = response.statusCode ?? 0;
          resolve(status >= 200 && status < 300 ? { kind: 'delivered', status } : { kind: 'rejected', status });
        };
        response.on('end', finish);
        response.on('close', finish);
        response.on('error', finish);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`timed out after ${options.timeoutMs} ms`)));
    request.on('error', (error) => {
      resolve({ kind: 'failed', error: error.message, retryable: !(error instanceof BlockedDestination) });
    });
    request.end(body);
  });
}
