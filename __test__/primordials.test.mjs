// The runtime's own code against a program that replaces built-ins (crates/worker/src/engine/js/
// primordials.js says what holds): each program runs twice, as written and after replacing the
// methods, getters and iterators the runtime could otherwise reach (Array.prototype.filter, map,
// push and [Symbol.iterator], String.prototype.toLowerCase, RegExp.prototype.exec, Map, Set and
// WeakMap methods, Promise.prototype.then, typed arrays' getters, Function.prototype.call, ...)
// with functions that throw; both runs give the same answer, and the answer is the right one.
// The runtime is built into the worker (its startup snapshot): these hold for the worker last
// built from js/.
import { describe, expect, it } from 'vitest';
import { executor } from './helpers.mjs';

const ex = executor({ workers: 1, timeout: 10_000 });

// Helpers the programs use, made before anything is replaced: a sequence that is no array (a
// program's sequence is read through its own iterator, as WebIDL says, so a replaced
// Array.prototype[Symbol.iterator] would be what `new Blob([...])` reads, as in a browser), bytes
// written by index, and a Map and a Set to log.
const SETUP = `
  const seq = (...items) => ({ [Symbol.iterator]() { let i = 0; return { next: () => (i < items.length ? { value: items[i++], done: false } : { value: undefined, done: true }) } } });
  const bytes = (...n) => { const u = new Uint8Array(n.length); for (let i = 0; i < n.length; i++) u[i] = n[i]; return u };
  const M = new Map([[1, 2]]), S = new Set([3]);
`;

// Replaces every listed built-in with a function (or getter) that throws. The programs below use
// none of them themselves after this: indexes, not for-of; `out[out.length] = x`, not push.
const REPLACE = `
  const replaced = (what) => function () { throw new Error('the runtime called a replaced built-in: ' + what) };
  const replace = (o, names) => {
    for (let i = 0; i < names.length; i++) {
      if (names[i] in o) Object.defineProperty(o, names[i], { value: replaced(String(names[i])), writable: true, configurable: true });
    }
  };
  const replaceGetters = (o, names) => {
    for (let i = 0; i < names.length; i++) Object.defineProperty(o, names[i], { get: replaced(names[i]), configurable: true });
  };
  const arrayIterator = Object.getPrototypeOf([][Symbol.iterator]());
  const mapIterator = Object.getPrototypeOf(new Map().entries());
  const setIterator = Object.getPrototypeOf(new Set().values());
  const typedArray = Object.getPrototypeOf(Uint8Array.prototype);
  replace(Array.prototype, ['filter', 'map', 'push', 'pop', 'shift', 'unshift', 'splice', 'slice', 'join', 'find', 'findIndex',
    'some', 'every', 'sort', 'includes', 'indexOf', 'forEach', 'reduce', 'concat', 'fill', 'at', 'flat', 'flatMap', 'keys',
    'values', 'entries', Symbol.iterator]);
  replace(arrayIterator, ['next']);
  replace(String.prototype, ['toLowerCase', 'toUpperCase', 'replace', 'replaceAll', 'slice', 'substring', 'startsWith',
    'endsWith', 'trim', 'split', 'charCodeAt', 'codePointAt', 'toWellFormed', 'indexOf', 'includes', 'padStart', 'at', 'charAt',
    'concat', 'repeat', Symbol.iterator]);
  replace(RegExp.prototype, ['exec', 'test', Symbol.replace, Symbol.split, Symbol.match, Symbol.matchAll]);
  replace(Map.prototype, ['get', 'set', 'has', 'delete', 'entries', 'forEach', Symbol.iterator]);
  replace(Set.prototype, ['add', 'has', 'delete', 'values', 'forEach', Symbol.iterator]);
  replace(mapIterator, ['next']);
  replace(setIterator, ['next']);
  replace(WeakMap.prototype, ['get', 'set', 'has', 'delete']);
  replace(Promise.prototype, ['then', 'catch', 'finally']);
  replace(Number.prototype, ['toString']);
  replace(typedArray, ['set', 'slice', 'subarray', 'fill', 'map', 'filter', Symbol.iterator]);
  replaceGetters(typedArray, ['length', 'buffer', 'byteOffset', 'byteLength']);
  replace(Function.prototype, ['call', 'apply', 'bind']);
  Object.defineProperty(Array, Symbol.species, { get: replaced('Array[Symbol.species]'), configurable: true });
`;

/** The outcomes of `body` (an async function's body) run as written and with the built-ins replaced. */
async function both(body, extra = {}) {
  const plain = await ex.execute({ code: `async () => { ${SETUP} ${body} }`, ...extra });
  const replaced = await ex.execute({ code: `async () => { ${SETUP} ${REPLACE} ${body} }`, ...extra });
  expect(plain.error).toBeUndefined();
  expect(replaced.error).toBeUndefined();
  expect(replaced.result).toEqual(plain.result);
  expect(replaced.logs).toEqual(plain.logs);
  return replaced;
}

