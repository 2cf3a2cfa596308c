// Byte helpers the body-carrying interfaces share (Blob, the Body mixin). Typed arrays through
// primordials.js's captured getters and `set`, never a species constructor (primordials.js says
// why).
(function (load) {
'use strict';
const { ArrayBufferCtor, ArrayBufferIsView, Uint8ArrayCtor, abByteLength, call, copyBytes, taLength, taSet, viewBytes } = load('primordials.js');

// A copy of the bytes of an ArrayBuffer or a view, or null for anything else.
function bytesOf(chunk) {
  if (chunk instanceof ArrayBufferCtor) return copyBytes(new Uint8ArrayCtor(chunk, 0, call(abByteLength, chunk)));
  if (ArrayBufferIsView(chunk)) return copyBytes(viewBytes(chunk));
  return null;
}
function concat(chunks) {
  let n = 0;
  for (let i = 0; i < chunks.length; i++) n += call(taLength, chunks[i]);
  const out = new Uint8ArrayCtor(n);
  let at = 0;
  for (let i = 0; i < chunks.length; i++) {
    call(taSet, out, chunks[i], at);
    at += call(taLength, chunks[i]);
  }
  return out;
}

return { bytesOf, concat };
})
