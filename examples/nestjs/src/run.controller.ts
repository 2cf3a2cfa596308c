// POST /run: runs the posted program `{ code, retainHandles? }` with the store tools and answers
// its outcome as JSON. A program failure is part of the outcome (200, `error` set); an
// executor fault is an HTTP error (FaultFilter).

import {
  BadRequestException,
  Controller,
  HttpStatus,
  Inject,
  Post,
  Req,
  Res,
  UnsupportedMediaTypeException,
  UseFilters,
} from '@nestjs/common';
import { IsolateExecutor, type ExecuteRequest } from '@supolka/codemode-executor';
import { parse as parseContentType } from 'content-type';
import type { Request, Response } from 'express';
import { FaultFilter, readBody } from './http.js';
import { StoreTools } from './store.tools.js';

const BODY_SHAPE = 'The body must be a JSON object: { "code": "async () => { ... }", "retainHandles"?: true }.';
const JSON_ONLY = 'POST /run takes `Content-Type: application/json` (UTF-8); send the body as JSON with that type.';

/**
 * 415 unless the body is declared `application/json` (UTF-8, the charset JSON.parse reads). A
 * web page can send JSON text cross-site only under a type a form can send (`text/plain`); to
 * send this one its browser must ask first (a CORS preflight), and this app grants none.
 */
function requireJson(req: Request): void {
  const { type, parameters } = parseContentType(req.headers['content-type'] ?? '');
  const charset = parameters.charset?.toLowerCase();
  if (type !== 'application/json' || (charset !== undefined && charset !== 'utf-8')) {
    throw new UnsupportedMediaTypeException(JSON_ONLY);
  }
}

function parseRun(bytes: Buffer): Pick<ExecuteRequest, 'code' | 'retainHandles'> {
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new BadRequestException(`${BODY_SHAPE} ${(e as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequestException(BODY_SHAPE);
  const { code, retainHandles } = body as Record<string, unknown>;
  // The executor checks the field types and answers INVALID_REQUEST (400) with its own text.
  const run = { code } as Pick<ExecuteRequest, 'code' | 'retainHandles'>;
  if (retainHandles !== undefined) run.retainHandles = retainHandles as boolean;
  return run;
}

// JSON has no BigInt: write one as its decimal string.
const jsonSafe = (_key: string, value: unknown) => (typeof value === 'bigint' ? value.toString() : value);

@Controller()
@UseFilters(new FaultFilter(HttpStatus.INTERNAL_SERVER_ERROR))
export class RunController {
  constructor(@Inject(IsolateExecutor) private readonly executor: IsolateExecutor, @Inject(StoreTools) private readonly tools: StoreTools) {}

  @Post('run')
  async run(@Req() req: Request, @Res() res: Response): Promise<void> {
    requireJson(req);
    const run = parseRun(await readBody(req));
    const outcome = await this.executor.execute({ ...run, providers: this.tools.providers, dispatch: this.tools.dispatch });
    // { result, logs, stats }, with `error` on a program failure and `executionId`, `handles`
    // (no result) when the program returned a handler and the run asked to retain it.
    res.status(HttpStatus.OK).type('application/json').send(JSON.stringify(outcome, jsonSafe));
  }
}
