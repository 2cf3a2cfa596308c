// How console and uncaught-throw texts show a value: a Node-like inspect and printf-style
// format, written against captured intrinsics only (primordials.js says what that covers).
(function (load) {
'use strict';
const {
  ArrayBufferCtor, ArrayBufferIsView, ArrayIsArray, DataViewCtor, DateCtor, ErrorCtor, FunctionToString, GlobalIsNaN,
  GlobalParseFloat, GlobalParseInt, JSONStringify, MapCtor, NumberCtor, ObjectGetPrototypeOf, ObjectIs, ObjectKeys,
  ObjectPrototype, PromiseCtor, RegExpCtor, SetCtor, StringCtor, abByteLength, arrayIncludes, arrayJoin, arrayPop, arrayPush,
  call, dateGetTime, dateToISO, errorToString, mapEntries, mapIteratorNext, mapSize, regexpExec, regexpToString,
  replaceMatches, setIteratorNext, setSize, setValues, stringIncludes, stringStartsWith, symbolToString, taLength,
} = load('primordials.js');

const MAX_DEPTH = 4;
const MAX_ITEMS = 100;

const ESCAPED = /[\\'\n]/g;
function quote(s) {
  return "'" + replaceMatches(s, ESCAPED, (m) => (m[0] === '\n' ? '\\n' : '\\' + m[0])) + "'";
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
function keyText(k) {
  return call(regexpExec, IDENTIFIER, k) !== null ? k : quote(k);
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
      const kind = call(stringStartsWith, src, 'class') ? 'class' : 'Function';
      return `[${kind}: ${v.name || '(anonymous)'}]`;
    }
  }
  if (v === null) return 'null';
  if (call(arrayIncludes, seen, v)) return '[Circular]';
  if (isError(v)) return errorText(v);
  try {
    if (v instanceof DateCtor) {
      return GlobalIsNaN(call(dateGetTime, v)) ? 'Invalid Date' : call(dateToISO, v);
    }
    if (v instanceof RegExpCtor) return call(regexpToString, v);
  } catch {}
  if (depth > MAX_DEPTH) return ArrayIsArray(v) ? '[Array]' : '[Object]';
  call(arrayPush, seen, v);
  try {
    return inspectContainer(v, depth, seen);
  } catch {
    return '[Object]';
  } finally {
    call(arrayPop, seen);
  }
}

function list(open, items, close) {
  if (items.length === 0) return open + close;
  return open + ' ' + call(arrayJoin, items, ', ') + ' ' + close;
}

function inspectContainer(v, depth, seen) {
  const next = depth + 1;
  if (ArrayIsArray(v)) {
    const items = [];
    let holes = 0;
    const n = v.length;
    for (let i = 0; i < n && items.length < MAX_ITEMS; i++) {
      if (!(i in v)) { holes++; continue; }
      if (holes) { call(arrayPush, items, `<${holes} empty item${holes > 1 ? 's' : ''}>`); holes = 0; }
      call(arrayPush, items, inspect(v[i], next, seen));
    }
    if (holes) call(arrayPush, items, `<${holes} empty item${holes > 1 ? 's' : ''}>`);
    if (n > MAX_ITEMS && items.length >= MAX_ITEMS) call(arrayPush, items, `... ${n - MAX_ITEMS} more items`);
    return list('[', items, ']');
  }
  if (v instanceof MapCtor) {
    const items = [];
    const entries = call(mapEntries, v);
    for (let step = call(mapIteratorNext, entries); !step.done; step = call(mapIteratorNext, entries)) {
      if (items.length >= MAX_ITEMS) { call(arrayPush, items, '...'); break; }
      call(arrayPush, items, `${inspect(step.value[0], next, seen)} => ${inspect(step.value[1], next, seen)}`);
    }
    return list(`Map(${call(mapSize, v)}) {`, items, '}');
  }
  if (v instanceof SetCtor) {
    const items = [];
    const values = call(setValues, v);
    for (let step = call(setIteratorNext, values); !step.done; step = call(setIteratorNext, values)) {
      if (items.length >= MAX_ITEMS) { call(arrayPush, items, '...'); break; }
      call(arrayPush, items, inspect(step.value, next, seen));
    }
    return list(`Set(${call(setSize, v)}) {`, items, '}');
  }
  if (v instanceof ArrayBufferCtor) {
    return `ArrayBuffer { byteLength: ${call(abByteLength, v)} }`;
  }
  if (ArrayBufferIsView(v) && !(v instanceof DataViewCtor)) {
    const items = [];
    const n = call(taLength, v);
    for (let i = 0; i < n && i < MAX_ITEMS; i++) call(arrayPush, items, inspect(v[i], next, seen));
    if (n > MAX_ITEMS) call(arrayPush, items, `... ${n - MAX_ITEMS} more items`);
    return list(`${v.constructor.name}(${n}) [`, items, ']');
  }
  if (v instanceof PromiseCtor) return 'Promise { <pending> }';
  const proto = ObjectGetPrototypeOf(v);
  let prefix = '';
  if (proto === null) prefix = '[Object: null prototype] ';
  else if (proto !== ObjectPrototype) {
    const ctor = proto.constructor;
    if (typeof ctor === 'function' && ctor.name) prefix = ctor.name + ' ';
  }
  const items = [];
  const keys = ObjectKeys(v);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    if (items.length >= MAX_ITEMS) { call(arrayPush, items, `... ${keys.length - MAX_ITEMS} more properties`); break; }
    call(arrayPush, items, `${keyText(k)}: ${inspect(v[k], next, seen)}`);
  }
  return prefix + list('{', items, '}');
}

// printf-style substitutions as console implementations do: %s %d %i %f %o %O %j %c %%.
const DIRECTIVE = /%[sdifoOjc%]/g;
function format(args) {
  const first = args[0];
  let rest = 1;
  let out = '';
  if (typeof first === 'string' && call(stringIncludes, first, '%') && args.length > 1) {
    out = replaceMatches(first, DIRECTIVE, (match) => {
      const m = match[0];
      if (m === '%%') return '%';
      if (rest >= args.length) return m;
      const a = args[rest++];
      switch (m) {
        case '%s': return typeof a === 'string' ? a : inspect(a, 1, []);
        case '%d': case '%i': return typeof a === 'bigint' ? `${a}n` : StringCtor(m === '%i' ? GlobalParseInt(a) : NumberCtor(a));
        case '%f': return StringCtor(GlobalParseFloat(a));
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

return { isError, inspect, format };
})
