// Values cross to the worker in this Node's V8 serializer format. A Node whose V8 writes a newer
// format than the worker's V8 reads must be refused with a typed error before any value crosses,
// and a value in a newer format that reaches the worker anyway must be refused, never misread.
// A newer Node is simulated by a Serializer whose header claims the next format.
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { declaredText, executor, ExecutorError, IsolateExecutor, rejection } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { Serializer, Deserializer } = require('node:v8');
const { connect } = require('../index.js');
const { nodeValueFormat, serialize, deserialize } = require('../lib/clone.js');
const { loadNative } = require('../lib/native.js');

const supported = loadNative().binding.valueFormatVersion();
const realWriteHeader = Serializer.prototype.writeHeader;

/** Makes this Node write headers claiming format `version` (as a newer Node's V8 would). */
function pretendFormat(version) {
  Serializer.prototype.writeHeader = function writeHeader() {
    this.writeRawBytes(Buffer.from([0xff, version]));
  };
}

afterEach(() => {
  Serializer.prototype.writeHeader = realWriteHeader;
});

describe('the value-serializer format', () => {
  it('this Node writes the format the worker speaks', () => {
    expect(supported).toBe(15);
    expect(nodeValueFormat()).toBe(supported);
  });

  it('a newer format refuses the executor with VALUE_FORMAT_UNSUPPORTED, before a worker starts', async () => {
    pretendFormat(supported + 1);
    let err;
    try {
      new IsolateExecutor({ workers: 1 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExecutorError);
    expect(err.code).toBe('VALUE_FORMAT_UNSUPPORTED');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`format ${supported + 1}`);
    expect(err.message).toContain(`speaks format ${supported}`);
    expect(err.message).toContain(process.version);
    const refused = rejection(connect('ws://127.0.0.1:9', { websocket: require('ws') }));
    // Restored before anything awaits: vitest's own messages to its parent are V8-serialized
    // too, and one sent while the header is faked would not read there.
    Serializer.prototype.writeHeader = realWriteHeader;
    const remote = await refused;
    expect(remote).toBeInstanceOf(ExecutorError);
    expect(remote.code).toBe('VALUE_FORMAT_UNSUPPORTED');
  });

  it("an older format is refused too: the worker's results would not read on this Node", () => {
    pretendFormat(supported - 1);
    expect(() => new IsolateExecutor({ workers: 1 })).toThrow(/format 14, and the codemode-worker speaks format 15/);
  });

  // Float16Array. The worker's V8 15.2 reads and writes it (view subtag 'h'); whether one crosses
  // to or from this Node depends on this Node's V8, so each direction is asserted for the Node
  // that runs the file, by what it can do rather than by its major: Node 24 and 26 (V8 13.6,
  // 14.6) have Float16Array and read it, Node 20 and 22 (V8 11.3, 12.4) neither.
  // What V8 13.6+ writes for new Float16Array([1.5, 2]) after the header: the buffer ('B', 4
  // bytes), then a view ('V') of subtag 'h' over all of it.
  const FLOAT16 = Buffer.from([0x42, 0x04, 0x00, 0x3e, 0x00, 0x40, 0x56, 0x68, 0x00, 0x04, 0x00]);
  const HAS_FLOAT16 = typeof globalThis.Float16Array === 'function';
  const READS_FLOAT16 = (() => {
    try {
      const read = require('node:v8').deserialize(Buffer.concat([Buffer.from([0xff, supported]), FLOAT16]));
      return Object.prototype.toString.call(read) === '[object Float16Array]' && `${Array.from(read)}` === '1.5,2';
    } catch {
      return false;
    }
  })();
  // What the sandbox makes of the answer `got`, in plain data any Node reads.
  const describeInside = `(v) => [Object.prototype.toString.call(v), Array.from(v), v.byteOffset, v.buffer.byteLength]`;

  it(`a Float16Array answer reads as one inside the sandbox (${HAS_FLOAT16 ? "this Node's own" : 'the bytes Node 24 and 26 write, put in by hand: this Node makes none'})`, async () => {
    const realWriteValue = Serializer.prototype.writeValue;
    let answer;
    if (HAS_FLOAT16) {
      // This Node writes the bytes above for it, and the tool answers it as it is.
      const s = new Serializer();
      s.writeValue(new Float16Array([1.5, 2]));
      expect(s.releaseBuffer()).toEqual(FLOAT16);
      answer = () => new Float16Array([1.5, 2]);
    } else {
      // The next value this host writes is those bytes (restored as in the test below).
      answer = () => {
        Serializer.prototype.writeValue = function writeValue() {
          Serializer.prototype.writeValue = realWriteValue;
          this.writeRawBytes(FLOAT16);
          return true;
        };
        return 'replaced by a Float16Array';
      };
    }
    const ex = executor({ workers: 1 });
    const out = await ex.execute({
      code: `async () => { try { return ['read', (${describeInside})(await t.answer())] } catch (e) { return ['rejected', e.message] } }`,
      providers: [{ name: 't', tools: ['answer'] }],
      dispatch: answer,
    });
    Serializer.prototype.writeValue = realWriteValue;
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual(['read', ['[object Float16Array]', [1.5, 2], 0, 4]]);
  });

  it(`a Float16Array from the sandbox ${READS_FLOAT16 ? 'reaches this Node as one, returned and as a tool argument' : "is refused, never misread: this Node's V8 cannot read one (RESULT_NOT_CLONEABLE; a tool argument rejects inside the sandbox)"}`, async () => {
    const ex = executor({ workers: 1 });
    const received = [];
    const passed = await ex.execute({
      code: `async () => { try { return ['answered', await t.take(new Float16Array([1.5, 2]))] } catch (e) { return ['rejected', e.constructor.name, e.name, e.message] } }`,
      providers: [{ name: 't', tools: ['take'] }],
      dispatch: ({ args }) => {
        received.push(args);
        return 'taken';
      },
    });
    const returned = await ex.execute({ code: 'async () => new Float16Array([1.5, 2])' });
    expect(passed.error).toBeUndefined();
    if (READS_FLOAT16) {
      expect(passed.result).toEqual(['answered', 'taken']);
      expect(received).toHaveLength(1);
      expect(received[0]).toHaveLength(1);
      expect(received[0][0]).toBeInstanceOf(globalThis.Float16Array);
      expect(Array.from(received[0][0])).toEqual([1.5, 2]);
      expect(returned.error).toBeUndefined();
      expect(returned.result).toBeInstanceOf(globalThis.Float16Array);
      expect(Array.from(returned.result)).toEqual([1.5, 2]);
      expect(serialize(returned.result).subarray(2)).toEqual(FLOAT16);
    } else {
      // The host's Deserializer throws on the view subtag; the program sees why, and dispatch is
      // never reached.
      const unreadable = `the host's Node (${process.version}) cannot read this value (Unable to deserialize cloned data): the worker's V8 writes kinds of value an older V8 does not know, such as a Float16Array before Node 24`;
      expect(passed.result).toEqual(['rejected', 'Error', 'Error', unreadable]);
      expect(received).toEqual([]);
      expect(returned.result).toBeUndefined();
      expect(returned.error).toEqual({ code: 'RESULT_NOT_CLONEABLE', message: declaredText('RESULT_NOT_CLONEABLE', { detail: unreadable }) });
    }
  });

  it(`a Float16Array in a call paused for approval ${READS_FLOAT16 ? 'reaches the approver as one' : 'ends the run with TOOL_ARGS_NOT_CLONEABLE, the host unharmed'}`, async () => {
    const ex = executor({ workers: 1 });
    const out = await ex.execute({
      code: 'async () => billing.refund(new Float16Array([1.5, 2]))',
      providers: [{ name: 'billing', tools: ['refund'], approve: ['refund'] }],
      dispatch: () => 'refunded',
    });
    if (READS_FLOAT16) {
      expect(out.error).toBeUndefined();
      expect(out.paused.pending).toHaveLength(1);
      expect(out.paused.pending[0].args[0]).toBeInstanceOf(globalThis.Float16Array);
      expect(Array.from(out.paused.pending[0].args[0])).toEqual([1.5, 2]);
    } else {
      // Before, the throw reached the addon's callback and ended this process.
      const unreadable = `the host's Node (${process.version}) cannot read this value (Unable to deserialize cloned data): the worker's V8 writes kinds of value an older V8 does not know, such as a Float16Array before Node 24`;
      expect(out.paused).toBeUndefined();
      expect(out.error).toEqual({ code: 'TOOL_ARGS_NOT_CLONEABLE', message: declaredText('TOOL_ARGS_NOT_CLONEABLE', { provider: 'billing', tool: 'refund', detail: unreadable }) });
    }
    // The executor serves on.
    expect((await ex.execute({ code: 'async () => 7' })).result).toBe(7);
  });

  it('a tool answer in a newer format is refused inside the sandbox, never misread', async () => {
    const ex = executor({ workers: 1 });
    let calls = 0;
    const newer = await ex.execute({
      code: `async () => {
        const same = await t.answer();
        try { return [same, await t.answer()] } catch (e) { return [same, 'rejected: ' + e.message] }
      }`,
      providers: [{ name: 't', tools: ['answer'] }],
      dispatch: () => {
        calls += 1;
        if (calls === 2) {
          // Faked only while this answer is serialized (synchronously, right after dispatch
          // returns): vitest's own messages are V8-serialized too (see above).
          pretendFormat(supported + 1);
          queueMicrotask(() => {
            Serializer.prototype.writeHeader = realWriteHeader;
          });
        }
        return { n: calls };
      },
    });
    Serializer.prototype.writeHeader = realWriteHeader;
    expect(newer.error).toBeUndefined();
    expect(newer.result[0]).toEqual({ n: 1 });
    expect(newer.result[1]).toMatch(/^rejected: The tool's answer could not be read/);
  });
});

// The worker's V8 (15.2) writes format 16 and puts 15 in the header (crates/worker/src/natives/
// clone.rs, `declared`), on the claim that the two bodies agree for every value that crosses.
// This block checks that claim on real crossings, in both directions, under whichever Node runs
// it (scripts/test.sh runs this file under Node 20, 22, 24 and 26): fast-check generates values
// of every kind a structured clone carries, a tool answers one into the sandbox, the program
// builds the same value from source there, and both come back as tool arguments and as the
// result. Set VALUE_FORMAT_SEED / VALUE_FORMAT_RUNS to replay a failure or to run longer.
const SEED = Number(process.env.VALUE_FORMAT_SEED ?? 0x0f16);
const RUNS = Number(process.env.VALUE_FORMAT_RUNS ?? 200);
const BUDGET_MS = Math.max(25_000, RUNS * 60); // 200 runs take 1-2 s

/**
 * Where two structured-clone graphs differ (a path and the two sides), or null when they are the
 * same: each kind by what a clone keeps of it, and identity too (a shared reference or a cycle on
 * one side is the same one on the other). Self-contained: the sandbox runs its source as well.
 */
function graphDiff(a, b) {
  const there = new Map();
  const back = new Map();
  const tagOf = (x) => Object.prototype.toString.call(x);
  const show = (x) => {
    if (typeof x === 'bigint') return `${x}n`;
    if (typeof x === 'string') return JSON.stringify(x);
    if (typeof x === 'object' && x !== null) return tagOf(x);
    return Object.is(x, -0) ? '-0' : String(x);
  };
  const field = (at, name, x, y) => (Object.is(x, y) ? null : `${at}.${name}: ${show(x)} vs ${show(y)}`);
  const ownData = (o, k) => {
    const d = Object.getOwnPropertyDescriptor(o, k);
    return d && 'value' in d ? d : undefined;
  };
  function walk(x, y, at) {
    if (typeof x !== typeof y) return `${at}: ${typeof x} ${show(x)} vs ${typeof y} ${show(y)}`;
    if (x === null || y === null || typeof x !== 'object') return Object.is(x, y) ? null : `${at}: ${show(x)} vs ${show(y)}`;
    if (there.has(x) || back.has(y)) {
      return there.get(x) === y && back.get(y) === x ? null : `${at}: not the same shared reference or cycle`;
    }
    there.set(x, y);
    back.set(y, x);
    const tag = tagOf(x);
    if (tag !== tagOf(y)) return `${at}: ${tag} vs ${tagOf(y)}`;
    if (Object.getPrototypeOf(x) !== Object.getPrototypeOf(y)) return `${at}: another prototype (${tag})`;
    if (tag === '[object ArrayBuffer]') {
      const d = field(at, 'byteLength', x.byteLength, y.byteLength) ?? field(at, 'maxByteLength', x.maxByteLength, y.maxByteLength) ?? field(at, 'resizable', x.resizable, y.resizable);
      if (d) return d;
      const bx = new Uint8Array(x);
      const by = new Uint8Array(y);
      for (let i = 0; i < bx.length; i++) if (bx[i] !== by[i]) return `${at}: byte ${i}: ${bx[i]} vs ${by[i]}`;
      return null;
    }
    if (ArrayBuffer.isView(x)) {
      return field(at, 'byteOffset', x.byteOffset, y.byteOffset) ?? field(at, 'byteLength', x.byteLength, y.byteLength) ?? field(at, 'length', x.length, y.length) ?? walk(x.buffer, y.buffer, `${at}.buffer`);
    }
    const kx = JSON.stringify(Object.keys(x));
    const ky = JSON.stringify(Object.keys(y));
    if (kx !== ky) return `${at}: keys ${kx} vs ${ky}`;
    switch (tag) {
      case '[object Number]':
      case '[object String]':
      case '[object Boolean]':
      case '[object BigInt]':
        return field(at, 'valueOf()', x.valueOf(), y.valueOf());
      case '[object Date]':
        return field(at, 'getTime()', x.getTime(), y.getTime());
      case '[object RegExp]':
        return field(at, 'source', x.source, y.source) ?? field(at, 'flags', x.flags, y.flags) ?? field(at, 'lastIndex', x.lastIndex, y.lastIndex);
      case '[object Error]': {
        const mx = ownData(x, 'message');
        const my = ownData(y, 'message');
        const cx = ownData(x, 'cause');
        const cy = ownData(y, 'cause');
        return (
          field(at, 'name', x.name, y.name) ??
          field(at, 'has message', !!mx, !!my) ??
          field(at, 'message', mx?.value, my?.value) ??
          field(at, 'stack', x.stack, y.stack) ??
          field(at, 'has cause', !!cx, !!cy) ??
          (cx ? walk(cx.value, cy.value, `${at}.cause`) : null)
        );
      }
      case '[object Map]':
      case '[object Set]': {
        const xs = [...x.entries()];
        const ys = [...y.entries()];
        if (xs.length !== ys.length) return field(at, 'size', xs.length, ys.length);
        for (let i = 0; i < xs.length; i++) {
          const d = walk(xs[i][0], ys[i][0], `${at}.<key ${i}>`) ?? walk(xs[i][1], ys[i][1], `${at}.<value ${i}>`);
          if (d) return d;
        }
        return null;
      }
      case '[object Array]':
      case '[object Object]': {
        const d = tag === '[object Array]' ? field(at, 'length', x.length, y.length) : null;
        if (d) return d;
        for (const k of Object.keys(x)) {
          const dk = walk(x[k], y[k], `${at}[${JSON.stringify(k)}]`);
          if (dk) return dk;
        }
        return null;
      }
      default:
        return `${at}: a ${tag}, which no clone makes`;
    }
  }
  return walk(a, b, '$');
}

/** Source of an expression that builds `root` again (shared references and cycles included). */
function toSource(root) {
  const ids = new Map();
  const lines = [];
  const literal = (v) => {
    if (v === undefined) return 'void 0';
    if (typeof v === 'bigint') return `${v}n`;
    if (typeof v === 'string') return JSON.stringify(v); // lone surrogates as \udxxx escapes
    return Object.is(v, -0) ? '-0' : String(v); // NaN, Infinity, null, booleans as written
  };
  const isIndex = (k) => k === String(Number(k) >>> 0) && Number(k) !== 2 ** 32 - 1;
  function ref(v) {
    if (v === null || typeof v !== 'object') return literal(v);
    if (ids.has(v)) return `$[${ids.get(v)}]`;
    const me = `$[${ids.size}]`;
    ids.set(v, ids.size);
    const tag = Object.prototype.toString.call(v).slice(8, -1);
    const define = (k, value) => lines.push(`D(${me}, ${JSON.stringify(k)}, ${ref(value)});`);
    if (tag === 'ArrayBuffer') {
      if (v.resizable) throw new Error('the sandbox refuses resizable ArrayBuffers; they only cross from the host');
      lines.push(`${me} = B(${v.byteLength}, ${JSON.stringify(Buffer.from(v).toString('base64'))});`);
    } else if (ArrayBuffer.isView(v)) {
      const buffer = ref(v.buffer);
      lines.push(`${me} = new ${tag}(${buffer}, ${v.byteOffset}, ${tag === 'DataView' ? v.byteLength : v.length});`);
    } else if (tag === 'Array') {
      const keys = Object.keys(v);
      const dense = keys.filter(isIndex).length === v.length;
      lines.push(dense ? `${me} = [];` : `${me} = new Array(${v.length});`);
      for (const k of keys) {
        if (dense && isIndex(k)) lines.push(`${me}.push(${ref(v[k])});`);
        else define(k, v[k]);
      }
    } else if (tag === 'Object') {
      lines.push(`${me} = {};`);
      for (const k of Object.keys(v)) define(k, v[k]);
    } else if (tag === 'Map') {
      lines.push(`${me} = new Map();`);
      for (const [k, value] of v) lines.push(`${me}.set(${ref(k)}, ${ref(value)});`);
    } else if (tag === 'Set') {
      lines.push(`${me} = new Set();`);
      for (const value of v) lines.push(`${me}.add(${ref(value)});`);
    } else if (tag === 'Date') {
      lines.push(`${me} = new Date(${literal(v.getTime())});`);
    } else if (tag === 'RegExp') {
      lines.push(`${me} = new RegExp(${JSON.stringify(v.source)}, ${JSON.stringify(v.flags)});`);
    } else if (['Number', 'String', 'Boolean', 'BigInt'].includes(tag)) {
      lines.push(`${me} = Object(${literal(v.valueOf())});`);
    } else if (tag === 'Error') {
      const message = Object.getOwnPropertyDescriptor(v, 'message');
      lines.push(`${me} = new ${Object.getPrototypeOf(v).constructor.name}(${message ? literal(message.value) : ''});`);
      lines.push(`Object.defineProperty(${me}, 'stack', { value: ${literal(v.stack)}, writable: true, configurable: true });`);
      const cause = Object.getOwnPropertyDescriptor(v, 'cause');
      if (cause) lines.push(`Object.defineProperty(${me}, 'cause', { value: ${ref(cause.value)}, writable: true, configurable: true });`);
    } else {
      throw new Error(`no source for a ${tag}`);
    }
    return me;
  }
  const top = ref(root);
  return `(() => {
    const $ = [];
    const D = (o, k, v) => Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
    const B = (n, base64) => { const b = new ArrayBuffer(n); const u = new Uint8Array(b); const s = atob(base64); for (let i = 0; i < n; i++) u[i] = s.charCodeAt(i); return b };
    ${lines.join('\n    ')}
    return ${top};
  })()`;
}

// Every typed array kind but Float16Array: Node 20 and 22 have none and cannot read its view
// subtag, so no value the contract carries on every supported Node holds one.
const TYPED = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array'];
// The Errors a clone keeps the kind of (any other name comes back as Error).
const ERRORS = ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError'];

// Node 20's V8 (11.3) writes an Error's cause before its stack; later V8s read a cause only after
// the stack, so they refuse such bytes: Node 22's 12.4 already, 13.6, 14.6 and the worker's 15.2.
// Not a format 16 matter (all of it is format 15). Under that Node no Error with a cause is
// generated, and the last test of the block pins what happens to one instead.
const CAUSE_BEFORE_STACK = (() => {
  const e = new Error('m', { cause: 0 });
  Object.defineProperty(e, 'stack', { value: 's' });
  const s = new Serializer();
  s.writeHeader();
  s.writeValue(e);
  return s.releaseBuffer().toString('latin1').includes('m"\x01mcI\x00s');
})();

/** Deterministic bytes (xorshift32) for a buffer of any size, from one generated seed. */
function fill(bytes, seed) {
  let x = seed | 0 || 1;
  for (let i = 0; i < bytes.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
}

/** A value recipe: `make()` builds a fresh value; fast-check shows a failing one as its source. */
const recipe = (make) => ({ make, [fc.toStringMethod]: () => toSource(make()) });

const unit = fc.oneof(
  fc.constantFrom('a', 'z', '0', ' ', '_', '"', '\\', '/', '\n'), // one-byte strings
  fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)), // Latin-1, still one-byte
  fc.integer({ min: 0x100, max: 0xffff }).map((c) => String.fromCharCode(c)), // two-byte, surrogates included
  fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), // a lone surrogate
  fc.integer({ min: 0x10000, max: 0x10ffff }).map((c) => String.fromCodePoint(c)), // astral (a pair)
);
const text = fc.string({ unit, maxLength: 8 });
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  {
    arbitrary: fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 2 ** 30, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, 2 ** 32, 2 ** 53, Number.MIN_VALUE, Number.MAX_VALUE, 0.1),
    weight: 2,
  },
);
const bigint = fc.oneof(fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }), fc.constantFrom(0n, -1n, 2n ** 63n, -(2n ** 63n), 2n ** 64n));
const primitive = fc.oneof(fc.constantFrom(undefined, null, true, false), number, bigint, text);
const key = fc.oneof(text, fc.constantFrom('0', '1', '7', '4294967294', '4294967295', '-1', '1.5', '__proto__', 'length', 'constructor'));

