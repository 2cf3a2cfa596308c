// The escape corpus: payloads after the public advisories of vm2 and isolated-vm and V8 sandbox
// folklore, each run for real. For every payload the host checks what it saw: nothing of its
// realm reached (a canary global and an Object.prototype canary stay unseen, Object.prototype,
// the other intrinsics and the host's globals are untouched), values that crossed are plain data
// (no functions, no accessors, standard prototypes, `__proto__` as an own key), the workers'
// jail held (their open descriptors are what they were) and the pool is healthy after (same
// workers, `async () => 1` runs).
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executor, run, until } from './helpers.mjs';

const ex = executor({ workers: 2, timeout: 3000, memoryLimit: 64 });
const CANARY = '__codemodeHostCanary';
const HOST_PATH = process.cwd();

let server;
let port;
beforeAll(async () => {
  globalThis[CANARY] = { secret: 'host' };
  Object.defineProperty(Object.prototype, CANARY, { value: 'host-proto', configurable: true, writable: false, enumerable: false });
  server = http.createServer((req, res) => res.end(`hello ${req.url}`));
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  port = server.address().port;
});
afterAll(async () => {
  delete globalThis[CANARY];
  delete Object.prototype[CANARY];
  await new Promise((r) => server.close(r));
});

// ---- what the host checks around every payload -------------------------------------------

const INTRINSICS = {
  'Object.prototype': Object.prototype, 'Array.prototype': Array.prototype, 'Function.prototype': Function.prototype,
  'Promise.prototype': Promise.prototype, 'String.prototype': String.prototype, 'Error': Error, 'Error.prototype': Error.prototype,
  'JSON': JSON, 'Reflect': Reflect, 'Symbol': Symbol, 'Map.prototype': Map.prototype,
};

/** Every own property of the intrinsics, by identity, and the host's global names. */
function hostSnapshot() {
  const snap = {};
  for (const [name, obj] of Object.entries(INTRINSICS)) {
    snap[name] = Reflect.ownKeys(obj).map((k) => {
      const d = Object.getOwnPropertyDescriptor(obj, k);
      return [String(k), d.value, d.get, d.set, d.writable, d.enumerable, d.configurable];
    });
  }
  snap.globals = Reflect.ownKeys(globalThis).map(String).sort();
  snap.canary = globalThis[CANARY];
  snap.canarySecret = globalThis[CANARY]?.secret;
  snap.protoCanary = ({})[CANARY];
  return snap;
}

function expectSameHost(before, after) {
  for (const key of Object.keys(before)) {
    if (key === 'globals') {
      expect(after.globals).toEqual(before.globals);
    } else if (Array.isArray(before[key])) {
      expect(after[key].length, key).toBe(before[key].length);
      before[key].forEach((entry, i) => { entry.forEach((v, j) => { expect(Object.is(v, after[key][i][j]), `${key} ${entry[0]}`).toBe(true); }); });
    } else {
      expect(Object.is(after[key], before[key]), key).toBe(true);
    }
  }
  expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('polluted');
  expect(({}).polluted).toBeUndefined();
  expect(({}).admin).toBeUndefined();
  expect(({}).then).toBeUndefined();
}

const PLAIN_PROTOS = new Set([
  Object.prototype, Array.prototype, Map.prototype, Set.prototype, Date.prototype, RegExp.prototype, ArrayBuffer.prototype,
  Error.prototype, TypeError.prototype, RangeError.prototype, Number.prototype, String.prototype, Boolean.prototype, BigInt.prototype,
  Uint8Array.prototype, DataView.prototype, null,
]);

/** A value that crossed into the host: plain data all the way down. */
function expectPlain(v, path = 'value', seen = new Set()) {
  if (typeof v === 'function' || typeof v === 'symbol') throw new Error(`${path} is a ${typeof v}`);
  if (v === null || typeof v !== 'object' || seen.has(v)) return;
  seen.add(v);
  const proto = Object.getPrototypeOf(v);
  if (!PLAIN_PROTOS.has(proto)) throw new Error(`${path} has a foreign prototype`);
  for (const key of Reflect.ownKeys(v)) {
    const d = Object.getOwnPropertyDescriptor(v, key);
    if (d.get || d.set) throw new Error(`${path}.${String(key)} is an accessor`);
    expectPlain(d.value, `${path}.${String(key)}`, seen);
  }
  if (v instanceof Map) for (const [k, x] of v) { expectPlain(k, `${path} key`, seen); expectPlain(x, `${path} entry`, seen); }
  if (v instanceof Set) for (const x of v) expectPlain(x, `${path} member`, seen);
}

