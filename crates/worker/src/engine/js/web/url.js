// URL, URLSearchParams (URL Standard). Parsing and the setters are the `url` crate's WHATWG
// implementation in Rust (natives/web.rs); this file keeps the components and the live search params.
// Built-in methods through primordials.js's captures, lists walked by index (primordials.js says why).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const {
  ReflectApply, ReflectGetOwnPropertyDescriptor, ReflectOwnKeys, StringCtor, SymbolIterator, SymbolToStringTag,
  TypeErrorCtor, WeakMapCtor, arrayPush, arraySort, call, stringSlice, stringToWellFormed, weakMapGet, weakMapSet,
} = load('primordials.js');

// Component order in the arrays natives.urlParse/urlSet return:
const HREF = 0, ORIGIN = 1, PROTOCOL = 2, USERNAME = 3, PASSWORD = 4, HOST = 5, HOSTNAME = 6, PORT = 7, PATHNAME = 8,
  SEARCH = 9, HASH = 10;
const urlParams = new WeakMapCtor(); // URL -> its URLSearchParams
const paramsUrl = new WeakMapCtor(); // URLSearchParams -> its URL

// File-private access to the two classes' state; assigned in their static blocks.
let resetParams; // (params, query): the list parsed from `query`, as the URL's query changed
let setURLSearch; // (url, value): sets the query without re-parsing the URL's params
// For Request and Response (exported to runtime files, never to programs): a URL's parts read
// from its private state, not through URL.prototype, which a program may change.
let urlHref; // (url): its href
let urlHasCredentials; // (url): whether it has a username or a password
let paramsString; // (params): its toString(), for a body

// The pairs of `list` that `keep(pair, index)` keeps, in order.
function kept(list, keep) {
  const out = [];
  for (let i = 0; i < list.length; i++) {
    if (keep(list[i], i)) call(arrayPush, out, list[i]);
  }
  return out;
}
// The index of the first pair of `list` named `name`, or -1.
function indexOf(list, name) {
  for (let i = 0; i < list.length; i++) {
    if (list[i][0] === name) return i;
  }
  return -1;
}