const syntax = /[\\^$.*+?()[\]{}|/]/g;
const regexp = fc
  .tuple(
    fc.oneof(fc.constantFrom('', 'a+b', '^\\d{2,3}$', '[a-z]*?', '(?<n>x)\\k<n>', '\\bw\\b', '(a|b)+?c', '\\/', 'x{2}'), text.map((s) => s.replace(syntax, '\\$&'))),
    fc.subarray(['d', 'g', 'i', 'm', 's', 'y']),
    fc.constantFrom('', 'u', 'v'),
  )
  .map(([source, flags, unicode]) => [source, flags.join('') + unicode])
  .filter(([source, flags]) => {
    try {
      return !!new RegExp(source, flags);
    } catch {
      return false;
    }
  })
  .map(([source, flags]) => () => new RegExp(source, flags));

// Buffers and views over them: every typed array kind and DataView, at offsets into one shared
// buffer, sometimes with the buffer itself beside them. Some buffers are long enough that
// lengths and offsets take two and three varint bytes (the field format 16 widened to size_t).
const buffers = fc
  .record({
    size: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 64 }) }, { weight: 1, arbitrary: fc.integer({ min: 128, max: 40_000 }) }),
    seed: fc.integer(),
    views: fc.array(fc.record({ kind: fc.integer({ min: 0, max: TYPED.length }), start: fc.nat(), count: fc.nat() }), { maxLength: 3 }),
    bare: fc.boolean(),
  })
  .map(({ size, seed, views, bare }) => () => {
    const buffer = new ArrayBuffer(size);
    fill(new Uint8Array(buffer), seed);
    const made = views.map(({ kind, start, count }) => {
      const View = kind === TYPED.length ? DataView : globalThis[TYPED[kind]];
      const width = View.BYTES_PER_ELEMENT ?? 1;
      const offset = (start % (Math.floor(size / width) + 1)) * width;
      return new View(buffer, offset, count % (Math.floor((size - offset) / width) + 1));
    });
    const parts = bare || made.length === 0 ? [buffer, ...made] : made;
    return parts.length === 1 ? parts[0] : parts;
  });

