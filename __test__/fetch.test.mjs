// fetch and the outbound policy, against real HTTP servers on 127.0.0.1 started here. Traffic
// goes to loopback only: refusals of other ranges are unit-tested on literals in
// crates/pool/src/outbound.rs, never by connecting.
import http from 'node:http';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IsolateExecutor, executor, failureCatalog, run } from './helpers.mjs';

const { CodemodeExecutor } = createRequire(import.meta.url)('../index.js');

let server;
let base;
const seen = [];
const holding = { now: 0, max: 0 };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: body.toString() });
      const url = new URL(req.url, 'http://x');
      if (url.pathname === '/json') {
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
        return res.end(JSON.stringify({ hello: 'world' }));
      }
      if (url.pathname === '/redirect') {
        res.writeHead(302, { location: '/json' });
        return res.end();
      }
      if (url.pathname === '/loop') {
        res.writeHead(302, { location: '/loop' });
        return res.end();
      }
      if (url.pathname === '/missing') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        return res.end('not here');
      }
      if (url.pathname === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        return res.end(Buffer.alloc(17 * 1024 * 1024, 1));
      }
      if (url.pathname === '/slow') {
        setTimeout(() => res.end('late'), 5_000);
        return;
      }
      if (url.pathname === '/hold') {
        // Held open a while, counting how many are open at once.
        holding.now++;
        holding.max = Math.max(holding.max, holding.now);
        setTimeout(() => {
          holding.now--;
          res.end(`held ${body.length}`);
        }, Number(url.searchParams.get('ms') ?? 150));
        return;
      }
      if (url.pathname === '/to-json') {
        res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: '/json' });
        return res.end();
      }
      if (url.pathname === '/binary') {
        res.writeHead(200);
        return res.end(Buffer.from([0, 1, 254, 255]));
      }
      res.writeHead(201, { 'content-type': 'text/plain', 'x-echo': req.headers['x-test'] ?? '' });
      res.end(`${req.method} ${req.url} ${body.toString()}`);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}`;
});

afterAll(() => new Promise((r) => server.close(r)));

const ex = executor({ workers: 1, timeout: 10_000, outbound: 'native' });

describe("native outbound ('native', asked for)", () => {
  it('performs GET and POST with headers and bodies from the executor', async () => {
    const out = await run(ex, `async () => {
      const a = await fetch('${base}/echo?q=1', { method: 'POST', headers: { 'X-Test': 'yes' }, body: JSON.stringify({ n: 1 }) });
      const b = await fetch(new Request('${base}/json'));
      return [a.status, a.ok, a.statusText, a.headers.get('x-echo'), await a.text(), await b.json(), b.headers.getSetCookie(), b.url] }`);
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([201, true, 'Created', 'yes', 'POST /echo?q=1 {"n":1}', { hello: 'world' }, ['a=1', 'b=2'], `${base}/json`]);
    const post = seen.find((s) => s.url === '/echo?q=1');
    expect(post.headers['content-type']).toBe('text/plain;charset=UTF-8');
  });

  it('follows redirects and reports them; stops after 10', async () => {
    const out = await run(ex, `async () => {
      const r = await fetch('${base}/redirect');
      let loop;
      try { await fetch('${base}/loop') } catch (e) { loop = e.message }
      return [r.status, r.redirected, r.url, loop] }`);
    expect(out.result.slice(0, 3)).toEqual([200, true, `${base}/json`]);
    expect(out.result[3]).toContain('more than 10 redirects');
  });

  it('returns error statuses as responses, binary bodies intact', async () => {
    const out = await run(ex, `async () => {
      const m = await fetch('${base}/missing');
      const b = await fetch('${base}/binary');
      return [m.status, m.ok, await m.text(), [...new Uint8Array(await b.arrayBuffer())]] }`);
    expect(out.result).toEqual([404, false, 'not here', [0, 1, 254, 255]]);
  });

  it('bounds the response body and reports connection failures with declared texts', async () => {
    const out = await run(ex, `async () => {
      const m = [];
      try { await fetch('${base}/big') } catch (e) { m.push(e.name + ': ' + e.message) }
      try { await fetch('http://127.0.0.1:1/') } catch (e) { m.push(e.name + ': ' + e.message) }
      return m }`, { memoryLimit: 256 });
    expect(out.result[0]).toMatch(/^TypeError: The response body of fetch .* is larger than the 16777216 bytes/);
    expect(out.result[1]).toMatch(/^TypeError: fetch http:\/\/127\.0\.0\.1:1\/ failed: .*refused/);
  });

  it('a fetch still in flight at the time bound ends with TIMEOUT', async () => {
    const out = await run(ex, `async () => (await fetch('${base}/slow')).text()`, { timeout: 300 });
    expect(out.error.code).toBe('TIMEOUT');
  });

  it('an aborted fetch rejects with the signal reason', async () => {
    const out = await run(ex, `async () => {
      const c = new AbortController();
      const p = fetch('${base}/slow', { signal: c.signal });
      setTimeout(() => c.abort(), 20);
      try { await p } catch (e) { return e.name }
      }`);
    expect(out.result).toBe('AbortError');
  });
});

describe('blocked outbound (null)', () => {
  it('rejects fetch with the closed-network text, per executor and per call', async () => {
    const closed = new IsolateExecutor({ workers: 1, outbound: null });
    try {
      // Only this test's path counts: an earlier test's aborted request may still land late.
      const hits = () => seen.filter((r) => r.url === '/json?closed').length;
      const before = hits();
      const out = await closed.execute({ code: `async () => { try { await fetch('${base}/json?closed') } catch (e) { return e.message } }` });
      expect(out.result).toBe('fetch is closed in this sandbox: the host allows no network access from programs. Ask for the data through a tool call instead.');
      expect(hits()).toBe(before);
      // An explicit undefined is the field left out: the executor's null holds.
      const still = await closed.execute({ code: `async () => { try { await fetch('${base}/json?closed') } catch (e) { return e.message } }`, outbound: undefined });
      expect(still.result).toBe(out.result);
      expect(hits()).toBe(before);
      // A per-call value given overrides the executor's: here, native again.
      const open = await closed.execute({ code: `async () => (await fetch('${base}/json')).status`, outbound: 'native' });
      expect(open.result).toBe(200);
    } finally {
      await closed.close();
    }
    const perCall = await run(ex, `async () => { try { await fetch('${base}/json') } catch (e) { return e.name } }`, { outbound: null });
    expect(perCall.result).toBe('TypeError');
  });
});

describe('routed outbound (a function)', () => {
  it('hands the policy a WireRequest and returns its WireResponse, bodies as ArrayBuffer both ways', async () => {
    const requests = [];
    const out = await run(ex, `async () => {
      const r = await fetch('https://api.internal/items?id=7', { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array([1, 2, 3]) });
      return [r.status, r.statusText, r.headers.get('x-policy'), [...new Uint8Array(await r.arrayBuffer())], r.url] }`, {
      outbound: async (request) => {
        requests.push(request);
        return { status: 202, statusText: 'Accepted', headers: [['x-policy', 'routed']], body: new Uint8Array([9, 8]).buffer };
      },
    });
    expect(out.result).toEqual([202, 'Accepted', 'routed', [9, 8], 'https://api.internal/items?id=7']);
    expect(requests).toHaveLength(1);
    expect(requests[0].method).toBe('PUT');
    expect(requests[0].url).toBe('https://api.internal/items?id=7');
    expect(requests[0].headers).toEqual([['content-type', 'application/octet-stream']]);
    expect(requests[0].body).toBeInstanceOf(ArrayBuffer);
    expect([...new Uint8Array(requests[0].body)]).toEqual([1, 2, 3]);
  });

  it("rejects the fetch with the policy's message when it throws, and checks the wire shape", async () => {
    const out = await run(ex, `async () => {
      const m = [];
      for (const path of ['throw', 'shape', 'null-body']) {
        try { const r = await fetch('https://x/' + path); m.push(r.status + ':' + (await r.text())) } catch (e) { m.push(e.message) }
      }
      return m }`, {
      outbound: (req) => {
        if (req.url.endsWith('throw')) throw new Error('denied by policy');
        if (req.url.endsWith('shape')) return { status: 'ok' };
        return { status: 204, statusText: '', headers: [], body: null };
      },
    });
    expect(out.result[0]).toBe('denied by policy');
    expect(out.result[1]).toContain('outside the response wire shape (`status` must be an integer');
    expect(out.result[2]).toBe('204:');
  });

  it('refuses a policy answer whose status is outside 200..599, the range a handler answer has', async () => {
    const out = await run(ex, `async () => {
      const m = [];
      for (const status of [101, 199, 200, 599, 600]) {
        try { m.push((await fetch('https://x/' + status)).status) } catch (e) { m.push(e.message) }
      }
      return m }`, {
      outbound: (req) => ({ status: Number(req.url.slice('https://x/'.length)), statusText: '', headers: [], body: null }),
    });
    const refused = 'outside the response wire shape (`status` must be an integer from 200 to 599)';
    expect(out.result[0]).toContain(refused);
    expect(out.result[1]).toContain(refused);
    expect(out.result.slice(2, 4)).toEqual([200, 599]);
    expect(out.result[4]).toContain(refused);
  });
});

const notPublic = (url, reason) =>
  failureCatalog().find((f) => f.code === 'FETCH_NOT_PUBLIC').text.replace('{url}', url).replace('{reason}', reason);

describe("public outbound ('public', the default)", () => {
  // A server of its own, counting connections: a refused fetch must not reach it at all.
  let target;
  let port;
  let connections = 0;
  beforeAll(async () => {
    target = http.createServer((_req, res) => res.end('reached'));
    target.on('connection', () => connections++);
    await new Promise((r) => target.listen(0, '127.0.0.1', r));
    port = target.address().port;
  });
  afterAll(() => new Promise((r) => target.close(r)));

  it('refuses every spelling of loopback with FETCH_NOT_PUBLIC, and nothing reaches the server', async () => {
    const spellings = [
      `http://127.0.0.1:PORT/`, `http://2130706433:PORT/`, `http://0x7f000001:PORT/`, `http://0177.0.0.1:PORT/`, `http://127.1:PORT/`,
      `http://0.0.0.0:PORT/`, `http://[::ffff:127.0.0.1]:PORT/`, `http://[::1]:PORT/`, `http://localhost:PORT/`, `http://LOCALHOST.:PORT/`,
      `http://foo.localhost:PORT/`,
    ].map((u) => u.replace('PORT', String(port)));
    const public_ = executor({ workers: 1, timeout: 10_000, outbound: 'public' });
    const out = await run(public_, `async () => {
      const m = [];
      for (const u of ${JSON.stringify(spellings)}) {
        try { const r = await fetch(u); m.push('reached ' + u + ' ' + (await r.text())) } catch (e) { m.push(e.name + ': ' + e.message) }
      }
      return m }`);
    expect(out.error).toBeUndefined();
    expect(out.result).toHaveLength(spellings.length);
    // The sandbox's URL parser normalizes the numeric spellings to 127.0.0.1 and the v4-mapped
    // one to ::ffff:7f00:1; the host resolves what it is given and vets the address.
    const p = String(port);
    expect(out.result).toEqual([
      `TypeError: ${notPublic(`http://127.0.0.1:${p}/`, '127.0.0.1 is a loopback address')}`,
      `TypeError: ${notPublic(`http://127.0.0.1:${p}/`, '127.0.0.1 is a loopback address')}`,
      `TypeError: ${notPublic(`http://127.0.0.1:${p}/`, '127.0.0.1 is a loopback address')}`,
      `TypeError: ${notPublic(`http://127.0.0.1:${p}/`, '127.0.0.1 is a loopback address')}`,
      `TypeError: ${notPublic(`http://127.0.0.1:${p}/`, '127.0.0.1 is a loopback address')}`,
      `TypeError: ${notPublic(`http://0.0.0.0:${p}/`, '0.0.0.0 is the unspecified address')}`,
      `TypeError: ${notPublic(`http://[::ffff:7f00:1]:${p}/`, '[::ffff:7f00:1] is a loopback address')}`,
      `TypeError: ${notPublic(`http://[::1]:${p}/`, '[::1] is a loopback address')}`,
      `TypeError: ${notPublic(`http://localhost:${p}/`, 'localhost is a name of the local machine')}`,
      `TypeError: ${notPublic(`http://localhost.:${p}/`, 'localhost. is a name of the local machine')}`,
      `TypeError: ${notPublic(`http://foo.localhost:${p}/`, 'foo.localhost is a name of the local machine')}`,
    ]);
    expect(connections).toBe(0);
  });

  it('is the default of IsolateExecutor, of a request, and of CodemodeExecutor; native must be asked for', async () => {
    const url = `http://127.0.0.1:${port}/`;
    const code = `async () => { try { return await (await fetch('${url}')).text() } catch (e) { return e.message } }`;
    const plain = executor({ workers: 1 });
    expect((await run(plain, code)).result).toBe(notPublic(url, '127.0.0.1 is a loopback address'));
    expect((await run(plain, code, { outbound: 'public' })).result).toContain('not a public internet address');
    // The dialect over a default executor: public too, per call and by globalOutbound native.
    const dialect = new CodemodeExecutor(plain);
    const d = await dialect.execute(code, []);
    expect(d.result).toBe(notPublic(url, '127.0.0.1 is a loopback address'));
    expect(connections).toBe(0);
    expect((await dialect.execute(code, [], { outbound: 'native' })).result).toBe('reached');
    expect((await new CodemodeExecutor(plain, { globalOutbound: 'native' }).execute(code, [])).result).toBe('reached');
    expect((await new CodemodeExecutor(plain, { globalOutbound: 'public' }).execute(code, [], { outbound: 'public' })).result).toContain('not a public');
    expect((await run(plain, code, { outbound: 'native' })).result).toBe('reached');
  });

  it('refuses other strings with INVALID_OPTION / INVALID_REQUEST naming the modes', async () => {
    expect(() => new IsolateExecutor({ outbound: 'open' })).toThrow(/'public'.*'native'.*null.*function/);
    const plain = executor({ workers: 1 });
    await expect(plain.execute({ code: 'async () => 1', outbound: 'private' })).rejects.toThrow(/'public'/);
  });
});

