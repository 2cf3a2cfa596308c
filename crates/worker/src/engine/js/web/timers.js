// Timers and microtasks (HTML), and `performance`. The worker's event loop calls runTimers()
// between tool answers; a run ends when its promise settles, so pending timers never keep it
// alive.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { reportUncaught } = load('errors.js');
const { DateNow, MapCtor, NumberCtor, PromiseResolve, ReflectApply, TypeErrorCtor, call, promiseThen } = load('primordials.js');

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

function schedule(name, callback, delay, args, repeat) {
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
function runTimers() {
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

function setTimeout(callback, delay = 0, ...args) {
  return schedule('setTimeout', callback, delay, args, false);
}
function setInterval(callback, delay = 0, ...args) {
  return schedule('setInterval', callback, delay, args, true);
}
function clearTimeout(id) {
  clearTimer(id);
}
function clearInterval(id) {
  clearTimer(id);
}
function queueMicrotask(callback) {
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
function beginRun() {
  originMs = nowMs();
  timeOrigin = DateNow();
}
// Milliseconds since the run began (performance.now(), Event#timeStamp).
function sinceOrigin() {
  return nowMs() - originMs;
}
const performance = {
  now: () => nowMs() - originMs,
  get timeOrigin() {
    return timeOrigin;
  },
  toJSON: () => ({ timeOrigin }),
};

return {
  schedule,
  runTimers,
  setTimeout,
  setInterval,
  clearTimeout,
  clearInterval,
  queueMicrotask,
  beginRun,
  sinceOrigin,
  performance,
};
})
