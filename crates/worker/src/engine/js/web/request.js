// Request (Fetch Standard). Built-in methods through primordials.js's captures; headers, URLs
// and other Requests through the runtime's own accessors, not their public methods.
(function (load) {
'use strict';
const { AbortSignal, newSignal } = load('web/events.js');
const { cloneBody, extractBody, initBody, mixBody } = load('web/body.js');
const { appendHeader, copyHeaders, hasHeader, Headers, headersFrom, isToken } = load('web/headers.js');
const { urlHasCredentials, urlHref, URL } = load('web/url.js');
const { SetCtor, StringCtor, SymbolToStringTag, TypeErrorCtor, call, setHas, stringToUpperCase } = load('primordials.js');

const FORBIDDEN_METHODS = new SetCtor(['CONNECT', 'TRACE', 'TRACK']);
const NORMALIZED_METHODS = new SetCtor(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
const REDIRECTS = new SetCtor(['follow', 'error', 'manual']);
const urlParse = URL.parse;

// For fetch (exported to runtime files, never to programs): a Request's parts, read from its
// private fields; assigned in the static block.
let requestParts; // (r) -> { url, method, headers, signal, redirect }
// For retained handles: a Request from a wire request's parts (its header pairs an array the
// worker made, taken without iterating it).
let requestFromWire; // (method, url, pairs, body: Uint8Array | null)

class Request {
  #url; #method; #headers; #signal; #redirect;
  constructor(input, init = {}) {
    init = init ?? {};
    let base = null;
    if (input instanceof Request) base = input;
    else {
      const parsed = urlParse(StringCtor(input));
      if (parsed === null) throw new TypeErrorCtor(`Failed to construct 'Request': Invalid URL "${StringCtor(input)}" (this sandbox has no base URL: use an absolute URL).`);
      const href = urlHref(parsed);
      if (urlHasCredentials(parsed)) throw new TypeErrorCtor(`Failed to construct 'Request': Request cannot be constructed from a URL that includes credentials: ${href}`);
      this.#url = href;
    }
    this.#url = base ? base.#url : this.#url;
    const method = init.method !== undefined ? StringCtor(init.method) : base ? base.#method : 'GET';
    if (!isToken(method)) throw new TypeErrorCtor(`Failed to construct 'Request': '${method}' is not a valid HTTP method.`);
    const upper = call(stringToUpperCase, method);
    if (call(setHas, FORBIDDEN_METHODS, upper)) throw new TypeErrorCtor(`Failed to construct 'Request': '${method}' HTTP method is unsupported.`);
    this.#method = call(setHas, NORMALIZED_METHODS, upper) ? upper : method;
    this.#headers = init.headers !== undefined ? new Headers(init.headers) : base ? copyHeaders(base.#headers) : new Headers();
    const redirect = init.redirect !== undefined ? StringCtor(init.redirect) : base ? base.#redirect : 'follow';
    if (!call(setHas, REDIRECTS, redirect)) throw new TypeErrorCtor(`Failed to construct 'Request': The provided value '${redirect}' is not a valid enum value of type RequestRedirect (use 'follow', 'error' or 'manual').`);
    this.#redirect = redirect;
    const signal = init.signal !== undefined ? init.signal : base ? base.#signal : null;
    this.#signal = signal instanceof AbortSignal ? signal : null;
    let source = null;
    if (init.body !== undefined && init.body !== null) {
      if (this.#method === 'GET' || this.#method === 'HEAD') throw new TypeErrorCtor("Failed to construct 'Request': Request with GET/HEAD method cannot have body.");
      const extracted = extractBody(init.body);
      source = extracted[0];
      const type = extracted[1];
      if (type !== null && !hasHeader(this.#headers, 'content-type')) appendHeader(this.#headers, 'content-type', type);
    } else if (base) {
      source = cloneBody(base);
    }
    initBody(this, source, () => this.#headers);
  }
  static {
    requestFromWire = (method, url, pairs, body) => {
      const r = new Request(url, { method, body: body === null ? undefined : body });
      r.#headers = headersFrom(pairs);
      return r;
    };
    requestParts = (r) => ({
      url: r.#url, method: r.#method, headers: r.#headers, signal: r.#signal ?? (r.#signal = newSignal()), redirect: r.#redirect,
    });
  }
  get url() { return this.#url; }
  get method() { return this.#method; }
  get headers() { return this.#headers; }
  get signal() { return this.#signal ?? (this.#signal = newSignal()); }
  get redirect() { return this.#redirect; }
  get destination() { return ''; }
  get mode() { return 'cors'; }
  get credentials() { return 'same-origin'; }
  get cache() { return 'default'; }
  clone() {
    const r = new Request(this);
    return r;
  }
  get [SymbolToStringTag]() { return 'Request'; }
}
mixBody(Request.prototype);

return { requestFromWire, requestParts, Request };
})
