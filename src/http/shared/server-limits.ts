import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyHttpOptions } from 'fastify';
import type { Config } from '../../config/config.js';

/*
 * What node:http enforces before a request reaches Fastify: header size, the time a client may
 * take to send a request, idle keep-alive connections and the number of open connections
 * (docs/operations.md, "Limits").
 */

/** Fastify options for the limits node:http enforces. */
export function serverLimitOptions(config: Config): FastifyHttpOptions<Server> {
  return {
    // Fastify copies these two onto the server after creating it (0 would turn them off)
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      maxHeaderSize: config.maxHeaderBytes,
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      // how often node:http looks for requests over their time; its default (30 s) would let a
      // slow sender keep its connection up to 30 s past the limit
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.headersTimeoutMs / 4))),
    },
    clientErrorHandler: answerClientError,
  };
}

/**
 * Errors node:http finds before there is a request object (headers over the size limit, a
 * request not received in time, bytes that are not HTTP): the answer has the contract's
 * `{"detail": ...}` body and the connection is closed, since what follows on it cannot be read.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let detail = 'Bad Request: the request is not valid HTTP/1.1';
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    detail = 'Request Timeout: the request was not received in time';
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    detail = 'Request Header Fields Too Large: the request line and headers exceed the size limit';
  }
  const body = JSON.stringify({ detail });
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  // a client that stops reading must not keep the socket
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** Caps the open connections of the listening server (node:http closes further ones at once). */
export function limitConnections(server: { maxConnections: number }, config: Config): void {
  if (config.maxConnections > 0) server.maxConnections = config.maxConnections;
}
