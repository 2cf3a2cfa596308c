// Who may call the app: whoever holds the API token, from no web page at all or from a page on
// an origin listed in ALLOWED_ORIGINS. Every route checks both (AccessGuard, global), before the
// route reads a byte of the body.
//
// The token is read once at startup from API_TOKEN_FILE (a file holding it; preferred: a file
// mounted from a secret store stays out of the environment other processes can list) or
// API_TOKEN. There is no default: without a token the app refuses to start.

import { readFileSync } from 'node:fs';
import { createHash, timingSafeEqual } from 'node:crypto';
import {
  type CanActivate,
  type ExecutionContext,
  ForbiddenException,
  UnauthorizedException,
} from '@nestjs/common';
import type { Request, Response } from 'express';

/** What AccessGuard checks, read from the environment at startup. */
export interface Access {
  /** SHA-256 of the token: what a presented token is compared with. */
  readonly tokenDigest: Buffer;
  /** Origins whose pages may call the app (exact `scheme://host[:port]`). */
  readonly origins: ReadonlySet<string>;
}

/** Why the app cannot start with the environment it was given. */
export class StartupError extends Error {}

/** The shortest token the app accepts: 32 characters (`openssl rand -hex 32` gives 64). */
export const MIN_TOKEN_LENGTH = 32;

const GENERATE = 'Generate one with `openssl rand -hex 32`.';
// The characters a bearer token carries in an Authorization header (RFC 6750 b64token).
const TOKEN_SHAPE = /^[A-Za-z0-9\-._~+/]+=*$/;
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

function readToken(env: NodeJS.ProcessEnv): { token: string; source: string } {
  const file = env.API_TOKEN_FILE;
  const inline = env.API_TOKEN;
  if (file && inline) throw new StartupError('Both API_TOKEN_FILE and API_TOKEN are set: set one.');
  if (file) {
    try {
      // One trailing newline (or any surrounding whitespace) is not part of the token.
      return { token: readFileSync(file, 'utf8').trim(), source: `API_TOKEN_FILE (${file})` };
    } catch (e) {
      throw new StartupError(`Cannot read API_TOKEN_FILE (${file}): ${(e as Error).message}.`);
    }
  }
  if (inline) return { token: inline.trim(), source: 'API_TOKEN' };
  throw new StartupError(`No API token: set API_TOKEN_FILE to a file holding one (or API_TOKEN to the token itself). ${GENERATE}`);
}

function readOrigins(list: string | undefined): Set<string> {
  const origins = new Set<string>();
  for (const entry of (list ?? '').split(',').map((o) => o.trim()).filter(Boolean)) {
    let origin: string | undefined;
    try {
      origin = new URL(entry).origin;
    } catch {
      origin = undefined;
    }
    if (origin !== entry) {
      throw new StartupError(
        `ALLOWED_ORIGINS entry "${entry}" is not an origin: write each as scheme://host[:port], comma-separated, e.g. https://app.example.com.`,
      );
    }
    origins.add(origin);
  }
  return origins;
}

/** Reads and checks the token and the origin allow-list; throws StartupError saying what to fix. */
export function accessFromEnv(env: NodeJS.ProcessEnv): Access {
  const { token, source } = readToken(env);
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new StartupError(
      `The API token from ${source} is ${token.length} characters; it must be at least ${MIN_TOKEN_LENGTH}. ${GENERATE}`,
    );
  }
  if (!TOKEN_SHAPE.test(token)) {
    throw new StartupError(
      `The API token from ${source} holds a character a bearer token cannot carry: use letters, digits and - . _ ~ + / only. ${GENERATE}`,
    );
  }
  return { tokenDigest: sha256(token), origins: readOrigins(env.ALLOWED_ORIGINS) };
}

/**
 * Whether `authorization` is `Bearer <the token>`. The comparison runs over the SHA-256 digests,
 * so it takes the same time whatever the presented token and its length.
 */
export function presentsToken(authorization: string | undefined, tokenDigest: Buffer): boolean {
  const match = BEARER.exec(authorization ?? '');
  return match !== null && timingSafeEqual(sha256(match[1]), tokenDigest);
}

export const UNAUTHORIZED_TEXT =
  'Send the API token as `Authorization: Bearer <token>`; this request carried none or a wrong one.';

/** Refuses (403) a request from a page on an origin not listed, then (401) one without the token. */
export class AccessGuard implements CanActivate {
  constructor(private readonly access: Access) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    // Browsers send Origin on every cross-origin request and on same-origin POSTs; curl and
    // server-side clients send none.
    const origin = req.headers.origin;
    if (origin !== undefined && !this.access.origins.has(origin)) {
      throw new ForbiddenException(
        `Origin "${origin}" is not allowed: list it in ALLOWED_ORIGINS to let pages served there call this app.`,
      );
    }
    if (!presentsToken(req.headers.authorization, this.access.tokenDigest)) {
      http.getResponse<Response>().setHeader('www-authenticate', 'Bearer realm="codemode"');
      throw new UnauthorizedException(UNAUTHORIZED_TEXT);
    }
    return true;
  }
}
