// @ts-check
'use strict';
// V8's value-serializer format (version 15), written and read in JavaScript, for hosts whose
// runtime has no `v8.Serializer` (Bun: JavaScriptCore). Values cross to and from the worker in
// this format (lib/clone.js); where the host has V8's own serializer (Node, Deno) that is used
// instead, and this codec is held to it: __test__/value-format.test.mjs writes and reads every
// value kind both ways against Node's serializer.
//
// What it carries is what V8's carries, with the same structured-clone semantics: primitives
// (the BigInt and -0 included), plain objects and arrays (own enumerable string keys, in their
// order, getters read once; dense and sparse), Date, RegExp, Map, Set, the boxed primitives,
// ArrayBuffer (resizable too) and every view over one, the six native Error kinds with message,
// stack and cause, and shared references and cycles among all of them. What V8 refuses (a
// function, a symbol, a Promise, a WeakMap, a SharedArrayBuffer, a detached buffer, ...) this
// refuses with V8's text: `<value> could not be cloned.`

const types = require('node:util').types;

/** An ArrayBuffer as ES2024 has it (resizable, detachable). @typedef {ArrayBuffer & { detached?: boolean, resizable?: boolean, maxByteLength: number }} Buffer2024 */

const VERSION = 15;

/** The tags (V8 `SerializationTag`) as byte values. */
const T = {
  version: 0xff,
  padding: 0x00,
  verifyObjectCount: 0x3f, // '?'
  theHole: 0x2d, // '-'
  undefined: 0x5f, // '_'
  null: 0x30, // '0'
  true: 0x54, // 'T'
  false: 0x46, // 'F'
  int32: 0x49, // 'I'
  uint32: 0x55, // 'U'
  double: 0x4e, // 'N'
  bigint: 0x5a, // 'Z'
  utf8: 0x53, // 'S'
  oneByte: 0x22, // '"'
  twoByte: 0x63, // 'c'
  reference: 0x5e, // '^'
  beginObject: 0x6f, // 'o'
  endObject: 0x7b, // '{'
  beginSparse: 0x61, // 'a'
  endSparse: 0x40, // '@'
  beginDense: 0x41, // 'A'
  endDense: 0x24, // '$'
  date: 0x44, // 'D'
  trueObject: 0x79, // 'y'
  falseObject: 0x78, // 'x'
  numberObject: 0x6e, // 'n'
  bigintObject: 0x7a, // 'z'
  stringObject: 0x73, // 's'
  regexp: 0x52, // 'R'
  beginMap: 0x3b, // ';'
  endMap: 0x3a, // ':'
  beginSet: 0x27, // "'"
  endSet: 0x2c, // ','
  arrayBuffer: 0x42, // 'B'
  resizableArrayBuffer: 0x7e, // '~'
  view: 0x56, // 'V'
  error: 0x72, // 'r'
};

/** View subtags (V8 `ArrayBufferViewTag`) by constructor name, and back. */
const VIEW_TAGS = {
  Int8Array: 0x62, // 'b'
  Uint8Array: 0x42, // 'B'
  Uint8ClampedArray: 0x43, // 'C'
  Int16Array: 0x77, // 'w'
  Uint16Array: 0x57, // 'W'
  Int32Array: 0x64, // 'd'
  Uint32Array: 0x44, // 'D'
  Float16Array: 0x68, // 'h'
  Float32Array: 0x66, // 'f'
  Float64Array: 0x46, // 'F'
  BigInt64Array: 0x71, // 'q'
  BigUint64Array: 0x51, // 'Q'
  DataView: 0x3f, // '?'
};
/** @type {Map<number, string>} */
const VIEW_NAMES = new Map(Object.entries(VIEW_TAGS).map(([name, tag]) => [tag, name]));

