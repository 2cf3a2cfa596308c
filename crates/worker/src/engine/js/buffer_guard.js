// What the sandbox must not have, removed before any program runs, and the guard that keeps
// every ArrayBuffer at the length it was created with.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { ArrayBufferCtor, ObjectDefineProperty, ProxyCtor, ReflectConstruct, TypeErrorCtor } = load('primordials.js');

function installBufferGuard() {
  // Not part of the sandbox: WebAssembly compiles code and allocates memory the heap limit does
  // not meter. SharedArrayBuffer: no second thread exists to share with, and growable shared
  // buffers would escape the meter; Atomics stays (it works on ordinary typed arrays).
  delete globalThis.WebAssembly;
  delete globalThis.SharedArrayBuffer;

  // A buffer cannot grow past the length it was created with: `maxByteLength` is refused, and
  // `resize` is gone. (Copying into a new, larger buffer is ordinary, metered allocation.)
  const refuse = () => {
    throw new TypeErrorCtor(natives.renderFailure('BUFFER_NOT_RESIZABLE'));
  };
  delete ArrayBufferCtor.prototype.resize;
  ObjectDefineProperty(ArrayBufferCtor.prototype, 'resizable', { get: () => false, configurable: true });
  const Guarded = new ProxyCtor(ArrayBufferCtor, {
    construct(target, args, newTarget) {
      const opts = args[1];
      if (opts !== null && typeof opts === 'object' && opts.maxByteLength !== undefined) refuse();
      return ReflectConstruct(target, [args[0]], newTarget === Guarded ? target : newTarget);
    },
  });
  ObjectDefineProperty(ArrayBufferCtor.prototype, 'constructor', { value: Guarded, writable: true, configurable: true });
  ObjectDefineProperty(globalThis, 'ArrayBuffer', { value: Guarded, writable: true, configurable: true, enumerable: false });
}

return { installBufferGuard };
})