describe('redirect modes', () => {
  it("'manual' answers with the redirect itself, 'error' rejects it, 'follow' follows", async () => {
    const before = seen.filter((s) => s.url === '/json').length;
    const out = await run(ex, `async () => {
      const manual = await fetch('${base}/to-json?status=301', { redirect: 'manual' });
      let error;
      try { await fetch('${base}/to-json?status=307', { redirect: 'error' }) } catch (e) { error = e.name + ': ' + e.message }
      const follow = await fetch(new Request('${base}/to-json', { redirect: 'follow' }));
      const inherited = new Request(new Request('https://x/', { redirect: 'manual' })).redirect;
      let bad;
      try { new Request('https://x/', { redirect: 'nowhere' }) } catch (e) { bad = e.name + ': ' + e.message }
      return [manual.status, manual.redirected, manual.headers.get('location'), manual.url, error, follow.status, follow.redirected, inherited, bad] }`);
    expect(out.error).toBeUndefined();
    const [status, redirected, location, url, error, fStatus, fRedirected, inherited, bad] = out.result;
    expect([status, redirected, location, url]).toEqual([301, false, '/json', `${base}/to-json?status=301`]);
    expect(error).toBe(`TypeError: fetch ${base}/to-json?status=307 was answered with a redirect (status 307 to /json) and its redirect mode is 'error'. Pass redirect: 'follow' to follow it, or redirect: 'manual' to read the redirect response itself.`);
    expect([fStatus, fRedirected, inherited]).toEqual([200, true, 'manual']);
    expect(bad).toMatch(/^TypeError: .*'nowhere' is not a valid enum value of type RequestRedirect/);
    // Only the followed redirect reached /json.
    expect(seen.filter((s) => s.url === '/json').length).toBe(before + 1);
  });

  it('a routed policy receives the mode, and its redirect answer is held to it', async () => {
    const modes = [];
    const out = await run(ex, `async () => {
      const m = [];
      for (const redirect of ['follow', 'error', 'manual']) {
        try { const r = await fetch('https://api.internal/r', { redirect }); m.push(r.status + ' ' + r.headers.get('location')) } catch (e) { m.push(e.message) }
      }
      return m }`, {
      outbound: (req) => {
        modes.push(req.redirect);
        return { status: 302, statusText: 'Found', headers: [['location', 'http://127.0.0.1:9/']], body: null };
      },
    });
    expect(modes).toEqual(['follow', 'error', 'manual']);
    expect(out.result[0]).toBe('302 http://127.0.0.1:9/');
    expect(out.result[1]).toContain("was answered with a redirect (status 302 to http://127.0.0.1:9/) and its redirect mode is 'error'");
    expect(out.result[2]).toBe('302 http://127.0.0.1:9/');
  });
});

