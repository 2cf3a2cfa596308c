// Timers and microtasks (HTML), `performance`, and the logical clock of a replayable run. The
// worker's event loop calls runTimers() between tool answers; a run ends when its promise
// settles, so pending timers never keep it alive. Built-in methods through primordials.js's
// captures (primordials.js says why).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { reportUncaught } = load('errors.js');
const {
  DateNow, MapCtor, MathFloor, NumberCtor, PromiseResolve, ReflectApply, TypeErrorCtor, arrayPush, arrayShift, call, mapDelete,
  mapGet, mapSet, promiseThen,
} = load('primordials.js');

const nowMs = natives.now;

// A replayable run's clock (docs/runtime.md, "Replayable runs (approvals)"): microseconds since
// its epoch, -1 in a run that reads the real clock. Each read advances it by 1 µs; a timer's
// callback first moves it to at least the logical time the timer was due; waiting for the host
// does not move it.
let logicalUs = -1;
let epochMs = 0;
function readLogicalUs() {
  const t = logicalUs;
  logicalUs = t + 1;
  return t;
}
// Date.now() of a replayable run (js/replay.js reads its Date through this).
function logicalDateNow() {
  return epochMs + MathFloor(readLogicalUs() / 1000);
}

// Ordered by `order` (the deadline; in a replayable run the logical deadline, so timers fire in
// the same order whatever the host's answers took), then scheduling order.
const timerQueue = [];
const timerById = new MapCtor();
let timerSeq = 0;
let nextTimerId = 1;

function insertTimer(t) {
  let lo = 0;
  let hi = timerQueue.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const m = timerQueue[mid];
    if (m.order < t.order || (m.order === t.order && m.seq < t.seq)) lo = mid + 1;
    else hi = mid;
  }
  // timerQueue.splice(lo, 0, t), in place.
  call(arrayPush, timerQueue, t);
  for (let i = timerQueue.length - 1; i > lo; i--) timerQueue[i] = timerQueue[i - 1];
  timerQueue[lo] = t;
}

function schedule(name, callback, delay, args, repeat) {
  if (typeof callback !== 'function') {
    throw new TypeErrorCtor(`${name} needs a function as its first argument (code strings are not evaluated).`);
  }
  let ms = NumberCtor(delay);
  if (!(ms >= 1)) ms = 1; // as Node: at least 1 ms (NaN and negatives included)
  if (ms > 2147483647) ms = 1;
  const deadline = nowMs() + ms;
  // `at`: the logical time the timer is due, in a replayable run (0 otherwise).
  const at = logicalUs < 0 ? 0 : logicalUs + ms * 1000;
  const t = {
    id: nextTimerId++, callback, args, delay: ms, repeat, deadline, at, order: logicalUs < 0 ? deadline : at, seq: timerSeq++, cancelled: false,
  };
  call(mapSet, timerById, t.id, t);
  insertTimer(t);
  return t.id;
}

function clearTimer(id) {
  const t = call(mapGet, timerById, NumberCtor(id));
  if (t !== undefined) {
    t.cancelled = true;
    call(mapDelete, timerById, t.id);
  }
}

// Fires at most one due timer: returns -2 after firing (the loop then runs microtasks and
// calls again), else the next deadline (ms on the `now` clock), or -1 when none is pending.
function runTimers() {
  while (timerQueue.length > 0 && timerQueue[0].cancelled) call(arrayShift, timerQueue);
  if (timerQueue.length === 0) return -1;
  const t = timerQueue[0];
  const now = nowMs();
  if (t.deadline > now) return t.deadline;
  call(arrayShift, timerQueue);
  if (logicalUs >= 0 && logicalUs < t.at) logicalUs = t.at;
  if (t.repeat) {
    t.deadline = now + t.delay;
    t.at = logicalUs < 0 ? 0 : logicalUs + t.delay * 1000;
    t.order = logicalUs < 0 ? t.deadline : t.at;
    t.seq = timerSeq++;
    insertTimer(t);
  } else {
    call(mapDelete, timerById, t.id);
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
// Starts the run's clock: the real one, or with `epoch` (ms since the Unix epoch) the logical
// clock of a replayable run, at that epoch.
function beginTimers(epoch) {
  originMs = nowMs();
  if (epoch === undefined) {
    timeOrigin = DateNow();
    return;
  }
  epochMs = epoch;
  timeOrigin = epoch;
  logicalUs = 0;
}
// Milliseconds since the run began (performance.now(), Event#timeStamp).
function sinceOrigin() {
  return logicalUs < 0 ? nowMs() - originMs : readLogicalUs() / 1000;
}
const performance = {
  now: () => sinceOrigin(),
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
  beginTimers,
  sinceOrigin,
  logicalDateNow,
  performance,
};
})
