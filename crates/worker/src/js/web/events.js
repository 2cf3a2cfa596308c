
  // ---- DOMException, Event, EventTarget, AbortController, AbortSignal (WebIDL, DOM Standard)
  const LEGACY_CODES = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
    NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
    SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
    URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24,
    DataCloneError: 25,
  };
  class DOMException extends ErrorCtor {
    #name;
    constructor(message = '', name = 'Error') {
      super(StringCtor(message));
      this.#name = StringCtor(name);
    }
    get name() {
      return this.#name;
    }
    get code() {
      return LEGACY_CODES[this.#name] ?? 0;
    }
  }
  ObjectDefineProperty(DOMException.prototype, Symbol.toStringTag, { value: 'DOMException', configurable: true });
  for (const [name, code] of Object.entries(LEGACY_CODES)) {
    const constant = name.replace(/Error$/, '').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() + '_ERR';
    ObjectDefineProperty(DOMException, constant, { value: code, enumerable: true });
    ObjectDefineProperty(DOMException.prototype, constant, { value: code, enumerable: true });
  }
  defineGlobal('DOMException', DOMException);

  const NONE = 0, AT_TARGET = 2;
  class Event {
    #type; #bubbles; #cancelable; #composed; #canceled = false; #stop = false; #stopNow = false;
    #target = null; #currentTarget = null; #phase = NONE; #dispatching = false; #timeStamp;
    constructor(type, init = {}) {
      if (arguments.length === 0) throw new TypeErrorCtor("Failed to construct 'Event': 1 argument required, but only 0 present.");
      this.#type = StringCtor(type);
      this.#bubbles = Boolean(init?.bubbles);
      this.#cancelable = Boolean(init?.cancelable);
      this.#composed = Boolean(init?.composed);
      this.#timeStamp = nowMs() - originMs;
    }
    get type() { return this.#type; }
    get target() { return this.#target; }
    get srcElement() { return this.#target; }
    get currentTarget() { return this.#currentTarget; }
    get eventPhase() { return this.#phase; }
    get bubbles() { return this.#bubbles; }
    get cancelable() { return this.#cancelable; }
    get composed() { return this.#composed; }
    get defaultPrevented() { return this.#canceled; }
    get returnValue() { return !this.#canceled; }
    get cancelBubble() { return this.#stop; }
    set cancelBubble(v) { if (v) this.#stop = true; }
    get isTrusted() { return false; }
    get timeStamp() { return this.#timeStamp; }
    composedPath() { return this.#dispatching && this.#currentTarget ? [this.#currentTarget] : []; }
    stopPropagation() { this.#stop = true; }
    stopImmediatePropagation() { this.#stop = true; this.#stopNow = true; }
    preventDefault() { if (this.#cancelable) this.#canceled = true; }
    static _begin(e, target) {
      if (e.#dispatching) throw new DOMException('The event is already being dispatched.', 'InvalidStateError');
      e.#dispatching = true; e.#target = target; e.#currentTarget = target; e.#phase = AT_TARGET;
      e.#stop = false; e.#stopNow = false;
    }
    static _stoppedNow(e) { return e.#stopNow; }
    static _end(e) { e.#dispatching = false; e.#currentTarget = null; e.#phase = NONE; }
  }
  for (const [k, v] of [['NONE', 0], ['CAPTURING_PHASE', 1], ['AT_TARGET', 2], ['BUBBLING_PHASE', 3]]) {
    ObjectDefineProperty(Event, k, { value: v, enumerable: true });
    ObjectDefineProperty(Event.prototype, k, { value: v, enumerable: true });
  }
  const beginDispatch = Event._begin, stoppedNow = Event._stoppedNow, endDispatch = Event._end;
  delete Event._begin; delete Event._stoppedNow; delete Event._end;
  defineGlobal('Event', Event);

  function flattenOptions(options) {
    if (typeof options === 'boolean') return { capture: options };
    if (options === null || typeof options !== 'object') return { capture: false };
    return options;
  }

  class EventTarget {
    #listeners = new MapCtor(); // type -> [{ callback, capture, once, removed }]
    addEventListener(type, callback, options) {
      if (callback === null || callback === undefined) return;
      if (typeof callback !== 'function' && typeof callback !== 'object') {
        throw new TypeErrorCtor("Failed to execute 'addEventListener': parameter 2 is not of type 'Object'.");
      }
      const o = flattenOptions(options);
      const capture = Boolean(o.capture);
      const signal = o.signal;
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new TypeErrorCtor("Failed to execute 'addEventListener': member signal is not of type 'AbortSignal'.");
      }
      if (signal?.aborted) return;
      type = StringCtor(type);
      let list = this.#listeners.get(type);
      if (!list) this.#listeners.set(type, (list = []));
      if (list.some((l) => l.callback === callback && l.capture === capture)) return;
      const entry = { callback, capture, once: Boolean(o.once), removed: false };
      list.push(entry);
      if (signal) signal.addEventListener('abort', () => this.removeEventListener(type, callback, { capture }));
    }
    removeEventListener(type, callback, options) {
      const capture = Boolean(flattenOptions(options).capture);
      const list = this.#listeners.get(StringCtor(type));
      if (!list) return;
      const i = list.findIndex((l) => l.callback === callback && l.capture === capture);
      if (i >= 0) {
        list[i].removed = true;
        list.splice(i, 1);
      }
    }
    dispatchEvent(event) {
      if (!(event instanceof Event)) {
        throw new TypeErrorCtor("Failed to execute 'dispatchEvent': parameter 1 is not of type 'Event'.");
      }
      beginDispatch(event, this);
      try {
        const list = this.#listeners.get(event.type);
        if (list) {
          for (const l of [...list]) {
            if (l.removed) continue;
            if (l.once) this.removeEventListener(event.type, l.callback, { capture: l.capture });
            try {
              if (typeof l.callback === 'function') ReflectApply(l.callback, this, [event]);
              else if (typeof l.callback.handleEvent === 'function') ReflectApply(l.callback.handleEvent, l.callback, [event]);
            } catch (e) {
              reportUncaught(e);
            }
            if (stoppedNow(event)) break;
          }
        }
      } finally {
        endDispatch(event);
      }
      return !event.defaultPrevented;
    }
  }
  defineGlobal('EventTarget', EventTarget);

  // An `on<type>` event handler attribute, as the HTML Standard defines them.
  function defineHandler(proto, type) {
    const handlers = new WeakMap();
    ObjectDefineProperty(proto, 'on' + type, {
      get() { return handlers.get(this)?.fn ?? null; },
      set(fn) {
        const old = handlers.get(this);
        if (old) this.removeEventListener(type, old.listener);
        if (typeof fn === 'function') {
          const listener = (e) => fn.call(this, e);
          handlers.set(this, { fn, listener });
          this.addEventListener(type, listener);
        } else {
          handlers.delete(this);
        }
      },
      configurable: true,
      enumerable: true,
    });
  }

  const abortAlgorithms = new WeakMap(); // signal -> [fn] (fetch and `any` hook in here)
  let constructingSignal = false;
  class AbortSignal extends EventTarget {
    #aborted = false;
    #reason = undefined;
    constructor() {
      if (!constructingSignal) throw new TypeErrorCtor('Illegal constructor');
      super();
    }
    get aborted() { return this.#aborted; }
    get reason() { return this.#reason; }
    throwIfAborted() {
      if (this.#aborted) throw this.#reason;
    }
    static _signalAbort(signal, reason) {
      if (signal.#aborted) return;
      signal.#aborted = true;
      signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
      const algorithms = abortAlgorithms.get(signal) ?? [];
      abortAlgorithms.delete(signal);
      for (const fn of algorithms) {
        try { fn(signal.#reason); } catch (e) { reportUncaught(e); }
      }
      signal.dispatchEvent(new Event('abort'));
    }
    static abort(reason) {
      const s = newSignal();
      signalAbort(s, reason);
      return s;
    }
    static timeout(ms) {
      const delay = Number(ms);
      if (!(delay >= 0) || delay > Number.MAX_SAFE_INTEGER) {
        throw new TypeErrorCtor("Failed to execute 'timeout' on 'AbortSignal': Value is outside the 'unsigned long long' value range.");
      }
      const s = newSignal();
      schedule('AbortSignal.timeout', () => signalAbort(s, new DOMException('The operation timed out.', 'TimeoutError')), delay, [], false);
      return s;
    }
    static any(signals) {
      const list = [...signals];
      for (const s of list) {
        if (!(s instanceof AbortSignal)) throw new TypeErrorCtor("Failed to execute 'any' on 'AbortSignal': Failed to convert value to 'AbortSignal'.");
      }
      const result = newSignal();
      const already = list.find((s) => s.aborted);
      if (already) {
        signalAbort(result, already.reason);
        return result;
      }
      for (const s of list) onAbort(s, (reason) => signalAbort(result, reason));
      return result;
    }
  }
  const signalAbort = AbortSignal._signalAbort;
  delete AbortSignal._signalAbort;
  defineHandler(AbortSignal.prototype, 'abort');
  function newSignal() {
    constructingSignal = true;
    try {
      return new AbortSignal();
    } finally {
      constructingSignal = false;
    }
  }
  // Runs `fn(reason)` when `signal` aborts (before its abort event), for fetch and `any`.
  function onAbort(signal, fn) {
    let list = abortAlgorithms.get(signal);
    if (!list) abortAlgorithms.set(signal, (list = []));
    list.push(fn);
  }
  defineGlobal('AbortSignal', AbortSignal);

  class AbortController {
    #signal = newSignal();
    get signal() { return this.#signal; }
    abort(reason) { signalAbort(this.#signal, reason); }
  }
  defineGlobal('AbortController', AbortController);
