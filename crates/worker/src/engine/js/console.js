// The `console` global: each call formats its arguments (inspect.js) and hands the line to the
// worker's `log` native with its level. Built-in methods through primordials.js's captures
// (primordials.js says why).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { format } = load('inspect.js');
const { DateNow, MapCtor, arrayPush, call, mapDelete, mapGet, mapHas, mapSet, replaceMatches, stringSlice } = load('primordials.js');

const { log } = natives;
const LOG = 0, INFO = 1, WARN = 2, ERROR = 3, DEBUG = 4;
let indent = '';
const counts = new MapCtor();
const timers = new MapCtor();
const NEWLINE = /\n/g;
const emit = (level, args) => {
  const text = format(args);
  log(level, indent === '' ? text : indent + replaceMatches(text, NEWLINE, () => '\n' + indent));
};
// [first, ...rest], without iterating `rest`.
const prefixed = (first, rest) => {
  const out = [first];
  for (let i = 0; i < rest.length; i++) call(arrayPush, out, rest[i]);
  return out;
};
const console = {
  log: (...a) => emit(LOG, a),
  info: (...a) => emit(INFO, a),
  warn: (...a) => emit(WARN, a),
  error: (...a) => emit(ERROR, a),
  debug: (...a) => emit(DEBUG, a),
  trace: (...a) => emit(DEBUG, prefixed('Trace:', a)),
  dir: (v) => emit(LOG, [v]),
  dirxml: (...a) => emit(LOG, a),
  table: (...a) => emit(LOG, a),
  assert: (cond, ...a) => { if (!cond) emit(ERROR, prefixed('Assertion failed' + (a.length ? ':' : ''), a)); },
  count: (label = 'default') => {
    const n = (call(mapGet, counts, label) || 0) + 1;
    call(mapSet, counts, label, n);
    emit(INFO, [`${label}: ${n}`]);
  },
  countReset: (label = 'default') => { call(mapDelete, counts, label); },
  group: (...a) => { if (a.length) emit(LOG, a); indent += '  '; },
  groupCollapsed: (...a) => { if (a.length) emit(LOG, a); indent += '  '; },
  groupEnd: () => { indent = call(stringSlice, indent, 2); },
  time: (label = 'default') => { call(mapSet, timers, label, DateNow()); },
  timeLog: (label = 'default', ...a) => {
    if (call(mapHas, timers, label)) emit(INFO, prefixed(`${label}: ${DateNow() - call(mapGet, timers, label)}ms`, a));
  },
  timeEnd: (label = 'default') => {
    if (call(mapHas, timers, label)) {
      emit(INFO, [`${label}: ${DateNow() - call(mapGet, timers, label)}ms`]);
      call(mapDelete, timers, label);
    }
  },
};

return { LOG, INFO, WARN, ERROR, DEBUG, emit, console };
})