/** The open descriptors of each worker (the jail refuses new files and sockets). */
function descriptors(pids) {
  return Object.fromEntries(pids.map((pid) => [pid, readdirSync(`/proc/${pid}/fd`).map(Number).sort((a, b) => a - b)]));
}

/** The tools a payload may call: `t.<name>(...)`; every call's arguments are recorded. */
function dispatcher(calls) {
  return ({ tool, args }) => {
    calls.push(args);
    switch (tool) {
      case 'echo': return args[0];
      case 'get': return 42;
      case 'obj': return { a: 1 };
      case 'proto': return JSON.parse('{"__proto__": {"admin": true}, "x": 1}');
      case 'boom': throw new Error('host boom');
      // Holds its arguments a while, as a slow service would.
      case 'slow': return new Promise((resolve) => setTimeout(() => resolve(String(args[0]).length), 300));
      default: return null;
    }
  };
}

// ---- the corpus ---------------------------------------------------------------------------

const notFound = (spec) => (out) => {
  expect(out.error).toBeUndefined();
  expect(out.result).toMatch(new RegExp(`^Cannot import "${spec.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`));
};
const resultIs = (value) => (out) => {
  expect(out.error).toBeUndefined();
  expect(out.result).toEqual(value);
};
const failsWith = (code, pattern) => (out) => {
  expect(out.error?.code).toBe(code);
  if (pattern) expect(out.error.message).toMatch(pattern);
};

