// A field given as `undefined` is the field left out: it inherits, at every entry point. Above
// all, `{ outbound: undefined }` on a request never opens a network the executor closed. The
// probe's target is a server on 127.0.0.1 that counts what reaches it: nothing may.
import http from 'node:http';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { executor } from './helpers.mjs';
import { connected, served } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const CLOSED = 'fetch is closed in this sandbox: the host allows no network access from programs. Ask for the data through a tool call instead.';

let server;
let url;
let reached = 0;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    reached++;
    res.end('reached');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}/probe`;
});

afterAll(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  reached = 0;
});

const probe = () => `async () => { try { return await (await fetch('${url}')).text() } catch (e) { return e.message } }`;

describe('an explicit undefined inherits', () => {
  it('IsolateExecutor: a request with outbound: undefined keeps the executor\'s null', async () => {
    const ex = executor({ workers: 1, outbound: null });
    const out = await ex.execute({ code: probe(), outbound: undefined });
    expect(out.result).toBe(CLOSED);
    // The other fields too: undefined is the executor's own value.
    const rest = await ex.execute({ code: probe(), outbound: undefined, timeout: undefined, memoryLimit: undefined, retainHandles: undefined, signal: undefined, onLog: undefined, modules: undefined, providers: undefined, dispatch: undefined });
    expect(rest.result).toBe(CLOSED);
    expect(reached).toBe(0);
  });

  it('IsolateExecutor options: outbound: undefined is the option left out', async () => {
    const ex = executor({ workers: 1, outbound: undefined, timeout: undefined });
    const out = await ex.execute({ code: probe(), outbound: null });
    expect(out.result).toBe(CLOSED);
    expect(reached).toBe(0);
  });

  it('CodemodeExecutor: per-call outbound: undefined keeps globalOutbound: null, and the native executor\'s null', async () => {
    const open = executor({ workers: 1 });
    const cm = new CodemodeExecutor(open, { globalOutbound: null });
    const out = await cm.execute(probe(), [], { outbound: undefined });
    expect(out.result).toBe(CLOSED);
    const closed = executor({ workers: 1, outbound: null });
    const plain = new CodemodeExecutor(closed);
    expect((await plain.execute(probe(), [], { outbound: undefined })).result).toBe(CLOSED);
    expect((await plain.execute(probe(), [], { outbound: undefined, timeout: undefined, modules: undefined, signal: undefined, connectors: undefined })).result).toBe(CLOSED);
    expect(reached).toBe(0);
  });

  it('connect(): a request with outbound: undefined keeps the client\'s null', async () => {
    const daemon = await served({ workers: 1 });
    const remote = await connected(daemon.url, { outbound: null });
    const out = await remote.execute({ code: probe(), outbound: undefined });
    expect(out.result).toBe(CLOSED);
    expect(reached).toBe(0);
  });
});
