// How console and uncaught-throw texts show a value: a Node-like inspect and printf-style
// format, written against captured intrinsics only.
(function (load) {
'use strict';
const {
  ArrayBufferCtor, ArrayBufferIsView, ArrayIsArray, DataViewCtor, DateCtor, ErrorCtor, FunctionToString, GlobalIsNaN,
  GlobalParseFloat, GlobalParseInt, JSONStringify, MapCtor, NumberCtor, ObjectGetPrototypeOf, ObjectIs, ObjectKeys,
  ObjectPrototype, PromiseCtor, RegExpCtor, SetCtor, StringCtor, abByteLength, call, dateGetTime, dateToISO, errorToString,
  mapEntries, mapSize, regexpToString, setSize, setValues, symbolToString,
} = load('primordials.js');

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
    if (v instanceof DateCtor) {
      return GlobalIsNaN(call(dateGetTime, v)) ? 'Invalid Date' : call(dateToISO, v);
    }
    if (v instanceof RegExpCtor) return call(regexpToString, v);
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
  if (v instanceof ArrayBufferCtor) {
    return `ArrayBuffer { byteLength: ${call(abByteLength, v)} }`;
  }
  if (ArrayBufferIsView(v) && !(v instanceof DataViewCtor)) {
    const items = [];
    const n = v.length;
    for (let i = 0; i < n && i < MAX_ITEMS; i++) items.push(inspect(v[i], next, seen));
    if (n > MAX_ITEMS) items.push(`... ${n - MAX_ITEMS} more items`);
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
  for (const k of keys) {
    if (items.length >= MAX_ITEMS) { items.push(`... ${keys.length - MAX_ITEMS} more properties`); break; }
    items.push(`${keyText(k)}: ${inspect(v[k], next, seen)}`);
  }
  return prefix + list('{', items, '}');
}

// printf-style substitutions as console implementations do: %s %d %i %f %o %O %j %c %%.
function format(args) {
  const first = args[0];
  let rest = 1;
  let out = '';
  if (typeof first === 'string' && first.includes('%') && args.length > 1) {
    out = first.replace(/%[sdifoOjc%]/g, (m) => {
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