/** Error prototypes (V8 `ErrorTag`); an Error of another name is written as an Error. */
const ERROR_TAGS = { EvalError: 0x45, RangeError: 0x52, ReferenceError: 0x46, SyntaxError: 0x53, TypeError: 0x54, URIError: 0x55 };
/** @type {Map<number, string>} */
const ERROR_NAMES = new Map(Object.entries(ERROR_TAGS).map(([name, tag]) => [tag, name]));
const ERROR_MESSAGE = 0x6d; // 'm'
const ERROR_STACK = 0x73; // 's'
const ERROR_CAUSE = 0x63; // 'c'
const ERROR_END = 0x2e; // '.'

/** RegExp flags as V8 stores them. */
const REGEXP_FLAGS = [['g', 1], ['i', 2], ['m', 4], ['y', 8], ['u', 16], ['s', 32], ['d', 128], ['v', 256]];

/** Builtin iterators V8 refuses (named as V8 12 and later name them: `[object Array Iterator]`), by their prototypes. */
const ITERATOR_PROTOTYPES = [[][Symbol.iterator](), ''[Symbol.iterator](), /x/[Symbol.matchAll]('')].map((i) => Object.getPrototypeOf(i));

/**
 * Whether `o` passes `check`, a brand check that throws a TypeError for any other object.
 * @param {object} o
 * @param {(o: object) => unknown} check
 */
function branded(o, check) {
  try {
    check(o);
    return true;
  } catch {
    return false;
  }
}

/**
 * How V8 names an object it refuses (its `DataCloneError`), or null for one it clones. The
 * names are V8's: `#<Promise>`, `[object Array]` for a proxy of an array, ...
 * @param {object} o
 * @returns {string | null}
 */
function refusedName(o) {
  if (types.isProxy(o)) return Array.isArray(o) ? '[object Array]' : '#<Object>';
  if (types.isSymbolObject(o)) return '[object Symbol]';
  if (types.isGeneratorObject(o)) return Object.prototype.toString.call(o);
  if (types.isPromise(o)) return '#<Promise>';
  if (types.isWeakMap(o)) return '#<WeakMap>';
  if (types.isWeakSet(o)) return '#<WeakSet>';
  if (types.isSharedArrayBuffer(o)) return '#<SharedArrayBuffer>';
  if (typeof WeakRef === 'function' && branded(o, (x) => WeakRef.prototype.deref.call(x))) return '#<WeakRef>';
  if (typeof FinalizationRegistry === 'function' && branded(o, (x) => FinalizationRegistry.prototype.unregister.call(x, {}))) return '#<FinalizationRegistry>';
  if (types.isMapIterator(o) || types.isSetIterator(o) || ITERATOR_PROTOTYPES.includes(Object.getPrototypeOf(o))) return Object.prototype.toString.call(o);
  if (types.isArgumentsObject(o) || types.isModuleNamespaceObject(o) || types.isExternal(o) || o === globalThis) return '#<Object>';
  const tag = Object.prototype.toString.call(o);
  if (tag.startsWith('[object Intl.')) return `#<${tag.slice(13, -1)}>`;
  return null;
}

/**
 * V8's refusal of `value`, as its serializer words it.
 * @param {unknown} value
 * @param {string} [name] how V8 names the object
 */
function notCloneable(value, name) {
  let shown = name;
  if (typeof value === 'function') shown = Function.prototype.toString.call(value);
  else if (typeof value === 'symbol') shown = value.toString();
  return new Error(`${shown ?? '#<Object>'} could not be cloned.`);
}

/** An array index as V8 counts one: a canonical integer string below 2^32 - 1. */
function arrayIndex(/** @type {string} */ key) {
  if (key.length === 0 || key.length > 10) return -1;
  const n = Number(key);
  return Number.isInteger(n) && n >= 0 && n < 4294967295 && String(n) === key ? n : -1;
}

class Writer {
  constructor() {
    this.bytes = new Uint8Array(256);
    this.length = 0;
    /** @type {Map<object, number>} */
    this.ids = new Map();
  }

