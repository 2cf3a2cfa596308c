// Timers and microtasks (HTML), and `performance`. The worker's event loop calls runTimers()
// between tool answers; a run ends when its promise settles, so pending timers never keep it
// alive.
import { natives } from 'runtime:natives.js';
import { reportUncaught } from 'runtime:errors.js';
import { DateNow, MapCtor, NumberCtor, PromiseResolve, ReflectApply, TypeErrorCtor, call, promiseThen } from 'runtime:primordials.js';

const nowMs = natives.now;

const timerQueue = []; // ordered by deadline, then scheduling order
const timerById = new MapCtor();
let timerSeq = 0;
let nextTimerId = 1;

function insertTimer(t) {
  let lo = 0;
  let hi = timerQueue.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const m = timerQueue[mid];
    if (m.deadline < t.deadline || (m.deadline === t.deadline && m.seq < t.seq)) lo = mid + 1;
    else hi = mid;
  }
  timerQueue.splice(lo, 0, t);
}

export function schedule(name, callback, delay, args, repeat) {
  if (typeof callback !== 'function') {
    throw new TypeErrorCtor(`${name} needs a function as its first argument (code strings are not evaluated).`);
  }
  let ms = NumberCtor(delay);
  if (!(ms >= 1)) ms = 1; // as Node: at least 1 ms (NaN and negatives included)
  if (ms > 2147483647) ms = 1;
  const t = { id: nextTimerId++, callback, args, delay: ms, repeat, deadline: nowMs() + ms, seq: timerSeq++, cancelled: false };
  timerById.set(t.id, t);
  insertTimer(t);
  return t.id;
}

function clearTimer(id) {
  const t = timerById.get(NumberCtor(id));
  if (t !== undefined) {
    t.cancelled = true;
    timerById.delete(t.id);
  }
}

// Fires at most one due timer: returns -2 after firing (the loop then runs microtasks and
// calls again), else the next deadline (ms on the `now` clock), or -1 when none is pending.
export function runTimers() {
  while (timerQueue.length > 0 && timerQueue[0].cancelled) timerQueue.shift();
  if (timerQueue.length === 0) return -1;
  const t = timerQueue[0];
  const now = nowMs();
  if (t.deadline > now) return t.deadline;
  timerQueue.shift();
  if (t.repeat) {
    t.deadline = now + t.delay;
    t.seq = timerSeq++;
    insertTimer(t);
  } else {
    timerById.delete(t.id);
  }
  try {
    ReflectApply(t.callback, globalThis, t.args);
  } catch (e) {
    reportUncaught(e);
  }
  return -2;
}

export function setTimeout(callback, delay = 0, ...args) {
  return schedule('setTimeout', callback, delay, args, false);
}
export function setInterval(callback, delay = 0, ...args) {
  return schedule('setInterval', callback, delay, args, true);
}
export function clearTimeout(id) {
  clearTimer(id);
}
export function clearInterval(id) {
  clearTimer(id);
}
export function queueMicrotask(callback) {
  if (typeof callback !== 'function') {
    throw new TypeErrorCtor("Failed to execute 'queueMicrotask': parameter 1 is not of type 'Function'.");
  }
  call(promiseThen, PromiseResolve(), () => {
    try {
      callback();
    } catch (e) {
      reportUncaught(e);
    }
  });
}

// performance.now() counts from the start of the run, not from when the isolate was prepared.
let originMs = nowMs();
let timeOrigin = DateNow();
export function beginRun() {
  originMs = nowMs();
  timeOrigin = DateNow();
}
// Milliseconds since the run began (performance.now(), Event#timeStamp).
export function sinceOrigin() {
  return nowMs() - originMs;
}
export const performance = {
  now: () => nowMs() - originMs,
  get timeOrigin() {
    return timeOrigin;
  },
  toJSON: () => ({ timeOrigin }),
};
