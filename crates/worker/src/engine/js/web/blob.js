// Blob (File API): bytes and a type.
(function (load) {
'use strict';
const { bytesOf, concat } = load('web/bytes.js');
const { utf8Decoder, utf8Encoder } = load('web/encoding.js');
const { streamOf } = load('web/streams.js');
const { MathMax, MathMin, MathTrunc, PromiseResolve, StringCtor, SymbolToStringTag } = load('primordials.js');

// For the Body mixin (exported to runtime files, never to programs); assigned in the static block.
let blobBytes; // (b): the bytes a Blob holds (not a copy)

class Blob {
  #bytes;
  #type;
  constructor(parts = [], options = {}) {
    const chunks = [];
    for (const part of parts) {
      if (part instanceof Blob) chunks.push(part.#bytes);
      else chunks.push(bytesOf(part) ?? utf8Encoder.encode(StringCtor(part)));
    }
    this.#bytes = concat(chunks);
    const type = StringCtor(options?.type ?? '');
    this.#type = /[^\x20-\x7e]/.test(type) ? '' : type.toLowerCase();
  }
  static {
    blobBytes = (b) => b.#bytes;
  }
  get size() { return this.#bytes.length; }
  get type() { return this.#type; }
  slice(start = 0, end = this.#bytes.length, type = '') {
    const size = this.#bytes.length;
    const clamp = (i) => (i < 0 ? MathMax(size + i, 0) : MathMin(i, size));
    const b = new Blob([], { type });
    b.#bytes = this.#bytes.slice(clamp(MathTrunc(start) || 0), clamp(MathTrunc(end) || 0));
    return b;
  }
  text() { return PromiseResolve(utf8Decoder.decode(this.#bytes)); }
  arrayBuffer() { return PromiseResolve(this.#bytes.slice().buffer); }
  bytes() { return PromiseResolve(this.#bytes.slice()); }
  stream() { return streamOf(this.#bytes.slice()); }
  get [SymbolToStringTag]() { return 'Blob'; }
}

return { blobBytes, Blob };
})
