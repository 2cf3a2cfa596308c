// The web-standard globals inside the sandbox (docs/runtime.md).
import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const ex = executor({ workers: 1, timeout: 10_000 });
const value = async (code, extra) => {
  const out = await run(ex, code, extra);
  if (out.error) throw new Error(`${out.error.code}: ${out.error.message}`);
  return out.result;
};

describe('globals', () => {
  it('has the Worker globals and no Node', async () => {
    const names = ['console', 'URL', 'URLSearchParams', 'Headers', 'Request', 'Response', 'fetch', 'TextEncoder', 'TextDecoder',
      'atob', 'btoa', 'structuredClone', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'queueMicrotask', 'crypto',
      'AbortController', 'AbortSignal', 'Event', 'EventTarget', 'DOMException', 'Blob', 'performance', 'ReadableStream',
      'CompressionStream', 'DecompressionStream', 'caches'];
    const types = await value(`async () => [${names.map((n) => `typeof ${n}`).join(', ')}, typeof process, typeof require, typeof Buffer]`);
    expect(types.slice(0, names.length).every((t) => t === 'function' || t === 'object')).toBe(true);
    expect(types.slice(names.length)).toEqual(['undefined', 'undefined', 'undefined']);
  });

  it('declares CompressionStream, DecompressionStream and caches absent with a text saying why', async () => {
    const texts = await value(`async () => {
      const m = [];
      for (const f of [() => new CompressionStream('gzip'), () => new DecompressionStream('gzip'), () => caches.open('x'), () => caches.default]) {
        try { f(); m.push('no throw') } catch (e) { m.push(e.message) }
      }
      return m }`);
    expect(texts[0]).toContain('CompressionStream and DecompressionStream are not available');
    expect(texts[0]).toContain('tool call');
    expect(texts[1]).toBe(texts[0]);
    expect(texts[2]).toContain('The Cache API (caches) is not available');
    expect(texts[3]).toBe(texts[2]);
  });
});

describe('fresh isolates from the runtime snapshot', () => {
  it('give every run its own Math.random sequence and clean globals', async () => {
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await value('async () => { const r = Math.random(); globalThis.mark = 1; return [r, typeof WebAssembly, typeof SharedArrayBuffer] }'));
    expect(new Set(runs.map((r) => r[0])).size).toBe(4);
    for (const r of runs) expect(r.slice(1)).toEqual(['undefined', 'undefined']);
    expect(await value('async () => typeof mark')).toBe('undefined');
  });
});

describe('timers and microtasks', () => {
  it('fires timers in deadline order, after microtasks', async () => {
    expect(await value(`async () => {
      const order = [];
      setTimeout(() => order.push('t20'), 20);
      setTimeout(() => order.push('t1'), 1);
      setTimeout((a, b) => order.push('args ' + a + b), 5, 'x', 'y');
      queueMicrotask(() => order.push('micro'));
      Promise.resolve().then(() => order.push('promise'));
      await new Promise((r) => setTimeout(r, 40));
      return order }`)).toEqual(['micro', 'promise', 't1', 'args xy', 't20']);
  });

  it('runs and clears intervals; clearTimeout cancels', async () => {
    expect(await value(`async () => {
      let n = 0, cancelled = 'no';
      const id = setInterval(() => { if (++n === 3) clearInterval(id) }, 2);
      const t = setTimeout(() => (cancelled = 'fired'), 5);
      clearTimeout(t);
      await new Promise((r) => setTimeout(r, 50));
      return [n, cancelled, typeof id] }`)).toEqual([3, 'no', 'number']);
  });

  it('does not keep a run alive for pending timers', async () => {
    const out = await run(ex, 'async () => { setTimeout(() => console.log("late"), 60_000); setInterval(() => {}, 5); return "done" }');
    expect(out.result).toBe('done');
    expect(out.stats.wallMs).toBeLessThan(5_000);
  });

  it('reports a throw inside a timer as an error log and keeps running', async () => {
    const out = await run(ex, 'async () => { setTimeout(() => { throw new TypeError("in timer") }, 1); await new Promise((r) => setTimeout(r, 10)); return "survived" }');
    expect(out.result).toBe('survived');
    expect(out.logs).toEqual([{ level: 'error', message: 'Uncaught TypeError: in timer' }]);
  });

  it('refuses code strings', async () => {
    expect(await value('async () => { try { setTimeout("1 + 1", 1) } catch (e) { return e.constructor.name } }')).toBe('TypeError');
  });

  it('counts timer waits against the time bound', async () => {
    const out = await run(ex, 'async () => new Promise((r) => setTimeout(r, 60_000))', { timeout: 200 });
    expect(out.error.code).toBe('TIMEOUT');
  });

  it('measures time from the start of the run', async () => {
    const [start, later] = await value('async () => { const a = performance.now(); await new Promise((r) => setTimeout(r, 30)); return [a, performance.now()] }');
    expect(start).toBeGreaterThanOrEqual(0);
    expect(start).toBeLessThan(1000);
    expect(later - start).toBeGreaterThanOrEqual(29);
  });
});

