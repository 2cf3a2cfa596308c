// Starts the app on HOST:PORT (default 127.0.0.1:3000; PORT=0 picks a free port) and prints the
// URL it listens on. SIGTERM or SIGINT closes the app, and with it the executor. Without an API
// token (API_TOKEN_FILE or API_TOKEN) it refuses to start, before any worker is spawned.

import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import { type Access, AccessGuard, accessFromEnv, StartupError } from './access.js';
import { AppModule } from './app.module.js';
import { SANDBOX_HEADERS } from './http.js';

let access: Access;
try {
  access = accessFromEnv(process.env);
} catch (e) {
  if (!(e instanceof StartupError)) throw e;
  console.error(`The app cannot start: ${e.message}`);
  process.exit(1);
}

// Strict routing, so /apps/<id> (close) and /apps/<id>/ (the handler's root) are different
// routes. It has to be set before the first route is registered.
const server = express();
server.set('strict routing', true);
server.disable('x-powered-by');
// On every answer, the 404s and the refusals included.
server.use((_req: express.Request, res: express.Response, next: express.NextFunction) => {
  for (const [name, value] of SANDBOX_HEADERS) res.setHeader(name, value);
  next();
});

const app = await NestFactory.create<NestExpressApplication>(AppModule, new ExpressAdapter(server), {
  // Routes read their bodies themselves: JSON on /run, raw bytes on /apps.
  bodyParser: false,
  logger: ['error', 'warn', 'log'],
});
app.useGlobalGuards(new AccessGuard(access));
app.enableShutdownHooks(['SIGTERM', 'SIGINT']);

const host = process.env.HOST ?? '127.0.0.1';
await app.listen(Number(process.env.PORT ?? 3000), host);
const { port } = app.getHttpServer().address() as AddressInfo;
console.log(`listening on http://${host.includes(':') ? `[${host}]` : host}:${port}`);
