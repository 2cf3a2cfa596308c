'use strict';
// Option and request validation: a bad field is an INVALID_OPTION / INVALID_REQUEST fault that
// names the field, what was wrong, and what is allowed.

const os = require('node:os');
const { fault } = require('./errors');

const LIMITS = {
  workers: [1, 256],
  queueBound: [0, 1_000_000],
  timeout: [1, 2_147_483_647],
  memoryLimit: [8, 16_384],
  handlesIdleTimeout: [1, 2_147_483_647],
};

// Names a provider may not take: the runtime's own globals and the language's.
const RESERVED = new Set([
  'console', 'globalThis', 'undefined', 'NaN', 'Infinity', 'eval', 'Object', 'Function', 'Array',
  'Number', 'String', 'Boolean', 'Symbol', 'BigInt', 'Math', 'JSON', 'Reflect', 'Proxy', 'Promise',
  'Date', 'RegExp', 'Error', 'Map', 'Set', 'WeakMap', 'WeakSet', 'ArrayBuffer', 'DataView',
  'Intl', 'Atomics', 'SharedArrayBuffer', 'structuredClone', 'fetch', 'URL', 'URLSearchParams',
  'Headers', 'Request', 'Response', 'TextEncoder', 'TextDecoder', 'atob', 'btoa', 'crypto',
  'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'queueMicrotask', 'performance',
  'AbortController', 'AbortSignal', 'Event', 'EventTarget', 'DOMException', 'Blob',
]);

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)}`;
  if (typeof v === 'object' || typeof v === 'function') return `a ${typeof v}`;
  return `${typeof v} ${String(v)}`;
}

function integerIn(kind, field, value, [min, max], unit = '') {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw fault(kind, {
      field,
      problem: `got ${describe(value)}`,
      allowed: `an integer from ${min} to ${max}${unit}`,
    });
  }
  return value;
}

function checkOutbound(kind, field, value) {
  if (value === undefined || value === null || typeof value === 'function') return value;
  throw fault(kind, {
    field,
    problem: `got ${describe(value)}`,
    allowed: 'omitted (native), null (blocked), or a function (routed)',
  });
}

function unknownKeys(kind, obj, known, what) {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      throw fault(kind, {
        field: key,
        problem: `${what} has no such field`,
        allowed: known.join(', '),
      });
    }
  }
}

const OPTION_KEYS = ['workers', 'queueBound', 'timeout', 'memoryLimit', 'outbound', 'handlesIdleTimeout', 'workerPath'];

function options(input) {
  const kind = 'INVALID_OPTION';
  if (input === undefined) input = {};
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw fault(kind, { field: 'options', problem: `got ${describe(input)}`, allowed: 'an object or nothing' });
  }
  unknownKeys(kind, input, OPTION_KEYS, 'IsolateExecutor options');
  const o = {
    workers: Math.min(typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length, 256),
    queueBound: 1024,
    timeout: 30_000,
    memoryLimit: 128,
    handlesIdleTimeout: 300_000,
    outbound: undefined,
    workerPath: process.env.CODEMODE_WORKER_PATH || undefined,
  };
  for (const key of ['workers', 'queueBound', 'timeout', 'memoryLimit', 'handlesIdleTimeout']) {
    if (input[key] !== undefined) o[key] = integerIn(kind, key, input[key], LIMITS[key], key === 'memoryLimit' ? ' (MiB)' : key === 'timeout' || key === 'handlesIdleTimeout' ? ' (ms)' : '');
  }
  if ('outbound' in input) o.outbound = checkOutbound(kind, 'outbound', input.outbound);
  if (input.workerPath !== undefined) {
    if (typeof input.workerPath !== 'string' || input.workerPath === '') {
      throw fault(kind, { field: 'workerPath', problem: `got ${describe(input.workerPath)}`, allowed: 'a path to the codemode-worker binary' });
    }
    o.workerPath = input.workerPath;
  }
  return o;
}

const REQUEST_KEYS = ['code', 'modules', 'providers', 'dispatch', 'timeout', 'memoryLimit', 'outbound', 'retainHandles'];

/** Returns the native request (and the dispatch) for a valid request. */
function request(input) {
  const kind = 'INVALID_REQUEST';
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw fault(kind, { field: 'request', problem: `got ${describe(input)}`, allowed: 'an object { code, modules?, providers?, dispatch?, timeout?, memoryLimit?, outbound? }' });
  }
  unknownKeys(kind, input, REQUEST_KEYS, 'an execute request');
  if (typeof input.code !== 'string') {
    throw fault(kind, { field: 'code', problem: `got ${describe(input.code)}`, allowed: 'a string holding one expression that evaluates to a function' });
  }
  const modules = [];
  if (input.modules !== undefined) {
    const m = input.modules;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      throw fault(kind, { field: 'modules', problem: `got ${describe(m)}`, allowed: 'an object mapping specifiers to ES module source strings' });
    }
    for (const [spec, source] of Object.entries(m)) {
      if (typeof source !== 'string') {
        throw fault(kind, { field: `modules[${JSON.stringify(spec)}]`, problem: `got ${describe(source)}`, allowed: 'ES module source as a string' });
      }
      modules.push(spec, source);
    }
  }
  const providers = [];
  if (input.providers !== undefined) {
    if (!Array.isArray(input.providers)) {
      throw fault(kind, { field: 'providers', problem: `got ${describe(input.providers)}`, allowed: "an array of { name, tools: string[] | '*' }" });
    }
    const seen = new Set();
    input.providers.forEach((p, i) => {
      const field = `providers[${i}]`;
      if (p === null || typeof p !== 'object') {
        throw fault(kind, { field, problem: `got ${describe(p)}`, allowed: "{ name, tools: string[] | '*' }" });
      }
      if (typeof p.name !== 'string' || !IDENTIFIER.test(p.name) || RESERVED.has(p.name)) {
        throw fault(kind, { field: `${field}.name`, problem: `got ${describe(p.name)}`, allowed: 'a JavaScript identifier that is not a runtime global (console, fetch, Math, ...)' });
      }
      if (seen.has(p.name)) {
        throw fault(kind, { field: `${field}.name`, problem: `"${p.name}" is declared twice`, allowed: 'each provider name once' });
      }
      seen.add(p.name);
      let tools;
      if (p.tools === '*') tools = undefined; // an open list
      else if (Array.isArray(p.tools) && p.tools.every((t) => typeof t === 'string')) tools = p.tools;
      else {
        throw fault(kind, { field: `${field}.tools`, problem: `got ${describe(p.tools)}`, allowed: "an array of tool names, or '*' for an open list" });
      }
      providers.push({ name: p.name, tools });
    });
  }
  if (providers.length > 0 && typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)} while providers are declared`, allowed: 'a function ({ provider, tool, args }) => value | Promise<value>' });
  }
  if (input.dispatch !== undefined && typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)}`, allowed: 'a function ({ provider, tool, args }) => value | Promise<value>' });
  }
  const native = { code: input.code, modules, providers, timeout: undefined, memoryLimit: undefined };
  if (input.timeout !== undefined) native.timeout = integerIn(kind, 'timeout', input.timeout, LIMITS.timeout, ' (ms)');
  if (input.memoryLimit !== undefined) native.memoryLimit = integerIn(kind, 'memoryLimit', input.memoryLimit, LIMITS.memoryLimit, ' (MiB)');
  if ('outbound' in input) checkOutbound(kind, 'outbound', input.outbound);
  if (input.retainHandles !== undefined && input.retainHandles !== false) {
    throw fault(kind, { field: 'retainHandles', problem: 'retained handles are not available in this release', allowed: 'false or omitted' });
  }
  return { native, dispatch: input.dispatch };
}

module.exports = { options, request };
