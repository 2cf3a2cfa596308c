// Blob (File API): bytes and a type. Built-in methods through primordials.js's captures, never a
// species constructor (primordials.js says why).
(function (load) {
'use strict';
const { bytesOf, concat } = load('web/bytes.js');
const { utf8Decode, utf8Encode } = load('web/encoding.js');
const { streamOf } = load('web/streams.js');
const {
  MathMax, MathMin, MathTrunc, PromiseResolve, StringCtor, SymbolToStringTag, arrayPush, call, copyBytes, regexpExec,
  stringToLowerCase, taBuffer, taLength,
} = load('primordials.js');

const NOT_PRINTABLE = /[^\x20-\x7e]/;

// For the Body mixin (exported to runtime files, never to programs); assigned in the static block.
let blobBytes; // (b): the bytes a Blob holds (not a copy)
let blobType; // (b): its type
let blobFrom; // (bytes, type): a new Blob holding `bytes` (not a copy), as new Blob([bytes], { type })

class Blob {
  #bytes;
  #type;
  constructor(parts = undefined, options = {}) {
    const chunks = [];
    // A sequence, read through its own iterator, as WebIDL says.
    if (parts !== undefined) {
      for (const part of parts) {
        if (part instanceof Blob) call(arrayPush, chunks, part.#bytes);
        else call(arrayPush, chunks, bytesOf(part) ?? utf8Encode(StringCtor(part)));
      }
    }
    this.#bytes = concat(chunks);
    const type = StringCtor(options?.type ?? '');
    this.#type = call(regexpExec, NOT_PRINTABLE, type) !== null ? '' : call(stringToLowerCase, type);
  }
  static {
    blobBytes = (b) => b.#bytes;
    blobType = (b) => b.#type;
    blobFrom = (bytes, type) => {
      const b = new Blob(undefined, { type });
      b.#bytes = bytes;
      return b;
    };
  }
  get size() { return call(taLength, this.#bytes); }
  get type() { return this.#type; }
  slice(start = 0, end = call(taLength, this.#bytes), type = '') {
    const size = call(taLength, this.#bytes);
    const clamp = (i) => (i < 0 ? MathMax(size + i, 0) : MathMin(i, size));
    const b = new Blob(undefined, { type });
    const from = clamp(MathTrunc(start) || 0);
    b.#bytes = copyBytes(this.#bytes, from, MathMax(from, clamp(MathTrunc(end) || 0)));
    return b;
  }
  text() { return PromiseResolve(utf8Decode(this.#bytes)); }
  arrayBuffer() { return PromiseResolve(call(taBuffer, copyBytes(this.#bytes))); }
  bytes() { return PromiseResolve(copyBytes(this.#bytes)); }
  stream() { return streamOf(copyBytes(this.#bytes)); }
  get [SymbolToStringTag]() { return 'Blob'; }
}

return { blobBytes, blobFrom, blobType, Blob };
})
