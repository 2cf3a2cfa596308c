// Headers (Fetch Standard): a list of [lowercased name, value] pairs, with the guards requests
// and responses put on it. Built-in methods through primordials.js's captures, the list walked
// by index (primordials.js says why).
(function (load) {
'use strict';
const {
  ReflectApply, ReflectGetOwnPropertyDescriptor, ReflectOwnKeys, SetCtor, StringCtor, SymbolIterator, SymbolToStringTag,
  TypeErrorCtor, arrayPush, arraySort, call, regexpExec, setAdd, setHas, stringCharCodeAt, stringSlice, stringToLowerCase,
} = load('primordials.js');

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Whether `s` is an HTTP token (a header name, a method).
function isToken(s) {
  return call(regexpExec, TOKEN, s) !== null;
}
// HTTP whitespace: tab, LF, CR, space.
function isHttpWhitespace(c) {
  return c === 0x09 || c === 0x0a || c === 0x0d || c === 0x20;
}
function normalizeValue(v) {
  const s = StringCtor(v);
  let start = 0;
  let end = s.length;
  while (start < end && isHttpWhitespace(call(stringCharCodeAt, s, start))) start++;
  while (end > start && isHttpWhitespace(call(stringCharCodeAt, s, end - 1))) end--;
  return start === 0 && end === s.length ? s : call(stringSlice, s, start, end);
}
const INVALID_VALUE = /[\0\r\n\u0100-\uffff]/;
function checkHeader(name, value, what) {
  if (!isToken(name)) throw new TypeErrorCtor(`Failed to execute '${what}' on 'Headers': Invalid name`);
  // A value is a ByteString without NUL, CR or LF.
  if (call(regexpExec, INVALID_VALUE, value) !== null) throw new TypeErrorCtor(`Failed to execute '${what}' on 'Headers': Invalid value`);
}
// Headers a response's header list never takes (Fetch: forbidden response-header names).
const FORBIDDEN_RESPONSE = new SetCtor(['set-cookie', 'set-cookie2']);

// The pairs of `list` whose name is not `key`, keeping those before index `keep` whatever their
// name.
function without(list, key, keep = 0) {
  const out = [];
  for (let i = 0; i < list.length; i++) {
    if (i < keep || list[i][0] !== key) call(arrayPush, out, list[i]);
  }
  return out;
}
// The values of the pairs of `list` named `key`, in order.
function valuesOf(list, key) {
  const out = [];
  for (let i = 0; i < list.length; i++) {
    if (list[i][0] === key) call(arrayPush, out, list[i][1]);
  }
  return out;
}

// Access to a Headers' state for Request, Response, fetch and retained handles (exported to
// runtime files, never to programs); assigned in the static block. They act as the methods
// do, without going through Headers.prototype, which a program may change.
let freezeHeaders; // (h): h, made immutable (a fetched response's headers)
let guardResponse; // (h): h, with the forbidden response-header names dropped for good
let headerList; // (h): its [lowercased name, value] list
let headersFrom; // (pairs): new Headers holding the [name, value] pairs of an array the runtime made
let copyHeaders; // (h): new Headers holding h's list
let hasHeader; // (h, name): h.has(name)
let getHeader; // (h, name): h.get(name)
let appendHeader; // (h, name, value): h.append(name, value)

class Headers {
  #list = []; // [lowercased name, value], in insertion order
  #immutable = false;
  #responseGuard = false;
  constructor(init = undefined) {
    if (init === undefined) return;
    if (typeof init === 'object' && init !== null || typeof init === 'function') {
      if (typeof init[SymbolIterator] === 'function') {
        // A sequence of pairs, read through its own iterator, as WebIDL says.
        for (const pair of init) {
          const p = [...pair];
          if (p.length !== 2) throw new TypeErrorCtor("Failed to construct 'Headers': Invalid value");
          this.#append(p[0], p[1], 'append');
        }
      } else {
        const keys = ReflectOwnKeys(init);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          const desc = ReflectGetOwnPropertyDescriptor(init, key);
          if (desc?.enumerable) this.#append(key, init[key], 'append');
        }
      }
    } else {
      throw new TypeErrorCtor("Failed to construct 'Headers': The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.");
    }
  }
  static {
    freezeHeaders = (h) => {
      h.#immutable = true;
      return h;
    };
    guardResponse = (h) => {
      h.#responseGuard = true;
      const kept = [];
      for (let i = 0; i < h.#list.length; i++) {
        if (!call(setHas, FORBIDDEN_RESPONSE, h.#list[i][0])) call(arrayPush, kept, h.#list[i]);
      }
      h.#list = kept;
      return h;
    };
    headerList = (h) => h.#list;
    headersFrom = (pairs) => {
      const h = new Headers();
      for (let i = 0; i < pairs.length; i++) h.#append(pairs[i][0], pairs[i][1], 'append');
      return h;
    };
    copyHeaders = (from) => {
      const h = new Headers();
      for (let i = 0; i < from.#list.length; i++) call(arrayPush, h.#list, [from.#list[i][0], from.#list[i][1]]);
      return h;
    };
    hasHeader = (h, name) => h.#has(name);
    getHeader = (h, name) => h.#get(call(stringToLowerCase, name));
    appendHeader = (h, name, value) => h.#append(name, value, 'append');
  }
  #guard(what) {
    if (this.#immutable) throw new TypeErrorCtor(`Failed to execute '${what}' on 'Headers': Headers are immutable`);
  }
  #append(name, value, what) {
    name = StringCtor(name);
    value = normalizeValue(value);
    checkHeader(name, value, what);
    this.#guard(what);
    const key = call(stringToLowerCase, name);
    if (this.#responseGuard && call(setHas, FORBIDDEN_RESPONSE, key)) return;
    call(arrayPush, this.#list, [key, value]);
  }
  #get(key) {
    const values = valuesOf(this.#list, key);
    if (values.length === 0) return null;
    let out = values[0];
    for (let i = 1; i < values.length; i++) out += ', ' + values[i];
    return out;
  }
  #has(name) {
    name = StringCtor(name);
    checkHeader(name, '', 'has');
    const key = call(stringToLowerCase, name);
    for (let i = 0; i < this.#list.length; i++) {
      if (this.#list[i][0] === key) return true;
    }
    return false;
  }
  #set(name, value) {
    name = StringCtor(name);
    value = normalizeValue(value);
    checkHeader(name, value, 'set');
    this.#guard('set');
    const key = call(stringToLowerCase, name);
    if (this.#responseGuard && call(setHas, FORBIDDEN_RESPONSE, key)) return;
    let i = 0;
    while (i < this.#list.length && this.#list[i][0] !== key) i++;
    if (i === this.#list.length) call(arrayPush, this.#list, [key, value]);
    else {
      this.#list[i] = [key, value];
      this.#list = without(this.#list, key, i + 1);
    }
  }
  append(name, value) {
    this.#append(name, value, 'append');
  }
  delete(name) {
    name = StringCtor(name);
    checkHeader(name, '', 'delete');
    this.#guard('delete');
    this.#list = without(this.#list, call(stringToLowerCase, name));
  }
  get(name) {
    name = StringCtor(name);
    checkHeader(name, '', 'get');
    return this.#get(call(stringToLowerCase, name));
  }
  getSetCookie() {
    return valuesOf(this.#list, 'set-cookie');
  }
  has(name) {
    return this.#has(name);
  }
  set(name, value) {
    this.#set(name, value);
  }
  // Sorted by name, duplicates combined with ", " (set-cookie kept apart), as the standard's
  // "sort and combine".
  #sorted() {
    const names = [];
    const seen = new SetCtor();
    for (let i = 0; i < this.#list.length; i++) {
      const name = this.#list[i][0];
      if (call(setHas, seen, name)) continue;
      call(setAdd, seen, name);
      call(arrayPush, names, name);
    }
    call(arraySort, names);
    const out = [];
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (name === 'set-cookie') {
        const cookies = valuesOf(this.#list, name);
        for (let j = 0; j < cookies.length; j++) call(arrayPush, out, [name, cookies[j]]);
      } else call(arrayPush, out, [name, this.#get(name)]);
    }
    return out;
  }
  // Iteration is live, as WebIDL's pair iterators are: each step sorts and combines the list
  // as it is now and takes the next index.
  forEach(callback, thisArg = undefined) {
    for (let i = 0; ; i++) {
      const pairs = this.#sorted();
      if (i >= pairs.length) return;
      ReflectApply(callback, thisArg, [pairs[i][1], pairs[i][0], this]);
    }
  }
  *#iterate(kind) {
    for (let i = 0; ; i++) {
      const pairs = this.#sorted();
      if (i >= pairs.length) return;
      yield kind === 'keys' ? pairs[i][0] : kind === 'values' ? pairs[i][1] : [pairs[i][0], pairs[i][1]];
    }
  }
  entries() { return this.#iterate('entries'); }
  keys() { return this.#iterate('keys'); }
  values() { return this.#iterate('values'); }
  [SymbolIterator]() { return this.#iterate('entries'); }
  get [SymbolToStringTag]() { return 'Headers'; }
}

return {
  isToken, freezeHeaders, guardResponse, headerList, headersFrom, copyHeaders, hasHeader, getHeader, appendHeader, Headers,
};
})