  /** @param {number} n */
  room(n) {
    if (this.length + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  /** @param {number} b */
  byte(b) {
    this.room(1);
    this.bytes[this.length++] = b;
  }

  /** An unsigned varint of up to 2^53. @param {number} n */
  varint(n) {
    this.room(10);
    while (n >= 0x80) {
      this.bytes[this.length++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.bytes[this.length++] = n;
  }

  /** @param {number} d */
  double(d) {
    this.room(8);
    new DataView(this.bytes.buffer, this.length, 8).setFloat64(0, d, true);
    this.length += 8;
  }

  /** @param {Uint8Array} raw */
  raw(raw) {
    this.room(raw.length);
    this.bytes.set(raw, this.length);
    this.length += raw.length;
  }

  /** @param {string} s */
  string(s) {
    let oneByte = true;
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) > 0xff) {
        oneByte = false;
        break;
      }
    }
    if (oneByte) {
      this.byte(T.oneByte);
      this.varint(s.length);
      this.room(s.length);
      for (let i = 0; i < s.length; i++) this.bytes[this.length++] = s.charCodeAt(i);
      return;
    }
    const byteLength = s.length * 2;
    // The two-byte data starts at an even offset, as V8 aligns it (a padding tag before).
    if ((this.length + 1 + varintSize(byteLength)) & 1) this.byte(T.padding);
    this.byte(T.twoByte);
    this.varint(byteLength);
    this.room(byteLength);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      this.bytes[this.length++] = c & 0xff;
      this.bytes[this.length++] = c >> 8;
    }
  }

  /** @param {bigint} b */
  bigint(b) {
    const negative = b < 0n;
    let magnitude = negative ? -b : b;
    /** @type {number[]} */
    const digits = [];
    while (magnitude > 0n) {
      const word = magnitude & 0xffffffffffffffffn;
      for (let i = 0n; i < 64n; i += 8n) digits.push(Number((word >> i) & 0xffn));
      magnitude >>= 64n;
    }
    this.varint(digits.length * 2 + (negative ? 1 : 0));
    this.raw(Uint8Array.from(digits));
  }

  /** @param {unknown} v */
  value(v) {
    switch (typeof v) {
      case 'undefined':
        return this.byte(T.undefined);
      case 'boolean':
        return this.byte(v ? T.true : T.false);
      case 'number':
        if (Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff && !Object.is(v, -0)) {
          this.byte(T.int32);
          return this.varint(v >= 0 ? v * 2 : -v * 2 - 1);
        }
        this.byte(T.double);
        return this.double(v);
      case 'bigint':
        this.byte(T.bigint);
        return this.bigint(v);
      case 'string':
        return this.string(v);
      case 'object':
        if (v === null) return this.byte(T.null);
        return this.receiver(v);
      default:
        throw notCloneable(v);
    }
  }

  /** @param {object} o */
  receiver(o) {
    const seen = this.ids.get(o);
    if (seen !== undefined) {
      this.byte(T.reference);
      return this.varint(seen);
    }
    if (ArrayBuffer.isView(o)) {
      // The buffer first (or a reference to it), then the view over it.
      this.receiver(o.buffer);
      this.ids.set(o, this.ids.size);
      return this.view(o);
    }
    const refused = refusedName(o);
    if (refused !== null) throw notCloneable(o, refused);
    this.ids.set(o, this.ids.size);
    if (Array.isArray(o)) return this.array(o);
    if (types.isDate(o)) {
      this.byte(T.date);
      return this.double(Date.prototype.getTime.call(o));
    }
    if (types.isRegExp(o)) {
      const re = /** @type {RegExp} */ (o);
      this.byte(T.regexp);
      this.string(re.source);
      let flags = 0;
      for (const [f, bit] of REGEXP_FLAGS) if (re.flags.includes(/** @type {string} */ (f))) flags += /** @type {number} */ (bit);
      return this.varint(flags);
    }
    if (types.isMap(o)) {
      const entries = [...Map.prototype.entries.call(o)];
      this.byte(T.beginMap);
      for (const [k, v] of entries) {
        this.value(k);
        this.value(v);
      }
      this.byte(T.endMap);
      return this.varint(entries.length * 2);
    }
    if (types.isSet(o)) {
      const values = [...Set.prototype.values.call(o)];
      this.byte(T.beginSet);
      for (const v of values) this.value(v);
      this.byte(T.endSet);
      return this.varint(values.length);
    }
    if (types.isArrayBuffer(o)) return this.arrayBuffer(/** @type {Buffer2024} */ (o));
    if (types.isBooleanObject(o)) return this.byte(Boolean.prototype.valueOf.call(o) ? T.trueObject : T.falseObject);
    if (types.isNumberObject(o)) {
      this.byte(T.numberObject);
      return this.double(Number.prototype.valueOf.call(o));
    }
    if (types.isBigIntObject(o)) {
      this.byte(T.bigintObject);
      return this.bigint(BigInt.prototype.valueOf.call(o));
    }
    if (types.isStringObject(o)) {
      this.byte(T.stringObject);
      return this.string(String.prototype.valueOf.call(o));
    }
    if (types.isNativeError(o)) return this.error(/** @type {Error} */ (o));
    this.byte(T.beginObject);
    const count = this.properties(o, Object.keys(o));
    this.byte(T.endObject);
    return this.varint(count);
  }

