// Evaluated once in every fresh context, before any program code runs. The completion value is
// a function the worker calls with its native bindings; it installs `console`, removes what the
// sandbox must not have, and returns the helpers the worker needs (provider globals, the text
// of an uncaught throw). Intrinsics are captured here, so a program that overwrites
// `Object.keys` or `Array.prototype.join` cannot break the worker's own formatting.
(function bootstrap(natives) {
  'use strict';
  const { callTool, log, toolNotFound } = natives;
  const ObjectKeys = Object.keys;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectIs = Object.is;
  const ObjectDefineProperty = Object.defineProperty;
  const ArrayIsArray = Array.isArray;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const FunctionToString = Function.prototype.toString;
  const ErrorCtor = Error;
  const JSONStringify = JSON.stringify;
  const MapCtor = Map;
  const SetCtor = Set;
  const ProxyCtor = Proxy;
  const PromiseReject = Promise.reject.bind(Promise);
  const StringCtor = String;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const mapEntries = Map.prototype.entries;
  const setValues = Set.prototype.values;
  const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size').get;
  const setSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size').get;
  const dateToISO = Date.prototype.toISOString;
  const dateGetTime = Date.prototype.getTime;
  const regexpToString = RegExp.prototype.toString;
  const abByteLength = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength').get;
  const errorToString = Error.prototype.toString;
  const symbolToString = Symbol.prototype.toString;

  // Not part of the sandbox: WebAssembly compiles code and allocates memory the heap limit does
  // not meter. SharedArrayBuffer: no second thread exists to share with, and growable shared
  // buffers would escape the meter; Atomics stays (it works on ordinary typed arrays).
  delete globalThis.WebAssembly;
  delete globalThis.SharedArrayBuffer;

  // A buffer cannot grow past the length it was created with: `maxByteLength` is refused, and
  // `resize` is gone. (Copying into a new, larger buffer is ordinary, metered allocation.)
  {
    const NativeArrayBuffer = ArrayBuffer;
    const TypeErrorCtor = TypeError;
    const ReflectConstruct = Reflect.construct;
    const refuse = () => {
      throw new TypeErrorCtor(natives.noResizable);
    };
    delete NativeArrayBuffer.prototype.resize;
    ObjectDefineProperty(NativeArrayBuffer.prototype, 'resizable', { get: () => false, configurable: true });
    const Guarded = new Proxy(NativeArrayBuffer, {
      construct(target, args, newTarget) {
        const opts = args[1];
        if (opts !== null && typeof opts === 'object' && opts.maxByteLength !== undefined) refuse();
        return ReflectConstruct(target, [args[0]], newTarget === Guarded ? target : newTarget);
      },
    });
    ObjectDefineProperty(NativeArrayBuffer.prototype, 'constructor', { value: Guarded, writable: true, configurable: true });
    ObjectDefineProperty(globalThis, 'ArrayBuffer', { value: Guarded, writable: true, configurable: true, enumerable: false });
  }

  const MAX_DEPTH = 4;
  const MAX_ITEMS = 100;

  function quote(s) {
    return "'" + s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n') + "'";
  }

  function keyText(k) {
    return /^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k);
  }

  function isError(v) {
    return v instanceof ErrorCtor;
  }

  function errorText(e) {
    try {
      const stack = e.stack;
      if (typeof stack === 'string' && stack.length > 0) return stack;
      return call(errorToString, e);
    } catch {
      return '[Error]';
    }
  }

  function inspect(v, depth, seen) {
    switch (typeof v) {
      case 'string':
        return depth === 0 ? v : quote(v);
      case 'number':
        return ObjectIs(v, -0) ? '-0' : StringCtor(v);
      case 'bigint':
        return StringCtor(v) + 'n';
      case 'boolean':
      case 'undefined':
        return StringCtor(v);
      case 'symbol':
        return call(symbolToString, v);
      case 'function': {
        let src = '';
        try { src = call(FunctionToString, v); } catch {}
        const kind = src.startsWith('class') ? 'class' : 'Function';
        return `[${kind}: ${v.name || '(anonymous)'}]`;
      }
    }
    if (v === null) return 'null';
    if (seen.includes(v)) return '[Circular]';
    if (isError(v)) return errorText(v);
    try {
      if (v instanceof Date) {
        return isNaN(call(dateGetTime, v)) ? 'Invalid Date' : call(dateToISO, v);
      }
      if (v instanceof RegExp) return call(regexpToString, v);
    } catch {}
    if (depth > MAX_DEPTH) return ArrayIsArray(v) ? '[Array]' : '[Object]';
    seen.push(v);
    try {
      return inspectContainer(v, depth, seen);
    } catch {
      return '[Object]';
    } finally {
      seen.pop();
    }
  }

  function list(open, items, close) {
    if (items.length === 0) return open + close;
    return open + ' ' + items.join(', ') + ' ' + close;
  }

  function inspectContainer(v, depth, seen) {
    const next = depth + 1;
    if (ArrayIsArray(v)) {
      const items = [];
      let holes = 0;
      const n = v.length;
      for (let i = 0; i < n && items.length < MAX_ITEMS; i++) {
        if (!(i in v)) { holes++; continue; }
        if (holes) { items.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`); holes = 0; }
        items.push(inspect(v[i], next, seen));
      }
      if (holes) items.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
      if (n > MAX_ITEMS && items.length >= MAX_ITEMS) items.push(`... ${n - MAX_ITEMS} more items`);
      return list('[', items, ']');
    }
    if (v instanceof MapCtor) {
      const items = [];
      for (const [k, val] of call(mapEntries, v)) {
        if (items.length >= MAX_ITEMS) { items.push('...'); break; }
        items.push(`${inspect(k, next, seen)} => ${inspect(val, next, seen)}`);
      }
      return list(`Map(${call(mapSize, v)}) {`, items, '}');
    }
    if (v instanceof SetCtor) {
      const items = [];
      for (const val of call(setValues, v)) {
        if (items.length >= MAX_ITEMS) { items.push('...'); break; }
        items.push(inspect(val, next, seen));
      }
      return list(`Set(${call(setSize, v)}) {`, items, '}');
    }
    if (v instanceof ArrayBuffer) {
      return `ArrayBuffer { byteLength: ${call(abByteLength, v)} }`;
    }
    if (ArrayBufferIsView(v) && !(v instanceof DataView)) {
      const items = [];
      const n = v.length;
      for (let i = 0; i < n && i < MAX_ITEMS; i++) items.push(inspect(v[i], next, seen));
      if (n > MAX_ITEMS) items.push(`... ${n - MAX_ITEMS} more items`);
      return list(`${v.constructor.name}(${n}) [`, items, ']');
    }
    if (v instanceof Promise) return 'Promise { <pending> }';
    const proto = ObjectGetPrototypeOf(v);
    let prefix = '';
    if (proto === null) prefix = '[Object: null prototype] ';
    else if (proto !== Object.prototype) {
      const ctor = proto.constructor;
      if (typeof ctor === 'function' && ctor.name) prefix = ctor.name + ' ';
    }
    const items = [];
    const keys = ObjectKeys(v);
    for (const k of keys) {
      if (items.length >= MAX_ITEMS) { items.push(`... ${keys.length - MAX_ITEMS} more properties`); break; }
      items.push(`${keyText(k)}: ${inspect(v[k], next, seen)}`);
    }
    return prefix + list('{', items, '}');
  }

  // printf-style substitutions as console implementations do: %s %d %i %f %o %O %j %c %%.
  function format(args) {
    let first = args[0];
    let rest = 1;
    let out = '';
    if (typeof first === 'string' && first.includes('%') && args.length > 1) {
      out = first.replace(/%[sdifoOjc%]/g, (m) => {
        if (m === '%%') return '%';
        if (rest >= args.length) return m;
        const a = args[rest++];
        switch (m) {
          case '%s': return typeof a === 'string' ? a : inspect(a, 1, []);
          case '%d': case '%i': return typeof a === 'bigint' ? `${a}n` : StringCtor(m === '%i' ? parseInt(a) : Number(a));
          case '%f': return StringCtor(parseFloat(a));
          case '%j': try { return JSONStringify(a); } catch { return '[Circular]'; }
          case '%c': return '';
          default: return inspect(a, 1, []);
        }
      });
    } else {
      rest = 0;
    }
    for (let i = rest; i < args.length; i++) {
      const piece = inspect(args[i], 0, []);
      out = out === '' && i === 0 ? piece : out + ' ' + piece;
    }
    return out;
  }

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
    time: (label = 'default') => { timers.set(label, Date.now()); },
    timeLog: (label = 'default', ...a) => {
      if (timers.has(label)) emit(INFO, [`${label}: ${Date.now() - timers.get(label)}ms`, ...a]);
    },
    timeEnd: (label = 'default') => {
      if (timers.has(label)) { emit(INFO, [`${label}: ${Date.now() - timers.get(label)}ms`]); timers.delete(label); }
    },
  };
  ObjectDefineProperty(globalThis, 'console', { value: console, writable: true, configurable: true, enumerable: false });

  function makeProvider(name, tools) {
    const listed = tools === null ? null : new SetCtor(tools);
    const cache = new MapCtor();
    const toolFn = (tool) => {
      let fn = cache.get(tool);
      if (fn === undefined) {
        if (listed === null || listed.has(tool)) {
          fn = { [tool]: (...args) => callTool(name, tool, args) }[tool];
        } else {
          const text = toolNotFound.replace('{tool}', tool);
          fn = { [tool]: () => PromiseReject(new ErrorCtor(text)) }[tool];
        }
        cache.set(tool, fn);
      }
      return fn;
    };
    return new ProxyCtor(Object.create(null), {
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

  // The outcome text of an uncaught throw or rejection.
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

