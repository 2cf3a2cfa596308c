// ReadableStream and its default reader (Streams Standard): the subset bodies need, and
// streams a program builds itself from an underlying source { start, pull, cancel }.
(function (load) {
'use strict';
const {
  MathMax, PromiseCtor, PromiseReject, PromiseResolve, ReflectApply, SymbolAsyncIterator, SymbolToStringTag, TypeErrorCtor,
} = load('primordials.js');

// Access to a stream's state for its reader and for bodies (exported to runtime files, never to
// programs); assigned in the static block.
let streamRead, streamLock, streamUnlock;
let streamCancel; // (stream, reason): a promise, settled once the source has cancelled
let streamOf; // (bytes): a closed stream holding `bytes` as its one chunk

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
      get desiredSize() { return self.#state === 'readable' ? MathMax(0, 1 - self.#queue.length) : 0; },
    };
    const start = this.#source.start;
    if (typeof start === 'function') {
      PromiseResolve(ReflectApply(start, this.#source, [this.#controller])).then(() => this.#pull(), (e) => this.#fail(e));
    }
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
  static {
    streamOf = (bytes) => {
      const s = new ReadableStream();
      if (bytes.length > 0) s.#queue.push(bytes);
      s.#state = 'closed';
      return s;
    };
    streamRead = (s) => {
      if (s.#queue.length > 0) {
        const value = s.#queue.shift();
        if (s.#queue.length === 0 && s.#state === 'readable') s.#pull();
        return PromiseResolve({ value, done: false });
      }
      if (s.#state === 'closed') return PromiseResolve({ value: undefined, done: true });
      if (s.#state === 'errored') return PromiseReject(s.#error);
      const p = new PromiseCtor((resolve, reject) => s.#waiting.push({ resolve, reject }));
      s.#pull();
      return p;
    };
    streamLock = (s, reader) => {
      if (s.#reader !== null) throw new TypeErrorCtor('ReadableStream is locked to a reader.');
      s.#reader = reader;
    };
    streamUnlock = (s) => {
      s.#reader = null;
    };
    streamCancel = (s, reason) => {
      s.#queue = [];
      if (s.#state === 'readable') {
        s.#state = 'closed';
        for (const w of s.#waiting.splice(0)) w.resolve({ value: undefined, done: true });
        const cancel = s.#source.cancel;
        if (typeof cancel === 'function') return PromiseResolve(ReflectApply(cancel, s.#source, [reason])).then(() => undefined);
      }
      return PromiseResolve(undefined);
    };
  }
  get locked() { return this.#reader !== null; }
  cancel(reason) {
    if (this.#reader !== null) return PromiseReject(new TypeErrorCtor('Cannot cancel a locked stream.'));
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
  [SymbolAsyncIterator](options) { return this.values(options); }
  get [SymbolToStringTag]() { return 'ReadableStream'; }
}

class ReadableStreamDefaultReader {
  #stream;
  constructor(stream) {
    if (!(stream instanceof ReadableStream)) throw new TypeErrorCtor('ReadableStreamDefaultReader needs a ReadableStream.');
    streamLock(stream, this);
    this.#stream = stream;
  }
  read() {
    if (this.#stream === null) return PromiseReject(new TypeErrorCtor('The reader was released.'));
    return streamRead(this.#stream);
  }
  releaseLock() {
    if (this.#stream !== null) streamUnlock(this.#stream);
    this.#stream = null;
  }
  cancel(reason) {
    if (this.#stream === null) return PromiseReject(new TypeErrorCtor('The reader was released.'));
    return streamCancel(this.#stream, reason);
  }
  get closed() { return PromiseResolve(undefined); }
}

return { streamCancel, streamOf, ReadableStream, ReadableStreamDefaultReader };
})