  /**
   * The properties `keys` of `o` that are still there when their turn comes (a getter may
   * delete one), each key then its value; how many were written.
   * @param {object} o
   * @param {string[]} keys
   */
  properties(o, keys) {
    let count = 0;
    for (const key of keys) {
      const d = Object.getOwnPropertyDescriptor(o, key);
      if (!d?.enumerable) continue;
      const value = /** @type {Record<string, unknown>} */ (o)[key];
      const index = arrayIndex(key);
      if (index >= 0) this.value(index);
      else this.string(key);
      this.value(value);
      count++;
    }
    return count;
  }

  /** @param {unknown[]} a */
  array(a) {
    const length = a.length;
    const keys = Object.keys(a);
    let holes = false;
    for (let i = 0; i < length; i++) {
      if (!Object.hasOwn(a, i)) {
        holes = true;
        break;
      }
    }
    if (holes) {
      this.byte(T.beginSparse);
      this.varint(length);
      const count = this.properties(a, keys);
      this.byte(T.endSparse);
      this.varint(count);
      return this.varint(length);
    }
    this.byte(T.beginDense);
    this.varint(length);
    for (let i = 0; i < length; i++) this.value(a[i]);
    const count = this.properties(a, keys.filter((k) => !(arrayIndex(k) >= 0 && arrayIndex(k) < length)));
    this.byte(T.endDense);
    this.varint(count);
    return this.varint(length);
  }

  /** @param {Buffer2024} b */
  arrayBuffer(b) {
    if (b.detached) throw new Error('An ArrayBuffer is detached and could not be cloned.');
    const bytes = new Uint8Array(b);
    if (b.resizable) {
      this.byte(T.resizableArrayBuffer);
      this.varint(b.byteLength);
      this.varint(b.maxByteLength);
    } else {
      this.byte(T.arrayBuffer);
      this.varint(b.byteLength);
    }
    this.raw(bytes);
  }

  /** @param {ArrayBufferView} v */
  view(v) {
    const name = types.isDataView(v) ? 'DataView' : Object.prototype.toString.call(v).slice(8, -1);
    const tag = /** @type {Record<string, number>} */ (VIEW_TAGS)[name];
    if (tag === undefined) throw notCloneable(v, `#<${name}>`);
    const buffer = /** @type {Buffer2024} */ (v.buffer);
    // A view over a resizable buffer made without a length follows the buffer's length.
    const tracking = buffer.resizable && isLengthTracking(v);
    this.byte(T.view);
    this.byte(tag);
    this.varint(v.byteOffset);
    this.varint(v.byteLength);
    this.varint((tracking ? 1 : 0) | (buffer.resizable ? 2 : 0));
  }

