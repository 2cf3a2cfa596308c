// The NestJS example (examples/nestjs) as a real app: installed and built from its own
// package.json, started as a child process on a free port, driven over HTTP (127.0.0.1 only).
// Its defences as an attacker meets them (the bearer token, the content type, the Origin
// allow-list, the blocked network, credentials stripped both ways, the sandboxing headers on
// served handlers), its tools, the translation between HTTP and the wire shapes of retained
// handles, the fault statuses, and a shutdown that closes the executor and leaves no worker.
// One file for one app: every case drives the same built and started app (installing and
// building it takes most of the suite's time), so a split would build and start it again.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

// The app's secret, written to a file only this test reads; the environment it starts with
// holds no token of the test runner's.
const secrets = mkdtempSync(path.join(tmpdir(), 'codemode-nestjs-'));
const token = randomBytes(32).toString('hex');
const tokenFile = path.join(secrets, 'token');
writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
const ALLOWED_ORIGIN = 'http://127.0.0.1:1';

/** The app's environment: the test's own, without any of the app's settings, plus `extra`. */
function appEnv(extra) {
  const env = { ...process.env, HOST: '127.0.0.1', PORT: '0', CODEMODE_WORKERS: '2', NO_COLOR: '1' };
  for (const name of ['API_TOKEN', 'API_TOKEN_FILE', 'ALLOWED_ORIGINS']) delete env[name];
  return { ...env, ...extra };
}

