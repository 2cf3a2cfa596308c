// The Body mixin (Fetch Standard) Request and Response share: a body is bytes, a stream, or
// null; `body` turns bytes into a stream on demand; each reader method consumes it once.
(function (load) {
'use strict';
const { blobBytes, Blob } = load('web/blob.js');
const { bytesOf, concat } = load('web/bytes.js');
const { utf8Decoder, utf8Encoder } = load('web/encoding.js');
const { ReadableStream, streamOf } = load('web/streams.js');
const { URLSearchParams } = load('web/url.js');
const {
  JSONParse, ObjectDefineProperty, PromiseReject, PromiseResolve, ReflectGetOwnPropertyDescriptor, ReflectOwnKeys,
  StringCtor, TypeErrorCtor, Uint8ArrayCtor, WeakMapCtor,
} = load('primordials.js');

// Reads a whole stream into bytes.
async function drain(stream) {
  const reader = stream.getReader();
  const chunks = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const bytes = typeof value === 'string' ? utf8Encoder.encode(value) : bytesOf(value);
    if (bytes === null) throw new TypeErrorCtor('A body stream chunk is not a Uint8Array.');
    chunks.push(bytes);
  }
  reader.releaseLock();
  return concat(chunks);
}

// Extracts a body: [bytes or a stream, the content type it implies].
function extractBody(body) {
  if (body === null || body === undefined) return [null, null];
  if (typeof body === 'string') return [utf8Encoder.encode(body), 'text/plain;charset=UTF-8'];
  if (body instanceof URLSearchParams) return [utf8Encoder.encode(body.toString()), 'application/x-www-form-urlencoded;charset=UTF-8'];
  if (body instanceof Blob) return [blobBytes(body).slice(), body.type || null];
  if (body instanceof ReadableStream) return [body, null];
  const bytes = bytesOf(body);
  if (bytes !== null) return [bytes, null];
  return [utf8Encoder.encode(StringCtor(body)), 'text/plain;charset=UTF-8'];
}

// The Body mixin over a private slot { source: Uint8Array | ReadableStream | null, used }.
const bodies = new WeakMapCtor();

// Gives a new Request or Response its body (bytes, a stream, or null).
function initBody(self, source) {
  bodies.set(self, { source, used: false });
}
// Replaces the body of a Response built inside the runtime (a fetched or cloned one).
function setBodySource(self, source) {
  bodies.get(self).source = source;
}
// Whether `self` was given a body at all (read or not).
function hasBody(self) {
  return bodies.get(self).source !== null;
}

// Takes the whole body as bytes; a body is read once.
function consume(self, what) {
  const slot = bodies.get(self);
  if (slot.used) return PromiseReject(new TypeErrorCtor(`Failed to execute '${what}': body stream already read`));
  slot.used = true;
  const src = slot.source;
  if (src === null) return PromiseResolve(new Uint8ArrayCtor(0));
  if (src instanceof ReadableStream) {
    if (src.locked) return PromiseReject(new TypeErrorCtor(`Failed to execute '${what}': body stream is locked`));
    return drain(src);
  }
  return PromiseResolve(src);
}
const BodyMixin = {
  get body() {
    const slot = bodies.get(this);
    if (slot.source === null) return null;
    if (!(slot.source instanceof ReadableStream)) slot.source = streamOf(slot.source);
    return slot.source;
  },
  get bodyUsed() {
    const slot = bodies.get(this);
    return slot.used || (slot.source instanceof ReadableStream && slot.source.locked);
  },
  arrayBuffer() { return consume(this, 'arrayBuffer').then((b) => b.buffer.byteLength === b.length ? b.buffer : b.slice().buffer); },
  bytes() { return consume(this, 'bytes'); },
  text() { return consume(this, 'text').then((b) => utf8Decoder.decode(b)); },
  json() { return consume(this, 'json').then((b) => JSONParse(utf8Decoder.decode(b))); },
  blob() {
    return consume(this, 'blob').then((b) => new Blob([b], { type: this.headers.get('content-type') ?? '' }));
  },
  formData() {
    return PromiseReject(new TypeErrorCtor('formData() is not supported in this sandbox: read the body with text() and parse it with URLSearchParams.'));
  },
};
function mixBody(proto) {
  for (const key of ReflectOwnKeys(BodyMixin)) {
    ObjectDefineProperty(proto, key, { ...ReflectGetOwnPropertyDescriptor(BodyMixin, key), enumerable: true });
  }
}
function cloneBody(self) {
  const slot = bodies.get(self);
  if (slot.used) throw new TypeErrorCtor("Failed to execute 'clone': body is already used");
  if (slot.source instanceof ReadableStream) {
    throw new TypeErrorCtor("Failed to execute 'clone': a body given as a ReadableStream cannot be cloned here; read it first.");
  }
  return slot.source === null ? null : slot.source.slice();
}

return { extractBody, initBody, setBodySource, hasBody, consume, mixBody, cloneBody };
})