class URLSearchParams {
  #list = [];
  constructor(init = '') {
    if (init instanceof URLSearchParams) {
      for (let i = 0; i < init.#list.length; i++) call(arrayPush, this.#list, [init.#list[i][0], init.#list[i][1]]);
    } else if (init !== null && typeof init === 'object' || typeof init === 'function') {
      if (typeof init[SymbolIterator] === 'function') {
        // A sequence of pairs, read through its own iterator, as WebIDL says.
        for (const pair of init) {
          const p = [...pair];
          if (p.length !== 2) {
            throw new TypeErrorCtor("Failed to construct 'URLSearchParams': The provided value cannot be converted to a sequence of pairs.");
          }
          call(arrayPush, this.#list, [toUSV(p[0]), toUSV(p[1])]);
        }
      } else {
        const keys = ReflectOwnKeys(init);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          const desc = ReflectGetOwnPropertyDescriptor(init, key);
          if (typeof key === 'string' && desc?.enumerable) call(arrayPush, this.#list, [toUSV(key), toUSV(init[key])]);
        }
      }
    } else {
      let s = toUSV(init);
      if (s[0] === '?') s = call(stringSlice, s, 1);
      this.#list = natives.formParse(s);
    }
  }
  static {
    resetParams = (params, query) => {
      params.#list = natives.formParse(query);
    };
    paramsString = (params) => natives.formSerialize(params.#list);
  }
  #update() {
    const url = call(weakMapGet, paramsUrl, this);
    if (url) setURLSearch(url, this.#list.length === 0 ? '' : natives.formSerialize(this.#list));
  }
  get size() { return this.#list.length; }
  append(name, value) {
    call(arrayPush, this.#list, [toUSV(name), toUSV(value)]);
    this.#update();
  }
  delete(name, value) {
    name = toUSV(name);
    const v = value === undefined ? undefined : toUSV(value);
    this.#list = kept(this.#list, (p) => !(p[0] === name && (v === undefined || p[1] === v)));
    this.#update();
  }
  get(name) {
    name = toUSV(name);
    const i = indexOf(this.#list, name);
    return i < 0 ? null : this.#list[i][1];
  }
  getAll(name) {
    name = toUSV(name);
    const out = [];
    for (let i = 0; i < this.#list.length; i++) {
      if (this.#list[i][0] === name) call(arrayPush, out, this.#list[i][1]);
    }
    return out;
  }
  has(name, value) {
    name = toUSV(name);
    const v = value === undefined ? undefined : toUSV(value);
    for (let i = 0; i < this.#list.length; i++) {
      const p = this.#list[i];
      if (p[0] === name && (v === undefined || p[1] === v)) return true;
    }
    return false;
  }
  set(name, value) {
    name = toUSV(name);
    value = toUSV(value);
    const i = indexOf(this.#list, name);
    if (i < 0) call(arrayPush, this.#list, [name, value]);
    else {
      this.#list[i][1] = value;
      this.#list = kept(this.#list, (p, j) => j <= i || p[0] !== name);
    }
    this.#update();
  }
  sort() {
    // Stable, by UTF-16 code units of the names.
    const indexed = [];
    for (let i = 0; i < this.#list.length; i++) call(arrayPush, indexed, [this.#list[i], i]);
    call(arraySort, indexed, (a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]));
    const sorted = [];
    for (let i = 0; i < indexed.length; i++) call(arrayPush, sorted, indexed[i][0]);
    this.#list = sorted;
    this.#update();
  }
  forEach(callback, thisArg = undefined) {
    for (let i = 0; i < this.#list.length; i++) {
      const p = this.#list[i];
      ReflectApply(callback, thisArg, [p[1], p[0], this]);
    }
  }
  toString() {
    return natives.formSerialize(this.#list);
  }
  *#iterate(kind) {
    for (let i = 0; i < this.#list.length; i++) {
      const p = this.#list[i];
      yield kind === 'keys' ? p[0] : kind === 'values' ? p[1] : [p[0], p[1]];
    }
  }
  entries() { return this.#iterate('entries'); }
  keys() { return this.#iterate('keys'); }
  values() { return this.#iterate('values'); }
  [SymbolIterator]() { return this.#iterate('entries'); }
  get [SymbolToStringTag]() { return 'URLSearchParams'; }
}
function toUSV(v) {
  return call(stringToWellFormed, StringCtor(v));
}

class URL {
  #c;
  constructor(url, base = undefined) {
    if (arguments.length === 0) throw new TypeErrorCtor("Failed to construct 'URL': 1 argument required, but only 0 present.");
    const c = natives.urlParse(toUSV(url), base === undefined ? undefined : toUSV(base));
    if (c === null) throw new TypeErrorCtor(`Failed to construct 'URL': Invalid URL`);
    this.#c = c;
  }
  static canParse(url, base = undefined) {
    return natives.urlParse(toUSV(url), base === undefined ? undefined : toUSV(base)) !== null;
  }
  static parse(url, base = undefined) {
    try {
      return new URL(url, base);
    } catch {
      return null;
    }
  }
  static {
    setURLSearch = (url, value) => {
      url.#set('search', value, false);
    };
    urlHref = (url) => url.#c[HREF];
    urlHasCredentials = (url) => url.#c[USERNAME] !== '' || url.#c[PASSWORD] !== '';
  }
  #set(attr, value, syncParams = true) {
    const c = natives.urlSet(this.#c[HREF], attr, toUSV(value));
    if (c === null) {
      if (attr === 'href') throw new TypeErrorCtor(`Failed to set the 'href' property on 'URL': Invalid URL`);
      return;
    }
    this.#c = c;
    const params = call(weakMapGet, urlParams, this);
    if (syncParams && params) resetParams(params, call(stringSlice, c[SEARCH], 1));
  }
  get href() { return this.#c[HREF]; }
  set href(v) { this.#set('href', v); }
  get origin() { return this.#c[ORIGIN]; }
  get protocol() { return this.#c[PROTOCOL]; }
  set protocol(v) { this.#set('protocol', v); }
  get username() { return this.#c[USERNAME]; }
  set username(v) { this.#set('username', v); }
  get password() { return this.#c[PASSWORD]; }
  set password(v) { this.#set('password', v); }
  get host() { return this.#c[HOST]; }
  set host(v) { this.#set('host', v); }
  get hostname() { return this.#c[HOSTNAME]; }
  set hostname(v) { this.#set('hostname', v); }
  get port() { return this.#c[PORT]; }
  set port(v) { this.#set('port', v); }
  get pathname() { return this.#c[PATHNAME]; }
  set pathname(v) { this.#set('pathname', v); }
  get search() { return this.#c[SEARCH]; }
  set search(v) { this.#set('search', v); }
  get hash() { return this.#c[HASH]; }
  set hash(v) { this.#set('hash', v); }
  get searchParams() {
    let params = call(weakMapGet, urlParams, this);
    if (!params) {
      // Initialised from the query itself: a second leading "?" is data, not a prefix.
      params = new URLSearchParams();
      resetParams(params, call(stringSlice, this.#c[SEARCH], 1));
      call(weakMapSet, urlParams, this, params);
      call(weakMapSet, paramsUrl, params, this);
    }
    return params;
  }
  toString() { return this.#c[HREF]; }
  toJSON() { return this.#c[HREF]; }
  get [SymbolToStringTag]() { return 'URL'; }
}

return { paramsString, urlHasCredentials, urlHref, URLSearchParams, URL };
})