/** Threads of this process (the addon's fetch threads among them). */
const threads = () => readdirSync('/proc/self/task').length;

describe('native fetch bounds', () => {
  it('200 concurrent fetches of one run use at most the per-run bound of connections and threads', async () => {
    const base0 = threads();
    let peak = base0;
    const sampler = setInterval(() => (peak = Math.max(peak, threads())), 5);
    holding.max = 0;
    try {
      const out = await run(ex, `async () => {
        const all = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => fetch('${base}/hold?ms=100&i=' + i).then((r) => r.text())));
        return all.map((r) => r.status === 'fulfilled' ? r.value : 'rejected: ' + r.reason.message) }`, { timeout: 30_000 });
      expect(out.error).toBeUndefined();
      expect(out.result).toHaveLength(200);
      expect(out.result.every((r) => r === 'held 0')).toBe(true);
    } finally {
      clearInterval(sampler);
    }
    // limits::FETCH_CONCURRENCY_PER_RUN is 8: 8 connections at once; each performing fetch has
    // its thread and, while resolving, a short-lived resolver thread.
    expect(holding.max).toBeGreaterThan(1);
    expect(holding.max).toBeLessThanOrEqual(8);
    expect(peak - base0).toBeLessThanOrEqual(2 * 8 + 4);
  });

  it('request bytes in flight past the per-run budget reject with FETCH_BYTES_IN_FLIGHT', async () => {
    const out = await run(ex, `async () => {
      const body = new Uint8Array(12 * 1024 * 1024);
      const all = await Promise.allSettled([0, 1, 2].map((i) => fetch('${base}/hold?ms=2000&i=' + i, { method: 'POST', body }).then((r) => r.text())));
      const after = await (await fetch('${base}/hold?ms=1', { method: 'POST', body })).text();
      return [...all.map((r) => r.status === 'fulfilled' ? r.value : r.reason.name + ': ' + r.reason.message), after] }`, { memoryLimit: 256 });
    expect(out.error).toBeUndefined();
    const size = 12 * 1024 * 1024;
    expect(out.result[0]).toBe(`held ${size}`);
    expect(out.result[1]).toBe(`held ${size}`);
    expect(out.result[2]).toMatch(new RegExp(`^TypeError: fetch ${base}/hold\\?ms=2000&i=2 was not sent: this request \\(\\d+ bytes of URL, headers and body\\) would bring the requests this run has in flight past 33554432 bytes\\.`));
    // Answered, the bytes are free again.
    expect(out.result[3]).toBe(`held ${size}`);
  });

  it('a routed answer past the body bound rejects with FETCH_TOO_LARGE in process', async () => {
    const out = await run(ex, `async () => { try { await fetch('https://api.internal/big'); return 'took it' } catch (e) { return e.name + ': ' + e.message } }`, {
      memoryLimit: 256,
      outbound: () => ({ status: 200, statusText: 'OK', headers: [], body: new ArrayBuffer(17 * 1024 * 1024) }),
    });
    expect(out.result).toBe('TypeError: The response body of fetch https://api.internal/big is larger than the 16777216 bytes a fetch may carry. Ask for less: a page, a range, or a filtered query.');
  });

  it('a ReadableStream request body is read inside the isolate, charged to its memory budget', async () => {
    const out = await run(ex, `async () => {
      let n = 0;
      const body = new ReadableStream({ pull(c) { if (n++ < 64) c.enqueue(new Uint8Array(1024 * 1024)); else c.close() } });
      await fetch('${base}/hold?ms=1', { method: 'POST', body });
      return 'sent' }`, { memoryLimit: 32 });
    expect(out.error?.code).toBe('MEMORY_LIMIT');
  });
});

