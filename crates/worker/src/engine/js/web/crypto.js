// crypto.getRandomValues, crypto.randomUUID, crypto.subtle.digest (Web Crypto; the digests and
// the randomness are in Rust, natives/web.rs).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { DOMException } = load('web/dom_exception.js');
const {
  ArrayBufferCtor, ArrayBufferIsView, INTEGER_ARRAYS, MapCtor, PromiseReject, PromiseResolve, StringCtor, TypeErrorCtor,
  Uint8ArrayCtor,
} = load('primordials.js');

function copyBytes(data, what) {
  if (data instanceof ArrayBufferCtor) return new Uint8ArrayCtor(data.slice(0));
  if (ArrayBufferIsView(data)) return new Uint8ArrayCtor(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  throw new TypeErrorCtor(`Failed to execute '${what}' on 'SubtleCrypto': parameter 2 is not of type '(ArrayBuffer or ArrayBufferView)'.`);
}
const DIGESTS = new MapCtor([['sha-1', ['SHA-1', 20]], ['sha-256', ['SHA-256', 32]], ['sha-384', ['SHA-384', 48]], ['sha-512', ['SHA-512', 64]]]);
class SubtleCrypto {
  digest(algorithm, data) {
    try {
      const name = typeof algorithm === 'string' ? algorithm : algorithm?.name;
      const known = DIGESTS.get(StringCtor(name).toLowerCase());
      if (known === undefined) {
        throw new DOMException(`Unrecognized algorithm name: ${name}. Supported digests: SHA-1, SHA-256, SHA-384, SHA-512.`, 'NotSupportedError');
      }
      const out = new Uint8ArrayCtor(known[1]);
      natives.digest(known[0], copyBytes(data, 'digest'), out);
      return PromiseResolve(out.buffer);
    } catch (e) {
      return PromiseReject(e);
    }
  }
}
class Crypto {
  #subtle = new SubtleCrypto();
  get subtle() { return this.#subtle; }
  getRandomValues(array) {
    if (!INTEGER_ARRAYS.some((C) => array instanceof C)) {
      throw new DOMException("Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type.", 'TypeMismatchError');
    }
    if (array.byteLength > 65536) {
      throw new DOMException(`Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536).`, 'QuotaExceededError');
    }
    natives.randomFill(new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }
  randomUUID() {
    const b = new Uint8ArrayCtor(16);
    natives.randomFill(b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = [...b].map((x) => (x < 16 ? '0' : '') + x.toString(16)).join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}

return { SubtleCrypto, Crypto };
})
