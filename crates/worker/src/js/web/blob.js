// Blob (File API): bytes and a type.
import { bytesOf, concat } from 'runtime:web/bytes.js';
import { utf8Decoder, utf8Encoder } from 'runtime:web/encoding.js';
import { streamOf } from 'runtime:web/streams.js';
import { MathMax, MathMin, MathTrunc, PromiseResolve, StringCtor, SymbolToStringTag } from 'runtime:primordials.js';

// Module-private access for the Body mixin; assigned in the static block.
export let blobBytes; // (b): the bytes a Blob holds (not a copy)

export class Blob {
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
