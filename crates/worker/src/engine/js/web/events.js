// Event, EventTarget, AbortSignal, AbortController (DOM Standard: events and aborting, one
// file because EventTarget checks for AbortSignal, which extends it), and the `on<type>`
// handler attributes of the HTML Standard.
(function (load) {
'use strict';
const { reportUncaught } = load('errors.js');
const { DOMException } = load('web/dom_exception.js');
const { schedule, sinceOrigin } = load('web/timers.js');
const {
  BooleanCtor, MapCtor, NumberCtor, NumberMaxSafeInteger, ObjectDefineProperty, ReflectApply, StringCtor, TypeErrorCtor,
  WeakMapCtor,
} = load('primordials.js');

const NONE = 0, AT_TARGET = 2;

// Dispatch state only EventTarget#dispatchEvent sets; assigned in Event's static block.
let beginDispatch, stoppedNow, endDispatch;

class Event {
  #type; #bubbles; #cancelable; #composed; #canceled = false; #stop = false; #stopNow = false;
  #target = null; #currentTarget = null; #phase = NONE; #dispatching = false; #timeStamp;
  constructor(type, init = {}) {
    if (arguments.length === 0) throw new TypeErrorCtor("Failed to construct 'Event': 1 argument required, but only 0 present.");
    this.#type = StringCtor(type);
    this.#bubbles = BooleanCtor(init?.bubbles);
    this.#cancelable = BooleanCtor(init?.cancelable);
    this.#composed = BooleanCtor(init?.composed);
    this.#timeStamp = sinceOrigin();
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
  static {
    beginDispatch = (e, target) => {
      if (e.#dispatching) throw new DOMException('The event is already being dispatched.', 'InvalidStateError');
      e.#dispatching = true; e.#target = target; e.#currentTarget = target; e.#phase = AT_TARGET;
      e.#stop = false; e.#stopNow = false;
    };
    stoppedNow = (e) => e.#stopNow;
    endDispatch = (e) => { e.#dispatching = false; e.#currentTarget = null; e.#phase = NONE; };
  }
}
for (const [k, v] of [['NONE', 0], ['CAPTURING_PHASE', 1], ['AT_TARGET', 2], ['BUBBLING_PHASE', 3]]) {
  ObjectDefineProperty(Event, k, { value: v, enumerable: true });
  ObjectDefineProperty(Event.prototype, k, { value: v, enumerable: true });
}

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
    const capture = BooleanCtor(o.capture);
    const signal = o.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeErrorCtor("Failed to execute 'addEventListener': member signal is not of type 'AbortSignal'.");
    }
    if (signal?.aborted) return;
    type = StringCtor(type);
    let list = this.#listeners.get(type);
    if (!list) this.#listeners.set(type, (list = []));
    if (list.some((l) => l.callback === callback && l.capture === capture)) return;
    const entry = { callback, capture, once: BooleanCtor(o.once), removed: false };
    list.push(entry);
    if (signal) signal.addEventListener('abort', () => this.removeEventListener(type, callback, { capture }));
  }
  removeEventListener(type, callback, options) {
    const capture = BooleanCtor(flattenOptions(options).capture);
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

// An `on<type>` event handler attribute, as the HTML Standard defines them.
function defineHandler(proto, type) {
  const handlers = new WeakMapCtor();
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

const abortAlgorithms = new WeakMapCtor(); // signal -> [fn] (fetch and `any` hook in here)
let constructingSignal = false;
let signalAbort; // assigned in AbortSignal's static block
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
  static {
    signalAbort = (signal, reason) => {
      if (signal.#aborted) return;
      signal.#aborted = true;
      signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
      const algorithms = abortAlgorithms.get(signal) ?? [];
      abortAlgorithms.delete(signal);
      for (const fn of algorithms) {
        try { fn(signal.#reason); } catch (e) { reportUncaught(e); }
      }
      signal.dispatchEvent(new Event('abort'));
    };
  }
  static abort(reason) {
    const s = newSignal();
    signalAbort(s, reason);
    return s;
  }
  static timeout(ms) {
    const delay = NumberCtor(ms);
    if (!(delay >= 0) || delay > NumberMaxSafeInteger) {
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
defineHandler(AbortSignal.prototype, 'abort');

// A new, not yet aborted signal (the constructor is not public).
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

class AbortController {
  #signal = newSignal();
  get signal() { return this.#signal; }
  abort(reason) { signalAbort(this.#signal, reason); }
}

return { Event, EventTarget, AbortSignal, newSignal, onAbort, AbortController };
})
