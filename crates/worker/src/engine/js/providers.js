// Provider globals: one frozen proxy per provider whose properties are its tools; calling a
// tool asks the host through the `callTool` native.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { ErrorCtor, ObjectCreate, ObjectDefineProperty, PromiseReject, ProxyCtor, SetCtor, MapCtor } = load('primordials.js');

const { callTool, renderFailure } = natives;

function makeProvider(name, tools) {
  const listed = tools === null ? null : new SetCtor(tools);
  const cache = new MapCtor();
  const toolFn = (tool) => {
    let fn = cache.get(tool);
    if (fn === undefined) {
      if (listed === null || listed.has(tool)) {
        fn = { [tool]: (...args) => callTool(name, tool, args) }[tool];
      } else {
        const text = renderFailure('TOOL_NOT_FOUND', { tool });
        fn = { [tool]: () => PromiseReject(new ErrorCtor(text)) }[tool];
      }
      cache.set(tool, fn);
    }
    return fn;
  };
  return new ProxyCtor(ObjectCreate(null), {
    get(_, prop) {
      if (typeof prop !== 'string') return undefined;
      // `await provider` and promise resolution probe `then`; only a listed tool named
      // `then` answers it.
      if (prop === 'then' && (listed === null || !listed.has('then'))) return undefined;
      return toolFn(prop);
    },
    has(_, prop) {
      return typeof prop === 'string' && (listed === null || listed.has(prop));
    },
    ownKeys() {
      return listed === null ? [] : [...listed];
    },
    getOwnPropertyDescriptor(_, prop) {
      if (typeof prop !== 'string' || listed === null || !listed.has(prop)) return undefined;
      return { value: toolFn(prop), writable: false, enumerable: true, configurable: true };
    },
    set() { return false; },
    defineProperty() { return false; },
    deleteProperty() { return false; },
  });
}

function installProviders(list) {
  for (const [name, tools] of list) {
    ObjectDefineProperty(globalThis, name, {
      value: makeProvider(name, tools),
      writable: false,
      configurable: false,
      enumerable: false,
    });
  }
}

return { installProviders };
})
