// Values as JSON, with every structured-clone type tagged: outcomes, so the two executors'
// results can be compared exactly (key presence included), and a case's canned answers, so they
// travel to the workerd host worker as data and come back out as the same values on both sides.
// Runs in Node and inside workerd: no imports.
export function encode(value, seen = new Set()) {
  if (value === undefined) return { $: 'undefined' };
  if (typeof value === 'number') {
    if (Number.isNaN(value) || !Number.isFinite(value) || Object.is(value, -0)) return { $: 'number', v: Object.is(value, -0) ? '-0' : String(value) };
    return value;
  }
  if (typeof value === 'bigint') return { $: 'bigint', v: String(value) };
  if (typeof value === 'function') return { $: 'function' };
  if (typeof value === 'symbol') return { $: 'symbol' };
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return { $: 'cycle' };
  seen.add(value);
  try {
    if (value instanceof Date) return { $: 'date', v: Number.isNaN(value.getTime()) ? 'invalid' : value.toISOString() };
    if (value instanceof RegExp) return { $: 'regexp', source: value.source, flags: value.flags };
    if (value instanceof Map) return { $: 'map', v: [...value].map(([k, v]) => [encode(k, seen), encode(v, seen)]) };
    if (value instanceof Set) return { $: 'set', v: [...value].map((v) => encode(v, seen)) };
    if (value instanceof ArrayBuffer) return { $: 'ArrayBuffer', v: [...new Uint8Array(value)] };
    if (ArrayBuffer.isView(value)) return { $: value.constructor.name, v: [...new Uint8Array(value.buffer, value.byteOffset, value.byteLength)] };
    if (value instanceof Error) return { $: 'error', name: value.name, message: value.message };
    if (Array.isArray(value)) {
      const holes = [];
      const v = [];
      for (let i = 0; i < value.length; i++) {
        if (!(i in value)) holes.push(i);
        v.push(i in value ? encode(value[i], seen) : null);
      }
      return holes.length ? { $: 'array', v, holes } : v;
    }
    const out = {};
    for (const k of Object.keys(value)) out[k] = encode(value[k], seen);
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null ? { $: 'object', v: out } : { $: 'instance', v: out };
  } finally {
    seen.delete(value);
  }
}

/** An ExecuteResult: which keys it has, and each value tagged. */
export function encodeOutcome(r) {
  return { keys: Object.keys(r), result: encode(r.result), error: r.error === undefined ? { $: 'undefined' } : r.error, logs: r.logs === undefined ? { $: 'undefined' } : r.logs };
}

/**
 * The value `encode` tagged, rebuilt (a fresh copy on every call). The tags `encode` gives to
 * what cannot be rebuilt (function, symbol, cycle, instance) are refused: `answerable` says so
 * before a case runs.
 */
export function decode(e) {
  if (e === null || typeof e !== 'object') return e;
  if (Array.isArray(e)) return e.map(decode);
  switch (e.$) {
    case 'undefined': return undefined;
    case 'number': return Number(e.v === '-0' ? '-0' : e.v);
    case 'bigint': return BigInt(e.v);
    case 'date': return new Date(e.v === 'invalid' ? NaN : e.v);
    case 'regexp': return new RegExp(e.source, e.flags);
    case 'map': return new Map(e.v.map(([k, v]) => [decode(k), decode(v)]));
    case 'set': return new Set(e.v.map(decode));
    case 'ArrayBuffer': return new Uint8Array(e.v).buffer;
    case 'error': {
      const Ctor = ERRORS[e.name] ?? Error;
      const err = new Ctor(e.message);
      if (err.name !== e.name) err.name = e.name;
      return err;
    }
    case 'array': {
      const out = e.v.map(decode);
      for (const i of e.holes) delete out[i];
      return out;
    }
    case 'object': {
      const out = {};
      for (const k of Object.keys(e.v)) out[k] = decode(e.v[k]);
      return out;
    }
    default: {
      const View = VIEWS[e.$];
      if (View) {
        const bytes = new Uint8Array(e.v);
        return new View(bytes.buffer, 0, bytes.byteLength / View.BYTES_PER_ELEMENT);
      }
      throw new Error(`testbed: cannot rebuild a value tagged ${JSON.stringify(e.$)}`);
    }
  }
}

const ERRORS = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
const VIEWS = Object.fromEntries(
  ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array', 'DataView']
    .filter((n) => typeof globalThis[n] === 'function')
    .map((n) => [n, globalThis[n]]),
);

/** Why `value` cannot be a canned answer (a function, symbol, cycle or class instance), or null. */
export function unanswerable(value) {
  const bad = (e) => {
    if (e === null || typeof e !== 'object') return null;
    if (Array.isArray(e)) {
      for (const x of e) { const r = bad(x); if (r) return r; }
      return null;
    }
    if (['function', 'symbol', 'cycle', 'instance'].includes(e.$)) return `a ${e.$ === 'instance' ? 'class instance' : e.$} is not data`;
    if (e.$ === 'object') return bad(Object.values(e.v));
    if (e.$ === 'map' || e.$ === 'set' || e.$ === 'array') return bad(e.v);
    return null;
  };
  return bad(encode(value));
}
