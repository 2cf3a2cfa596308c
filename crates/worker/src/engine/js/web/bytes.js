// Byte helpers the body-carrying interfaces share (Blob, the Body mixin).
(function (load) {
'use strict';
const { ArrayBufferCtor, ArrayBufferIsView, Uint8ArrayCtor } = load('primordials.js');

// A copy of the bytes of an ArrayBuffer or a view, or null for anything else.
function bytesOf(chunk) {
  if (chunk instanceof ArrayBufferCtor) return new Uint8ArrayCtor(chunk.slice(0));
  if (ArrayBufferIsView(chunk)) return new Uint8ArrayCtor(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength));
  return null;
}
function concat(chunks) {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8ArrayCtor(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

return { bytesOf, concat };
})
