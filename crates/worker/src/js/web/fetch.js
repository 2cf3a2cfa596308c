
  // ---- Headers, Blob, ReadableStream (the subset bodies need), Request, Response, fetch
  // (Fetch Standard, File API, Streams Standard). Bodies are held as bytes; `body` is a stream
  // over them. Where this differs from the standards: docs/runtime-deviations.md.
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

  class Headers {
    #list = []; // [lowercased name, value], in insertion order
    #immutable = false;
    #responseGuard = false;
    constructor(init = undefined) {
      if (init === undefined) return;
      if (typeof init === 'object' && init !== null || typeof init === 'function') {
        if (typeof init[Symbol.iterator] === 'function') {
          for (const pair of init) {
            const p = [...pair];
            if (p.length !== 2) throw new TypeErrorCtor("Failed to construct 'Headers': Invalid value");
            this.append(p[0], p[1]);
          }
        } else {
          for (const key of Reflect.ownKeys(init)) {
            const desc = Reflect.getOwnPropertyDescriptor(init, key);
            if (desc?.enumerable) this.append(key, init[key]);
          }
        }
      } else {
        throw new TypeErrorCtor("Failed to construct 'Headers': The provided value is not of type '(record<ByteString, ByteString> or sequence<sequence<ByteString>>)'.");
      }
    }
    static _freeze(h) {
      h.#immutable = true;
      return h;
    }
    static _guardResponse(h) {
      h.#responseGuard = true;
      h.#list = h.#list.filter(([k]) => !FORBIDDEN_RESPONSE.has(k));
      return h;
    }
    static _list(h) {
      return h.#list;
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
    [Symbol.iterator]() { return this.#iterate('entries'); }
    get [Symbol.toStringTag]() { return 'Headers'; }
  }
  const freezeHeaders = Headers._freeze, headerList = Headers._list, guardResponse = Headers._guardResponse;
  delete Headers._freeze;
  delete Headers._list;
  delete Headers._guardResponse;
  defineGlobal('Headers', Headers);

  function bytesOf(chunk) {
    if (chunk instanceof ArrayBuffer) return new Uint8ArrayCtor(chunk.slice(0));
    if (ArrayBufferIsView(chunk)) return new Uint8ArrayCtor(chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength));
    return null;
  }
  function concat(chunks) {
    let n = 0;
    for (const c of chunks) n += c.length;
    const out = new Uint8ArrayCtor(n);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
  const utf8 = new TextEncoder();
  const utf8Decoder = new TextDecoder();

  class Blob {
    #bytes;
    #type;
    constructor(parts = [], options = {}) {
      const chunks = [];
      for (const part of parts) {
        if (part instanceof Blob) chunks.push(part.#bytes);
        else chunks.push(bytesOf(part) ?? utf8.encode(StringCtor(part)));
      }
      this.#bytes = concat(chunks);
      const type = StringCtor(options?.type ?? '');
      this.#type = /[^\x20-\x7e]/.test(type) ? '' : type.toLowerCase();
    }
    static _bytes(b) {
      return b.#bytes;
    }
    get size() { return this.#bytes.length; }
    get type() { return this.#type; }
    slice(start = 0, end = this.#bytes.length, type = '') {
      const size = this.#bytes.length;
      const clamp = (i) => (i < 0 ? Math.max(size + i, 0) : Math.min(i, size));
      const b = new Blob([], { type });
      b.#bytes = this.#bytes.slice(clamp(Math.trunc(start) || 0), clamp(Math.trunc(end) || 0));
      return b;
    }
    text() { return PromiseResolve(utf8Decoder.decode(this.#bytes)); }
    arrayBuffer() { return PromiseResolve(this.#bytes.slice().buffer); }
    bytes() { return PromiseResolve(this.#bytes.slice()); }
    stream() { return streamOf(this.#bytes.slice()); }
    get [Symbol.toStringTag]() { return 'Blob'; }
  }
  const blobBytes = Blob._bytes;
  delete Blob._bytes;
  defineGlobal('Blob', Blob);

  // A ReadableStream with a default reader: enough for Response/Request bodies and for streams a
  // program builds itself from an underlying source { start, pull, cancel }.
  class ReadableStream {
    #queue = [];
    #state = 'readable'; // 'readable' | 'closed' | 'errored'
    #error = undefined;
    #reader = null;
    #waiting = []; // pending read() resolvers
    #source;
    #pulling = false;
    #controller;
    constructor(source = {}) {
      this.#source = source ?? {};
      const self = this;
      this.#controller = {
        enqueue(chunk) { self.#enqueue(chunk); },
        close() { self.#close(); },
        error(e) { self.#fail(e); },
        get desiredSize() { return self.#state === 'readable' ? Math.max(0, 1 - self.#queue.length) : 0; },
      };
      const start = this.#source.start;
      if (typeof start === 'function') {
        PromiseResolve(ReflectApply(start, this.#source, [this.#controller])).then(() => this.#pull(), (e) => this.#fail(e));
      }
    }
    static _fromBytes(bytes) {
      const s = new ReadableStream();
      if (bytes.length > 0) s.#queue.push(bytes);
      s.#state = 'closed';
      return s;
    }
    #enqueue(chunk) {
      if (this.#state !== 'readable') throw new TypeErrorCtor('The stream is closed or errored.');
      const w = this.#waiting.shift();
      if (w) w.resolve({ value: chunk, done: false });
      else this.#queue.push(chunk);
    }
    #close() {
      if (this.#state !== 'readable') return;
      this.#state = 'closed';
      if (this.#queue.length === 0) for (const w of this.#waiting.splice(0)) w.resolve({ value: undefined, done: true });
    }
    #fail(e) {
      if (this.#state !== 'readable') return;
      this.#state = 'errored';
      this.#error = e;
      this.#queue = [];
      for (const w of this.#waiting.splice(0)) w.reject(e);
    }
    #pull() {
      const pull = this.#source.pull;
      if (typeof pull !== 'function' || this.#pulling || this.#state !== 'readable') return;
      this.#pulling = true;
      PromiseResolve(ReflectApply(pull, this.#source, [this.#controller])).then(
        () => {
          this.#pulling = false;
          if (this.#waiting.length > 0) this.#pull();
        },
        (e) => this.#fail(e),
      );
    }
    static _read(s) {
      if (s.#queue.length > 0) {
        const value = s.#queue.shift();
        if (s.#queue.length === 0 && s.#state === 'readable') s.#pull();
        return PromiseResolve({ value, done: false });
      }
      if (s.#state === 'closed') return PromiseResolve({ value: undefined, done: true });
      if (s.#state === 'errored') return Promise.reject(s.#error);
      const p = new Promise((resolve, reject) => s.#waiting.push({ resolve, reject }));
      s.#pull();
      return p;
    }
    static _lock(s, reader) {
      if (s.#reader !== null) throw new TypeErrorCtor('ReadableStream is locked to a reader.');
      s.#reader = reader;
    }
    static _unlock(s) {
      s.#reader = null;
    }
    static _cancel(s, reason) {
      s.#queue = [];
      if (s.#state === 'readable') {
        s.#state = 'closed';
        for (const w of s.#waiting.splice(0)) w.resolve({ value: undefined, done: true });
        const cancel = s.#source.cancel;
        if (typeof cancel === 'function') return PromiseResolve(ReflectApply(cancel, s.#source, [reason])).then(() => undefined);
      }
      return PromiseResolve(undefined);
    }
    get locked() { return this.#reader !== null; }
    cancel(reason) {
      if (this.#reader !== null) return Promise.reject(new TypeErrorCtor('Cannot cancel a locked stream.'));
      return streamCancel(this, reason);
    }
    getReader(options = undefined) {
      if (options?.mode === 'byob') throw new TypeErrorCtor('BYOB readers are not supported in this sandbox; use a default reader.');
      return new ReadableStreamDefaultReader(this);
    }
    async *values(options = undefined) {
      const reader = this.getReader();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          yield value;
        }
      } finally {
        if (!options?.preventCancel) await reader.cancel();
        reader.releaseLock();
      }
    }
    [Symbol.asyncIterator](options) { return this.values(options); }
    get [Symbol.toStringTag]() { return 'ReadableStream'; }
  }
  const streamRead = ReadableStream._read, streamLock = ReadableStream._lock;
  const streamUnlock = ReadableStream._unlock, streamCancel = ReadableStream._cancel;
  const streamOf = ReadableStream._fromBytes;
  for (const k of ['_read', '_lock', '_unlock', '_cancel', '_fromBytes']) delete ReadableStream[k];
  defineGlobal('ReadableStream', ReadableStream);

  class ReadableStreamDefaultReader {
    #stream;
    constructor(stream) {
      if (!(stream instanceof ReadableStream)) throw new TypeErrorCtor('ReadableStreamDefaultReader needs a ReadableStream.');
      streamLock(stream, this);
      this.#stream = stream;
    }
    read() {
      if (this.#stream === null) return Promise.reject(new TypeErrorCtor('The reader was released.'));
      return streamRead(this.#stream);
    }
    releaseLock() {
      if (this.#stream !== null) streamUnlock(this.#stream);
      this.#stream = null;
    }
    cancel(reason) {
      if (this.#stream === null) return Promise.reject(new TypeErrorCtor('The reader was released.'));
      return streamCancel(this.#stream, reason);
    }
    get closed() { return PromiseResolve(undefined); }
  }
  defineGlobal('ReadableStreamDefaultReader', ReadableStreamDefaultReader);

  // Reads a whole stream into bytes.
  async function drain(stream) {
    const reader = stream.getReader();
    const chunks = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const bytes = typeof value === 'string' ? utf8.encode(value) : bytesOf(value);
      if (bytes === null) throw new TypeErrorCtor('A body stream chunk is not a Uint8Array.');
      chunks.push(bytes);
    }
    reader.releaseLock();
    return concat(chunks);
  }

  // Extracts a body: [bytes or a stream, the content type it implies].
  function extractBody(body) {
    if (body === null || body === undefined) return [null, null];
    if (typeof body === 'string') return [utf8.encode(body), 'text/plain;charset=UTF-8'];
    if (body instanceof URLSearchParams) return [utf8.encode(body.toString()), 'application/x-www-form-urlencoded;charset=UTF-8'];
    if (body instanceof Blob) return [blobBytes(body).slice(), body.type || null];
    if (body instanceof ReadableStream) return [body, null];
    const bytes = bytesOf(body);
    if (bytes !== null) return [bytes, null];
    return [utf8.encode(StringCtor(body)), 'text/plain;charset=UTF-8'];
  }

  // The Body mixin over a private slot { source: Uint8Array | ReadableStream | null, used }.
  const bodies = new WeakMap();
  function consume(self, what) {
    const slot = bodies.get(self);
    if (slot.used) return Promise.reject(new TypeErrorCtor(`Failed to execute '${what}': body stream already read`));
    slot.used = true;
    const src = slot.source;
    if (src === null) return PromiseResolve(new Uint8ArrayCtor(0));
    if (src instanceof ReadableStream) {
      if (src.locked) return Promise.reject(new TypeErrorCtor(`Failed to execute '${what}': body stream is locked`));
      return drain(src);
    }
    return PromiseResolve(src);
  }
  const BodyMixin = {
    get body() {
      const slot = bodies.get(this);
      if (slot.source === null) return null;
      if (!(slot.source instanceof ReadableStream)) slot.source = streamOf(slot.source);
      return slot.source;
    },
    get bodyUsed() {
      const slot = bodies.get(this);
      return slot.used || (slot.source instanceof ReadableStream && slot.source.locked);
    },
    arrayBuffer() { return consume(this, 'arrayBuffer').then((b) => b.buffer.byteLength === b.length ? b.buffer : b.slice().buffer); },
    bytes() { return consume(this, 'bytes'); },
    text() { return consume(this, 'text').then((b) => utf8Decoder.decode(b)); },
    json() { return consume(this, 'json').then((b) => JSON.parse(utf8Decoder.decode(b))); },
    blob() {
      return consume(this, 'blob').then((b) => new Blob([b], { type: this.headers.get('content-type') ?? '' }));
    },
    formData() {
      return Promise.reject(new TypeErrorCtor('formData() is not supported in this sandbox: read the body with text() and parse it with URLSearchParams.'));
    },
  };
  function mixBody(proto) {
    for (const key of Reflect.ownKeys(BodyMixin)) {
      ObjectDefineProperty(proto, key, { ...Reflect.getOwnPropertyDescriptor(BodyMixin, key), enumerable: true });
    }
  }
  function cloneBody(self) {
    const slot = bodies.get(self);
    if (slot.used) throw new TypeErrorCtor("Failed to execute 'clone': body is already used");
    if (slot.source instanceof ReadableStream) {
      throw new TypeErrorCtor("Failed to execute 'clone': a body given as a ReadableStream cannot be cloned here; read it first.");
    }
    return slot.source === null ? null : slot.source.slice();
  }

  const FORBIDDEN_METHODS = new SetCtor(['CONNECT', 'TRACE', 'TRACK']);
  const NORMALIZED_METHODS = new SetCtor(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);

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
      let method = init.method !== undefined ? StringCtor(init.method) : base ? base.method : 'GET';
      if (!TOKEN.test(method)) throw new TypeErrorCtor(`Failed to construct 'Request': '${method}' is not a valid HTTP method.`);
      const upper = method.toUpperCase();
      if (FORBIDDEN_METHODS.has(upper)) throw new TypeErrorCtor(`Failed to construct 'Request': '${method}' HTTP method is unsupported.`);
      this.#method = NORMALIZED_METHODS.has(upper) ? upper : method;
      this.#headers = new Headers(init.headers !== undefined ? init.headers : base ? base.headers : undefined);
      this.#redirect = init.redirect ?? (base ? base.redirect : 'follow');
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
      bodies.set(this, { source, used: false });
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
    get [Symbol.toStringTag]() { return 'Request'; }
  }
  mixBody(Request.prototype);
  defineGlobal('Request', Request);

  const NULL_BODY_STATUS = new SetCtor([101, 103, 204, 205, 304]);
  const REDIRECT_STATUS = new SetCtor([301, 302, 303, 307, 308]);
  class Response {
    #status; #statusText; #headers; #type = 'default'; #url = ''; #redirected = false;
    constructor(body = null, init = {}) {
      init = init ?? {};
      const status = init.status === undefined ? 200 : Number(init.status);
      if (!(Number.isInteger(status) && status >= 200 && status <= 599)) {
        throw new RangeErrorCtor(`Failed to construct 'Response': The status provided (${init.status}) is outside the range [200, 599].`);
      }
      const statusText = init.statusText === undefined ? '' : StringCtor(init.statusText);
      if (/[^\t\x20-\x7e\x80-\xff]/.test(statusText)) throw new TypeErrorCtor("Failed to construct 'Response': Invalid statusText");
      this.#status = status;
      this.#statusText = statusText;
      this.#headers = guardResponse(new Headers(init.headers));
      let source = null;
      if (body !== null && body !== undefined) {
        if (NULL_BODY_STATUS.has(status)) throw new TypeErrorCtor("Failed to construct 'Response': Response with null body status cannot have body");
        const [bytes, type] = extractBody(body);
        source = bytes;
        if (type !== null && !this.#headers.has('content-type')) this.#headers.append('content-type', type);
      }
      bodies.set(this, { source, used: false });
    }
    static _fromWire(raw, requestUrl) {
      const r = new Response(null, { status: 200 });
      r.#status = raw.status;
      r.#statusText = raw.statusText;
      r.#headers = freezeHeaders(new Headers(raw.headers));
      r.#type = 'basic';
      r.#url = raw.url || requestUrl;
      r.#redirected = raw.redirected;
      bodies.get(r).source = raw.body;
      return r;
    }
    static error() {
      const r = new Response(null, { status: 200 });
      r.#status = 0;
      r.#type = 'error';
      freezeHeaders(r.#headers);
      return r;
    }
    static redirect(url, status = 302) {
      const parsed = URL.parse(StringCtor(url));
      if (parsed === null) throw new TypeErrorCtor(`Failed to execute 'redirect' on 'Response': Invalid URL`);
      if (!REDIRECT_STATUS.has(status)) throw new RangeErrorCtor(`Failed to execute 'redirect' on 'Response': Invalid status code`);
      const r = new Response(null, { status, headers: { location: parsed.href } });
      freezeHeaders(r.#headers);
      return r;
    }
    static json(data, init = {}) {
      const text = JSONStringify(data);
      if (text === undefined) throw new TypeErrorCtor("Failed to execute 'json' on 'Response': The data is not JSON serializable");
      const headers = new Headers(init?.headers);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      return new Response(text, { ...init, headers });
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
      r.#headers = guardResponse(new Headers(this.#headers));
      r.#type = this.#type;
      r.#url = this.#url;
      r.#redirected = this.#redirected;
      bodies.get(r).source = cloneBody(this);
      return r;
    }
    get [Symbol.toStringTag]() { return 'Response'; }
  }
  const responseFromWire = Response._fromWire;
  delete Response._fromWire;
  mixBody(Response.prototype);
  defineGlobal('Response', Response);

  defineGlobal('fetch', function fetch(input, init = undefined) {
    let request;
    try {
      request = new Request(input, init);
    } catch (e) {
      return Promise.reject(e);
    }
    const signal = request.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    return consume(request, 'fetch').then((bytes) => {
      const slot = bodies.get(request);
      const body = slot.source === null ? null : bytes;
      const pending = natives.fetch(request.method, request.url, headerList(request.headers).map(([k, v]) => [k, v]), body);
      return new Promise((resolve, reject) => {
        onAbort(signal, (reason) => reject(reason));
        pending.then((raw) => {
          if (signal.aborted) return;
          resolve(responseFromWire(raw, request.url));
        }, reject);
      });
    });
  });
