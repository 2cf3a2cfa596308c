// The runtime's entry module, evaluated once per worker into the startup snapshot (or in a fresh
// context when there is none), before any program runs. It removes what the sandbox must not
// have, installs every global the runtime adds, in this order, and exports the helpers the
// worker calls (run.rs). Each interface lives in its own module; none of them touches the
// global object.
import { installBufferGuard } from 'runtime:buffer_guard.js';
import { console } from 'runtime:console.js';
import { describeThrow } from 'runtime:errors.js';
import { installProviders } from 'runtime:providers.js';
import { ObjectDefineProperty, Uint8ArrayCtor } from 'runtime:primordials.js';
import {
  beginRun, clearInterval, clearTimeout, performance, queueMicrotask, runTimers, setInterval, setTimeout,
} from 'runtime:web/timers.js';
import { DOMException } from 'runtime:web/dom_exception.js';
import { AbortController, AbortSignal, Event, EventTarget } from 'runtime:web/events.js';
import { TextDecoder, TextEncoder } from 'runtime:web/encoding.js';
import { atob, btoa } from 'runtime:web/base64.js';
import { structuredClone } from 'runtime:web/structured_clone.js';
import { Crypto, SubtleCrypto } from 'runtime:web/crypto.js';
import { caches, CompressionStream, DecompressionStream } from 'runtime:web/absences.js';
import { URL, URLSearchParams } from 'runtime:web/url.js';
import { Headers } from 'runtime:web/headers.js';
import { Blob } from 'runtime:web/blob.js';
import { ReadableStream, ReadableStreamDefaultReader } from 'runtime:web/streams.js';
import { Request } from 'runtime:web/request.js';
import { Response } from 'runtime:web/response.js';
import { fetch } from 'runtime:web/fetch.js';

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
export const helpers = {
  installProviders,
  describeThrow,
  typeName: (v) => (v === null ? 'null' : typeof v),
  runTimers,
  beginRun,
  allocBytes: (n) => new Uint8ArrayCtor(n),
};
