// The runtime's entry file (loader.js loads it, and the files it names, in order). It removes
// what the sandbox must not have, installs every global the runtime adds, in this order, and
// exports the helpers the worker calls (run.rs). Each interface lives in its own file under web/;
// none of them touches the global object.
(function (load) {
'use strict';
const { installBufferGuard } = load('buffer_guard.js');
const { console } = load('console.js');
const { describeThrow } = load('errors.js');
const { installProviders } = load('providers.js');
const { invokeFetch } = load('handles.js');
const { ObjectDefineProperty, Uint8ArrayCtor } = load('primordials.js');
const {
  beginRun, clearInterval, clearTimeout, performance, queueMicrotask, runTimers, setInterval, setTimeout,
} = load('web/timers.js');
const { DOMException } = load('web/dom_exception.js');
const { AbortController, AbortSignal, Event, EventTarget } = load('web/events.js');
const { TextDecoder, TextEncoder } = load('web/encoding.js');
const { atob, btoa } = load('web/base64.js');
const { structuredClone } = load('web/structured_clone.js');
const { Crypto, SubtleCrypto } = load('web/crypto.js');
const { caches, CompressionStream, DecompressionStream } = load('web/absences.js');
const { URL, URLSearchParams } = load('web/url.js');
const { Headers } = load('web/headers.js');
const { Blob } = load('web/blob.js');
const { ReadableStream, ReadableStreamDefaultReader } = load('web/streams.js');
const { Request } = load('web/request.js');
const { Response } = load('web/response.js');
const { fetch } = load('web/fetch.js');

installBufferGuard();

const globals = [
  ['console', console],
  ['self', globalThis],
  ['setTimeout', setTimeout],
  ['setInterval', setInterval],
  ['clearTimeout', clearTimeout],
  ['clearInterval', clearInterval],
  ['queueMicrotask', queueMicrotask],
  ['performance', performance],
  ['DOMException', DOMException],
  ['Event', Event],
  ['EventTarget', EventTarget],
  ['AbortSignal', AbortSignal],
  ['AbortController', AbortController],
  ['TextEncoder', TextEncoder],
  ['TextDecoder', TextDecoder],
  ['btoa', btoa],
  ['atob', atob],
  ['structuredClone', structuredClone],
  ['crypto', new Crypto()],
  ['Crypto', Crypto],
  ['SubtleCrypto', SubtleCrypto],
  ['CompressionStream', CompressionStream],
  ['DecompressionStream', DecompressionStream],
  ['caches', caches],
  ['URLSearchParams', URLSearchParams],
  ['URL', URL],
  ['Headers', Headers],
  ['Blob', Blob],
  ['ReadableStream', ReadableStream],
  ['ReadableStreamDefaultReader', ReadableStreamDefaultReader],
  ['Request', Request],
  ['Response', Response],
  ['fetch', fetch],
];
for (const [name, value] of globals) {
  ObjectDefineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
}

// The helpers the worker calls (run.rs); the worker keeps this object in the snapshot.
const helpers = {
  installProviders,
  describeThrow,
  typeName: (v) => (v === null ? 'null' : typeof v),
  runTimers,
  beginRun,
  allocBytes: (n) => new Uint8ArrayCtor(n),
  invokeFetch,
};

return { helpers };
})