describe('Headers', () => {
  it('constructs, appends, sets, gets, deletes and iterates with the built-ins replaced', async () => {
    const out = await both(`
      const h = new Headers({ 'Content-Type': 'text/plain', 'X-A': ' 1 ' });
      h.append('x-a', '2'); h.set('X-B', 'b'); h.append('set-cookie', 'c=1'); h.append('Set-Cookie', 'd=2');
      const seen = {}; let n = 0;
      h.forEach((v, k) => { seen[k] = v; n++ });
      const first = h.entries().next().value;
      const had = h.has('X-B');
      h.delete('x-b');
      let invalid; try { h.append('bad name', 'x') } catch (e) { invalid = e.message }
      return [h.get('x-a'), h.get('CONTENT-TYPE'), had, h.has('x-b'), h.get('nope'), seen, n, first[0], first[1], h.getSetCookie().length, invalid]`);
    expect(out.result).toEqual([
      '1, 2', 'text/plain', true, false, null,
      { 'content-type': 'text/plain', 'set-cookie': 'd=2', 'x-a': '1, 2', 'x-b': 'b' }, 5, 'content-type', 'text/plain', 2,
      "Failed to execute 'append' on 'Headers': Invalid name",
    ]);
  });
});

describe('URL and URLSearchParams', () => {
  it('parse, set and keep their search params live with the built-ins replaced', async () => {
    const out = await both(`
      const u = new URL('https://example.com:8080/a/b?x=1&y=2#h');
      const p = u.searchParams; p.append('z', '3'); p.set('x', '9'); p.delete('y');
      const q = new URLSearchParams('?b=2&a=1&b=3'); q.sort();
      const r = new URLSearchParams({ k: 'v', w: 'x y' });
      let each = ''; q.forEach((v, k) => { each += k + '=' + v + ';' });
      u.pathname = '/c d';
      return [u.href, u.hostname, u.port, u.search, p.get('x'), p.getAll('z')[0], p.has('y'), q.toString(), r.toString(), each,
        URL.canParse('nope'), String(new URLSearchParams(q))]`);
    expect(out.result).toEqual([
      'https://example.com:8080/c%20d?x=9&z=3#h', 'example.com', '8080', '?x=9&z=3', '9', '3', false, 'a=1&b=2&b=3', 'k=v&w=x+y',
      'a=1;b=2;b=3;', false, 'a=1&b=2&b=3',
    ]);
  });
});

describe('fetch, Request and Response', () => {
  it('builds the request the host sees and reads the answer with the built-ins replaced', async () => {
    const requests = [];
    const outbound = (request) => {
      requests.push(request);
      return { status: 201, statusText: 'Made', headers: [['x-reply', 'yes'], ['content-type', 'text/plain']], body: new TextEncoder().encode('reply body').buffer };
    };
    const out = await both(`
      const r = await fetch('https://api.example/items?id=7', { method: 'post', headers: { 'Content-Type': 'text/plain', 'X-Trace': ' t ' }, body: 'hello' });
      const req = new Request('https://api.example/x', { method: 'PUT', headers: { a: 'b' } });
      const c = req.clone();
      return [r.status, r.statusText, r.ok, r.url, r.headers.get('x-reply'), await r.text(), req.method, c.headers.get('a')]`, { outbound });
    expect(out.result).toEqual([201, 'Made', true, 'https://api.example/items?id=7', 'yes', 'reply body', 'PUT', 'b']);
    expect(requests).toHaveLength(2);
    for (const request of requests) {
      expect([request.method, request.url, request.headers]).toEqual(['POST', 'https://api.example/items?id=7', [['content-type', 'text/plain'], ['x-trace', 't']]]);
      expect(new TextDecoder().decode(request.body)).toBe('hello');
    }
  });

  it('makes responses, bodies, blobs and streams with the built-ins replaced', async () => {
    const out = await both(`
      const r = new Response('abc', { status: 202, headers: { 'Set-Cookie': 'x', 'X-Y': 'z' } });
      const j = Response.json({ a: 1 });
      const rd = Response.redirect('https://a.example/b', 301);
      const b = new Blob(seq('ab', bytes(99)), { type: 'Text/Plain' });
      const fromBlob = await new Response(b).bytes();
      const s = new ReadableStream({ start(ctl) { ctl.enqueue(bytes(104, 105)); ctl.close() } });
      const streamed = await new Response(s).text();
      const buffer = await new Response('xyz').arrayBuffer();
      const blob = await new Response('q', { headers: { 'content-type': 'a/b' } }).blob();
      return [r.status, r.headers.has('set-cookie'), r.headers.get('x-y'), await r.text(), await j.json(), j.headers.get('content-type'),
        rd.status, rd.headers.get('location'), b.type, b.size, fromBlob[2], streamed, buffer.byteLength, blob.type, await blob.text(),
        await b.slice(1).text()]`);
    expect(out.result).toEqual([
      202, false, 'z', 'abc', { a: 1 }, 'application/json', 301, 'https://a.example/b', 'text/plain', 3, 99, 'hi', 3, 'a/b', 'q', 'bc',
    ]);
  });

  it("work when a program replaces the runtime's own classes' methods and getters", async () => {
    const requests = [];
    const outbound = (request) => {
      requests.push(request);
      return { status: 200, statusText: '', headers: [], body: new TextEncoder().encode('ok').buffer };
    };
    const out = await both(`
      const boom = () => { throw new Error('the runtime called a replaced method of its own classes') };
      const methods = [[Headers.prototype, ['append', 'get', 'has', 'set', 'delete', 'forEach']],
        [URLSearchParams.prototype, ['toString']], [ReadableStream.prototype, ['getReader']],
        [ReadableStreamDefaultReader.prototype, ['read', 'releaseLock']], [EventTarget.prototype, ['addEventListener', 'dispatchEvent']],
        [TextEncoder.prototype, ['encode']], [TextDecoder.prototype, ['decode']]];
      for (let i = 0; i < methods.length; i++) for (let j = 0; j < methods[i][1].length; j++) methods[i][0][methods[i][1][j]] = boom;
      const getters = [[URL.prototype, ['href', 'username', 'password', 'search']], [ReadableStream.prototype, ['locked']],
        [Request.prototype, ['url', 'method', 'headers', 'signal', 'redirect']], [AbortSignal.prototype, ['aborted', 'reason']],
        [Blob.prototype, ['type']]];
      for (let i = 0; i < getters.length; i++) for (let j = 0; j < getters[i][1].length; j++) Object.defineProperty(getters[i][0], getters[i][1][j], { get: boom, configurable: true });
      const c = new AbortController();
      let fired = 0; c.signal.onabort = () => { fired++ };
      const r = await fetch('https://api.example/c', { method: 'PUT', headers: { 'X-A': 'b' }, body: new URLSearchParams('a=1'), signal: c.signal });
      const text = await r.text();
      const j = await Response.json({ k: 1 }).json();
      const blob = await new Response(new Blob(seq('x'), { type: 'a/b' })).blob();
      const streamed = await new Response(new ReadableStream({ start(ctl) { ctl.enqueue(bytes(65)); ctl.close() } })).text();
      c.abort();
      return [r.status, text, j, await blob.text(), streamed, fired]`, { outbound });
    expect(out.result).toEqual([200, 'ok', { k: 1 }, 'x', 'A', 1]);
    expect(requests[1].headers).toEqual([['x-a', 'b'], ['content-type', 'application/x-www-form-urlencoded;charset=UTF-8']]);
    expect(new TextDecoder().decode(requests[1].body)).toBe('a=1');
  });
});

