// The text of an uncaught throw or rejection: the run's outcome (describeThrow, through the
// helpers) and the console line of a throw in a timer, listener or microtask (reportUncaught).
// Built-in methods through primordials.js's captures (primordials.js says why).
(function (load) {
'use strict';
const { emit, ERROR } = load('console.js');
const { inspect, isError } = load('inspect.js');
const { StringCtor, call, stringSlice, stringStartsWith } = load('primordials.js');

function describeThrow(v) {
  if (isError(v)) {
    let name = 'Error';
    let message = '';
    try { name = StringCtor(v.name); } catch {}
    try { message = StringCtor(v.message); } catch {}
    return message === '' ? name : `${name}: ${message}`;
  }
  return 'Uncaught ' + inspect(v, 1, []);
}

function reportUncaught(e) {
  const text = describeThrow(e);
  emit(ERROR, ['Uncaught ' + (call(stringStartsWith, text, 'Uncaught ') ? call(stringSlice, text, 9) : text)]);
}

return { describeThrow, reportUncaught };
})