const { node } = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', maxDepth: 3, withCrossShrink: true },
    { arbitrary: primitive.map((p) => () => p), weight: 3 },
    tie('object'),
    tie('array'),
    tie('sparse'),
    tie('map'),
    tie('set'),
    tie('error'),
    fc.oneof(fc.integer({ min: -8.64e15, max: 8.64e15 }), fc.constant(NaN), fc.double()).map((t) => () => new Date(t)),
    regexp,
    fc.oneof(number, text, fc.boolean(), bigint).map((p) => () => Object(p)),
    { arbitrary: buffers, weight: 2 },
    // fast-check's own mix, bounded, with every option a clone keeps.
    fc
      .anything({ maxDepth: 2, maxKeys: 4, withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, stringUnit: 'binary' })
      .map((v) => () => structuredClone(v)),
  ),
  object: fc.uniqueArray(fc.tuple(key, tie('node')), { selector: (e) => e[0], maxLength: 4 }).map((entries) => () => {
    const o = {};
    for (const [k, make] of entries) Object.defineProperty(o, k, { value: make(), writable: true, enumerable: true, configurable: true });
    return o;
  }),
  array: fc
    .tuple(fc.array(tie('node'), { maxLength: 5 }), fc.uniqueArray(fc.tuple(fc.constantFrom('x', 'name', 'é', '\ud800', '😀'), tie('node')), { selector: (e) => e[0], maxLength: 2 }))
    .map(([items, named]) => () => {
      const a = items.map((make) => make());
      for (const [k, make] of named) a[k] = make();
      return a;
    }),
  sparse: fc.sparseArray(tie('node'), { maxLength: 12, maxNumElements: 4 }).map((items) => () => {
    const a = new Array(items.length);
    for (const k of Object.keys(items)) a[k] = items[k]();
    return a;
  }),
  map: fc.array(fc.tuple(tie('node'), tie('node')), { maxLength: 4 }).map((entries) => () => new Map(entries.map(([k, v]) => [k(), v()]))),
  set: fc.array(tie('node'), { maxLength: 4 }).map((items) => () => new Set(items.map((make) => make()))),
  error: fc
    .record({
      kind: fc.constantFrom(...ERRORS),
      message: fc.option(text, { nil: undefined }),
      stack: fc.option(text, { nil: undefined, freq: 4 }),
      cause: CAUSE_BEFORE_STACK ? fc.constant(undefined) : fc.option(tie('node'), { nil: undefined }),
    })
    .map(({ kind, message, stack, cause }) => () => {
      const e = message === undefined ? new globalThis[kind]() : new globalThis[kind](message);
      Object.defineProperty(e, 'stack', { value: stack, writable: true, configurable: true });
      if (cause) Object.defineProperty(e, 'cause', { value: cause(), writable: true, configurable: true });
      return e;
    }),
}));

