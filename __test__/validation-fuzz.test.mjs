// Property tests of the JS request validation (fast-check): any input to a public entry point
// gives a result or a typed ExecutorError, never another exception, never a crash of the host,
// never a stuck pool. The frame decoder's property tests are Rust's (crates/protocol).
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutorError, IsolateExecutor, executor, until } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const ex = executor({ workers: 2, timeout: 2000, queueBound: 64 });
const cm = new CodemodeExecutor(ex, { timeout: 2000 });
const RUNS = 150;
const SEED = Number(process.env.FUZZ_SEED ?? 20260113);

// Hostile values are made fresh for every use (getters and proxies keep state).
const hostile = {
  'a proxy whose every trap throws': () => new Proxy({}, Object.fromEntries(
    ['get', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'getPrototypeOf', 'apply', 'construct'].map((t) => [t, () => { throw new Error(`trap ${t}`); }]),
  )),
  'an array proxy whose every trap throws': () => new Proxy([], { get() { throw new RangeError('get'); }, ownKeys() { throw new RangeError('keys'); } }),
  'a revoked proxy': () => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; },
  'an object whose getter throws': () => Object.defineProperty({}, 'code', { enumerable: true, get() { throw new Error('getter'); } }),
  'a cyclic object': () => { const o = { a: 1 }; o.self = o; o.list = [o]; return o; },
  'a null-prototype object': () => Object.create(null),
  'an object whose toString throws': () => ({ toString() { throw new Error('toString'); }, valueOf() { throw new Error('valueOf'); } }),
  'a null-prototype object with keys': () => Object.assign(Object.create(null), { name: 'x', tools: ['a'], fns: Object.create(null) }),
  'a symbol': () => Symbol('s'),
  'a function': () => () => 1,
  'a class': () => class {},
  'a huge string': () => 'x'.repeat(2 ** 20),
  'a lone surrogate': () => '\uD800',
  'a string with NUL': () => 'async () => 1\u0000',
  'a bigint': () => 10n ** 30n,
  'NaN': () => NaN,
  '-0': () => -0,
  'Infinity': () => Infinity,
  'a boxed string': () => new String('async () => 1'),
  'an array': () => ['async () => 1'],
  // biome-ignore lint/suspicious/noSparseArray: the holes are the input under test
  'a sparse array': () => [, , 1],
  'a Map': () => new Map([['code', 'async () => 1']]),
  'a promise': () => Promise.resolve('async () => 1'),
  'a Date': () => new Date(0),
  'an ArrayBuffer': () => new ArrayBuffer(8),
  'a Uint8Array': () => new Uint8Array(4),
};
const hostileValue = fc.constantFrom(...Object.keys(hostile)).map((k) => ({ k, make: hostile[k] }));

// A value to put in a field: fast-check's anything, a hostile one, or a plausible one.
const plausible = fc.constantFrom(
  'async () => 1', 'async () => { throw new Error("x") }', '() => 2', '', 'not code (', 1, 0, -1, 1.5, 2 ** 31, true, false, null, undefined,
  '*', ['a', 'b'], [{ name: 'p', tools: ['t'] }], [{ name: 'console', tools: '*' }], [{ name: 'p', tools: [1] }], [{ name: 'p' }, { name: 'p', tools: [] }],
  { 'a.js': 'export default 1' }, { 'a.js': 1 }, { __proto__: null, x: 'y' },
);
const fieldValue = fc.oneof(
  { arbitrary: fc.anything({ withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withObjectString: true, withSparseArray: true, withTypedArray: true, maxDepth: 2 }).map((v) => ({ k: 'anything', make: () => v })), weight: 3 },
  { arbitrary: hostileValue, weight: 3 },
  { arbitrary: plausible.map((v) => ({ k: 'plausible', make: () => v })), weight: 3 },
);

/** An object holding `keys` (some real, some not) with odd values; some as getters, some flip. */
function objectOf(keys) {
  const entry = fc.tuple(fc.constantFrom(...keys, 'extra', '__proto__', 'constructor'), fieldValue, fc.constantFrom('data', 'getter', 'flip'));
  return fc.tuple(fc.array(entry, { maxLength: 5 }), fc.constantFrom('plain', 'null-proto', 'array')).map(([entries, base]) => ({
    k: `${base} {${entries.map(([key, v, how]) => `${key}: ${how} ${v.k}`).join(', ')}}`,
    make: () => {
      const o = base === 'array' ? [] : base === 'null-proto' ? Object.create(null) : {};
      for (const [key, v, how] of entries) {
        if (how === 'data') Object.defineProperty(o, key, { value: v.make(), enumerable: true, configurable: true, writable: true });
        else if (how === 'getter') Object.defineProperty(o, key, { get: v.make, enumerable: true, configurable: true });
        else {
          // A getter that answers something valid-looking first and the odd value after: what
          // the validator checks must be what it passes on.
          let reads = 0;
          const first = key === 'code' ? 'async () => 1' : key === 'providers' ? [] : key === 'timeout' ? 100 : undefined;
          Object.defineProperty(o, key, { get: () => (reads++ === 0 ? first : v.make()), enumerable: true, configurable: true });
        }
      }
      return o;
    },
  }));
}

