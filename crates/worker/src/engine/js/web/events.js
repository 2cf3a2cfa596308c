// Event, EventTarget, AbortSignal, AbortController (DOM Standard: events and aborting, one
// file because EventTarget checks for AbortSignal, which extends it), and the `on<type>`
// handler attributes of the HTML Standard. Built-in methods through primordials.js's captures,
// lists walked by index (primordials.js says why); the runtime's own dispatch, listeners and
// abort state through private members, not the public methods a program may replace.
(function (load) {
'use strict';
const { reportUncaught } = load('errors.js');
const { DOMException } = load('web/dom_exception.js');
const { schedule, sinceOrigin } = load('web/timers.js');
const {
  BooleanCtor, MapCtor, NumberCtor, NumberMaxSafeInteger, ObjectDefineProperty, ReflectApply, StringCtor, TypeErrorCtor,
  WeakMapCtor, arrayPop, arrayPush, call, mapGet, mapSet, weakMapDelete, weakMapGet, weakMapSet,
} = load('primordials.js');

const NONE = 0, AT_TARGET = 2;

// Dispatch state only EventTarget#dispatchEvent sets, and what it reads; assigned in Event's
// static block.
let beginDispatch, stoppedNow, endDispatch, eventType, eventCanceled;

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
    eventType = (e) => e.#type;
    eventCanceled = (e) => e.#canceled;
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

// Removes the element at index `i` of `list`, in place.
function removeAt(list, i) {
  for (let j = i; j < list.length - 1; j++) list[j] = list[j + 1];
  call(arrayPop, list);
}

// For the handler attributes and AbortSignal (file-private): an EventTarget's own add, remove
// and dispatch; assigned in EventTarget's static block.
let addListener, removeListener, dispatch;

class EventTarget {
  #listeners = new MapCtor(); // type -> [{ callback, capture, once, removed }]
  static {
    addListener = (target, type, callback, options) => target.#add(type, callback, options);
    removeListener = (target, type, callback, options) => target.#remove(type, callback, options);
    dispatch = (target, event) => target.#dispatch(event);
  }
  addEventListener(type, callback, options) {
    this.#add(type, callback, options);
  }
  removeEventListener(type, callback, options) {
    this.#remove(type, callback, options);
  }
  dispatchEvent(event) {
    return this.#dispatch(event);
  }
  #add(type, callback, options) {
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
    if (signal !== undefined && isAborted(signal)) return;
    type = StringCtor(type);
    let list = call(mapGet, this.#listeners, type);
    if (!list) call(mapSet, this.#listeners, type, (list = []));
    if (indexOfListener(list, callback, capture) >= 0) return;
    const entry = { callback, capture, once: BooleanCtor(o.once), removed: false };
    call(arrayPush, list, entry);
    if (signal) signal.#add('abort', () => this.#remove(type, callback, { capture }));
  }
  #remove(type, callback, options) {
    const capture = BooleanCtor(flattenOptions(options).capture);
    const list = call(mapGet, this.#listeners, StringCtor(type));
    if (!list) return;
    const i = indexOfListener(list, callback, capture);
    if (i >= 0) {
      list[i].removed = true;
      removeAt(list, i);
    }
  }
  #dispatch(event) {
    if (!(event instanceof Event)) {
      throw new TypeErrorCtor("Failed to execute 'dispatchEvent': parameter 1 is not of type 'Event'.");
    }
    beginDispatch(event, this);
    try {
      const type = eventType(event);
      const listed = call(mapGet, this.#listeners, type);
      if (listed) {
        const list = [];
        for (let i = 0; i < listed.length; i++) call(arrayPush, list, listed[i]);
        for (let i = 0; i < list.length; i++) {
          const l = list[i];
          if (l.removed) continue;
          if (l.once) this.#remove(type, l.callback, { capture: l.capture });
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
    return !eventCanceled(event);
  }
}

// The index in `list` of the listener for `callback` in phase `capture`, or -1.
function indexOfListener(list, callback, capture) {
  for (let i = 0; i < list.length; i++) {
    if (list[i].callback === callback && list[i].capture === capture) return i;
  }
  return -1;
}

// An `on<type>` event handler attribute, as the HTML Standard defines them.
function defineHandler(proto, type) {
  const handlers = new WeakMapCtor();
  ObjectDefineProperty(proto, 'on' + type, {
    get() { return call(weakMapGet, handlers, this)?.fn ?? null; },
    set(fn) {
      const old = call(weakMapGet, handlers, this);
      if (old) removeListener(this, type, old.listener);
      if (typeof fn === 'function') {
        const listener = (e) => ReflectApply(fn, this, [e]);
        call(weakMapSet, handlers, this, { fn, listener });
        addListener(this, type, listener);
      } else {
        call(weakMapDelete, handlers, this);
      }
    },
    configurable: true,
    enumerable: true,
  });
}

const abortAlgorithms = new WeakMapCtor(); // signal -> [fn] (fetch and `any` hook in here)
let constructingSignal = false;
let signalAbort; // assigned in AbortSignal's static block
// For EventTarget and fetch (exported to runtime files, never to programs): a signal's state,
// read from its private fields; assigned in AbortSignal's static block.
let isAborted; // (signal): whether it has aborted
let abortReason; // (signal): why
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
      const algorithms = call(weakMapGet, abortAlgorithms, signal) ?? [];
      call(weakMapDelete, abortAlgorithms, signal);
      for (let i = 0; i < algorithms.length; i++) {
        try { algorithms[i](signal.#reason); } catch (e) { reportUncaught(e); }
      }
      dispatch(signal, new Event('abort'));
    };
    isAborted = (signal) => signal.#aborted;
    abortReason = (signal) => signal.#reason;
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
    // A sequence, read through its own iterator, as WebIDL says.
    const list = [...signals];
    for (let i = 0; i < list.length; i++) {
      if (!(list[i] instanceof AbortSignal)) throw new TypeErrorCtor("Failed to execute 'any' on 'AbortSignal': Failed to convert value to 'AbortSignal'.");
    }
    const result = newSignal();
    for (let i = 0; i < list.length; i++) {
      if (list[i].#aborted) {
        signalAbort(result, list[i].#reason);
        return result;
      }
    }
    for (let i = 0; i < list.length; i++) onAbort(list[i], (reason) => signalAbort(result, reason));
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
  let list = call(weakMapGet, abortAlgorithms, signal);
  if (!list) call(weakMapSet, abortAlgorithms, signal, (list = []));
  call(arrayPush, list, fn);
}

class AbortController {
  #signal = newSignal();
  get signal() { return this.#signal; }
  abort(reason) { signalAbort(this.#signal, reason); }
}

return { Event, EventTarget, AbortSignal, abortReason, isAborted, newSignal, onAbort, AbortController };
})
