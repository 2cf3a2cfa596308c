// crypto.getRandomValues, crypto.randomUUID, crypto.subtle.digest (Web Crypto; the digests and
// the randomness are in Rust, natives/web.rs). Built-in methods through primordials.js's
// captures, never a species constructor (primordials.js says why).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { DOMException } = load('web/dom_exception.js');
const {
  ArrayBufferCtor, ArrayBufferIsView, INTEGER_ARRAYS, MapCtor, PromiseReject, PromiseResolve, StringCtor, TypeErrorCtor,
  Uint8ArrayCtor, abByteLength, call, copyBytes, mapGet, numberToString, stringSlice, stringToLowerCase, taBuffer,
  taByteLength, viewBytes,
} = load('primordials.js');

function dataBytes(data, what) {
  if (data instanceof ArrayBufferCtor) return copyBytes(new Uint8ArrayCtor(data, 0, call(abByteLength, data)));
  if (ArrayBufferIsView(data)) return copyBytes(viewBytes(data));
  throw new TypeErrorCtor(`Failed to execute '${what}' on 'SubtleCrypto': parameter 2 is not of type '(ArrayBuffer or ArrayBufferView)'.`);
}
const DIGESTS = new MapCtor([['sha-1', ['SHA-1', 20]], ['sha-256', ['SHA-256', 32]], ['sha-384', ['SHA-384', 48]], ['sha-512', ['SHA-512', 64]]]);
class SubtleCrypto {
  digest(algorithm, data) {
    try {
      const name = typeof algorithm === 'string' ? algorithm : algorithm?.name;
      const known = call(mapGet, DIGESTS, call(stringToLowerCase, StringCtor(name)));
      if (known === undefined) {
        throw new DOMException(`Unrecognized algorithm name: ${name}. Supported digests: SHA-1, SHA-256, SHA-384, SHA-512.`, 'NotSupportedError');
      }
      const out = new Uint8ArrayCtor(known[1]);
      natives.digest(known[0], dataBytes(data, 'digest'), out);
      return PromiseResolve(call(taBuffer, out));
    } catch (e) {
      return PromiseReject(e);
    }
  }
}
class Crypto {
  #subtle = new SubtleCrypto();
  get subtle() { return this.#subtle; }
  getRandomValues(array) {
    let integer = false;
    for (let i = 0; i < INTEGER_ARRAYS.length && !integer; i++) integer = array instanceof INTEGER_ARRAYS[i];
    if (!integer) {
      throw new DOMException("Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type.", 'TypeMismatchError');
    }
    const byteLength = call(taByteLength, array);
    if (byteLength > 65536) {
      throw new DOMException(`Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${byteLength}) exceeds the number of bytes of entropy available via this API (65536).`, 'QuotaExceededError');
    }
    natives.randomFill(viewBytes(array));
    return array;
  }
  randomUUID() {
    const b = new Uint8ArrayCtor(16);
    natives.randomFill(b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = '';
    for (let i = 0; i < 16; i++) h += (b[i] < 16 ? '0' : '') + call(numberToString, b[i], 16);
    const part = (from, to) => call(stringSlice, h, from, to);
    return `${part(0, 8)}-${part(8, 12)}-${part(12, 16)}-${part(16, 20)}-${part(20, 32)}`;
  }
}

return { SubtleCrypto, Crypto };
})