const REQUEST_KEYS = ['code', 'modules', 'providers', 'dispatch', 'timeout', 'memoryLimit', 'outbound', 'retainHandles', 'signal', 'onLog'];
const OPTION_KEYS = ['workers', 'queueBound', 'timeout', 'memoryLimit', 'outbound', 'handlesIdleTimeout', 'onHandlesClosed', 'workerPath'];
const anyInput = (keys) => fc.oneof(fieldValue, objectOf(keys));

/** Calls `f`; a synchronous throw must be a typed fault with one of `codes`. */
function syncOutcome(f, codes) {
  try {
    return { value: f() };
  } catch (e) {
    expectTyped(e, codes);
    return { error: e };
  }
}

function expectTyped(e, codes) {
  if (!(e instanceof ExecutorError) || !codes.includes(e.code)) {
    throw new Error(`expected an ExecutorError (${codes.join(' | ')}), got ${e instanceof Error ? `${e.constructor.name} ${e.code ?? ''}: ${e.message}` : String(e)}`);
  }
}

/** A promise-returning entry point: no synchronous throw, settles in time, typed if rejected. */
async function asyncOutcome(f, codes) {
  let promise;
  try {
    promise = f();
  } catch (e) {
    throw new Error(`threw synchronously instead of rejecting: ${e?.message ?? String(e)}`);
  }
  expect(promise).toBeInstanceOf(Promise);
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('did not settle within 10 s')), 10_000); });
  try {
    return { value: await Promise.race([promise, late]) };
  } catch (e) {
    if (e?.message === 'did not settle within 10 s') throw e;
    expectTyped(e, codes);
    return { error: e };
  } finally {
    clearTimeout(timer);
  }
}

/** The pool is not stuck: it runs a program promptly and nothing is left running or queued. */
async function expectHealthy() {
  const started = Date.now();
  await expect(ex.execute({ code: 'async () => 1' })).resolves.toMatchObject({ result: 1 });
  expect(Date.now() - started).toBeLessThan(5000);
  expect(await until(() => { const s = ex.stats(); return s.running === 0 && s.queued === 0 && s.retained === 0; }, 5000)).toBe(true);
  expect(ex.stats().workers).toBe(2);
}

const params = { numRuns: RUNS, seed: SEED, endOnFailure: true };
const fault = ['INVALID_REQUEST'];