describe('Request, Response, Headers, Blob, ReadableStream inside the sandbox', () => {
  it('builds and reads them as the standards say', async () => {
    const out = await run(ex, `async () => {
      const h = new Headers([['B', ' 2 '], ['a', '1'], ['a', '3']]);
      const r = Response.json({ ok: 1 }, { status: 201, headers: { 'x-y': 'z' } });
      const copy = r.clone();
      const blob = new Blob(['ab', new Uint8Array([99])], { type: 'Text/Plain' });
      const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('s1')); c.enqueue(new TextEncoder().encode('s2')); c.close() } });
      const fromStream = await new Response(stream).text();
      const req = new Request('https://x/p', { method: 'post', body: new URLSearchParams({ k: 'v' }) });
      let used;
      await r.text();
      try { await r.text() } catch (e) { used = e.constructor.name }
      return [[...h], h.get('a'), r.status, r.headers.get('content-type'), await copy.json(), blob.size, blob.type, await blob.text(),
        await blob.slice(1, 2).text(), fromStream, req.method, req.headers.get('content-type'), await req.text(), used, r.bodyUsed,
        Response.redirect('https://x/next', 301).headers.get('location'), Response.error().type] }`);
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([[['a', '1, 3'], ['b', '2']], '1, 3', 201, 'application/json', { ok: 1 }, 3, 'text/plain', 'abc', 'b', 's1s2', 'POST',
      'application/x-www-form-urlencoded;charset=UTF-8', 'k=v', 'TypeError', true, 'https://x/next', 'error']);
  });

  it('refuses invalid headers, GET bodies, bad statuses and relative URLs with TypeError/RangeError', async () => {
    const out = await run(ex, `async () => {
      const m = [];
      for (const f of [() => new Headers({ 'bad name': 'x' }), () => new Headers({ a: 'x\\ny' }), () => new Request('https://x/', { body: 'b' }),
        () => new Response('x', { status: 99 }), () => new Request('/relative'), () => new Request('https://x/', { method: 'TRACE' }),
        () => new Response('x', { status: 204 })]) {
        try { f(); m.push('ok') } catch (e) { m.push(e.constructor.name) }
      }
      return m }`);
    expect(out.result).toEqual(['TypeError', 'TypeError', 'TypeError', 'RangeError', 'TypeError', 'TypeError', 'TypeError']);
  });
});