  /** @param {Error} e */
  error(e) {
    const message = Object.getOwnPropertyDescriptor(e, 'message');
    const cause = Object.getOwnPropertyDescriptor(e, 'cause');
    this.byte(T.error);
    const name = String(e.name);
    const tag = /** @type {Record<string, number>} */ (ERROR_TAGS)[name];
    if (tag !== undefined) this.varint(tag);
    if (message && 'value' in message) {
      this.varint(ERROR_MESSAGE);
      this.string(String(message.value));
    }
    const stack = e.stack;
    if (typeof stack === 'string') {
      this.varint(ERROR_STACK);
      this.string(stack);
    }
    if (cause && 'value' in cause) {
      this.varint(ERROR_CAUSE);
      this.value(cause.value);
    }
    this.varint(ERROR_END);
  }
}

/** @param {number} n */
function varintSize(n) {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
}

/**
 * Whether a view over a resizable buffer tracks its length (made without one).
 * @param {ArrayBufferView} v
 */
function isLengthTracking(v) {
  const buffer = /** @type {Buffer2024} */ (v.buffer);
  const width = 'BYTES_PER_ELEMENT' in v ? /** @type {number} */ (v.BYTES_PER_ELEMENT) : 1;
  return v.byteOffset + v.byteLength === buffer.byteLength && v.byteLength % width === 0 && buffer.maxByteLength > buffer.byteLength;
}

/**
 * `value` in V8's format, header first.
 * @param {unknown} value
 * @returns {Buffer}
 */
function encode(value) {
  const w = new Writer();
  w.byte(T.version);
  w.varint(VERSION);
  w.value(value);
  return Buffer.from(w.bytes.buffer, w.bytes.byteOffset, w.length);
}

class Reader {
  /** @param {Uint8Array} bytes */
  constructor(bytes) {
    this.bytes = bytes;
    this.at = 0;
    /** @type {unknown[]} */
    this.objects = [];
  }

  /** @param {string} why */
  fail(why) {
    return new Error(`Unable to deserialize cloned data (${why} at byte ${this.at}).`);
  }

  byte() {
    if (this.at >= this.bytes.length) throw this.fail('the data ends');
    return this.bytes[this.at++];
  }

