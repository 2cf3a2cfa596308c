// The built-ins the runtime uses, captured once, before any program runs: a program that
// overwrites `Object.keys`, `Promise` or `Uint8Array` cannot break the runtime's own code.
// Every runtime module imports what it needs from here. Prototype getters and methods are
// called through `call(method, receiver, ...args)`.

export const call = Function.prototype.call.bind(Function.prototype.call);
const getter = (proto, key) => Object.getOwnPropertyDescriptor(proto, key).get;

export const ObjectKeys = Object.keys;
export const ObjectEntries = Object.entries;
export const ObjectCreate = Object.create;
export const ObjectGetPrototypeOf = Object.getPrototypeOf;
export const ObjectIs = Object.is;
export const ObjectDefineProperty = Object.defineProperty;
export const ObjectPrototype = Object.prototype;
export const ArrayIsArray = Array.isArray;
// The engine's ArrayBuffer (the global one becomes a guard around it: buffer_guard.js).
export const ArrayBufferCtor = ArrayBuffer;
export const ArrayBufferIsView = ArrayBuffer.isView;
export const abByteLength = getter(ArrayBuffer.prototype, 'byteLength');
export const FunctionToString = Function.prototype.toString;
export const ErrorCtor = Error;
export const TypeErrorCtor = TypeError;
export const RangeErrorCtor = RangeError;
export const errorToString = Error.prototype.toString;
export const JSONStringify = JSON.stringify;
export const JSONParse = JSON.parse;
export const MapCtor = Map;
export const SetCtor = Set;
export const WeakMapCtor = WeakMap;
export const ProxyCtor = Proxy;
export const PromiseCtor = Promise;
export const PromiseResolve = Promise.resolve.bind(Promise);
export const PromiseReject = Promise.reject.bind(Promise);
export const promiseThen = Promise.prototype.then;
export const StringCtor = String;
export const StringFromCharCode = String.fromCharCode;
export const NumberCtor = Number;
export const NumberIsInteger = Number.isInteger;
export const NumberMaxSafeInteger = Number.MAX_SAFE_INTEGER;
export const BooleanCtor = Boolean;
export const GlobalIsNaN = isNaN;
export const GlobalParseInt = parseInt;
export const GlobalParseFloat = parseFloat;
export const ReflectApply = Reflect.apply;
export const ReflectConstruct = Reflect.construct;
export const ReflectOwnKeys = Reflect.ownKeys;
export const ReflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
export const MathMax = Math.max;
export const MathMin = Math.min;
export const MathTrunc = Math.trunc;
export const SymbolIterator = Symbol.iterator;
export const SymbolAsyncIterator = Symbol.asyncIterator;
export const SymbolToStringTag = Symbol.toStringTag;
export const symbolToString = Symbol.prototype.toString;
export const mapEntries = Map.prototype.entries;
export const setValues = Set.prototype.values;
export const mapSize = getter(Map.prototype, 'size');
export const setSize = getter(Set.prototype, 'size');
export const DateCtor = Date;
export const DateNow = Date.now;
export const dateToISO = Date.prototype.toISOString;
export const dateGetTime = Date.prototype.getTime;
export const RegExpCtor = RegExp;
export const regexpToString = RegExp.prototype.toString;
export const DataViewCtor = DataView;
export const Uint8ArrayCtor = Uint8Array;
// The integer typed arrays (crypto.getRandomValues takes only these).
export const INTEGER_ARRAYS = [
  Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array,
];
