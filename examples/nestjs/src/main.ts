// Starts the app on HOST:PORT (default 127.0.0.1:3000; PORT=0 picks a free port) and prints the
// URL it listens on. SIGTERM or SIGINT closes the app, and with it the executor.

import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import { AppModule } from './app.module.js';

// Strict routing, so /apps/<id> (close) and /apps/<id>/ (the handler's root) are different
// routes. It has to be set before the first route is registered.
const server = express();
server.set('strict routing', true);
server.disable('x-powered-by');

const app = await NestFactory.create<NestExpressApplication>(AppModule, new ExpressAdapter(server), {
  // Routes read their bodies themselves: JSON on /run, raw bytes on /apps.
  bodyParser: false,
  logger: ['error', 'warn', 'log'],
});
app.enableShutdownHooks(['SIGTERM', 'SIGINT']);

const host = process.env.HOST ?? '127.0.0.1';
await app.listen(Number(process.env.PORT ?? 3000), host);
const { port } = app.getHttpServer().address() as AddressInfo;
console.log(`listening on http://${host.includes(':') ? `[${host}]` : host}:${port}`);