/** Every object of a graph, depth first (the same walk the knots below index into). */
function objectsOf(root) {
  const seen = new Set();
  const visit = (v) => {
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (ArrayBuffer.isView(v)) return visit(v.buffer);
    if (v instanceof Map) for (const [k, value] of v) { visit(k); visit(value); }
    else if (v instanceof Set) for (const value of v) visit(value);
    else if (v instanceof Error) visit(Object.getOwnPropertyDescriptor(v, 'cause')?.value);
    else if (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype) for (const k of Object.keys(v)) visit(v[k]);
  };
  visit(root);
  return [...seen];
}

/**
 * Ties knots into a tree: each link makes a container also hold another object of the graph
 * (an ancestor makes a cycle, anything else a shared reference).
 */
function knot(root, links) {
  const all = objectsOf(root);
  const containers = all.filter((v) => Array.isArray(v) || v instanceof Map || v instanceof Set || (v instanceof Error && !CAUSE_BEFORE_STACK) || Object.getPrototypeOf(v) === Object.prototype);
  for (const [i, j, k] of links) {
    if (containers.length === 0) break;
    const c = containers[i % containers.length];
    const target = all[j % all.length];
    if (Array.isArray(c)) c.push(target);
    else if (c instanceof Map) c.set(k % 2 ? target : `ref${k % 3}`, target);
    else if (c instanceof Set) c.add(target);
    else if (c instanceof Error) Object.defineProperty(c, 'cause', { value: target, writable: true, configurable: true });
    else Object.defineProperty(c, `ref${k % 3}`, { value: target, writable: true, enumerable: true, configurable: true });
  }
  return root;
}