describe('events and abort', () => {
  it('dispatches to listeners in order, with once, handleEvent, stopImmediatePropagation and preventDefault', async () => {
    expect(await value(`async () => {
      const t = new EventTarget();
      const seen = [];
      t.addEventListener('x', (e) => seen.push('a:' + e.type + ':' + (e.target === t)), { once: true });
      t.addEventListener('x', { handleEvent(e) { seen.push('b'); e.preventDefault() } });
      t.addEventListener('x', (e) => { seen.push('c'); e.stopImmediatePropagation() });
      t.addEventListener('x', () => seen.push('never'));
      const first = t.dispatchEvent(new Event('x', { cancelable: true }));
      t.dispatchEvent(new Event('x'));
      return [seen, first] }`)).toEqual([['a:x:true', 'b', 'c', 'b', 'c'], false]);
  });

  it('removes a listener through its signal', async () => {
    expect(await value(`async () => {
      const t = new EventTarget(), c = new AbortController();
      let n = 0;
      t.addEventListener('x', () => n++, { signal: c.signal });
      t.dispatchEvent(new Event('x'));
      c.abort();
      t.dispatchEvent(new Event('x'));
      return n }`)).toBe(1);
  });

  it('aborts with the default AbortError, a given reason, onabort and throwIfAborted', async () => {
    expect(await value(`async () => {
      const c = new AbortController();
      const seen = [];
      c.signal.onabort = (e) => seen.push(e.type);
      c.abort();
      c.abort('again');
      let thrown;
      try { c.signal.throwIfAborted() } catch (e) { thrown = e }
      const custom = AbortSignal.abort('why');
      return [c.signal.aborted, c.signal.reason.name, c.signal.reason instanceof DOMException, seen, thrown === c.signal.reason, custom.reason] }`))
      .toEqual([true, 'AbortError', true, ['abort'], true, 'why']);
  });

  it('AbortSignal.timeout and AbortSignal.any', async () => {
    expect(await value(`async () => {
      const t = AbortSignal.timeout(5);
      await new Promise((r) => t.addEventListener('abort', r));
      const c = new AbortController();
      const any = AbortSignal.any([new AbortController().signal, c.signal]);
      c.abort('first');
      return [t.reason.name, any.aborted, any.reason] }`)).toEqual(['TimeoutError', true, 'first']);
  });

  it('DOMException has name, message, legacy code and is an Error', async () => {
    expect(await value(`async () => { const e = new DOMException('m', 'NotFoundError'); return [e.name, e.message, e.code, e instanceof Error, DOMException.ABORT_ERR, String(e)] }`))
      .toEqual(['NotFoundError', 'm', 8, true, 20, 'NotFoundError: m']);
  });
});

