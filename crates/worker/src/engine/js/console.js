// The `console` global: each call formats its arguments (inspect.js) and hands the line to the
// worker's `log` native with its level.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { format } = load('inspect.js');
const { DateNow, MapCtor } = load('primordials.js');

const { log } = natives;
const LOG = 0, INFO = 1, WARN = 2, ERROR = 3, DEBUG = 4;
let indent = '';
const counts = new MapCtor();
const timers = new MapCtor();
const emit = (level, args) => {
  const text = format(args);
  log(level, indent === '' ? text : indent + text.replace(/\n/g, '\n' + indent));
};
const console = {
  log: (...a) => emit(LOG, a),
  info: (...a) => emit(INFO, a),
  warn: (...a) => emit(WARN, a),
  error: (...a) => emit(ERROR, a),
  debug: (...a) => emit(DEBUG, a),
  trace: (...a) => emit(DEBUG, ['Trace:', ...a]),
  dir: (v) => emit(LOG, [v]),
  dirxml: (...a) => emit(LOG, a),
  table: (...a) => emit(LOG, a),
  assert: (cond, ...a) => { if (!cond) emit(ERROR, ['Assertion failed' + (a.length ? ':' : ''), ...a]); },
  count: (label = 'default') => {
    const n = (counts.get(label) || 0) + 1;
    counts.set(label, n);
    emit(INFO, [`${label}: ${n}`]);
  },
  countReset: (label = 'default') => { counts.delete(label); },
  group: (...a) => { if (a.length) emit(LOG, a); indent += '  '; },
  groupCollapsed: (...a) => { if (a.length) emit(LOG, a); indent += '  '; },
  groupEnd: () => { indent = indent.slice(2); },
  time: (label = 'default') => { timers.set(label, DateNow()); },
  timeLog: (label = 'default', ...a) => {
    if (timers.has(label)) emit(INFO, [`${label}: ${DateNow() - timers.get(label)}ms`, ...a]);
  },
  timeEnd: (label = 'default') => {
    if (timers.has(label)) { emit(INFO, [`${label}: ${DateNow() - timers.get(label)}ms`]); timers.delete(label); }
  },
};

return { LOG, INFO, WARN, ERROR, DEBUG, emit, console };
})
