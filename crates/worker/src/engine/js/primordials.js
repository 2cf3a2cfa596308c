// The built-ins the runtime uses, captured once, before any program runs, so that a program
// that replaces built-ins cannot change what the runtime's own code does. Every runtime file
// takes what it needs from here. Prototype methods and getters are called through
// `call(method, receiver, ...args)` (`call(arrayPush, list, x)`), never looked up on the value.
//
// What holds in every file under js/, for its code that can run after a program has (the
// globals' methods, the callbacks the runtime hands out, a retained handle's invocation):
// - A built-in method or getter is one of these captures: a program that replaces or deletes
//   Array.prototype.push, String.prototype.toLowerCase, RegExp.prototype.exec,
//   Map.prototype.get, Promise.prototype.then, %TypedArray%.prototype.length or
//   Function.prototype.call does not reach the runtime's code through it.
// - The runtime's own arrays are walked by index: no for-of, spread or array destructuring over
//   them (those call Array.prototype[Symbol.iterator] and the array iterator's `next`); Map and
//   Set entries through the captured iterator `next` (mapIteratorNext, setIteratorNext). An
//   array the runtime made never goes where a standard iterates a program's value: the runtime
//   has its own entry for it (headersFrom, blobFrom, requestFromWire).
// - No result of the runtime's is built by a species constructor: Array's filter, map, slice,
//   splice and concat, typed arrays' slice and subarray and ArrayBuffer's slice take their class
//   from `constructor[Symbol.species]`, which a program can replace. The runtime writes loops,
//   `new Uint8ArrayCtor(...)` and `call(taSet, ...)` instead (copyBytes, viewBytes below).
// - Regular expressions run through `regexpExec`, which reads only the regexp's own state (test,
//   replace, match and split look `exec` and their symbols up on the regexp): replaceMatches
//   below.
// - The runtime's promises are followed with `promiseThen`, and never resolved with another
//   promise (resolving with one looks its `then` up). One exception: ReadableStream's async
//   iterator (web/streams.js `#values`) is an async generator and awaits its reader's
//   promises, and an await reads the promise's `constructor`.
// - The runtime's classes are reached by its own code through private members and accessors
//   their files export to the runtime (never to programs), not through their public methods
//   and getters, which a program may replace as in a browser: Request, Response, the Body
//   mixin, fetch and retained handles reach headers, URLs, blobs, streams and signals so, and
//   EventTarget's listeners and the `on<type>` attributes each other.
//
// What a standard says to read from a program's own values is read as it says, as a browser
// does: an init dictionary's members, an iterable's Symbol.iterator (`new Headers([[k, v]])`
// takes its pairs through Array.prototype[Symbol.iterator], as in a browser), a ToString's
// toString, a thenable's `then`, a handler's returned promise's `constructor` and `then`.
//
// Not covered: accessors a program defines on a prototype for a name the runtime reads or writes
// as data (an array-index setter on Array.prototype, which `call(arrayPush, ...)` would reach; a
// `then` on Object.prototype, which makes every object a thenable, in a browser too), and a
// Symbol.hasInstance a program defines on a built-in constructor or a runtime class (the
// runtime's `instanceof` checks read it).
(function () {
'use strict';
const call = Function.prototype.call.bind(Function.prototype.call);
const getter = (proto, key) => Object.getOwnPropertyDescriptor(proto, key).get;
const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);

const regexpExec = RegExp.prototype.exec;
const regexpGlobal = getter(RegExp.prototype, 'global');
const stringSlice = String.prototype.slice;
const taSet = TypedArrayPrototype.set;
const taLength = getter(TypedArrayPrototype, 'length');
const taBuffer = getter(TypedArrayPrototype, 'buffer');
const taByteOffset = getter(TypedArrayPrototype, 'byteOffset');
const taByteLength = getter(TypedArrayPrototype, 'byteLength');
// The typed array's name, undefined for any other value: a brand check that throws for none.
const taTag = getter(TypedArrayPrototype, Symbol.toStringTag);
const dvBuffer = getter(DataView.prototype, 'buffer');
const dvByteOffset = getter(DataView.prototype, 'byteOffset');
const dvByteLength = getter(DataView.prototype, 'byteLength');
const Uint8ArrayCtor = Uint8Array;

// `s` with each match of `re` (the first only, unless `re` is global) replaced by
// `replace(match)` (`match` is exec's array: groups by index), as `s.replace(re, replace)`
// would, without looking anything up on `re`.
function replaceMatches(s, re, replace) {
  const global = call(regexpGlobal, re);
  re.lastIndex = 0;
  let out = '';
  let last = 0;
  let m;
  while ((m = call(regexpExec, re, s)) !== null) {
    out += call(stringSlice, s, last, m.index) + replace(m);
    last = m.index + m[0].length;
    if (!global) break;
    if (m[0].length === 0) re.lastIndex++;
  }
  re.lastIndex = 0;
  return out + call(stringSlice, s, last);
}

// A Uint8Array over the bytes of the view `v` (a typed array or a DataView), from byte `start`
// to byte `end` of it (its end when undefined).
function viewBytes(v, start = 0, end = undefined) {
  const typed = call(taTag, v) !== undefined;
  const length = (end === undefined ? call(typed ? taByteLength : dvByteLength, v) : end) - start;
  return new Uint8ArrayCtor(call(typed ? taBuffer : dvBuffer, v), call(typed ? taByteOffset : dvByteOffset, v) + start, length);
}
// A copy of the bytes of the Uint8Array `bytes`, from `start` to `end`.
function copyBytes(bytes, start = 0, end = undefined) {
  const from = viewBytes(bytes, start, end);
  const out = new Uint8ArrayCtor(call(taLength, from));
  call(taSet, out, from);
  return out;
}

return {
  call,
  replaceMatches,
  viewBytes,
  copyBytes,
  ObjectKeys: Object.keys,
  ObjectHasOwn: Object.hasOwn,
  ObjectEntries: Object.entries,
  ObjectCreate: Object.create,
  ObjectGetPrototypeOf: Object.getPrototypeOf,
  ObjectIs: Object.is,
  ObjectDefineProperty: Object.defineProperty,
  ObjectPrototype: Object.prototype,
  ArrayIsArray: Array.isArray,
  arrayPush: Array.prototype.push,
  arrayPop: Array.prototype.pop,
  arrayShift: Array.prototype.shift,
  arrayJoin: Array.prototype.join,
  arraySort: Array.prototype.sort,
  arrayIncludes: Array.prototype.includes,
  // The engine's ArrayBuffer (the global one becomes a guard around it: buffer_guard.js).
  ArrayBufferCtor: ArrayBuffer,
  ArrayBufferIsView: ArrayBuffer.isView,
  abByteLength: getter(ArrayBuffer.prototype, 'byteLength'),
  FunctionToString: Function.prototype.toString,
  ErrorCtor: Error,
  TypeErrorCtor: TypeError,
  RangeErrorCtor: RangeError,
  errorToString: Error.prototype.toString,
  JSONStringify: JSON.stringify,
  JSONParse: JSON.parse,
  MapCtor: Map,
  SetCtor: Set,
  WeakMapCtor: WeakMap,
  ProxyCtor: Proxy,
  PromiseCtor: Promise,
  PromiseResolve: Promise.resolve.bind(Promise),
  PromiseReject: Promise.reject.bind(Promise),
  promiseThen: Promise.prototype.then,
  StringCtor: String,
  StringFromCharCode: String.fromCharCode,
  stringSlice,
  stringCharCodeAt: String.prototype.charCodeAt,
  stringToLowerCase: String.prototype.toLowerCase,
  stringToUpperCase: String.prototype.toUpperCase,
  stringStartsWith: String.prototype.startsWith,
  stringIncludes: String.prototype.includes,
  stringTrim: String.prototype.trim,
  stringToWellFormed: String.prototype.toWellFormed,
  regexpExec,
  NumberCtor: Number,
  NumberIsInteger: Number.isInteger,
  NumberMaxSafeInteger: Number.MAX_SAFE_INTEGER,
  numberToString: Number.prototype.toString,
  BooleanCtor: Boolean,
  // biome-ignore lint/suspicious/noGlobalIsNan: the global itself, captured (it coerces; Number.isNaN does not)
  GlobalIsNaN: isNaN,
  GlobalParseInt: parseInt,
  GlobalParseFloat: parseFloat,
  ReflectApply: Reflect.apply,
  ReflectConstruct: Reflect.construct,
  ReflectOwnKeys: Reflect.ownKeys,
  ReflectGetOwnPropertyDescriptor: Reflect.getOwnPropertyDescriptor,
  MathMax: Math.max,
  MathMin: Math.min,
  MathTrunc: Math.trunc,
  MathFloor: Math.floor,
  SymbolIterator: Symbol.iterator,
  SymbolAsyncIterator: Symbol.asyncIterator,
  SymbolToStringTag: Symbol.toStringTag,
  symbolToString: Symbol.prototype.toString,
  mapEntries: Map.prototype.entries,
  mapIteratorNext: Object.getPrototypeOf(new Map().entries()).next,
  mapGet: Map.prototype.get,
  mapSet: Map.prototype.set,
  mapHas: Map.prototype.has,
  mapDelete: Map.prototype.delete,
  setValues: Set.prototype.values,
  setIteratorNext: Object.getPrototypeOf(new Set().values()).next,
  setAdd: Set.prototype.add,
  setHas: Set.prototype.has,
  mapSize: getter(Map.prototype, 'size'),
  setSize: getter(Set.prototype, 'size'),
  weakMapGet: WeakMap.prototype.get,
  weakMapSet: WeakMap.prototype.set,
  weakMapDelete: WeakMap.prototype.delete,
  DateCtor: Date,
  DateNow: Date.now,
  dateToISO: Date.prototype.toISOString,
  dateToString: Date.prototype.toString,
  dateGetTime: Date.prototype.getTime,
  RegExpCtor: RegExp,
  regexpToString: RegExp.prototype.toString,
  DataViewCtor: DataView,
  Uint8ArrayCtor,
  taSet,
  taLength,
  taBuffer,
  taByteOffset,
  taByteLength,
  taTag,
  // The integer typed arrays (crypto.getRandomValues takes only these).
  INTEGER_ARRAYS: [
    Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array,
  ],
};
})