const cases = [
  // constructor.constructor: the Function constructor reached from any object is the sandbox's.
  ['constructor.constructor', 'arrow -> Function("return process")', `async () => (() => {}).constructor.constructor('return typeof process')()`, resultIs('undefined')],
  ['constructor.constructor', 'globalThis.constructor.constructor -> this', `async () => { const g = globalThis.constructor.constructor('return this')(); return [typeof g.process, typeof g.require, g === globalThis] }`, resultIs(['undefined', 'undefined', true])],
  ['constructor.constructor', 'a provider object and its tool', `async () => [t.constructor.constructor('return typeof require')(), t.get.constructor.constructor('return typeof process')()]`, resultIs(['undefined', 'undefined'])],
  ['constructor.constructor', 'AsyncFunction and GeneratorFunction', `async () => [await (async () => {}).constructor('return typeof process')(), (function* () {}).constructor('yield typeof module')().next().value]`, resultIs(['undefined', 'undefined'])],
  ['constructor.constructor', "a tool's returned object", `async () => { const r = await t.obj(); return [Object.getPrototypeOf(r) === Object.prototype, r.constructor.constructor('return typeof process')()] }`, resultIs([true, 'undefined'])],
  ['constructor.constructor', 'console.log and a rejected tool error', `async () => { let e; try { await t.boom() } catch (x) { e = x } return [console.log.constructor('return typeof process')(), e.constructor.constructor('return typeof require')(), e instanceof Error] }`, resultIs(['undefined', 'undefined', true])],

  // Error.prepareStackTrace (vm2 CVE-2022-36067, GHSA-v27g, #562): call sites and the stack hook.
  ['Error.prepareStackTrace', "call sites' this and functions", `async () => { Error.prepareStackTrace = (e, frames) => frames.map((f) => { const fn = f.getFunction?.(); return [typeof f.getThis?.()?.process, fn ? fn.constructor('return typeof process')() : 'none'] }); const s = new Error('x').stack; Error.prepareStackTrace = undefined; return s.flat().filter((x) => x !== 'undefined' && x !== 'none') }`, resultIs([])],
  ['Error.prepareStackTrace', 'a hook set before an uncaught throw', `async () => { Error.prepareStackTrace = () => { throw new Proxy({}, {}) }; throw new Error('plain') }`, failsWith('PROGRAM_ERROR', /^Error: plain \(line 1, column \d+\)$/)],
  ['Error.prepareStackTrace', 'a Symbol name (the error-generation primitive)', `async () => { const e = new Error('x'); e.name = Symbol('s'); let t; try { e.stack; void String(e) } catch (x) { t = x } return t ? [t.constructor === TypeError, t.constructor.constructor('return typeof process')()] : 'no throw' }`, (out) => { expect(out.error).toBeUndefined(); expect(['no throw', [true, 'undefined']]).toContainEqual(out.result); }],
  ['Error.prepareStackTrace', 'captureStackTrace leaks no host path', `async () => { const o = {}; Error.captureStackTrace(o); let hostStack = ''; try { await t.boom() } catch (e) { hostStack = String(e.stack) } return [String(o.stack), hostStack] }`, (out) => { expect(out.error).toBeUndefined(); for (const s of out.result) { expect(s).not.toContain(HOST_PATH); expect(s).not.toMatch(/node:internal|node_modules/); } }],
  ['Error.prepareStackTrace', 'stackTraceLimit and the hook stay in the isolate', `async () => { Error.stackTraceLimit = 0; Error.prepareStackTrace = () => 'pwned'; return [new Error('a').stack, await t.get()] }`, resultIs(['pwned', 42])],

  // Symbol.species: a derived constructor cannot redirect what crosses.
  ['Symbol.species', 'Array species returning a foreign object', `async () => { class A extends Array { static get [Symbol.species]() { return function () { return { escaped: true } } } } return new A(1, 2, 3).map((x) => x) }`, (out) => { expect(out.error).toBeUndefined(); expect(out.result).toEqual({ 0: 1, 1: 2, 2: 3, escaped: true }); }],
  ['Symbol.species', 'a species array as tool arguments', `async () => { class A extends Array { static get [Symbol.species]() { return Object } } return await t.echo(new A(1, 2)) }`, (_out, { calls }) => { expect(calls[0][0]).toEqual([1, 2]); expect(Object.getPrototypeOf(calls[0][0])).toBe(Array.prototype); }],
  ['Symbol.species', "a tool promise's species hijacked", `async () => { const p = t.get(); p.constructor = { [Symbol.species]: function (exec) { exec(() => {}, () => {}) } }; p.then(() => {}); return await p }`, (out, { calls }) => { expect(out.result).toBe(42); expect(calls).toHaveLength(1); }],
  ['Symbol.species', 'Promise.prototype.then replaced before a tool call', `async () => { const then = Promise.prototype.then; Promise.prototype.then = function (a, b) { return then.call(this, (v) => a(v === 42 ? 'hijacked' : v), b) }; return await t.get() }`, resultIs(42) /* await takes the intrinsic path, not the replaced method */],

  // Proxy and getter results: the serializer reads them in the isolate; data crosses.
  ['Proxy/getter results', 'a Proxy as the result', `async () => new Proxy({ a: 1 }, { get: (o, k) => (k === 'then' ? undefined : () => 1) })`, failsWith('RESULT_NOT_CLONEABLE')],
  ['Proxy/getter results', 'a Proxy result whose `then` never calls back', `async () => new Proxy({ a: 1 }, { get: () => () => 1 })`, failsWith('NEVER_SETTLED')],
  ['Proxy/getter results', 'a getter in the result runs in the isolate', `async () => ({ get x() { globalThis.ran = (globalThis.ran ?? 0) + 1; return 7 }, y: [{ get z() { return 'deep' } }] })`, (out) => { expect(out.result).toEqual({ x: 7, y: [{ z: 'deep' }] }); expect(Object.getOwnPropertyDescriptor(out.result, 'x').value).toBe(7); }],
  ['Proxy/getter results', 'a getter that throws while the result is read', `async () => ({ get x() { throw new Error('in getter') } })`, (out) => { expect(out.error?.code).toMatch(/^(PROGRAM_ERROR|RESULT_NOT_CLONEABLE)$/); }],
  ['Proxy/getter results', 'a Proxy as tool arguments', `async () => { try { await t.echo(new Proxy([1], {})) ; return 'sent' } catch (e) { return e.message } }`, (out, { calls }) => { if (calls.length) expect(calls[0][0]).toEqual([1]); else expect(out.result).toMatch(/argument/i); }],
  ['Proxy/getter results', 'a thrown Proxy whose getPrototypeOf throws (vm2 #174)', `async () => { throw new Proxy({}, { getPrototypeOf() { throw (x) => x.constructor.constructor('return process')() } }) }`, failsWith('PROGRAM_ERROR')],
  ['Proxy/getter results', 'a revoked Proxy as the result', `async () => { const r = Proxy.revocable({}, {}); r.revoke(); return [r.proxy] }`, (out) => { expect(out.error?.code).toMatch(/^(PROGRAM_ERROR|RESULT_NOT_CLONEABLE)$/); }],

  // Thenables and toJSON in results and tool arguments.
  ['thenable/toJSON', 'a thenable result is awaited in the isolate', `async () => ({ then(resolve) { resolve({ settled: true }) } })`, resultIs({ settled: true })],
  ['thenable/toJSON', 'toJSON in the result is not called on the host', `async () => ({ a: 1, toJSON() { return 'pwned' } })`, (out) => { expect(out.result).not.toBe('pwned'); if (!out.error) expect(out.result).toEqual({ a: 1 }); else expect(out.error.code).toBe('RESULT_NOT_CLONEABLE'); }],
  ['thenable/toJSON', 'toJSON and then in tool arguments', `async () => { try { await t.echo({ toJSON() { return 'x' }, then(r) { r(1) } }) } catch (e) { return e.message } return 'sent' }`, (out, { calls }) => { expect(calls).toHaveLength(0); expect(out.result).toMatch(/argument/i); }],
  // biome-ignore lint/suspicious/noThenProperty: a data `then` key is the payload under test
  ['thenable/toJSON', 'a data `then` key in tool arguments', `async () => await t.echo({ then: 1, toJSON: 'no' })`, (out, { calls }) => { expect(calls[0][0]).toEqual({ then: 1, toJSON: 'no' }); expect(out.result).toEqual({ then: 1, toJSON: 'no' }); }],
  ['thenable/toJSON', 'Object.prototype.then polluted in the isolate', `async () => { Object.prototype.then = function (r) { delete Object.prototype.then; r('hijacked') }; return await t.obj() }`, (out) => { expect(out.error).toBeUndefined(); expect(out.result).toBe('hijacked'); }],

  // __proto__ keys arrive as own data keys, never as prototypes.
  ['__proto__ keys', 'a JSON __proto__ key in the result', `async () => JSON.parse('{"__proto__": {"polluted": 1, "admin": true}, "a": 1}')`, (out) => { expect(Object.getPrototypeOf(out.result)).toBe(Object.prototype); expect(Object.keys(out.result)).toEqual(['__proto__', 'a']); expect(out.result.polluted).toBeUndefined(); }],
  ['__proto__ keys', 'a defined __proto__ key in tool arguments', `async () => { await t.echo(Object.defineProperty({}, '__proto__', { value: { admin: true }, enumerable: true })); return 1 }`, (_out, { calls }) => { const a = calls[0][0]; expect(Object.getPrototypeOf(a)).toBe(Object.prototype); expect(Object.keys(a)).toEqual(['__proto__']); expect(a.admin).toBeUndefined(); }],
  ['__proto__ keys', 'constructor.prototype shaped data', `async () => ({ constructor: { prototype: { polluted: 1 } }, __proto__: { admin: true } })`, (out) => { expect(out.result).toEqual({ constructor: { prototype: { polluted: 1 } } }); expect(Object.getPrototypeOf(out.result)).toBe(Object.prototype); }],
  ['__proto__ keys', "a host answer's __proto__ key in the isolate", `async () => { const r = await t.proto(); return [Object.keys(r), r.admin, Object.getPrototypeOf(r) === Object.prototype, ({}).admin] }`, resultIs([['__proto__', 'x'], undefined, true, undefined])],

  // Stack overflow: a RangeError in the isolate, the worker lives on.
  ['stack overflow', 'plain recursion', `async () => { const f = () => f(); f() }`, failsWith('PROGRAM_ERROR', /RangeError: Maximum call stack size exceeded/)],
  ['stack overflow', 'in a tool answer handler', `async () => await t.get().then(function g() { return g() })`, failsWith('PROGRAM_ERROR', /RangeError/)],
  ['stack overflow', 'a result nested 100,000 deep', `async () => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a }`, (out) => { expect(out.error?.code).toMatch(/^(PROGRAM_ERROR|RESULT_NOT_CLONEABLE|RESULT_TOO_LARGE)$/); }],
  ['stack overflow', 'tool arguments nested 100,000 deep', `async () => { let a = {}; for (let i = 0; i < 100000; i++) a = { a }; try { await t.echo(a); return 'sent' } catch (e) { return e.message } }`, (out, { calls }) => { expect(out.error).toBeUndefined(); expect(calls).toHaveLength(0); expect(out.result).toMatch(/argument|stack/i); }],
  ['stack overflow', 'in a console argument', `async () => { const o = {}; o.toString = () => String(o); try { console.log(\`\${o}\`) } catch (e) { return e.name } }`, resultIs('RangeError')],

  // Nesting bombs: the parsers recurse per level (oxc checks no depth); refused unparsed.
  ['nesting bomb', 'parentheses 20,000 deep', `async () => ${'('.repeat(20000)}1${')'.repeat(20000)}`, failsWith('NESTING_TOO_DEEP', /^The code nests too deeply: \d+ levels at line 1/)],
  ['nesting bomb', 'a unary chain behind a division a scanner might read as a regular expression', `async () => { const x = {} / ${'- '.repeat(20000)}1 / 1; return x }`, failsWith('NESTING_TOO_DEEP')],
  ['nesting bomb', 'templates 20,000 deep', `async () => ${'`${'.repeat(20000)}1${'}`'.repeat(20000)}`, failsWith('NESTING_TOO_DEEP')],
  ['nesting bomb', 'TypeScript type arguments 20,000 deep', `async () => { let x: ${'A<'.repeat(20000)}B${'>'.repeat(20000)}; return 1 }`, failsWith('NESTING_TOO_DEEP')],
  ['nesting bomb', 'a TypeScript module', `import { x } from './deep.ts'\nasync () => x`, failsWith('NESTING_TOO_DEEP', /^The module "\.\/deep\.ts" nests too deeply/), { modules: { './deep.ts': `export const x = ${'['.repeat(20000)}${']'.repeat(20000)}` } }],
  ['nesting bomb', 'a JavaScript module (V8 checks its own stack)', `import { x } from './deep.js'\nasync () => x`, (out) => { expect(out.error?.code).toMatch(/^(SYNTAX_ERROR|PROGRAM_ERROR)$/); expect(out.error.message).toMatch(/Maximum call stack size exceeded/); }, { modules: { './deep.js': `export const x = ${'('.repeat(20000)}1${')'.repeat(20000)}` } }],
  ['nesting bomb', 'eval and Function at run time (V8 checks its own stack)', `async () => { const r = []; for (const f of [() => eval('${'('.repeat(20000)}1${')'.repeat(20000)}'), () => new Function('return ${'['.repeat(20000)}${']'.repeat(20000)}')()]) { try { f(); r.push('ran') } catch (e) { r.push(e.name) } } return r }`, resultIs(['RangeError', 'RangeError'])],

  // Import floods: many imports, parsed and linked in linear time.
  ['import flood', '20,000 imports of one module', `${Array.from({ length: 20000 }, (_, i) => `import { v as a${i} } from './m.js'`).join('\n')}\nasync () => a0 + a19999`, resultIs(2), { modules: { './m.js': 'export const v = 1' } }],
  ['import flood', 'a module-map key reached by climbing out of a directory', `import { v } from './lib/../../m.js'\nasync () => v`, failsWith('MODULE_NOT_FOUND'), { modules: { './m.js': 'export const v = 1' } }],

  // Tool-call floods: the host holds a run's unanswered arguments to a byte budget.
  ['tool-call flood', '40 calls of 4 MiB to a slow tool at once', `async () => { const big = 'x'.repeat(4 << 20); const s = await Promise.allSettled(Array.from({ length: 40 }, () => t.slow(big))); return [s.filter((x) => x.status === 'fulfilled').length, s.filter((x) => x.status === 'rejected' && /may hold at once/.test(x.reason.message)).length] }`, (out, { calls }) => { expect(out.error).toBeUndefined(); const [ok, refused] = out.result; expect(ok + refused).toBe(40); expect(refused).toBeGreaterThan(0); expect(calls).toHaveLength(ok); }, { timeout: 10_000 }],

  // Atomics.wait and the lost SharedArrayBuffer.
  ['Atomics.wait', 'on an unshared buffer', `async () => { try { Atomics.wait(new Int32Array(4), 0, 0, 1000); return 'waited' } catch (e) { return e.name } }`, resultIs('TypeError')],
  ['Atomics.wait', 'waitAsync on an unshared buffer', `async () => { try { Atomics.waitAsync?.(new Int32Array(4), 0, 0, 1000); return typeof Atomics.waitAsync } catch (e) { return e.name } }`, (out) => { expect(out.error).toBeUndefined(); expect(['TypeError', 'undefined']).toContain(out.result); }],
  ['SharedArrayBuffer', 'absent from the global', `async () => [typeof SharedArrayBuffer, 'SharedArrayBuffer' in globalThis, typeof WebAssembly]`, resultIs(['undefined', false, 'undefined'])],
  ['SharedArrayBuffer', 'not recoverable through intrinsics', `async () => Object.getOwnPropertyNames(globalThis).filter((n) => /Shared|WebAssembly|^process$|^require$|^Buffer$|^global$|Deno|Bun/.test(n)).concat(Object.getOwnPropertyNames(Atomics).filter((n) => n === 'SharedArrayBuffer'))`, resultIs([])],
  ['SharedArrayBuffer', 'a growable buffer', `async () => { try { new ArrayBuffer(8, { maxByteLength: 1 << 30 }); return 'made' } catch (e) { return e.message } }`, (out) => { expect(out.result).toMatch(/resizable/i); }],

  // import() of specifiers outside the module map.
  ['import()', 'a Node builtin', `async () => { try { await import('fs'); return 'loaded' } catch (e) { return e.message } }`, notFound('fs')],
  ['import()', 'node:child_process', `async () => { try { await import('node:child_process'); return 'loaded' } catch (e) { return e.message } }`, notFound('node:child_process')],
  ['import()', 'a file: URL', `async () => { try { await import('file:///etc/passwd'); return 'loaded' } catch (e) { return e.message } }`, notFound('file:///etc/passwd')],
  ['import()', 'a data: URL', `async () => { try { await import('data:text/javascript,export default globalThis'); return 'loaded' } catch (e) { return e.message } }`, notFound('data:text/javascript,export default globalThis')],
  ['import()', 'a relative path out of the map', `async () => { try { await import('../../../../etc/passwd'); return 'loaded' } catch (e) { return e.message } }`, notFound('../../../../etc/passwd')],
  ['import()', 'an http URL', `async () => { try { await import('http://127.0.0.1:1/x.js'); return 'loaded' } catch (e) { return e.message } }`, notFound('http://127.0.0.1:1/x.js')],
  ['import()', 'a static import of a builtin', `import fs from 'fs'\nasync () => typeof fs`, failsWith('MODULE_NOT_FOUND')],

  // process / require probes.
  ['process/require', 'the Node globals', `async () => [typeof process, typeof require, typeof module, typeof exports, typeof Buffer, typeof global, typeof __dirname, typeof setImmediate]`, resultIs(Array(8).fill('undefined'))],
  ['process/require', 'through eval and Function', `async () => [eval('typeof require'), new Function('return typeof process')(), (0, eval)('this') === globalThis]`, resultIs(['undefined', 'undefined', true])],
  ['process/require', 'import.meta carries no host path', `async () => JSON.stringify(import.meta) + String(import.meta.url)`, (out) => { expect(out.error).toBeUndefined(); expect(out.result).not.toContain(HOST_PATH); }],
  ['process/require', 'the host canaries are not in the isolate', `async () => [typeof globalThis.${CANARY}, ({}).${CANARY}, Object.getOwnPropertyNames(Object.prototype).includes('${CANARY}')]`, resultIs(['undefined', undefined, false])],

  // The runtime's own surface.
  ['runtime surface', 'fetch with the network blocked', `async () => { try { await fetch('http://127.0.0.1:9/'); return 'fetched' } catch (e) { return e.message } }`, (out) => { expect(out.result).toMatch(/^fetch is closed/); }],
  ['runtime surface', 'fetch of a file: URL (native)', `async () => { try { const r = await fetch('file:///etc/passwd'); return await r.text() } catch (e) { return e.name } }`, (out) => { expect(out.error).toBeUndefined(); expect(out.result).not.toMatch(/root:/); }, { outbound: 'native' }],
  ['runtime surface', 'a native fetch to 127.0.0.1 opens no socket in the worker', `async () => (await fetch('http://127.0.0.1:PORT/probe')).text()`, resultIs('hello /probe'), { outbound: 'native' }],
  ['runtime surface', 'a string as a timer callback', `async () => { try { setTimeout('globalThis.evaled = 1', 0) } catch (e) { return e.name } await new Promise((r) => setTimeout(r, 20)); return globalThis.evaled ?? 'not evaluated' }`, (out) => { expect(out.error).toBeUndefined(); expect(['TypeError', 'not evaluated']).toContain(out.result); }],
  ['runtime surface', 'a timer and an unawaited tool call left behind', `async () => { setInterval(() => { while (true) {} }, 5); t.get().then(() => { while (true) {} }); return 'left' }`, resultIs('left')],
  ['runtime surface', 'a microtask flood hits the time bound', `async () => { const f = () => queueMicrotask(f); f(); await new Promise(() => {}) }`, failsWith('TIMEOUT'), { timeout: 300 }],
  ['runtime surface', 'FinalizationRegistry cleanup after the run (vm2 GHSA-r4fx)', `async () => { const r = new FinalizationRegistry(() => { while (true) {} }); for (let i = 0; i < 1000; i++) r.register({ i }, i); return 'registered' }`, resultIs('registered')],
  ['runtime surface', 'a stream whose source answers a Proxy', `async () => { const s = new ReadableStream({ pull(c) { c.enqueue(new Proxy(new Uint8Array(2), {})); c.close() } }); try { return await new Response(s).text() } catch (e) { return e.name } }`, (out) => { expect(out.error).toBeUndefined(); expect(typeof out.result).toBe('string'); }],
  ['runtime surface', 'structuredClone of a Proxy and a getter that throws', `async () => { const r = []; for (const v of [new Proxy({}, {}), { get x() { throw new Error('g') } }, () => 1]) { try { structuredClone(v); r.push('cloned') } catch (e) { r.push(e.name) } } return r }`, (out) => { expect(out.error).toBeUndefined(); expect(out.result[2]).toBe('DataCloneError'); }],
  ['runtime surface', 'a provider cannot be replaced', `async () => { try { t = 1 } catch (e) { void e } try { delete globalThis.t } catch (e) { void e } return [typeof t, await t.get()] }`, resultIs(['object', 42])],
  ['runtime surface', 'console.log of an inspect.custom hook', `async () => { console.log({ [Symbol.for('nodejs.util.inspect.custom')]: (d, o, inspect) => inspect.constructor('return process')().pid }); return 1 }`, (out) => { expect(out.result).toBe(1); expect(out.logs[0].message).not.toBe(String(process.pid)); }],
];

