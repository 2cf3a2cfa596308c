// Outcomes as JSON, with every structured-clone type tagged, so the two executors' results can
// be compared exactly (key presence included).
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
