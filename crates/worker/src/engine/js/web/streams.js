// ReadableStream and its default reader (Streams Standard): the subset bodies need, and
// streams a program builds itself from an underlying source { start, pull, cancel }. Built-in
// methods through primordials.js's captures (primordials.js says why).
(function (load) {
'use strict';
const {
  MathMax, PromiseCtor, PromiseReject, PromiseResolve, ReflectApply, SymbolAsyncIterator, SymbolToStringTag, TypeErrorCtor,
  arrayPush, arrayShift, call, promiseThen, taLength,
} = load('primordials.js');

// Access to a stream's state for its reader and for bodies (exported to runtime files, never to
// programs); assigned in the static block.
let streamRead; // (stream): its next chunk, as its reader's read() gives it
let streamLock, streamUnlock;
let streamCancel; // (stream, reason): a promise, settled once the source has cancelled
let streamOf; // (bytes): a closed stream holding `bytes` as its one chunk
let streamLocked; // (stream): whether a reader holds it (its `locked`)

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
      call(promiseThen, PromiseResolve(ReflectApply(start, this.#source, [this.#controller])), () => this.#pull(), (e) => this.#fail(e));
    }
  }
  #enqueue(chunk) {
    if (this.#state !== 'readable') throw new TypeErrorCtor('The stream is closed or errored.');
    const w = call(arrayShift, this.#waiting);
    if (w) w.resolve({ value: chunk, done: false });
    else call(arrayPush, this.#queue, chunk);
  }
  // The pending read() resolvers, taken: none waits any longer.
  #takeWaiting() {
    const waiting = this.#waiting;
    this.#waiting = [];
    return waiting;
  }
  #close() {
    if (this.#state !== 'readable') return;
    this.#state = 'closed';
    if (this.#queue.length === 0) {
      const waiting = this.#takeWaiting();
      for (let i = 0; i < waiting.length; i++) waiting[i].resolve({ value: undefined, done: true });
    }
  }
  #fail(e) {
    if (this.#state !== 'readable') return;
    this.#state = 'errored';
    this.#error = e;
    this.#queue = [];
    const waiting = this.#takeWaiting();
    for (let i = 0; i < waiting.length; i++) waiting[i].reject(e);
  }
  #pull() {
    const pull = this.#source.pull;
    if (typeof pull !== 'function' || this.#pulling || this.#state !== 'readable') return;
    this.#pulling = true;
    call(
      promiseThen,
      PromiseResolve(ReflectApply(pull, this.#source, [this.#controller])),
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
      if (call(taLength, bytes) > 0) call(arrayPush, s.#queue, bytes);
      s.#state = 'closed';
      return s;
    };
    streamRead = (s) => {
      if (s.#queue.length > 0) {
        const value = call(arrayShift, s.#queue);
        if (s.#queue.length === 0 && s.#state === 'readable') s.#pull();
        return PromiseResolve({ value, done: false });
      }
      if (s.#state === 'closed') return PromiseResolve({ value: undefined, done: true });
      if (s.#state === 'errored') return PromiseReject(s.#error);
      const p = new PromiseCtor((resolve, reject) => call(arrayPush, s.#waiting, { resolve, reject }));
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
    streamLocked = (s) => s.#reader !== null;
    streamCancel = (s, reason) => {
      s.#queue = [];
      if (s.#state === 'readable') {
        s.#state = 'closed';
        const waiting = s.#takeWaiting();
        for (let i = 0; i < waiting.length; i++) waiting[i].resolve({ value: undefined, done: true });
        const cancel = s.#source.cancel;
        if (typeof cancel === 'function') return call(promiseThen, PromiseResolve(ReflectApply(cancel, s.#source, [reason])), () => undefined);
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
  values(options = undefined) { return this.#values(options); }
  // Reads through a reader of its own, with the stream's own read and cancel, not the public
  // methods. An async generator: it awaits (primordials.js says what that reads).
  async *#values(options) {
    const reader = new ReadableStreamDefaultReader(this);
    try {
      for (;;) {
        const { value, done } = await streamRead(this);
        if (done) return;
        yield value;
      }
    } finally {
      if (!options?.preventCancel) await streamCancel(this);
      releaseReader(reader);
    }
  }
  [SymbolAsyncIterator](options = undefined) { return this.#values(options); }
  get [SymbolToStringTag]() { return 'ReadableStream'; }
}

// A reader's releaseLock, not through the public method; assigned in the reader's static block.
let releaseReader;

class ReadableStreamDefaultReader {
  #stream;
  static {
    releaseReader = (reader) => reader.#release();
  }
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
    this.#release();
  }
  #release() {
    if (this.#stream !== null) streamUnlock(this.#stream);
    this.#stream = null;
  }
  cancel(reason) {
    if (this.#stream === null) return PromiseReject(new TypeErrorCtor('The reader was released.'));
    return streamCancel(this.#stream, reason);
  }
  get closed() { return PromiseResolve(undefined); }
}

return { releaseReader, streamCancel, streamLocked, streamOf, streamRead, ReadableStream, ReadableStreamDefaultReader };
})
