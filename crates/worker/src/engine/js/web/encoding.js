// TextEncoder, TextDecoder (Encoding Standard; the codecs are encoding_rs in Rust, natives/web.rs).
// Typed arrays through primordials.js's captured getters and `set`, never a species constructor
// (primordials.js says why).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const {
  ArrayBufferCtor, ArrayBufferIsView, BooleanCtor, RangeErrorCtor, StringCtor, TypeErrorCtor, Uint8ArrayCtor, abByteLength,
  call, copyBytes, stringTrim, taLength, taSet, viewBytes,
} = load('primordials.js');

// The runtime's own UTF-8 coding (Blob, the Body mixin), as TextEncoder's encode and a new
// TextDecoder's decode do, without their prototypes, which a program may change.
function utf8Encode(s) {
  // Allocated here, not in Rust, so a buffer over the memory budget is an ordinary RangeError.
  const out = new Uint8ArrayCtor(natives.utf8Length(s));
  natives.utf8Write(s, out);
  return out;
}
function utf8Decode(bytes) {
  return natives.decode('utf-8', bytes, false, true);
}

class TextEncoder {
  get encoding() { return 'utf-8'; }
  encode(input = '') {
    return utf8Encode(StringCtor(input));
  }
  encodeInto(source, destination) {
    if (!(destination instanceof Uint8ArrayCtor)) {
      throw new TypeErrorCtor("Failed to execute 'encodeInto' on 'TextEncoder': parameter 2 is not of type 'Uint8Array'.");
    }
    const counts = natives.utf8EncodeInto(StringCtor(source), destination);
    return { read: counts[0], written: counts[1] };
  }
}

// Bytes at the end of `bytes` that begin a sequence the next chunk may complete, for
// streaming decodes. For UTF-8 only a valid prefix waits (the Encoding Standard's decoder
// emits U+FFFD for an invalid one at once): the second byte's range depends on the lead.
function utf8PrefixWaits(bytes, start) {
  const lead = bytes[start];
  const need = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  const have = call(taLength, bytes) - start;
  if (need === 0 || have >= need) return false;
  for (let i = 1; i < have; i++) {
    const b = bytes[start + i];
    let lo = 0x80, hi = 0xbf;
    if (i === 1) {
      if (lead === 0xe0) lo = 0xa0;
      else if (lead === 0xed) hi = 0x9f;
      else if (lead === 0xf0) lo = 0x90;
      else if (lead === 0xf4) hi = 0x8f;
    }
    if (b < lo || b > hi) return false;
  }
  return true;
}
function pendingTail(encoding, bytes) {
  const n = call(taLength, bytes);
  if (encoding === 'utf-8') {
    for (let back = 1; back <= 3 && back <= n; back++) {
      if ((bytes[n - back] & 0xc0) === 0x80) continue;
      return utf8PrefixWaits(bytes, n - back) ? back : 0;
    }
    return 0;
  }
  if (encoding === 'utf-16le' || encoding === 'utf-16be') {
    let tail = n % 2;
    if (n - tail >= 2) {
      const i = n - tail - 2;
      const unit = encoding === 'utf-16le' ? bytes[i] | (bytes[i + 1] << 8) : (bytes[i] << 8) | bytes[i + 1];
      if (unit >= 0xd800 && unit <= 0xdbff) tail += 2; // a lead surrogate waits for its pair
    }
    return tail;
  }
  return 0;
}

class TextDecoder {
  #encoding; #fatal; #ignoreBOM; #pending = null; #bomSeen = false;
  constructor(label = 'utf-8', options = {}) {
    const encoding = natives.encodingFor(call(stringTrim, StringCtor(label)));
    if (encoding === null || encoding === 'replacement') {
      throw new RangeErrorCtor(`Failed to construct 'TextDecoder': The encoding label provided ('${label}') is invalid.`);
    }
    this.#encoding = encoding;
    this.#fatal = BooleanCtor(options?.fatal);
    this.#ignoreBOM = BooleanCtor(options?.ignoreBOM);
  }
  get encoding() { return this.#encoding; }
  get fatal() { return this.#fatal; }
  get ignoreBOM() { return this.#ignoreBOM; }
  decode(input, options = {}) {
    let bytes;
    if (input === undefined) bytes = new Uint8ArrayCtor(0);
    else if (input instanceof ArrayBufferCtor) bytes = new Uint8ArrayCtor(input, 0, call(abByteLength, input));
    else if (ArrayBufferIsView(input)) bytes = viewBytes(input);
    else throw new TypeErrorCtor("Failed to execute 'decode' on 'TextDecoder': The provided value is not of type '(ArrayBuffer or ArrayBufferView)'.");
    if (this.#pending !== null) {
      const pending = call(taLength, this.#pending);
      const joined = new Uint8ArrayCtor(pending + call(taLength, bytes));
      call(taSet, joined, this.#pending);
      call(taSet, joined, bytes, pending);
      bytes = joined;
      this.#pending = null;
    }
    const stream = BooleanCtor(options?.stream);
    if (stream) {
      const tail = pendingTail(this.#encoding, bytes);
      if (tail > 0) {
        const n = call(taLength, bytes);
        this.#pending = copyBytes(bytes, n - tail);
        bytes = viewBytes(bytes, 0, n - tail);
      }
    }
    // The BOM is looked for only at the start of the stream.
    const stripBOM = !this.#ignoreBOM && !this.#bomSeen;
    if (call(taLength, bytes) > 0) this.#bomSeen = true;
    const text = natives.decode(this.#encoding, bytes, this.#fatal, stripBOM);
    if (text === null) {
      this.#bomSeen = false;
      this.#pending = null;
      throw new TypeErrorCtor("Failed to execute 'decode' on 'TextDecoder': The encoded data was not valid.");
    }
    if (!stream) this.#bomSeen = false;
    return text;
  }
}

return { TextEncoder, TextDecoder, utf8Decode, utf8Encode };
})