describe("the corpus's own checks", () => {
  it('catch a function, an accessor or a foreign prototype in crossed data', () => {
    expect(() => expectPlain({ a: [() => 1] })).toThrow(/is a function/);
    expect(() => expectPlain({ get x() { return 1 } })).toThrow(/accessor/);
    expect(() => expectPlain(new (class Foreign {})())).toThrow(/foreign prototype/);
    expect(() => expectPlain(new Map([[1, { get y() { return 2 } }]]))).toThrow(/accessor/);
    expect(() => expectPlain({ a: [1, new Map([[2, new Set([3])]])], b: new Date(0) })).not.toThrow();
  });

  it('catch a change to an intrinsic, a global or the canaries', () => {
    const before = hostSnapshot();
    const keep = Array.prototype.includes;
    Array.prototype.includes = function includes() { return false; };
    try {
      expect(() => expectSameHost(before, hostSnapshot())).toThrow();
    } finally {
      Array.prototype.includes = keep;
    }
    globalThis.__codemodeExtraGlobal = 1;
    try {
      expect(() => expectSameHost(before, hostSnapshot())).toThrow();
    } finally {
      delete globalThis.__codemodeExtraGlobal;
    }
    expectSameHost(before, hostSnapshot());
  });
});

describe('escape corpus', () => {
  it('has at least 40 payloads, as many as the README and docs/reliability.md say', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
    expect(readFileSync(new URL('../README.md', import.meta.url), 'utf8')).toContain(`escape corpus of ${cases.length} payloads`);
    expect(readFileSync(new URL('../docs/reliability.md', import.meta.url), 'utf8')).toContain(`\`__test__/escapes.test.mjs\`: ${cases.length} payloads`);
  });

  it.each(cases.map(([family, name, code, check, extra]) => ({ family, name, code, check, extra: extra ?? {} })))('$family: $name', async ({ code, check, extra }) => {
    const pids = ex.workerPids().sort();
    expect(pids).toHaveLength(2);
    const fds = descriptors(pids);
    const host = hostSnapshot();
    const calls = [];
    const request = {
      code: code.replace('PORT', String(port)),
      providers: [{ name: 't', tools: '*' }],
      dispatch: dispatcher(calls),
      outbound: null,
      timeout: 3000,
    };
    Object.assign(request, extra);
    if ('outbound' in extra && extra.outbound === undefined) delete request.outbound;
    const out = await run(ex, request.code, request);
    // What crossed is plain data.
    if (!out.error) expectPlain(out.result, 'result');
    for (const args of calls) expectPlain(args, 'tool arguments');
    for (const log of out.logs) expect(typeof log.message).toBe('string');
    await check(out, { calls });
    // The host realm is untouched.
    expectSameHost(host, hostSnapshot());
    // The pool is healthy: same workers, each still answering, their jail unbroken.
    await expect(Promise.all([run(ex, 'async () => 1'), run(ex, 'async () => 1')])).resolves.toMatchObject([{ result: 1 }, { result: 1 }]);
    expect(ex.workerPids().sort()).toEqual(pids);
    expect(descriptors(pids)).toEqual(fds);
  }, 15_000);
});

