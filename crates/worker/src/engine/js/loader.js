// Evaluates the runtime's files, once per worker into the startup snapshot (or in a fresh
// context when there is none), before any program runs. Each file is a script whose value is a
// function `(load) => exports`; `load(name)` evaluates the named file once and returns its
// exports, so a file's first lines say what it takes from which file. `natives.js` is no file:
// its exports are `natives`, the worker's native bindings (the table in natives/mod.rs; failure
// texts come from its `renderFailure`), and `runtimeGlobals`, the names of the globals the
// runtime installs, in order (limits::RUNTIME_GLOBALS). The value of this script is called with
// the bindings, the files by name and the global names (runtime_js.rs); it returns the helpers
// runtime.js exports.
(function loadRuntime(natives, files, runtimeGlobals) {
  'use strict';
  const IN_PROGRESS = {};
  const loaded = { __proto__: null, 'natives.js': { natives, runtimeGlobals } };
  function load(name) {
    let exports = loaded[name];
    if (exports === undefined) {
      const file = files[name];
      if (typeof file !== 'function') throw new Error(`no runtime file "${name}"`);
      loaded[name] = IN_PROGRESS;
      exports = loaded[name] = file(load);
    }
    if (exports === IN_PROGRESS) throw new Error(`runtime files load each other in a cycle at "${name}"`);
    return exports;
  }
  return load('runtime.js').helpers;
})
