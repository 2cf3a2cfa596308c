// Headers (Fetch Standard): a list of [lowercased name, value] pairs, with the guards requests
// and responses put on it.
(function (load) {
'use strict';
const {
  ReflectApply, ReflectGetOwnPropertyDescriptor, ReflectOwnKeys, SetCtor, StringCtor, SymbolIterator, SymbolToStringTag,
  TypeErrorCtor,
} = load('primordials.js');

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HTTP_WS = /^[\t\n\r ]+|[\t\n\r ]+$/g;
function normalizeValue(v) {
  return StringCtor(v).replace(HTTP_WS, '');
}
function checkHeader(name, value, what) {
  if (!TOKEN.test(name)) throw new TypeErrorCtor(`Failed to execute '${what}' on 'Headers': Invalid name`);
  // A value is a ByteString without NUL, CR or LF.
  if (/[\0\r\n\u0100-\uffff]/.test(value)) throw new TypeErrorCtor(`Failed to execute '${what}' on 'Headers': Invalid value`);
}
// Headers a response's header list never takes (Fetch: forbidden response-header names).
const FORBIDDEN_RESPONSE = new SetCtor(['set-cookie', 'set-cookie2']);

// Access to a Headers' state for Request, Response and fetch (exported to runtime files, never
// to programs); assigned in the static block.
let freezeHeaders; // (h): h, made immutable (a fetched response's headers)
let guardResponse; // (h): h, with the forbidden response-header names dropped for good
let headerList; // (h): its [lowercased name, value] list

class Headers {
  #list = []; // [lowercased name, value], in insertion order
  #immutable = false;
  #responseGuard = false;
  constructor(init = undefined) {
    if (init === undefined) return;
    if (typeof init === 'object' && init !== null || typeof init === 'function') {
      if (typeof init[SymbolIterator] === 'function') {
        for (const pair of init) {
          const p = [...pair];
          if (p.length !== 2) throw new TypeErrorCtor("Failed to construct 'Headers': Invalid value");
          this.append(p[0], p[1]);
        }
      } else {
        for (const key of ReflectOwnKeys(init)) {
          const desc = ReflectGetOwnPropertyDescriptor(init, key);
          if (desc?.enumerable) this.append(key, init[key]);
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
      h.#list = h.#list.filter(([k]) => !FORBIDDEN_RESPONSE.has(k));
      return h;
    };
    headerList = (h) => h.#list;
  }
  #guard(what) {
    if (this.#immutable) throw new TypeErrorCtor(`Failed to execute '${what}' on 'Headers': Headers are immutable`);
  }
  append(name, value) {
    name = StringCtor(name);
    value = normalizeValue(value);
    checkHeader(name, value, 'append');
    this.#guard('append');
    const key = name.toLowerCase();
    if (this.#responseGuard && FORBIDDEN_RESPONSE.has(key)) return;
    this.#list.push([key, value]);
  }
  delete(name) {
    name = StringCtor(name);
    checkHeader(name, '', 'delete');
    this.#guard('delete');
    const key = name.toLowerCase();
    this.#list = this.#list.filter(([k]) => k !== key);
  }
  get(name) {
    name = StringCtor(name);
    checkHeader(name, '', 'get');
    const key = name.toLowerCase();
    const values = this.#list.filter(([k]) => k === key).map(([, v]) => v);
    return values.length === 0 ? null : values.join(', ');
  }
  getSetCookie() {
    return this.#list.filter(([k]) => k === 'set-cookie').map(([, v]) => v);
  }
  has(name) {
    name = StringCtor(name);
    checkHeader(name, '', 'has');
    const key = name.toLowerCase();
    return this.#list.some(([k]) => k === key);
  }
  set(name, value) {
    name = StringCtor(name);
    value = normalizeValue(value);
    checkHeader(name, value, 'set');
    this.#guard('set');
    const key = name.toLowerCase();
    if (this.#responseGuard && FORBIDDEN_RESPONSE.has(key)) return;
    const i = this.#list.findIndex(([k]) => k === key);
    if (i < 0) this.#list.push([key, value]);
    else {
      this.#list[i] = [key, value];
      this.#list = this.#list.filter(([k], j) => j <= i || k !== key);
    }
  }
  // Sorted by name, duplicates combined with ", " (set-cookie kept apart), as the standard's
  // "sort and combine".
  #sorted() {
    const names = [...new SetCtor(this.#list.map(([k]) => k))].sort();
    const out = [];
    for (const name of names) {
      if (name === 'set-cookie') for (const v of this.getSetCookie()) out.push([name, v]);
      else out.push([name, this.get(name)]);
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

return { TOKEN, freezeHeaders, guardResponse, headerList, Headers };
})
