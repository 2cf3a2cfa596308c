// Response (Fetch Standard). Built-in methods through primordials.js's captures; headers and
// URLs through the runtime's own accessors, not their public methods.
(function (load) {
'use strict';
const { cloneBody, extractBody, initBody, mixBody, setBodySource } = load('web/body.js');
const { appendHeader, copyHeaders, freezeHeaders, guardResponse, hasHeader, Headers, headersFrom } = load('web/headers.js');
const { urlHref, URL } = load('web/url.js');
const {
  JSONStringify, NumberCtor, NumberIsInteger, RangeErrorCtor, SetCtor, StringCtor, SymbolToStringTag, TypeErrorCtor, call,
  regexpExec, setHas,
} = load('primordials.js');

const NULL_BODY_STATUS = new SetCtor([101, 103, 204, 205, 304]);
const REDIRECT_STATUS = new SetCtor([301, 302, 303, 307, 308]);
const INVALID_STATUS_TEXT = /[^\t\x20-\x7e\x80-\xff]/;
const urlParse = URL.parse;
// For fetch (exported to runtime files, never to programs): a Response from the fetch native's
// answer; assigned in the static block.
let responseFromWire; // (raw, requestUrl)
// For retained handles: whether a value is a Response of this runtime (a brand check, which a
// redefined global cannot fake), and its parts read from the private fields.
let isResponse; // (value) -> boolean
let partsOf; // (response) -> { status, statusText, headers }

class Response {
  #status; #statusText; #headers; #type = 'default'; #url = ''; #redirected = false;
  constructor(body = null, init = {}) {
    init = init ?? {};
    const status = init.status === undefined ? 200 : NumberCtor(init.status);
    if (!(NumberIsInteger(status) && status >= 200 && status <= 599)) {
      throw new RangeErrorCtor(`Failed to construct 'Response': The status provided (${init.status}) is outside the range [200, 599].`);
    }
    const statusText = init.statusText === undefined ? '' : StringCtor(init.statusText);
    if (call(regexpExec, INVALID_STATUS_TEXT, statusText) !== null) throw new TypeErrorCtor("Failed to construct 'Response': Invalid statusText");
    this.#status = status;
    this.#statusText = statusText;
    this.#headers = guardResponse(new Headers(init.headers));
    let source = null;
    if (body !== null && body !== undefined) {
      if (call(setHas, NULL_BODY_STATUS, status)) throw new TypeErrorCtor("Failed to construct 'Response': Response with null body status cannot have body");
      const extracted = extractBody(body);
      source = extracted[0];
      const type = extracted[1];
      if (type !== null && !hasHeader(this.#headers, 'content-type')) appendHeader(this.#headers, 'content-type', type);
    }
    initBody(this, source, () => this.#headers);
  }
  static {
    isResponse = (value) => value !== null && typeof value === 'object' && #status in value;
    partsOf = (r) => ({ status: r.#status, statusText: r.#statusText, headers: r.#headers });
    responseFromWire = (raw, requestUrl) => {
      const r = new Response(null, { status: 200 });
      r.#status = raw.status;
      r.#statusText = raw.statusText;
      r.#headers = freezeHeaders(headersFrom(raw.headers));
      r.#type = 'basic';
      r.#url = raw.url || requestUrl;
      r.#redirected = raw.redirected;
      setBodySource(r, raw.body);
      return r;
    };
  }
  static error() {
    const r = new Response(null, { status: 200 });
    r.#status = 0;
    r.#type = 'error';
    freezeHeaders(r.#headers);
    return r;
  }
  static redirect(url, status = 302) {
    const parsed = urlParse(StringCtor(url));
    if (parsed === null) throw new TypeErrorCtor(`Failed to execute 'redirect' on 'Response': Invalid URL`);
    if (!call(setHas, REDIRECT_STATUS, status)) throw new RangeErrorCtor(`Failed to execute 'redirect' on 'Response': Invalid status code`);
    const r = new Response(null, { status });
    appendHeader(r.#headers, 'location', urlHref(parsed));
    freezeHeaders(r.#headers);
    return r;
  }
  static json(data, init = {}) {
    const text = JSONStringify(data);
    if (text === undefined) throw new TypeErrorCtor("Failed to execute 'json' on 'Response': The data is not JSON serializable");
    // The constructor's steps with the body given here: its headers are not read back through
    // a Headers' iterator.
    const r = new Response(null, init);
    if (call(setHas, NULL_BODY_STATUS, r.#status)) throw new TypeErrorCtor("Failed to construct 'Response': Response with null body status cannot have body");
    if (!hasHeader(r.#headers, 'content-type')) appendHeader(r.#headers, 'content-type', 'application/json');
    setBodySource(r, extractBody(text)[0]);
    return r;
  }
  get type() { return this.#type; }
  get url() { return this.#url; }
  get redirected() { return this.#redirected; }
  get status() { return this.#status; }
  get ok() { return this.#status >= 200 && this.#status <= 299; }
  get statusText() { return this.#statusText; }
  get headers() { return this.#headers; }
  clone() {
    const r = new Response(null, { status: 200 });
    r.#status = this.#status;
    r.#statusText = this.#statusText;
    r.#headers = guardResponse(copyHeaders(this.#headers));
    r.#type = this.#type;
    r.#url = this.#url;
    r.#redirected = this.#redirected;
    setBodySource(r, cloneBody(this));
    return r;
  }
  get [SymbolToStringTag]() { return 'Response'; }
}
mixBody(Response.prototype);

return { isResponse, partsOf, responseFromWire, Response };
})
