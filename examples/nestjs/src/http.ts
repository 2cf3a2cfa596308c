// Translation between Express and the executor: request bodies as bytes, WireRequest from an
// incoming request, an incoming WireResponse written back, and executor faults as HTTP answers.
// The model's code sits on the far side of both translations: it gets none of the caller's
// credentials, and what it answers cannot set anything on the app's origin.

import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  HttpException,
  HttpStatus,
  PayloadTooLargeException,
} from '@nestjs/common';
import { ExecutorError, type WireRequest, type WireResponse } from '@supolka/codemode-executor';
import type { Request, Response } from 'express';

/** The most a request body may carry (the app reads bodies itself, as bytes). */
export const BODY_LIMIT_BYTES = 8 * 1024 * 1024;

/** Reads the whole request body; 413 past `limit`. */
export async function readBody(req: Request, limit = BODY_LIMIT_BYTES): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new PayloadTooLargeException(`The request body is larger than ${limit} bytes.`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

// Connection-level headers: they describe one hop, not the request or response itself.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

// The caller's credentials, never handed to the model's code: the API token travels in
// `authorization`, and cookies or proxy credentials are none of the handler's business either.
const CREDENTIALS = new Set(['authorization', 'cookie', 'proxy-authorization']);

// The only headers of a handler's response the app serves: they describe the body and nothing
// else. Everything else is dropped, so no handler can set a cookie (`set-cookie`), pin or clear
// state on the app's origin (`strict-transport-security`, `clear-site-data`,
// `service-worker-allowed`), grant other origins access (`access-control-*`), loosen the app's
// own policy (`content-security-policy`, `x-content-type-options`, `cache-control`), or steer a
// proxy in front of the app (`x-accel-redirect`, `x-sendfile`). An allow-list, so a header
// browsers learn tomorrow is dropped too.
const HANDLER_RESPONSE_HEADERS = new Set(['content-type', 'content-language', 'content-disposition', 'location', 'retry-after']);

/**
 * Headers on every answer of the app (set in main.ts before any route). A page a handler serves
 * runs in a unique opaque origin with scripts, forms, plugins and popups off and nothing to load,
 * so it can neither read nor write the app's origin; the body's type is the declared one; no
 * cache keeps an answer that was given to a token holder.
 */
export const SANDBOX_HEADERS: readonly [string, string][] = [
  ['content-security-policy', "sandbox; default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"],
  ['x-content-type-options', 'nosniff'],
  ['cache-control', 'no-store'],
];

function toArrayBuffer(bytes: Buffer): ArrayBuffer {
  // A copy: a small Buffer may be a view into Node's shared pool.
  const copy = new ArrayBuffer(bytes.length);
  new Uint8Array(copy).set(bytes);
  return copy;
}

/**
 * The WireRequest a handler mounted at `mount` sees: the method, the URL with the rest of the
 * path after the mount and the query, every header but the hop-by-hop ones and the credentials,
 * and the body bytes.
 */
export async function toWireRequest(req: Request, mount: string): Promise<WireRequest> {
  const rest = req.originalUrl.slice(mount.length);
  const url = new URL(rest.startsWith('/') ? rest : `/${rest}`, `${req.protocol}://${req.headers.host ?? 'localhost'}`);
  const headers: [string, string][] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i];
    const lower = name.toLowerCase();
    if (!HOP_BY_HOP.has(lower) && !CREDENTIALS.has(lower)) headers.push([name, req.rawHeaders[i + 1]]);
  }
  const bytes = await readBody(req);
  const bodyless = req.method === 'GET' || req.method === 'HEAD' || bytes.length === 0;
  return { method: req.method, url: url.href, headers, body: bodyless ? null : toArrayBuffer(bytes) };
}

/** The headers of a handler's response the app serves, in order: those HANDLER_RESPONSE_HEADERS names. */
export function servedHeaders(headers: WireResponse['headers']): [string, string][] {
  return headers.filter(([name]) => HANDLER_RESPONSE_HEADERS.has(name.toLowerCase()));
}

/**
 * Writes a WireResponse: status, status text, the headers `servedHeaders` keeps (next to the
 * app's SANDBOX_HEADERS, already set), body bytes. Node sets content-length from the bytes.
 */
export function writeWireResponse(req: Request, res: Response, answer: WireResponse): void {
  res.statusCode = answer.status;
  if (answer.statusText) res.statusMessage = answer.statusText;
  for (const [name, value] of servedHeaders(answer.headers)) res.appendHeader(name, value);
  const bodyless = req.method === 'HEAD' || answer.status === 204 || answer.status === 304 || answer.body === null;
  res.end(bodyless ? undefined : Buffer.from(answer.body as ArrayBuffer));
}

/** The HTTP status of an executor fault; `otherwise` for a non-retryable fault with none of its own. */
export function faultStatus(error: ExecutorError, otherwise: number): number {
  switch (error.code) {
    case 'HANDLES_CLOSED':
      return HttpStatus.GONE;
    case 'QUEUE_FULL':
      return HttpStatus.TOO_MANY_REQUESTS;
    case 'INVALID_REQUEST':
      return HttpStatus.BAD_REQUEST;
    case 'CLOSED':
      return HttpStatus.SERVICE_UNAVAILABLE;
    default:
      return error.retryable ? HttpStatus.SERVICE_UNAVAILABLE : otherwise;
  }
}

/**
 * Answers every failure of a route as JSON `{ code, message, retryable }`, except
 * `HANDLES_CLOSED`, which answers 410 Gone with the fault text as a plain-text body.
 * `otherwise` is the status of a non-retryable fault the table above does not name, and of a
 * failure that is not an ExecutorError (on `/apps`, a handler's own throw).
 */
@Catch()
export class FaultFilter implements ExceptionFilter {
  constructor(private readonly otherwise: number) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (error instanceof ExecutorError) {
      const status = faultStatus(error, this.otherwise);
      if (status === HttpStatus.GONE) {
        res.status(status).type('text/plain; charset=utf-8').send(error.message);
        return;
      }
      if (status === HttpStatus.TOO_MANY_REQUESTS) res.setHeader('retry-after', '1');
      res.status(status).json({ code: error.code, message: error.message, retryable: error.retryable });
      return;
    }
    if (error instanceof HttpException) {
      const code = HttpStatus[error.getStatus()] ?? 'HTTP_ERROR';
      res.status(error.getStatus()).json({ code, message: error.message, retryable: false });
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    res.status(this.otherwise).json({ code: 'ERROR', message, retryable: false });
  }
}
