// URL, URLSearchParams (URL Standard). Parsing and the setters are the `url` crate's WHATWG
// implementation in Rust (natives/web.rs); this file keeps the components and the live search params.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const {
  ReflectApply, ReflectGetOwnPropertyDescriptor, ReflectOwnKeys, StringCtor, SymbolIterator, SymbolToStringTag,
  TypeErrorCtor, WeakMapCtor,
} = load('primordials.js');

// Component order in the arrays natives.urlParse/urlSet return:
const [HREF, ORIGIN, PROTOCOL, USERNAME, PASSWORD, HOST, HOSTNAME, PORT, PATHNAME, SEARCH, HASH] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const urlParams = new WeakMapCtor(); // URL -> its URLSearchParams
const paramsUrl = new WeakMapCtor(); // URLSearchParams -> its URL

// File-private access to the two classes' state; assigned in their static blocks.
let resetParams; // (params, query): the list parsed from `query`, as the URL's query changed
let setURLSearch; // (url, value): sets the query without re-parsing the URL's params

class URLSearchParams {
  #list = [];
  constructor(init = '') {
    if (init instanceof URLSearchParams) {
      this.#list = init.#list.map(([k, v]) => [k, v]);
    } else if (init !== null && typeof init === 'object' || typeof init === 'function') {
      if (typeof init[SymbolIterator] === 'function') {
        for (const pair of init) {
          const p = [...pair];
          if (p.length !== 2) {
            throw new TypeErrorCtor("Failed to construct 'URLSearchParams': The provided value cannot be converted to a sequence of pairs.");
          }
          this.#list.push([toUSV(p[0]), toUSV(p[1])]);
        }
      } else {
        for (const key of ReflectOwnKeys(init)) {
          const desc = ReflectGetOwnPropertyDescriptor(init, key);
          if (typeof key === 'string' && desc?.enumerable) this.#list.push([toUSV(key), toUSV(init[key])]);
        }
      }
    } else {
      let s = toUSV(init);
      if (s.startsWith('?')) s = s.slice(1);
      this.#list = natives.formParse(s);
    }
  }
  static {
    resetParams = (params, query) => {
      params.#list = natives.formParse(query);
    };
  }
  #update() {
    const url = paramsUrl.get(this);
    if (url) setURLSearch(url, this.#list.length === 0 ? '' : natives.formSerialize(this.#list));
  }
  get size() { return this.#list.length; }
  append(name, value) {
    this.#list.push([toUSV(name), toUSV(value)]);
    this.#update();
  }
  delete(name, value) {
    name = toUSV(name);
    const v = value === undefined ? undefined : toUSV(value);
    this.#list = this.#list.filter(([k, val]) => !(k === name && (v === undefined || val === v)));
    this.#update();
  }
  get(name) {
    name = toUSV(name);
    const hit = this.#list.find(([k]) => k === name);
    return hit ? hit[1] : null;
  }
  getAll(name) {
    name = toUSV(name);
    return this.#list.filter(([k]) => k === name).map(([, v]) => v);
  }
  has(name, value) {
    name = toUSV(name);
    const v = value === undefined ? undefined : toUSV(value);
    return this.#list.some(([k, val]) => k === name && (v === undefined || val === v));
  }
  set(name, value) {
    name = toUSV(name);
    value = toUSV(value);
    const i = this.#list.findIndex(([k]) => k === name);
    if (i < 0) this.#list.push([name, value]);
    else {
      this.#list[i][1] = value;
      this.#list = this.#list.filter(([k], j) => j <= i || k !== name);
    }
    this.#update();
  }
  sort() {
    // Stable, by UTF-16 code units of the names.
    this.#list = this.#list
      .map((p, i) => [p, i])
      .sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]))
      .map(([p]) => p);
    this.#update();
  }
  forEach(callback, thisArg = undefined) {
    for (let i = 0; i < this.#list.length; i++) {
      const [k, v] = this.#list[i];
      ReflectApply(callback, thisArg, [v, k, this]);
    }
  }
  toString() {
    return natives.formSerialize(this.#list);
  }
  *#iterate(kind) {
    for (let i = 0; i < this.#list.length; i++) {
      const [k, v] = this.#list[i];
      yield kind === 'keys' ? k : kind === 'values' ? v : [k, v];
    }
  }
  entries() { return this.#iterate('entries'); }
  keys() { return this.#iterate('keys'); }
  values() { return this.#iterate('values'); }
  [SymbolIterator]() { return this.#iterate('entries'); }
  get [SymbolToStringTag]() { return 'URLSearchParams'; }
}
function toUSV(v) {
  return StringCtor(v).toWellFormed();
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
  }
  #set(attr, value, syncParams = true) {
    const c = natives.urlSet(this.#c[HREF], attr, toUSV(value));
    if (c === null) {
      if (attr === 'href') throw new TypeErrorCtor(`Failed to set the 'href' property on 'URL': Invalid URL`);
      return;
    }
    this.#c = c;
    const params = urlParams.get(this);
    if (syncParams && params) resetParams(params, c[SEARCH].slice(1));
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
    let params = urlParams.get(this);
    if (!params) {
      // Initialised from the query itself: a second leading "?" is data, not a prefix.
      params = new URLSearchParams();
      resetParams(params, this.#c[SEARCH].slice(1));
      urlParams.set(this, params);
      paramsUrl.set(params, this);
    }
    return params;
  }
  toString() { return this.#c[HREF]; }
  toJSON() { return this.#c[HREF]; }
  get [SymbolToStringTag]() { return 'URL'; }
}

return { URLSearchParams, URL };
})