// One allocation past the memory limit and everything V8 grants to stop a run cleanly: V8
// reports a fatal out-of-memory, or an allocation of its own meets the worker's address-space
// ceiling and aborts it. The worker dies either way; the run must still end in MEMORY_LIMIT
// (not WORKER_LOST, which says "retry"), and the pool must replace the worker and serve on.
const bombs = [
  ['one array of doubles', 'async () => new Array(25e6).fill(1.5).length'],
  ['an array of objects', 'async () => { const a = new Array(3e7); for (let i = 0; i < a.length; i++) a[i] = { i }; return a.length }'],
  ['a huge string made flat', "async () => 'x'.repeat(2 ** 28).toUpperCase().length"],
  ['a typed array past the limit', 'async () => new Float64Array(2e8).length'],
  ['JSON.parse of a big text', "async () => JSON.parse('[' + '1,'.repeat(2e7) + '1]').length"],
  ['Array.from of a length', 'async () => Array.from({ length: 1e8 }, (_, i) => i).length'],
  // Millions of tiny buffers: each costs far more than its byte (the sandbox's granule, V8's
  // bookkeeping outside the heap), which the meter charges.
  ['millions of one-byte buffers', 'async () => { const keep = []; for (let i = 0; i < 3e6; i++) keep.push(new ArrayBuffer(1)); return keep.length }'],
  // V8's C++ buffers of a long parse meet the worker's ceiling: its allocator crashes with a
  // trap, answered as the memory failure.
  ['JSON.parse of a longer text', "async () => JSON.parse('[' + '0,'.repeat(48e6 - 1) + '0]').length"],
  // Strings of the program the worker copies out of V8 (console entries, a thrown message):
  // each costs the worker's own memory, which the run's bounds do not meter.
  ['console.log of huge strings', "async () => { const s = 'x'.repeat(2 ** 25); for (let i = 0; i < 20; i++) console.log(s + i); return 1 }", 'logs'],
];

