// @ts-check
'use strict';
// The reference's tool-value codec: JSON, with Uint8Array / ArrayBuffer / other views carried as
// {"__codemode_binary_v1__": kind, "data": base64}. The same source runs in the sandbox (see
// SANDBOX_CODEC) and here, so both sides agree.

const TAG = '__codemode_binary_v1__';

/** @param {unknown} value */
function stringify(value) {
  return JSON.stringify(value, /** @this {Record<string, unknown>} @param {string} key @param {unknown} v */ function replacer(key, v) {
    const raw = this[key];
    if (raw instanceof ArrayBuffer) return { [TAG]: 'ArrayBuffer', data: Buffer.from(raw).toString('base64') };
    if (ArrayBuffer.isView(raw)) {
      const kind = raw instanceof Uint8Array && raw.constructor === Uint8Array ? 'Uint8Array' : 'ArrayBufferView';
      return { [TAG]: kind, data: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') };
    }
    return v;
  });
}

/** @param {string} text */
function parse(text) {
  return JSON.parse(text, (_key, v) => {
    if (v && typeof v === 'object' && typeof v[TAG] === 'string' && typeof v.data === 'string') {
      const bytes = Buffer.from(v.data, 'base64');
      const copy = new Uint8Array(bytes.length);
      copy.set(bytes);
      return v[TAG] === 'ArrayBuffer' ? copy.buffer : copy;
    }
    return v;
  });
}

// The sandbox half, as source: no Buffer there, so base64 goes through btoa/atob.
const SANDBOX_CODEC = `
  const __cmTag = '${TAG}';
  const __cmToB64 = (u8) => { let s = ''; for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000)); return btoa(s); };
  const __cmFromB64 = (b64) => { const s = atob(b64); const u8 = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) u8[i] = s.charCodeAt(i); return u8; };
  const __cmStringify = (value) => JSON.stringify(value, function (key, v) {
    const raw = this[key];
    if (raw instanceof ArrayBuffer) return { [__cmTag]: 'ArrayBuffer', data: __cmToB64(new Uint8Array(raw)) };
    if (ArrayBuffer.isView(raw)) return { [__cmTag]: raw instanceof Uint8Array && raw.constructor === Uint8Array ? 'Uint8Array' : 'ArrayBufferView', data: __cmToB64(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength)) };
    return v;
  });
  const __cmParse = (text) => text === undefined ? undefined : JSON.parse(text, (key, v) => {
    if (v && typeof v === 'object' && typeof v[__cmTag] === 'string' && typeof v.data === 'string') {
      const u8 = __cmFromB64(v.data);
      return v[__cmTag] === 'ArrayBuffer' ? u8.buffer : u8;
    }
    return v;
  });
`;

module.exports = { stringify, parse, SANDBOX_CODEC };
