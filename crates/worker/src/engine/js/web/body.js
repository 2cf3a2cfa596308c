// The Body mixin (Fetch Standard) Request and Response share: a body is bytes, a stream, or
// null; `body` turns bytes into a stream on demand; each reader method consumes it once.
// Built-in methods through primordials.js's captures, never a species constructor, promises
// followed with the captured `then` (primordials.js says why); blobs, streams, headers and
// search params through the runtime's own accessors, not their public methods.
(function (load) {
'use strict';
const { blobBytes, blobFrom, blobType, Blob } = load('web/blob.js');
const { bytesOf, concat } = load('web/bytes.js');
const { utf8Decode, utf8Encode } = load('web/encoding.js');
const { getHeader } = load('web/headers.js');
const { ReadableStream, ReadableStreamDefaultReader, releaseReader, streamLocked, streamOf, streamRead } = load('web/streams.js');
const { paramsString, URLSearchParams } = load('web/url.js');
const {
  JSONParse, ObjectDefineProperty, PromiseCtor, PromiseReject, PromiseResolve, ReflectGetOwnPropertyDescriptor, ReflectOwnKeys,
  StringCtor, TypeErrorCtor, Uint8ArrayCtor, WeakMapCtor, abByteLength, arrayPush, call, copyBytes, promiseThen, taBuffer,
  taLength, weakMapGet, weakMapSet,
} = load('primordials.js');

// Reads a whole stream into bytes.
function drain(stream) {
  const reader = new ReadableStreamDefaultReader(stream);
  const chunks = [];
  return new PromiseCtor((resolve, reject) => {
    const next = () => {
      call(promiseThen, streamRead(stream), (r) => {
        try {
          if (r.done) {
            releaseReader(reader);
            resolve(concat(chunks));
            return;
          }
          const value = r.value;
          const bytes = typeof value === 'string' ? utf8Encode(value) : bytesOf(value);
          if (bytes === null) throw new TypeErrorCtor('A body stream chunk is not a Uint8Array.');
          call(arrayPush, chunks, bytes);
          next();
        } catch (e) {
          reject(e);
        }
      }, reject);
    };
    next();
  });
}

// Extracts a body: [bytes or a stream, the content type it implies].
function extractBody(body) {
  if (body === null || body === undefined) return [null, null];
  if (typeof body === 'string') return [utf8Encode(body), 'text/plain;charset=UTF-8'];
  if (body instanceof URLSearchParams) return [utf8Encode(paramsString(body)), 'application/x-www-form-urlencoded;charset=UTF-8'];
  if (body instanceof Blob) return [copyBytes(blobBytes(body)), blobType(body) || null];
  if (body instanceof ReadableStream) return [body, null];
  const bytes = bytesOf(body);
  if (bytes !== null) return [bytes, null];
  return [utf8Encode(StringCtor(body)), 'text/plain;charset=UTF-8'];
}

// The Body mixin over a private slot { source: Uint8Array | ReadableStream | null, used, headers }.
const bodies = new WeakMapCtor();

// Gives a new Request or Response its body (bytes, a stream, or null), and the function that
// gives its Headers now (a Response's may be replaced after its construction).
function initBody(self, source, headers) {
  call(weakMapSet, bodies, self, { source, used: false, headers });
}
// Replaces the body of a Response built inside the runtime (a fetched or cloned one).
function setBodySource(self, source) {
  call(weakMapGet, bodies, self).source = source;
}
// Whether `self` was given a body at all (read or not).
function hasBody(self) {
  return call(weakMapGet, bodies, self).source !== null;
}

// Takes the whole body as bytes; a body is read once.
function consume(self, what) {
  const slot = call(weakMapGet, bodies, self);
  if (slot.used) return PromiseReject(new TypeErrorCtor(`Failed to execute '${what}': body stream already read`));
  slot.used = true;
  const src = slot.source;
  if (src === null) return PromiseResolve(new Uint8ArrayCtor(0));
  if (src instanceof ReadableStream) {
    if (streamLocked(src)) return PromiseReject(new TypeErrorCtor(`Failed to execute '${what}': body stream is locked`));
    return drain(src);
  }
  return PromiseResolve(src);
}
// consume(self, what), then `f` of the bytes.
function consumeThen(self, what, f) {
  return call(promiseThen, consume(self, what), f);
}
const BodyMixin = {
  get body() {
    const slot = call(weakMapGet, bodies, this);
    if (slot.source === null) return null;
    if (!(slot.source instanceof ReadableStream)) slot.source = streamOf(slot.source);
    return slot.source;
  },
  get bodyUsed() {
    const slot = call(weakMapGet, bodies, this);
    return slot.used || (slot.source instanceof ReadableStream && streamLocked(slot.source));
  },
  arrayBuffer() {
    return consumeThen(this, 'arrayBuffer', (b) => {
      const buffer = call(taBuffer, b);
      return call(abByteLength, buffer) === call(taLength, b) ? buffer : call(taBuffer, copyBytes(b));
    });
  },
  bytes() { return consume(this, 'bytes'); },
  text() { return consumeThen(this, 'text', (b) => utf8Decode(b)); },
  json() { return consumeThen(this, 'json', (b) => JSONParse(utf8Decode(b))); },
  blob() {
    const slot = call(weakMapGet, bodies, this);
    return consumeThen(this, 'blob', (b) => blobFrom(copyBytes(b), getHeader(slot.headers(), 'content-type') ?? ''));
  },
  formData() {
    return PromiseReject(new TypeErrorCtor('formData() is not supported in this sandbox: read the body with text() and parse it with URLSearchParams.'));
  },
};
function mixBody(proto) {
  const keys = ReflectOwnKeys(BodyMixin);
  for (let i = 0; i < keys.length; i++) {
    ObjectDefineProperty(proto, keys[i], { ...ReflectGetOwnPropertyDescriptor(BodyMixin, keys[i]), enumerable: true });
  }
}
function cloneBody(self) {
  const slot = call(weakMapGet, bodies, self);
  if (slot.used) throw new TypeErrorCtor("Failed to execute 'clone': body is already used");
  if (slot.source instanceof ReadableStream) {
    throw new TypeErrorCtor("Failed to execute 'clone': a body given as a ReadableStream cannot be cloned here; read it first.");
  }
  return slot.source === null ? null : copyBytes(slot.source);
}

return { extractBody, initBody, setBodySource, hasBody, consume, mixBody, cloneBody };
})