describe('IsolateExecutor validation under arbitrary input', () => {
  it('new IsolateExecutor(options): an executor or INVALID_OPTION / WORKER_NOT_FOUND', () => {
    const pools = [];
    fc.assert(fc.property(anyInput(OPTION_KEYS), (input) => {
      const given = input.make();
      // A valid set of options would start a pool: point it at no binary, so it stops there.
      try {
        if (given !== null && typeof given === 'object' && !Array.isArray(given) && !Object.getOwnPropertyDescriptor(given, 'workerPath')) given.workerPath = '/nonexistent/codemode-worker';
      } catch { /* a revoked or throwing proxy */ }
      const out = syncOutcome(() => new IsolateExecutor(given), ['INVALID_OPTION', 'WORKER_NOT_FOUND']);
      if (out.value) pools.push(out.value.close());
    }), { ...params, numRuns: 300 });
    return Promise.all(pools);
  });

  it('execute(request): an outcome or INVALID_REQUEST / REQUEST_TOO_LARGE, and the pool is not stuck', async () => {
    await fc.assert(fc.asyncProperty(anyInput(REQUEST_KEYS), async (input) => {
      const out = await asyncOutcome(() => ex.execute(input.make()), [...fault, 'REQUEST_TOO_LARGE']);
      if (out.value?.executionId) await ex.closeHandles(out.value.executionId);
      if (out.value) expect(Object.keys(out.value)).toEqual(expect.arrayContaining(['result', 'logs', 'stats']));
    }), params);
    await expectHealthy();
  }, 50_000);

  it('execute with a valid program and one odd field at a time', async () => {
    const one = fc.tuple(fc.constantFrom(...REQUEST_KEYS.filter((k) => k !== 'code')), fieldValue);
    let ran = 0;
    await fc.assert(fc.asyncProperty(one, async ([key, v]) => {
      const request = { code: 'async () => 1', [key]: v.make() };
      const out = await asyncOutcome(() => ex.execute(request), [...fault, 'REQUEST_TOO_LARGE']);
      if (out.value?.executionId) await ex.closeHandles(out.value.executionId);
      if (out.value) ran++;
    }), params);
    // Not everything is refused: the valid ones reached a worker and ran.
    expect(ran).toBeGreaterThan(3);
    await expectHealthy();
  }, 50_000);

  it('invokeHandle(id, name, request) and closeHandles(id): typed refusals only', async () => {
    const codes = [...fault, 'HANDLES_CLOSED', 'HANDLE_NOT_FOUND', 'HANDLE_NOT_GRANTED', 'REQUEST_TOO_LARGE'];
    const wire = objectOf(['method', 'url', 'headers', 'body']);
    await fc.assert(fc.asyncProperty(fc.oneof(fieldValue, fc.uuid().map((u) => ({ k: 'uuid', make: () => u }))), fieldValue, fc.oneof(fieldValue, wire), fc.oneof(fieldValue, objectOf(['signal'])), async (id, name, req, options) => {
      await asyncOutcome(() => ex.invokeHandle(id.make(), name.make(), req.make(), options.make()), codes);
      await asyncOutcome(() => ex.closeHandles(id.make()), codes);
    }), params);
    await expectHealthy();
  }, 50_000);

  it('a live retained execution refuses odd invocations with typed faults and still serves', async () => {
    const granted = await ex.execute({ code: 'async () => (req) => new Response("ok " + req.method)', retainHandles: true });
    expect(granted.executionId).toEqual(expect.any(String));
    try {
      const codes = [...fault, 'HANDLE_NOT_FOUND', 'HANDLE_NOT_GRANTED', 'HANDLER_ERROR', 'HANDLE_RESPONSE_INVALID', 'REQUEST_TOO_LARGE'];
      await fc.assert(fc.asyncProperty(fc.oneof(fieldValue, fc.constant({ k: 'fetch', make: () => 'fetch' })), fc.oneof(fieldValue, objectOf(['method', 'url', 'headers', 'body'])), async (name, req) => {
        await asyncOutcome(() => ex.invokeHandle(granted.executionId, name.make(), req.make()), codes);
      }), { ...params, numRuns: 40 });
      const ok = await ex.invokeHandle(granted.executionId, 'fetch', { method: 'GET', url: 'https://x.test/', headers: [], body: null });
      expect(new TextDecoder().decode(ok.body)).toBe('ok GET');
    } finally {
      await ex.closeHandles(granted.executionId);
    }
    await expectHealthy();
  }, 50_000);
});

describe('each field is read once', () => {
  it('a getter that answers the check a string and the pool an object runs what was checked', async () => {
    let reads = 0;
    const request = { get code() { return reads++ === 0 ? 'async () => "checked"' : {}; } };
    await expect(ex.execute(request)).resolves.toMatchObject({ result: 'checked' });
    expect(reads).toBe(1);
    let listReads = 0;
    const providers = [{ name: 'p', get tools() { return listReads++ === 0 ? ['a'] : [{}]; } }];
    await expect(ex.execute({ code: 'async () => p.a()', providers, dispatch: () => 'ok' })).resolves.toMatchObject({ result: 'ok' });
    expect(listReads).toBe(1);
  });
});

describe('CodemodeExecutor validation under arbitrary input', () => {
  it('new CodemodeExecutor(native, options): an adapter or INVALID_OPTION', () => {
    fc.assert(fc.property(fc.oneof(fieldValue, fc.constant({ k: 'the executor', make: () => ex })), anyInput(['modules', 'timeout', 'globalOutbound']), (native, options) => {
      syncOutcome(() => new CodemodeExecutor(native.make(), options.make()), ['INVALID_OPTION']);
    }), { ...params, numRuns: 300 });
  });

  it('execute(code, providers, options): a dialect outcome or a typed fault, and the pool is not stuck', async () => {
    const providers = fc.oneof(
      fieldValue,
      fc.array(objectOf(['name', 'fns', 'prelude']), { maxLength: 3 }).map((ps) => ({ k: `[${ps.map((p) => p.k).join('; ')}]`, make: () => ps.map((p) => p.make()) })),
    );
    const options = objectOf(['connectors', 'modules', 'timeout', 'outbound']);
    await fc.assert(fc.asyncProperty(fc.oneof(fieldValue, plausible.map((v) => ({ k: 'plausible', make: () => v }))), providers, fc.oneof(fieldValue, options), async (code, ps, opts) => {
      const warn = console.warn;
      console.warn = () => {}; // the legacy-fns deprecation warning
      try {
        const out = await asyncOutcome(() => cm.execute(code.make(), ps.make(), opts.make()), [...fault, 'REQUEST_TOO_LARGE']);
        if (out.value) {
          expect(Object.keys(out.value)).toContain('result');
          if ('error' in out.value) expect(typeof out.value.error).toBe('string');
        }
      } finally {
        console.warn = warn;
      }
    }), params);
    await expectHealthy();
  }, 50_000);
});