  varint() {
    let n = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 0x80;
      if (scale > 2 ** 63) throw this.fail('a varint runs on');
    }
  }

  double() {
    if (this.at + 8 > this.bytes.length) throw this.fail('the data ends');
    const d = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.at, 8).getFloat64(0, true);
    this.at += 8;
    return d;
  }

  /** @param {number} n */
  take(n) {
    if (n > this.bytes.length - this.at) throw this.fail('the data ends');
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  /** The next tag, past any padding. */
  tag() {
    let t;
    do t = this.byte();
    while (t === T.padding);
    return t;
  }

  peek() {
    let i = this.at;
    while (i < this.bytes.length && this.bytes[i] === T.padding) i++;
    return i < this.bytes.length ? this.bytes[i] : -1;
  }

  header() {
    if (this.byte() !== T.version) throw this.fail('no header');
    const version = this.varint();
    if (version > VERSION) throw this.fail(`format ${version} is newer than ${VERSION}`);
  }

  /** @param {number} length */
  oneByte(length) {
    const raw = this.take(length);
    let s = '';
    for (let i = 0; i < raw.length; i += 8192) s += String.fromCharCode.apply(null, Array.from(raw.subarray(i, i + 8192)));
    return s;
  }

  /** @param {number} byteLength */
  twoByte(byteLength) {
    if (byteLength % 2) throw this.fail('an odd two-byte length');
    const raw = this.take(byteLength);
    /** @type {number[]} */
    const units = [];
    for (let i = 0; i < raw.length; i += 2) units.push(raw[i] | (raw[i + 1] << 8));
    let s = '';
    for (let i = 0; i < units.length; i += 8192) s += String.fromCharCode.apply(null, units.slice(i, i + 8192));
    return s;
  }

  bigint() {
    const bitfield = this.varint();
    const raw = this.take(Math.floor(bitfield / 2));
    let b = 0n;
    for (let i = raw.length - 1; i >= 0; i--) b = (b << 8n) | BigInt(raw[i]);
    return bitfield % 2 ? -b : b;
  }

  /** A string where V8 writes one (a key, a pattern, a message). */
  string() {
    const v = this.value();
    if (typeof v !== 'string') throw this.fail('a string expected');
    return v;
  }

  /** @param {object} o */
  keep(o) {
    this.objects.push(o);
    return o;
  }

  value() {
    const v = this.object();
    // A view consumes the buffer read just before it.
    if (v instanceof ArrayBuffer && this.peek() === T.view) {
      this.tag();
      return this.view(v);
    }
    return v;
  }

  /** @returns {unknown} */
  object() {
    const tag = this.tag();
    switch (tag) {
      case T.undefined:
        return undefined;
      case T.null:
        return null;
      case T.true:
        return true;
      case T.false:
        return false;
      case T.int32: {
        const z = this.varint() % 2 ** 32;
        return z % 2 ? -(z + 1) / 2 : z / 2;
      }
      case T.uint32:
        return this.varint() % 2 ** 32;
      case T.double:
        return this.double();
      case T.bigint:
        return this.bigint();
      case T.oneByte:
        return this.oneByte(this.varint());
      case T.twoByte:
        return this.twoByte(this.varint());
      case T.utf8:
        return Buffer.from(this.take(this.varint())).toString('utf8');
      case T.reference: {
        const id = this.varint();
        if (id >= this.objects.length) throw this.fail(`a reference to object ${id}, not yet read`);
        return this.objects[id];
      }
      case T.beginObject: {
        const o = this.keep({});
        const count = this.properties(o, T.endObject);
        if (this.varint() !== count) throw this.fail('an object count that does not match');
        return o;
      }
      case T.beginSparse: {
        const length = this.varint();
        const a = /** @type {unknown[]} */ (this.keep(new Array(length)));
        const count = this.properties(a, T.endSparse);
        if (this.varint() !== count || this.varint() !== length) throw this.fail('a sparse array count that does not match');
        return a;
      }
      case T.beginDense: {
        const length = this.varint();
        const a = /** @type {unknown[]} */ (this.keep(new Array(length)));
        for (let i = 0; i < length; i++) {
          if (this.peek() === T.theHole) {
            this.tag();
            continue;
          }
          define(a, i, this.value());
        }
        const count = this.properties(a, T.endDense);
        if (this.varint() !== count || this.varint() !== length) throw this.fail('a dense array count that does not match');
        return a;
      }
      case T.date:
        return this.keep(new Date(this.double()));
      case T.trueObject:
        return this.keep(Object(true));
      case T.falseObject:
        return this.keep(Object(false));
      case T.numberObject:
        return this.keep(Object(this.double()));
      case T.bigintObject:
        return this.keep(Object(this.bigint()));
      case T.stringObject: {
        const id = this.objects.length;
        this.objects.push(undefined);
        const s = Object(this.string());
        this.objects[id] = s;
        return s;
      }
      case T.regexp: {
        const id = this.objects.length;
        this.objects.push(undefined);
        const source = this.string();
        const bits = this.varint();
        let flags = '';
        for (const [f, bit] of REGEXP_FLAGS) if (bits & /** @type {number} */ (bit)) flags += f;
        const re = new RegExp(source, flags);
        this.objects[id] = re;
        return re;
      }
      case T.beginMap: {
        const m = /** @type {Map<unknown, unknown>} */ (this.keep(new Map()));
        let read = 0;
        while (this.peek() !== T.endMap) {
          const k = this.value();
          m.set(k, this.value());
          read += 2;
        }
        this.tag();
        if (this.varint() !== read) throw this.fail('a map length that does not match');
        return m;
      }
      case T.beginSet: {
        const s = /** @type {Set<unknown>} */ (this.keep(new Set()));
        let read = 0;
        while (this.peek() !== T.endSet) {
          s.add(this.value());
          read++;
        }
        this.tag();
        if (this.varint() !== read) throw this.fail('a set length that does not match');
        return s;
      }
      case T.arrayBuffer: {
        // The bytes first: a length past the data allocates nothing.
        const bytes = this.take(this.varint());
        const b = new ArrayBuffer(bytes.length);
        new Uint8Array(b).set(bytes);
        return this.keep(b);
      }
      case T.resizableArrayBuffer: {
        const length = this.varint();
        const max = this.varint();
        if (length > max) throw this.fail('a resizable buffer longer than its maximum');
        if (length > this.bytes.length - this.at) throw this.fail('the data ends');
        // Resizable buffers (ES2024), where the host has them.
        const Resizable = /** @type {new (length: number, options: { maxByteLength: number }) => ArrayBuffer} */ (ArrayBuffer);
        const b = new Resizable(length, { maxByteLength: max });
        new Uint8Array(b).set(this.take(length));
        return this.keep(b);
      }
      case T.error:
        return this.error();
      case T.endObject:
      case T.endDense:
      case T.endSparse:
      case T.endMap:
      case T.endSet:
        throw this.fail('an end without its beginning');
      default:
        throw this.fail(`tag 0x${tag.toString(16)}, a kind of value this host cannot read`);
    }
  }

  /**
   * Key-value pairs into `o` up to the tag `end`; how many.
   * @param {object} o
   * @param {number} end
   */
  properties(o, end) {
    let count = 0;
    while (this.peek() !== end) {
      const key = this.value();
      if (typeof key !== 'string' && typeof key !== 'number') throw this.fail('a property key that is neither a string nor a number');
      define(o, key, this.value());
      count++;
    }
    this.tag();
    return count;
  }

  /** @param {ArrayBuffer} buffer */
  view(buffer) {
    const tag = this.byte();
    const offset = this.varint();
    const byteLength = this.varint();
    const flags = this.varint();
    const name = VIEW_NAMES.get(tag);
    const View = name && /** @type {Record<string, any>} */ (globalThis)[name];
    if (!View) throw this.fail(`a view of kind 0x${tag.toString(16)}, which this host does not have`);
    const width = View.BYTES_PER_ELEMENT ?? 1;
    if (offset + byteLength > buffer.byteLength || offset % width || byteLength % width) throw this.fail('a view outside its buffer');
    const v = flags & 1 ? new View(buffer, offset) : new View(buffer, offset, name === 'DataView' ? byteLength : byteLength / width);
    return this.keep(v);
  }

  error() {
    const e = new Error();
    this.keep(e);
    delete e.stack;
    for (;;) {
      const tag = this.varint();
      const name = ERROR_NAMES.get(tag);
      if (name) Object.setPrototypeOf(e, /** @type {Record<string, any>} */ (globalThis)[name].prototype);
      else if (tag === ERROR_MESSAGE) Object.defineProperty(e, 'message', { value: this.string(), writable: true, enumerable: false, configurable: true });
      else if (tag === ERROR_STACK) Object.defineProperty(e, 'stack', { value: this.string(), writable: true, enumerable: false, configurable: true });
      else if (tag === ERROR_CAUSE) Object.defineProperty(e, 'cause', { value: this.value(), writable: true, enumerable: false, configurable: true });
      else if (tag === ERROR_END) return e;
      else throw this.fail(`error tag 0x${tag.toString(16)}`);
    }
  }
}

/**
 * Defines `key` on `o` as an own data property, as the structured clone does (so `__proto__`
 * is a key like any other).
 * @param {object} o
 * @param {string | number} key
 * @param {unknown} value
 */
function define(o, key, value) {
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * The value `bytes` (V8's format, header first) holds.
 * @param {Uint8Array} bytes
 * @returns {unknown}
 */
function decode(bytes) {
  const r = new Reader(bytes);
  r.header();
  const v = r.value();
  return v;
}

module.exports = { encode, decode, VERSION };
