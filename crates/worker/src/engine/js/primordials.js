// The built-ins the runtime uses, captured once, before any program runs: a program that
// overwrites `Object.keys`, `Promise` or `Uint8Array` cannot break the runtime's own code.
// Every runtime file takes what it needs from here. Prototype getters and methods are
// called through `call(method, receiver, ...args)`.
(function () {
'use strict';
const call = Function.prototype.call.bind(Function.prototype.call);
const getter = (proto, key) => Object.getOwnPropertyDescriptor(proto, key).get;

return {
  call,
  ObjectKeys: Object.keys,
  ObjectHasOwn: Object.hasOwn,
  ObjectEntries: Object.entries,
  ObjectCreate: Object.create,
  ObjectGetPrototypeOf: Object.getPrototypeOf,
  ObjectIs: Object.is,
  ObjectDefineProperty: Object.defineProperty,
  ObjectPrototype: Object.prototype,
  ArrayIsArray: Array.isArray,
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
  NumberCtor: Number,
  NumberIsInteger: Number.isInteger,
  NumberMaxSafeInteger: Number.MAX_SAFE_INTEGER,
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
  setValues: Set.prototype.values,
  mapSize: getter(Map.prototype, 'size'),
  setSize: getter(Set.prototype, 'size'),
  DateCtor: Date,
  DateNow: Date.now,
  dateToISO: Date.prototype.toISOString,
  dateToString: Date.prototype.toString,
  dateGetTime: Date.prototype.getTime,
  RegExpCtor: RegExp,
  regexpToString: RegExp.prototype.toString,
  DataViewCtor: DataView,
  Uint8ArrayCtor: Uint8Array,
  // The integer typed arrays (crypto.getRandomValues takes only these).
  INTEGER_ARRAYS: [
    Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array,
  ],
};
})
