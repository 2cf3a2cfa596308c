// fetch and the outbound policy, against real HTTP servers on 127.0.0.1 started here.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IsolateExecutor, executor, run } from './helpers.mjs';

let server;
let base;
const seen = [];

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

const ex = executor({ workers: 1, timeout: 10_000 });

describe('native outbound (the default)', () => {
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
      const before = seen.length;
      const out = await closed.execute({ code: `async () => { try { await fetch('${base}/json') } catch (e) { return e.message } }` });
      expect(out.result).toBe('fetch is closed in this sandbox: the host allows no network access from programs. Ask for the data through a tool call instead.');
      expect(seen.length).toBe(before);
      // An explicit undefined is the field left out: the executor's null holds.
      const still = await closed.execute({ code: `async () => { try { await fetch('${base}/json') } catch (e) { return e.message } }`, outbound: undefined });
      expect(still.result).toBe(out.result);
      expect(seen.length).toBe(before);
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
