// Provider globals: one frozen proxy per provider whose properties are its tools; calling a
// tool asks the host through the `callTool` native. Built-in methods through primordials.js's
// captures (primordials.js says why).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const {
  ErrorCtor, ObjectCreate, ObjectDefineProperty, PromiseReject, ProxyCtor, SetCtor, MapCtor, arrayPush, call, mapGet, mapSet,
  setAdd, setHas,
} = load('primordials.js');

const { callTool, renderFailure } = natives;

function makeProvider(name, tools) {
  // The listed tools, as a set and in order (null: an open list).
  let listed = null;
  const order = [];
  if (tools !== null) {
    listed = new SetCtor();
    for (let i = 0; i < tools.length; i++) {
      if (call(setHas, listed, tools[i])) continue;
      call(setAdd, listed, tools[i]);
      call(arrayPush, order, tools[i]);
    }
  }
  const isListed = (tool) => listed === null || call(setHas, listed, tool);
  const cache = new MapCtor();
  const toolFn = (tool) => {
    let fn = call(mapGet, cache, tool);
    if (fn === undefined) {
      if (isListed(tool)) {
        fn = { [tool]: (...args) => callTool(name, tool, args) }[tool];
      } else {
        const text = renderFailure('TOOL_NOT_FOUND', { tool });
        fn = { [tool]: () => PromiseReject(new ErrorCtor(text)) }[tool];
      }
      call(mapSet, cache, tool, fn);
    }
    return fn;
  };
  return new ProxyCtor(ObjectCreate(null), {
    get(_, prop) {
      if (typeof prop !== 'string') return undefined;
      // `await provider` and promise resolution probe `then`; only a listed tool named
      // `then` answers it.
      if (prop === 'then' && (listed === null || !call(setHas, listed, 'then'))) return undefined;
      return toolFn(prop);
    },
    has(_, prop) {
      return typeof prop === 'string' && isListed(prop);
    },
    ownKeys() {
      const keys = [];
      for (let i = 0; i < order.length; i++) call(arrayPush, keys, order[i]);
      return keys;
    },
    getOwnPropertyDescriptor(_, prop) {
      if (typeof prop !== 'string' || listed === null || !call(setHas, listed, prop)) return undefined;
      return { value: toolFn(prop), writable: false, enumerable: true, configurable: true };
    },
    set() { return false; },
    defineProperty() { return false; },
    deleteProperty() { return false; },
  });
}

function installProviders(list) {
  for (let i = 0; i < list.length; i++) {
    const name = list[i][0];
    ObjectDefineProperty(globalThis, name, {
      value: makeProvider(name, list[i][1]),
      writable: false,
      configurable: false,
      enumerable: false,
    });
  }
}

return { installProviders };
})
