// Request (Fetch Standard).
(function (load) {
'use strict';
const { AbortSignal, newSignal } = load('web/events.js');
const { cloneBody, extractBody, initBody, mixBody } = load('web/body.js');
const { Headers, TOKEN } = load('web/headers.js');
const { URL } = load('web/url.js');
const { SetCtor, StringCtor, SymbolToStringTag, TypeErrorCtor } = load('primordials.js');

const FORBIDDEN_METHODS = new SetCtor(['CONNECT', 'TRACE', 'TRACK']);
const NORMALIZED_METHODS = new SetCtor(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
const REDIRECTS = new SetCtor(['follow', 'error', 'manual']);

class Request {
  #url; #method; #headers; #signal; #redirect;
  constructor(input, init = {}) {
    init = init ?? {};
    let base = null;
    if (input instanceof Request) base = input;
    else {
      const parsed = URL.parse(StringCtor(input));
      if (parsed === null) throw new TypeErrorCtor(`Failed to construct 'Request': Invalid URL "${StringCtor(input)}" (this sandbox has no base URL: use an absolute URL).`);
      if (parsed.username || parsed.password) throw new TypeErrorCtor(`Failed to construct 'Request': Request cannot be constructed from a URL that includes credentials: ${parsed.href}`);
      this.#url = parsed.href;
    }
    this.#url = base ? base.url : this.#url;
    const method = init.method !== undefined ? StringCtor(init.method) : base ? base.method : 'GET';
    if (!TOKEN.test(method)) throw new TypeErrorCtor(`Failed to construct 'Request': '${method}' is not a valid HTTP method.`);
    const upper = method.toUpperCase();
    if (FORBIDDEN_METHODS.has(upper)) throw new TypeErrorCtor(`Failed to construct 'Request': '${method}' HTTP method is unsupported.`);
    this.#method = NORMALIZED_METHODS.has(upper) ? upper : method;
    this.#headers = new Headers(init.headers !== undefined ? init.headers : base ? base.headers : undefined);
    const redirect = init.redirect !== undefined ? StringCtor(init.redirect) : base ? base.redirect : 'follow';
    if (!REDIRECTS.has(redirect)) throw new TypeErrorCtor(`Failed to construct 'Request': The provided value '${redirect}' is not a valid enum value of type RequestRedirect (use 'follow', 'error' or 'manual').`);
    this.#redirect = redirect;
    const signal = init.signal !== undefined ? init.signal : base ? base.signal : null;
    this.#signal = signal instanceof AbortSignal ? signal : null;
    let source = null;
    if (init.body !== undefined && init.body !== null) {
      if (this.#method === 'GET' || this.#method === 'HEAD') throw new TypeErrorCtor("Failed to construct 'Request': Request with GET/HEAD method cannot have body.");
      const [bytes, type] = extractBody(init.body);
      source = bytes;
      if (type !== null && !this.#headers.has('content-type')) this.#headers.append('content-type', type);
    } else if (base) {
      source = cloneBody(base);
    }
    initBody(this, source);
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

return { Request };
})
