// What the sandbox must not have, removed before any program runs, and the guard that keeps
// every ArrayBuffer at the length it was created with.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const {
  ArrayBufferCtor, MathTrunc, ObjectDefineProperty, ProxyCtor, RangeErrorCtor, ReflectConstruct,
  ReflectGetOwnPropertyDescriptor, TypeErrorCtor, call,
} = load('primordials.js');

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
  const proto = ArrayBufferCtor.prototype;
  const isResizable = ReflectGetOwnPropertyDescriptor(proto, 'resizable').get;
  const byteLength = ReflectGetOwnPropertyDescriptor(proto, 'byteLength').get;
  delete proto.resize;
  ObjectDefineProperty(proto, 'resizable', { get: () => false, configurable: true });
  // A resizable buffer can still arrive from a host (a tool's answer): its transfer to a larger
  // length would commit memory V8 takes from its page allocator, past the meter. Such a
  // transfer is refused; to its own length or less, or of any other buffer, it is as V8 has it.
  // The length is converted once (ToIndex), so a valueOf cannot answer the check and V8 apart.
  const toIndex = (value) => {
    const n = +value;
    // biome-ignore lint/suspicious/noSelfCompare: the NaN test that calls nothing a program could replace
    const integer = n !== n ? 0 : MathTrunc(n) + 0;
    if (integer < 0 || integer > 2 ** 53 - 1) throw new RangeErrorCtor('Invalid array buffer length');
    return integer;
  };
  for (const name of ['transfer', 'transferToFixedLength']) {
    const original = proto[name];
    if (typeof original !== 'function') continue;
    const guarded = {
      [name](...args) {
        if (args.length === 0 || args[0] === undefined) return call(original, this);
        const length = toIndex(args[0]);
        if (call(isResizable, this) && length > call(byteLength, this)) refuse();
        return call(original, this, length);
      },
    }[name];
    ObjectDefineProperty(proto, name, { value: guarded, writable: true, configurable: true });
  }
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