describe('the rest of the web surface', () => {
  it('base64, events, aborts, encoding, crypto, timers, microtasks and console with the built-ins replaced', async () => {
    const out = await both(`
      const out = []; const put = (v) => { out[out.length] = v };
      put(btoa('hello')); put(atob(' aGVs bG8= '));
      const c = new AbortController(); let fired = 0;
      c.signal.addEventListener('abort', () => { fired++ }); c.signal.onabort = () => { fired++ };
      const any = AbortSignal.any(seq(c.signal));
      c.abort(); put(fired); put(c.signal.aborted); put(any.aborted);
      const t = new EventTarget(); let got = 0; t.addEventListener('x', () => { got++ }, { once: true });
      t.dispatchEvent(new Event('x')); t.dispatchEvent(new Event('x')); put(got);
      put(new TextDecoder().decode(new TextEncoder().encode('héllo')));
      put(crypto.randomUUID().length);
      put((await crypto.subtle.digest('SHA-256', bytes(1))).byteLength);
      await new Promise((r) => setTimeout(r, 2));
      let m = 0; queueMicrotask(() => { m++ }); await null; put(m);
      console.log('a %s b', 'x', { k: [1, 2] }, M, S, 'two\\nlines');
      put(new DOMException('m', 'AbortError').code);
      put(structuredClone(5));
      return out`);
    expect(out.result).toEqual(['aGVsbG8=', 'hello', 2, true, true, 1, 'héllo', 36, 32, 1, 20, 5]);
    expect(out.logs).toEqual([{ level: 'log', message: 'a x b { k: [ 1, 2 ] } Map(1) { 1 => 2 } Set(1) { 3 } two\nlines' }]);
  });

  it("answers a retained handle's invocation after the program replaced the built-ins", async () => {
    const outcome = await ex.execute({
      code: `async () => {
        ${REPLACE}
        return { fetch: async (request) => new Response(request.method + ' ' + request.url + ' ' + request.headers.get('x-in') + ' ' + (await request.text()), { status: 201, headers: { 'X-Out': 'o' } }) }
      }`,
      retainHandles: true,
    });
    expect(outcome.error).toBeUndefined();
    try {
      const answer = await ex.invokeHandle(outcome.executionId, 'fetch', {
        method: 'POST', url: 'https://h.example/p?q=1', headers: [['X-In', ' v ']], body: new TextEncoder().encode('hi!').buffer,
      });
      expect([answer.status, answer.headers, new TextDecoder().decode(answer.body)]).toEqual([
        201, [['x-out', 'o'], ['content-type', 'text/plain;charset=UTF-8']], 'POST https://h.example/p?q=1 v hi!',
      ]);
    } finally {
      await ex.closeHandles(outcome.executionId);
    }
  });
});