/** Starts the built app on a free port; resolves when it prints its URL. */
function startApp() {
  const child = spawn(process.execPath, ['dist/main.js'], {
    cwd: dir,
    env: appEnv({ API_TOKEN_FILE: tokenFile, ALLOWED_ORIGINS: ALLOWED_ORIGIN }),
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
  rmSync(secrets, { recursive: true, force: true });
});

/** A request to the app; it carries the bearer token unless `headers` says otherwise. */
function request(route, init = {}) {
  const headers = new Headers(init.headers);
  if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  if (headers.get('authorization') === '') headers.delete('authorization');
  return fetch(`${base}${route}`, { ...init, headers, signal: AbortSignal.timeout(REQUEST_MS) });
}

function run(body, headers = {}) {
  return request('/run', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** Grants `code`'s handler, gives its executionId to `use`, and closes it whatever happens. */
async function withHandler(code, use) {
  const granted = await (await run({ code, retainHandles: true })).json();
  expect(granted.handles).toEqual(['fetch']);
  try {
    return await use(granted.executionId);
  } finally {
    expect((await request(`/apps/${granted.executionId}`, { method: 'DELETE' })).status).toBe(204);
  }
}

const NETWORK_CLOSED =
  'fetch is closed in this sandbox: the host allows no network access from programs. Ask for the data through a tool call instead.';

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

    const garbled = await request('/run', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{ code:' });
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
          return new Response('short and stout', { status: 418, statusText: "I'm a teapot", headers: { 'content-language': 'en', 'x-kind': 'teapot' } })
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
    expect(teapot.headers.get('content-language')).toBe('en');
    expect(teapot.headers.get('x-kind')).toBeNull();
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

describe('the defences, as an attacker meets them', () => {
  const program = { code: `async () => 'ran'` };

  it('refuses POST /run without the bearer token, or with a wrong one: 401', async () => {
    for (const authorization of ['', 'Bearer', `Bearer ${'0'.repeat(token.length)}`, `Bearer ${token.slice(1)}`, `Basic ${token}`, `Bearer ${token} extra`]) {
      const res = await run(program, { authorization });
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="codemode"');
      const fault = await res.json();
      expect(fault).toEqual({
        code: 'UNAUTHORIZED',
        message: 'Send the API token as `Authorization: Bearer <token>`; this request carried none or a wrong one.',
        retryable: false,
      });
    }
    // The scheme is case-insensitive (RFC 9110).
    expect(await (await run(program, { authorization: `bearer ${token}` })).json()).toMatchObject({ result: 'ran' });
  });

  it('refuses /apps and DELETE /apps/<id> without the token too', async () => {
    const id = crypto.randomUUID();
    expect((await request(`/apps/${id}/x`, { headers: { authorization: '' } })).status).toBe(401);
    expect((await request(`/apps/${id}`, { method: 'DELETE', headers: { authorization: 'Bearer nope' } })).status).toBe(401);
  });

  it('answers 415 to a body that is not sent as application/json: a cross-site form cannot post code', async () => {
    // What an HTML form with enctype="text/plain" sends: valid JSON text under a simple type.
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', null]) {
      const headers = type === null ? {} : { 'content-type': type };
      // Bytes: a string body would get `text/plain` from fetch when no type is given.
      const res = await request('/run', { method: 'POST', headers, body: new TextEncoder().encode(JSON.stringify(program)) });
      expect(res.status, String(type)).toBe(415);
      expect(await res.json()).toMatchObject({
        code: 'UNSUPPORTED_MEDIA_TYPE',
        message: 'POST /run takes `Content-Type: application/json` (UTF-8); send the body as JSON with that type.',
      });
    }
    // ...and without the token the form is refused before its type is read.
    const form = await run(program, { 'content-type': 'text/plain', authorization: '' });
    expect(form.status).toBe(401);
    expect(await (await run(program, { 'content-type': 'application/json; charset=utf-8' })).json()).toMatchObject({ result: 'ran' });
  });

  it('refuses a request whose Origin is not on the allow-list: 403', async () => {
    for (const origin of ['http://evil.example', 'null', `${base}`]) {
      const res = await run(program, { origin });
      expect(res.status, origin).toBe(403);
      expect(await res.json()).toEqual({
        code: 'FORBIDDEN',
        message: `Origin "${origin}" is not allowed: list it in ALLOWED_ORIGINS to let pages served there call this app.`,
        retryable: false,
      });
    }
    expect(await (await run(program, { origin: ALLOWED_ORIGIN })).json()).toMatchObject({ result: 'ran' });
  });

  it('blocks the network: a program or a retained handler calling fetch is refused', async () => {
    // The app's own loopback URL, which a native outbound would reach.
    const target = JSON.stringify(`${base}/run`);
    const probe = `async () => {
      try { const res = await fetch(${target}); return { reached: res.status } }
      catch (e) { return { refused: e.message } }
    }`;
    const outcome = await (await run({ code: probe })).json();
    expect(outcome.result).toEqual({ refused: NETWORK_CLOSED });

    await withHandler(`async () => ({ fetch: async () => Response.json(await (${probe})()) })`, async (id) => {
      expect(await (await request(`/apps/${id}/`)).json()).toEqual({ refused: NETWORK_CLOSED });
    });
  });

  it("does not hand the caller's Cookie, Authorization or Proxy-Authorization to the handler", async () => {
    const echo = `async () => ({ fetch: (request) => Response.json([...request.headers]) })`;
    await withHandler(echo, async (id) => {
      const res = await request(`/apps/${id}/`, {
        headers: { cookie: 'session=abc; csrf=def', 'proxy-authorization': 'Basic dXNlcjpwYXNz', 'x-trace': 'seen' },
      });
      const seen = Object.fromEntries(await res.json());
      expect(seen['x-trace']).toBe('seen');
      expect(seen).not.toHaveProperty('cookie');
      expect(seen).not.toHaveProperty('authorization');
      expect(seen).not.toHaveProperty('proxy-authorization');
      expect(JSON.stringify(seen)).not.toContain(token);
    });
  });

  it("serves a handler's HTML sandboxed, without Set-Cookie or any header that sets state on the app's origin", async () => {
    const page = '<script>document.cookie = "session=planted"; fetch("/run")</script>';
    const handler = `async () => ({
      fetch: () => new Response(${JSON.stringify(page)}, {
        headers: [
          ['content-type', 'text/html; charset=utf-8'],
          ['set-cookie', 'session=planted; Path=/; HttpOnly'],
          ['set-cookie', 'other=1; Path=/'],
          ['strict-transport-security', 'max-age=31536000; includeSubDomains'],
          ['clear-site-data', '"cookies", "storage"'],
          ['service-worker-allowed', '/'],
          ['access-control-allow-origin', '*'],
          ['access-control-allow-credentials', 'true'],
          ['content-security-policy', 'default-src *'],
          ['x-content-type-options', 'sniff'],
          ['x-accel-redirect', '/internal/secrets'],
          ['cache-control', 'public, max-age=31536000'],
          ['link', '</evil.js>; rel=preload; as=script'],
          ['refresh', '0; url=http://evil.example/'],
        ],
      }),
    })`;
    await withHandler(handler, async (id) => {
      const res = await request(`/apps/${id}/`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(page);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.getSetCookie()).toEqual([]);
      expect(res.headers.get('content-security-policy')).toBe(
        "sandbox; default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      );
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
      for (const name of [
        'strict-transport-security',
        'clear-site-data',
        'service-worker-allowed',
        'access-control-allow-origin',
        'access-control-allow-credentials',
        'x-accel-redirect',
        'link',
        'refresh',
      ]) {
        expect(res.headers.get(name), name).toBeNull();
      }
    });
  });

  it("cannot pass on the Set-Cookie of a response the handler fetched: the fetch never leaves", async () => {
    // A loopback server answering what a hostile site would: a cookie for whoever serves it.
    let contacted = 0;
    const site = createServer((_req, res) => {
      contacted += 1;
      res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'session=planted; Path=/' }).end('<p>hi</p>');
    });
    await new Promise((resolve) => site.listen(0, '127.0.0.1', resolve));
    try {
      const url = JSON.stringify(`http://127.0.0.1:${site.address().port}/`);
      await withHandler(`async () => ({ fetch: () => fetch(${url}) })`, async (id) => {
        const res = await request(`/apps/${id}/`);
        expect(res.headers.getSetCookie()).toEqual([]);
        expect(res.status).toBe(502);
        expect((await res.json()).message).toBe(NETWORK_CLOSED);
      });
      expect(contacted).toBe(0);
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
  });

  it('keeps of a wire response only the headers that describe its body', async () => {
    // The filter itself, on a wire answer as a worker could send it (the sandbox's Response
    // already drops set-cookie; the app does not rely on that).
    const { servedHeaders } = await import(pathToFileURL(path.join(dir, 'dist', 'http.js')).href);
    expect(
      servedHeaders([
        ['Content-Type', 'text/html'],
        ['set-cookie', 'a=1'],
        ['Set-Cookie2', 'b=2'],
        ['content-language', 'en'],
        ['strict-transport-security', 'max-age=1'],
        ['content-disposition', 'attachment; filename="a.txt"'],
        ['x-sendfile', '/etc/passwd'],
        ['location', '/elsewhere'],
        ['retry-after', '5'],
        ['content-length', '999'],
        ['transfer-encoding', 'chunked'],
      ]),
    ).toEqual([
      ['Content-Type', 'text/html'],
      ['content-language', 'en'],
      ['content-disposition', 'attachment; filename="a.txt"'],
      ['location', '/elsewhere'],
      ['retry-after', '5'],
    ]);
  });

  it('sends the same sandboxing headers on every answer of the app', async () => {
    for (const res of [await run(program), await request('/apps/x/y', { headers: { authorization: '' } }), await request('/nowhere')]) {
      expect(res.headers.get('content-security-policy')).toMatch(/^sandbox; default-src 'none'/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });
});

describe('startup', () => {
  /** Runs the app with `env` and resolves with its exit code and output (it must not start). */
  function refusedStart(env) {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['dist/main.js'], { cwd: dir, env: appEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the app did not refuse to start within 10 s:\n${output}`));
      }, 10_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
  }

  it('refuses to start without a token, with a short one, an unreadable file, or both sources set', { timeout: 60_000 }, async () => {
    const absent = path.join(secrets, 'absent');
    const [none, short, missing, both] = await Promise.all([
      refusedStart({}),
      refusedStart({ API_TOKEN: 'changeme' }),
      refusedStart({ API_TOKEN_FILE: absent }),
      refusedStart({ API_TOKEN_FILE: tokenFile, API_TOKEN: token }),
    ]);
    expect(none.code).toBe(1);
    expect(none.output).toContain(
      'The app cannot start: No API token: set API_TOKEN_FILE to a file holding one (or API_TOKEN to the token itself). Generate one with `openssl rand -hex 32`.',
    );
    expect(none.output).not.toContain('listening on');
    expect(short.code).toBe(1);
    expect(short.output).toContain('The API token from API_TOKEN is 8 characters; it must be at least 32.');
    expect(missing.code).toBe(1);
    expect(missing.output).toContain(`Cannot read API_TOKEN_FILE (${absent}): ENOENT`);
    expect(both.code).toBe(1);
    expect(both.output).toContain('Both API_TOKEN_FILE and API_TOKEN are set: set one.');
  });

  it('refuses an ALLOWED_ORIGINS entry that is not an origin, and a token a header cannot carry', { timeout: 60_000 }, async () => {
    const [origins, spaced] = await Promise.all([
      refusedStart({ API_TOKEN_FILE: tokenFile, ALLOWED_ORIGINS: 'https://app.example.com, https://app.example.com/path' }),
      refusedStart({ API_TOKEN: `${token} ${token}` }),
    ]);
    expect(origins.code).toBe(1);
    expect(origins.output).toContain(
      'ALLOWED_ORIGINS entry "https://app.example.com/path" is not an origin: write each as scheme://host[:port], comma-separated, e.g. https://app.example.com.',
    );
    expect(spaced.code).toBe(1);
    expect(spaced.output).toContain('The API token from API_TOKEN holds a character a bearer token cannot carry');
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