describe('single-shot memory bombs', () => {
  it.each(bombs.map(([name, code, kind]) => ({ name, code, kind })))('$name: MEMORY_LIMIT, not retryable; the pool serves on', async ({ code, kind }) => {
    const host = hostSnapshot();
    const out = await ex.execute({ code, memoryLimit: 64, timeout: 10_000 });
    if (kind === 'logs') {
      // Each entry is cut at its bound before it leaves V8: the run ends as it would anyway.
      expect(out.result).toBe(1);
      expect(out.logs[0].message).toMatch(/more bytes cut\]$/);
    } else {
      expect(out.result).toBeUndefined();
      expect(out.error?.code).toBe('MEMORY_LIMIT');
      expect(out.error.message).toMatch(/limit of 64 MiB/);
    }
    expectSameHost(host, hostSnapshot());
    expect(await until(() => ex.workerPids().length === 2)).toBe(true);
    await expect(Promise.all([run(ex, 'async () => 1'), run(ex, 'async () => 1')])).resolves.toMatchObject([{ result: 1 }, { result: 1 }]);
  }, 30_000);
});

describe('a retained handler', () => {
  it('overflows its stack: HANDLER_ERROR, the worker lives on, the handle still serves', async () => {
    const pids = ex.workerPids().sort();
    const fds = descriptors(pids);
    const host = hostSnapshot();
    const granted = await ex.execute({ code: `async () => (req) => { if (req.url.endsWith('/deep')) { const f = () => f(); f() } return new Response(typeof process + ' ' + typeof require) }`, retainHandles: true });
    try {
      const deep = await ex.invokeHandle(granted.executionId, 'fetch', { method: 'GET', url: 'https://h.test/deep', headers: [], body: null }).catch((e) => e);
      expect(deep.code).toBe('HANDLER_ERROR');
      expect(deep.message).toMatch(/Maximum call stack/);
      const ok = await ex.invokeHandle(granted.executionId, 'fetch', { method: 'GET', url: 'https://h.test/', headers: [], body: null });
      expect(new TextDecoder().decode(ok.body)).toBe('undefined undefined');
      expectPlain(ok, 'response');
    } finally {
      await ex.closeHandles(granted.executionId);
    }
    expectSameHost(host, hostSnapshot());
    expect(ex.workerPids().sort()).toEqual(pids);
    expect(descriptors(pids)).toEqual(fds);
  });
});

describe('runs do not see each other', () => {
  it("a polluted isolate's prototypes, globals and timers are gone for the next runs", async () => {
    const polluting = `async () => { Object.prototype.polluted = 1; Array.prototype.push = () => 0; globalThis.leftover = 'x'; JSON.parse = () => 'fake'; setTimeout(() => { globalThis.late = 1 }, 10); return 1 }`;
    await Promise.all([run(ex, polluting), run(ex, polluting)]);
    const probe = `async () => { await new Promise((r) => setTimeout(r, 30)); const a = []; a.push(1); return [({}).polluted, a.length, typeof globalThis.leftover, JSON.parse('2'), typeof globalThis.late] }`;
    const outs = await Promise.all([run(ex, probe), run(ex, probe), run(ex, probe), run(ex, probe)]);
    for (const out of outs) expect(out.result).toEqual([undefined, 1, 'undefined', 2, 'undefined']);
  });
});