const value = fc
  .tuple(node, fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { maxLength: 3 }))
  .map(([make, links]) => recipe(() => knot(make(), links)));

/**
 * The program: reads the host's value (tool answer), builds the same value from source, compares
 * the two inside the sandbox, sends what it built through a tool and back, reports all of it as
 * tool arguments, and returns one of them as its result.
 */
const program = (source, returned) => `async () => {
  const graphDiff = ${graphDiff};
  const got = await t.get();
  const built = ${source};
  const inside = graphDiff(got, built);
  const echoed = await t.echo(built);
  await t.put(inside, got, built, echoed);
  return ${returned};
}`;

/** Values every property run starts with (each returned both ways), before the generated ones. */
const EXAMPLES = [
  // Long buffers: lengths and offsets of two and three varint bytes; views of every kind on one.
  () => {
    const b = new ArrayBuffer(70_000);
    fill(new Uint8Array(b), 7);
    const views = TYPED.map((name, i) => new globalThis[name](b, 65_536 + 8 * i, 1));
    return [b, ...views, new DataView(b, 69_999, 1), new Float64Array(b), new Uint8ClampedArray(b, 16_384, 200)];
  },
  // The scalar edge cases and one of each other kind.
  () => {
    // biome-ignore lint/suspicious/noSparseArray: a hole is one of the value kinds under test
    const sparse = [1, , 3];
    sparse[9] = -0;
    const key = { k: 1 };
    return [undefined, null, NaN, -0, Infinity, 2 ** 31, -(2n ** 100n), '\ud800x\udfff\u{1F600}\u00e9', '', new Date(NaN), new Date(-8.64e15),
      /a+b/dgimsy, /[\p{L}--[a-z]]/v, sparse, new Map([[key, key], [NaN, 'nan']]), new Set([key, 0]), Object(1n), Object(-0), Object('\udc00'), Object(false), new RangeError('r'), new URIError()];
  },
  // Cycles through an object, an array, a Map and a Set; where this Node can, through a cause.
  () => {
    const o = { name: 'o' };
    const a = [o];
    const m = new Map([[o, a]]);
    const s = new Set([m, a]);
    Object.assign(o, { self: o, a, m, s });
    a.push(a);
    if (CAUSE_BEFORE_STACK) return o;
    const self = new Error('self');
    Object.defineProperty(self, 'cause', { value: self, writable: true, configurable: true });
    o.errors = [new TypeError('t', { cause: o }), self];
    return o;
  },
];