describe('encoding', () => {
  it('TextEncoder encodes UTF-8, with U+FFFD for lone surrogates, and encodeInto reports read/written', async () => {
    expect(await value(`async () => {
      const e = new TextEncoder();
      const into = new Uint8Array(5);
      return [[...e.encode('a€😀')], [...e.encode('\\ud800')], e.encodeInto('a€😀', into), [...into], e.encoding] }`))
      .toEqual([[0x61, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80], [0xef, 0xbf, 0xbd], { read: 2, written: 4 }, [0x61, 0xe2, 0x82, 0xac, 0], 'utf-8']);
  });

  it('TextDecoder handles BOM, fatal, streaming, labels and other encodings', async () => {
    expect(await value(`async () => {
      const r = [];
      r.push(new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])));
      r.push(new TextDecoder('utf-8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])).length);
      r.push(new TextDecoder().decode(new Uint8Array([0xff])));
      try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])) } catch (e) { r.push(e.name) }
      const d = new TextDecoder();
      r.push(d.decode(new Uint8Array([0xe2, 0x82]), { stream: true }) + d.decode(new Uint8Array([0xac])));
      r.push(new TextDecoder('utf-16le').decode(new Uint8Array([0x3d, 0xd8, 0x00, 0xde])));
      r.push(new TextDecoder('latin1').encoding, new TextDecoder(' UTF8 ').encoding);
      r.push(new TextDecoder('windows-1252').decode(new Uint8Array([0x80])));
      try { new TextDecoder('nope') } catch (e) { r.push(e.name) }
      return r }`)).toEqual(['A', 2, '\ufffd', 'TypeError', '€', '😀', 'windows-1252', 'utf-8', '€', 'RangeError']);
  });

  it('atob and btoa follow forgiving-base64 and throw InvalidCharacterError', async () => {
    expect(await value(`async () => {
      const r = [btoa(''), btoa('f'), btoa('fo'), btoa('foo'), btoa('\\xff\\xfe'), atob('Zm9v'), atob(' Zm 9v\\n'), atob('Zg'), atob('Zg==')];
      for (const bad of ['Zg=', 'Z', '!!!!', 'Zm9v=']) { try { atob(bad); r.push('ok') } catch (e) { r.push(e.name) } }
      try { btoa('€') } catch (e) { r.push(e.name) }
      return r }`)).toEqual(['', 'Zg==', 'Zm8=', 'Zm9v', '//4=', 'foo', 'foo', 'f', 'f',
      'InvalidCharacterError', 'InvalidCharacterError', 'InvalidCharacterError', 'InvalidCharacterError', 'InvalidCharacterError']);
  });
});

describe('structuredClone', () => {
  it('copies what the host boundary copies, and throws DataCloneError otherwise', async () => {
    expect(await value(`async () => {
      const src = { d: new Date(5), m: new Map([[1, [2]]]), s: new Set(['x']), b: 10n, r: /x/g, u8: new Uint8Array([1]) };
      src.self = src;
      const c = structuredClone(src);
      const r = [c !== src, c.self === c, c.d.getTime(), c.m.get(1)[0], c.s.has('x'), c.b, c.r.flags, c.u8[0]];
      for (const bad of [() => {}, Symbol('s')]) { try { structuredClone(bad) } catch (e) { r.push(e.name) } }
      return r }`)).toEqual([true, true, 5, 2, true, 10n, 'g', 1, 'DataCloneError', 'DataCloneError']);
  });
});

describe('crypto', () => {
  it('fills integer arrays, refuses floats and more than 65536 bytes', async () => {
    expect(await value(`async () => {
      const r = [];
      const a = crypto.getRandomValues(new Uint32Array(64));
      r.push(a.length, new Set(a).size > 60);
      for (const bad of [() => crypto.getRandomValues(new Float64Array(1)), () => crypto.getRandomValues(new Uint8Array(65537))]) {
        try { bad() } catch (e) { r.push(e.name) }
      }
      return r }`)).toEqual([64, true, 'TypeMismatchError', 'QuotaExceededError']);
  });

  it('randomUUID is a v4 UUID', async () => {
    const ids = await value('async () => Array.from({ length: 20 }, () => crypto.randomUUID())');
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(20);
  });

  it('subtle.digest matches the FIPS 180 test vectors for "abc"', async () => {
    const hex = await value(`async () => {
      const out = [];
      for (const alg of ['SHA-1', 'sha-256', { name: 'SHA-384' }, 'SHA-512']) {
        const d = await crypto.subtle.digest(alg, new TextEncoder().encode('abc'));
        out.push([...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join(''));
      }
      try { await crypto.subtle.digest('MD5', new Uint8Array(1)) } catch (e) { out.push(e.name) }
      return out }`);
    expect(hex).toEqual([
      'a9993e364706816aba3e25717850c26c9cd0d89d',
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
      'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
      'NotSupportedError',
    ]);
  });
});
