// The NestJS example (examples/nestjs) as a real app: installed and built from its own
// package.json, started as a child process on a free port, driven over HTTP. Its tools, the
// translation between HTTP and the wire shapes of retained handles, the fault statuses, and a
// shutdown that closes the executor and leaves no worker behind.

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'nestjs');
const REQUEST_MS = 10_000;

/** Runs a command to completion; rejects with its output when it fails. */
function sh(command, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output}`))));
  });
}

/** Starts the built app on a free port; resolves when it prints its URL. */
function startApp() {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', CODEMODE_WORKERS: '2', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let output = '';
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the app printed no URL within 20 s:\n${output}`)), 20_000);
    child.stdout.on('data', (d) => {
      output += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.stderr.on('data', (d) => (output += d));
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the app exited (${code ?? signal}) before listening:\n${output}`));
    });
  });
  return { child, exited, url, output: () => output };
}

/** Children of `pid` by /proc, as { pid, comm, start } (start: clock ticks since boot). */
function childrenOf(pid) {
  const found = [];
  for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean)) {
    const stat = readProcStat(Number(task));
    if (stat) found.push(stat);
  }
  return found;
}

function readProcStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    return { pid, comm: stat.slice(stat.indexOf('(') + 1, close), state: fields[0], start: fields[19] };
  } catch {
    return null;
  }
}

/** Whether the process recorded in `before` still exists (the same one, not a reused pid). */
function stillRunning(before) {
  const now = readProcStat(before.pid);
  return now !== null && now.start === before.start && now.state !== 'Z';
}

let app;
let base;

beforeAll(async () => {
  if (!existsSync(path.join(dir, 'node_modules'))) await sh('npm', ['ci', '--no-audit', '--no-fund'], dir);
  await sh('npm', ['run', 'build'], dir);
  app = startApp();
  base = await app.url;
}, 600_000);

afterAll(async () => {
  if (app && app.child.exitCode === null && app.child.signalCode === null) {
    app.child.kill('SIGKILL');
    await app.exited;
  }
});

function request(route, init = {}) {
  return fetch(`${base}${route}`, { ...init, signal: AbortSignal.timeout(REQUEST_MS) });
}

function run(body) {
  return request('/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

const closedText = (id) =>
  `Execution "${id}" holds no handles: they were closed, expired at the idle bound, or never granted. ` +
  'Execute again with retainHandles to get a fresh executionId.';

describe('POST /run', () => {
  it('answers the outcome of a plain program, its tool calls served from the catalogue', async () => {
    const res = await run({
      code: `async () => {
        const products = await store.listProducts()
        console.log('products:', products.length)
        const gloves = await store.getProduct('3')
        return { inStock: products.filter((p) => p.stock > 0).map((p) => p.name), gloves: gloves.price }
      }`,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const outcome = await res.json();
    expect(outcome.result).toEqual({ inStock: ['hat', 'gloves'], gloves: 15 });
    expect(outcome.logs).toEqual([{ level: 'log', message: 'products: 3' }]);
    expect(outcome.stats.toolCalls).toBe(2);
    expect(outcome).not.toHaveProperty('error');
    expect(outcome).not.toHaveProperty('executionId');
  });

  it("answers a program failure as the outcome's error, logs kept", async () => {
    const failed = await (await run({ code: `async () => { console.warn('about to'); await store.getProduct('9') }` })).json();
    expect(failed.error).toEqual({ code: 'PROGRAM_ERROR', message: 'Error: No product with id "9"' });
    expect(failed.logs).toEqual([{ level: 'warn', message: 'about to' }]);

    const res = await run({ code: 'function main() { return 1 }' });
    expect(res.status).toBe(200);
    const outcome = await res.json();
    expect(outcome.error.code).toBe('ENTRY_SHAPE');
    expect(outcome.error.message).toMatch(/^The code must be one expression that evaluates to a function/);
    expect(outcome).not.toHaveProperty('result');
  });

  it('answers 400 for a request the executor refuses, and for a body that is not JSON', async () => {
    const refused = await run({ code: 42 });
    expect(refused.status).toBe(400);
    const fault = await refused.json();
    expect(fault).toMatchObject({ code: 'INVALID_REQUEST', retryable: false });
    expect(fault.message).toMatch(/^Invalid request field `code`/);

    const garbled = await request('/run', { method: 'POST', body: '{ code:' });
    expect(garbled.status).toBe(400);
    expect((await garbled.json()).message).toMatch(/^The body must be a JSON object/);
  });
});

describe('retained handles over /apps/<executionId>/', () => {
  // State in the arrow's body: it lives as long as the retained isolate does.
  const handler = `async () => {
    let served = 0
    const catalogue = await store.listProducts()
    return {
      fetch: async (request) => {
        const url = new URL(request.url)
        if (url.pathname === '/teapot') {
          return new Response('short and stout', { status: 418, statusText: "I'm a teapot", headers: { 'x-kind': 'teapot' } })
        }
        return Response.json({
          served: ++served,
          method: request.method,
          path: url.pathname,
          query: url.search,
          type: request.headers.get('content-type'),
          body: request.method === 'GET' ? null : await request.text(),
          products: catalogue.length,
        })
      },
    }
  }`;

  it('serves requests through the handler, keeps its state, echoes a body, and answers 410 once closed', async () => {
    const granted = await run({ code: handler, retainHandles: true });
    expect(granted.status).toBe(200);
    const outcome = await granted.json();
    expect(outcome.executionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(outcome.handles).toEqual(['fetch']);
    expect(outcome).not.toHaveProperty('result');
    const id = outcome.executionId;

    const first = await request(`/apps/${id}/items?page=2`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await first.json()).toEqual({ served: 1, method: 'GET', path: '/items', query: '?page=2', type: null, body: null, products: 3 });

    const second = await request(`/apps/${id}/`);
    expect(await second.json()).toMatchObject({ served: 2, path: '/' });

    const posted = await request(`/apps/${id}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 7, note: 'ünïcødé' }),
    });
    expect(await posted.json()).toMatchObject({
      served: 3,
      method: 'POST',
      path: '/orders',
      type: 'application/json',
      body: JSON.stringify({ id: 7, note: 'ünïcødé' }),
    });

    const teapot = await request(`/apps/${id}/teapot`);
    expect(teapot.status).toBe(418);
    expect(teapot.statusText).toBe("I'm a teapot");
    expect(teapot.headers.get('x-kind')).toBe('teapot');
    expect(await teapot.text()).toBe('short and stout');

    const closed = await request(`/apps/${id}`, { method: 'DELETE' });
    expect(closed.status).toBe(204);

    const gone = await request(`/apps/${id}/items`);
    expect(gone.status).toBe(410);
    expect(gone.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await gone.text()).toBe(closedText(id));

    const closedAgain = await request(`/apps/${id}`, { method: 'DELETE' });
    expect(closedAgain.status).toBe(410);
    expect(await closedAgain.text()).toBe(closedText(id));
  });

  it('answers 410 with the same text for an executionId nobody granted', async () => {
    const id = crypto.randomUUID();
    const res = await request(`/apps/${id}/anything`, { method: 'POST', body: 'x' });
    expect(res.status).toBe(410);
    expect(await res.text()).toBe(closedText(id));
  });
});

describe('shutdown', () => {
  it('SIGTERM closes the executor: the app exits and leaves no codemode-worker process', { timeout: 20_000 }, async () => {
    const workers = childrenOf(app.child.pid).filter((p) => p.comm === 'codemode-worker');
    expect(workers.length).toBe(2);
    app.child.kill('SIGTERM');
    const exit = await Promise.race([
      app.exited,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`the app did not exit:\n${app.output()}`)), 15_000)),
    ]);
    // Nest closes the app on the signal, then raises it again.
    expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
    expect(app.output()).toContain('executor closed: every worker process reaped');
    expect(workers.filter(stillRunning)).toEqual([]);
  });
});