describe('every value kind crosses in format 15 both ways (V8 15.2 writes 16 under a 15 header)', () => {
  let ex;
  beforeAll(() => {
    ex = new IsolateExecutor({ workers: 1 });
  });
  afterAll(async () => {
    await ex?.close();
  });

  /** Runs `value` through the sandbox; what each crossing delivered. */
  async function cross(value, returned = 'got') {
    const calls = {};
    const out = await ex.execute({
      code: program(toSource(value), returned),
      providers: [{ name: 't', tools: ['get', 'echo', 'put'] }],
      dispatch: ({ tool, args }) => {
        calls[tool] = args;
        if (tool === 'get') return value;
        if (tool === 'echo') return args[0];
        return null;
      },
    });
    return { out, calls };
  }

  /** Every way `value` crossed came out as `value`. */
  function expectSameEverywhere(value, { out, calls }, returned) {
    expect(out.error).toBeUndefined();
    const [inside, got, built, echoed] = calls.put;
    // host -> worker: the worker read the host's bytes as the value it builds itself.
    expect(inside, 'host -> worker (tool answer), compared inside the sandbox').toBeNull();
    expect(graphDiff(value, calls.echo[0]), 'worker-built -> host (tool argument)').toBeNull();
    expect(graphDiff(value, got), 'host -> worker -> host (tool argument)').toBeNull();
    expect(graphDiff(value, built), 'worker-built -> host (tool argument, second call)').toBeNull();
    expect(graphDiff(value, echoed), 'worker -> host -> worker -> host (tool argument)').toBeNull();
    expect(graphDiff(value, out.result), `result (${returned})`).toBeNull();
    // The bytes: what crossed serializes here exactly as this Node's own copy of the value does,
    // read back from its own bytes (not as the value itself: a copy's arrays come back holey and
    // are written sparse, its integers come back small and are written as such; nor as Node 26's
    // structuredClone, which hands a primitive back as it was).
    const own = serialize(deserialize(serialize(value)));
    for (const [what, v] of [['result', out.result], ['got', got], ['built', built], ['echoed', echoed]]) {
      expect(serialize(v).equals(own), `${what}: its bytes are those of this Node's own clone`).toBe(true);
    }
    // Node's deep equality judges the crossing as it judges its own clone (it is blind to identity,
    // calls two invalid Dates unequal on Node 20, and overflows on an Error that is its own cause).
    const judge = (v) => {
      try {
        return isDeepStrictEqual(v, value);
      } catch (e) {
        return e instanceof RangeError ? 'overflows' : e;
      }
    };
    expect(judge(out.result), 'isDeepStrictEqual(result, value)').toBe(judge(structuredClone(value)));
  }

  it('property: any value crosses host -> worker -> host and worker -> host unchanged', async () => {
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(value, fc.constantFrom('got', 'built'), async (r, returned) => {
        const v = r.make();
        expect(graphDiff(v, structuredClone(v)), "this Node's own structuredClone keeps the value (the arbitrary's contract)").toBeNull();
        expectSameEverywhere(v, await cross(v, returned), returned);
      }),
      {
        seed: SEED,
        numRuns: RUNS,
        examples: EXAMPLES.flatMap((make) => [[recipe(make), 'got'], [recipe(make), 'built']]),
        interruptAfterTimeLimit: BUDGET_MS,
        markInterruptAsFailure: true,
      },
    );
    console.log(`value-format property: ${RUNS} runs (seed ${SEED}) in ${Math.round(performance.now() - started)} ms under Node ${process.version}`);
  }, BUDGET_MS + 5_000);

  it("the worker's bytes reach this Node under the header ff 0f (format 15), and are the bytes this Node writes for the same value", async () => {
    // Long buffers: lengths and offsets of three varint bytes, the field format 16 widened.
    const source = toSource(EXAMPLES[0]());
    const seen = [];
    const readHeader = Deserializer.prototype.readHeader;
    Deserializer.prototype.readHeader = function recorded() {
      const read = readHeader.call(this);
      seen.push({ bytes: Buffer.from(this.buffer), version: this.getWireFormatVersion() });
      return read;
    };
    let out;
    try {
      out = await ex.execute({
        code: `async () => { const v = ${source}; await t.put('format-15-argument', v); return ['format-15-result', v] }`,
        providers: [{ name: 't', tools: ['put'] }],
        dispatch: () => null,
      });
    } finally {
      Deserializer.prototype.readHeader = readHeader;
    }
    expect(out.error).toBeUndefined();
    // biome-ignore lint/security/noGlobalEval: the same value, built by this Node's V8 (indirect eval)
    const here = globalThis.eval(source);
    for (const [marker, same] of [['format-15-argument', ['format-15-argument', here]], ['format-15-result', ['format-15-result', here]]]) {
      const crossed = seen.filter((s) => s.bytes.includes(marker));
      expect(crossed, marker).toHaveLength(1);
      expect([...crossed[0].bytes.subarray(0, 2)], marker).toEqual([0xff, 0x0f]);
      expect(crossed[0].version, marker).toBe(15);
      expect(crossed[0].bytes.equals(serialize(same)), `${marker}: the worker's bytes are this Node's`).toBe(true);
    }
  });

  it('the sandbox has no immutable ArrayBuffers (the tag V8 15.2 adds for them is behind a flag that is off)', async () => {
    const out = await ex.execute({
      code: `async () => ['transferToImmutable', 'sliceToImmutable', 'immutable'].filter((k) => k in ArrayBuffer.prototype)`,
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([]);
  });

  it('resizable ArrayBuffers and length-tracking views cross from the host and back (the sandbox cannot make them)', async () => {
    const make = () => {
      const rab = new ArrayBuffer(20_000, { maxByteLength: 70_000 });
      fill(new Uint8Array(rab), 5);
      return { rab, tracking: new Uint8Array(rab, 16_384), fixed: new Float32Array(rab, 4, 2), view: new DataView(rab, 1) };
    };
    const value = make();
    let put;
    const out = await ex.execute({
      code: 'async () => { const got = await t.get(); await t.put(got); return got }',
      providers: [{ name: 't', tools: ['get', 'put'] }],
      dispatch: ({ tool, args }) => (tool === 'get' ? value : void (put = args)),
    });
    expect(out.error).toBeUndefined();
    for (const v of [put[0], out.result]) {
      expect(graphDiff(value, v)).toBeNull();
      expect(serialize(v).equals(serialize(deserialize(serialize(value))))).toBe(true);
      v.rab.resize(70_000); // the views that tracked the length still do
      expect([v.tracking.length, v.fixed.length, v.view.byteLength]).toEqual([70_000 - 16_384, 2, 69_999]);
    }
  });

  it(`Float16Array: ${typeof Float16Array === 'function' ? 'crosses both ways on this Node' : 'this Node cannot read one, so one from the sandbox is refused, never misread'}`, async () => {
    // The sandbox's V8 has Float16Array; Node 20 and 22 have none (their V8 does not know the
    // view's subtag), Node 24 and 26 do. So it is left out of the property above.
    const source = 'new Float16Array([1.5, -0, NaN, 65504, -Infinity])';
    if (typeof Float16Array === 'function') {
      // biome-ignore lint/security/noGlobalEval: the value built by this Node's V8 (indirect eval)
      const value = globalThis.eval(source);
      const { out, calls } = await cross(value);
      expectSameEverywhere(value, { out, calls }, 'got');
      return;
    }
    const result = await ex.execute({ code: `async () => ${source}` });
    expect(result.error?.code).toBe('RESULT_NOT_CLONEABLE');
    const argument = await ex.execute({
      code: `async () => { try { await t.put(${source}); return 'sent' } catch (e) { return 'rejected: ' + e.message } }`,
      providers: [{ name: 't', tools: ['put'] }],
      dispatch: () => 'not reached',
    });
    expect(argument.result).toMatch(/^rejected: /);
  });

  it.runIf(CAUSE_BEFORE_STACK)("Node 20, a known gap (not a format 16 matter): an Error with a cause from this Node is refused in the sandbox, never misread; one from the sandbox reads here unless it is its own cause", async () => {
    const answered = await ex.execute({
      code: `async () => { try { const e = await t.get(); return ['read', e.cause] } catch (e) { return ['rejected', e.message] } }`,
      providers: [{ name: 't', tools: ['get'] }],
      dispatch: () => new TypeError('m', { cause: 1 }),
    });
    expect(answered.result[0]).toBe('rejected');
    expect(answered.result[1]).toMatch(/^The tool's answer could not be read/);
    const made = await ex.execute({ code: 'async () => new TypeError("m", { cause: { x: 1n } })' });
    expect(made.error).toBeUndefined();
    expect(made.result).toBeInstanceOf(TypeError);
    expect(made.result.cause).toEqual({ x: 1n });
    // This Node's V8 cannot read a cause that refers back to its Error (nor clone one itself).
    const own = await ex.execute({ code: 'async () => { const e = new Error("self"); e.cause = e; return e }' });
    expect(own.error?.code).toBe('RESULT_NOT_CLONEABLE');
  });
});

// The JavaScript codec (lib/value-codec.js) writes and reads the format where the host has no
// v8.Serializer (Bun). Held to this Node's V8 both ways on every value kind: what it writes, V8
// reads as the value; what V8 writes, it reads as the value. (Its bytes may differ from V8's
// where V8's own choice rests on engine internals: a dense or a sparse array, a small integer or
// a double; both read the same.) scripts/test.sh also runs this whole file with
// CODEMODE_VALUE_CODEC=js, which puts the executor itself on the codec.
describe('the JavaScript codec matches V8 on every value kind', () => {
  const codec = require('../lib/value-codec.js');
  const nodeWrite = (v) => {
    const s = new Serializer();
    s.writeHeader();
    s.writeValue(v);
    return s.releaseBuffer();
  };
  const nodeRead = (bytes) => {
    const d = new Deserializer(bytes);
    d.readHeader();
    return d.readValue();
  };

  it('property: V8 reads what the codec writes, and the codec reads what V8 writes, as the value', () => {
    fc.assert(
      fc.property(value, (r) => {
        const v = r.make();
        expect(graphDiff(v, nodeRead(codec.encode(v))), 'codec -> V8').toBeNull();
        expect(graphDiff(v, codec.decode(nodeWrite(v))), 'V8 -> codec').toBeNull();
        expect(graphDiff(v, codec.decode(codec.encode(v))), 'codec -> codec').toBeNull();
      }),
      { seed: SEED, numRuns: RUNS * 5, examples: EXAMPLES.map((make) => [recipe(make)]) },
    );
  });

  it("refuses what V8 refuses, with V8's text", () => {
    // biome-ignore lint/complexity/noArguments: an arguments object is one of the kinds V8 refuses
    const argumentsOf = function () { return arguments; };
    const fn = function named() {};
    const kinds = [fn, () => 1, Symbol('s'), Promise.resolve(1), new WeakMap(), new WeakSet(), { nested: [() => 1] }, new SharedArrayBuffer(4), Object(Symbol('o')),
      new Proxy({}, {}), new Proxy([], {}), new WeakRef({}), new FinalizationRegistry(() => {}), argumentsOf(1), [][Symbol.iterator](), new Map().entries(), ''[Symbol.iterator](),
      (function* () {})(), (async function* () {})(), globalThis, new Intl.Collator()];
    for (const v of kinds) {
      let ours;
      let v8s;
      try {
        codec.encode(v);
      } catch (e) {
        ours = e.message;
      }
      try {
        nodeWrite(v);
      } catch (e) {
        v8s = e.message;
      }
      expect(v8s, `V8 refuses ${String(v?.constructor?.name ?? typeof v)}`).toMatch(/could not be cloned/);
      // V8 11 (Node 20) named an iterator #<Object>; 12 and later, as the codec does, by its tag.
      if (v8s === '#<Object> could not be cloned.' && /Iterator\]$/.test(Object.prototype.toString.call(v))) expect(ours).toBe(`${Object.prototype.toString.call(v)} could not be cloned.`);
      else expect(ours).toBe(v8s);
    }
  });

  it('refuses bytes it cannot read with a typed reason, never a wrong value', () => {
    const good = nodeWrite({ a: [1, 'x', new Map([[1, 2]])] });
    for (let cut = 2; cut < good.length; cut++) expect(() => codec.decode(good.subarray(0, cut))).toThrow(/Unable to deserialize cloned data/);
    expect(() => codec.decode(Buffer.from([0xff, 16, 0x5f]))).toThrow(/format 16 is newer than 15/);
    expect(() => codec.decode(Buffer.from([0xff, 15, 0x5e, 0x05]))).toThrow(/reference to object 5/);
    expect(() => codec.decode(Buffer.from([0xff, 15, 0x5c]))).toThrow(/tag 0x5c/);
    // A length past the data allocates nothing before it is refused (a buffer of 2^40 bytes).
    expect(() => codec.decode(Buffer.from([0xff, 15, 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]))).toThrow(/the data ends/);
  });
});
