// The runtime's entry file (loader.js loads it, and the files it names, in order). It removes
// what the sandbox must not have, installs every global the runtime adds, in this order, and
// exports the helpers the worker calls (engine/helpers.rs). Each interface lives in its own file under web/;
// none of them touches the global object.
(function (load) {
'use strict';
const { installBufferGuard } = load('buffer_guard.js');
const { console } = load('console.js');
const { describeThrow } = load('errors.js');
const { installProviders } = load('providers.js');
const { invokeFetch } = load('handles.js');
const { ObjectDefineProperty, ObjectHasOwn, ObjectKeys, Uint8ArrayCtor } = load('primordials.js');
const { runtimeGlobals } = load('natives.js');
const {
  beginTimers, clearInterval, clearTimeout, performance, queueMicrotask, runTimers, setInterval, setTimeout,
} = load('web/timers.js');
const { installReplay } = load('replay.js');
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

// Every global the runtime adds, by name. Which are installed, and in what order, is the list
// the worker hands over (`runtimeGlobals`, codemode_protocol's limits::RUNTIME_GLOBALS, the one
// list of them): a name without a value here, or a value the list does not name, stops the
// runtime from installing at all.
const values = {
  __proto__: null,
  console,
  self: globalThis,
  setTimeout,
  setInterval,
  clearTimeout,
  clearInterval,
  queueMicrotask,
  performance,
  DOMException,
  Event,
  EventTarget,
  AbortSignal,
  AbortController,
  TextEncoder,
  TextDecoder,
  btoa,
  atob,
  structuredClone,
  crypto: new Crypto(),
  Crypto,
  SubtleCrypto,
  CompressionStream,
  DecompressionStream,
  caches,
  URLSearchParams,
  URL,
  Headers,
  Blob,
  ReadableStream,
  ReadableStreamDefaultReader,
  Request,
  Response,
  fetch,
};
let unnamed = ObjectKeys(values).length;
for (let i = 0; i < runtimeGlobals.length; i++) {
  const name = runtimeGlobals[i];
  if (!ObjectHasOwn(values, name)) throw new Error(`the runtime has no global "${name}"`);
  ObjectDefineProperty(globalThis, name, { value: values[name], writable: true, configurable: true, enumerable: false });
  unnamed--;
}
if (unnamed !== 0) throw new Error(`${unnamed} of the runtime's globals are not in the list of runtime globals`);

// The helpers the worker calls (engine/helpers.rs); the worker keeps this object in the snapshot.
const helpers = {
  installProviders,
  describeThrow,
  typeName: (v) => (v === null ? 'null' : typeof v),
  runTimers,
  // beginRun(epochMs?): a run starts; with `epochMs`, a replayable one (replay.js).
  beginRun: (epochMs) => {
    beginTimers(epochMs);
    if (epochMs !== undefined) installReplay();
  },
  allocBytes: (n) => new Uint8ArrayCtor(n),
  invokeFetch,
};

return { helpers };
})
