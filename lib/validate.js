// @ts-check
'use strict';
// Option and request validation: a bad field is an INVALID_OPTION / INVALID_REQUEST fault that
// names the field, what was wrong, and what is allowed. What passes is already in the shape the
// addon takes (NativeOptions, NativeRequest in native.d.ts), the outbound mode resolved. The
// caller's objects are read once each (a getter or proxy cannot answer one thing to the check
// and another to the pool), and a read that throws is the field's fault too.
// Just over 500 lines on purpose: every public entry point's checks sit together, so one rule
// (a field's range, its words) is written once for all of them.

const os = require('node:os');
const { ExecutorError, fault } = require('./errors');

/**
 * @typedef {import('../index').OutboundPolicy} OutboundPolicy
 * @typedef {import('../index').Outbound} Outbound
 * @typedef {import('../index').Dispatch} Dispatch
 * @typedef {import('../native').NativeOptions} NativeOptions
 * @typedef {import('../native').NativeRequest} NativeRequest
 * @typedef {import('../native').ProviderDecl} NativeProvider
 * @typedef {import('../native').Outbound} OutboundMode
 * @typedef {'INVALID_OPTION' | 'INVALID_REQUEST'} Kind
 *
 * The executor's options: what the pool takes, plus what stays on the host side.
 * @typedef {NativeOptions & { outbound: Outbound | undefined, onHandlesClosed: ((event: import('../index').HandlesClosed) => void) | undefined }} ValidOptions
 *
 * One execution: the request the pool takes, plus the host-side functions that answer its tool
 * calls (`dispatch`) and, when `outbound` is `routed`, its fetches (`route`). The addon reads the
 * NativeRequest fields only.
 * @typedef {NativeRequest & { dispatch: Dispatch | undefined, route: OutboundPolicy | undefined, signal: AbortSignal | undefined, onLog: ((entry: import('../index').LogEntry) => void) | undefined }} ValidRequest
 */

/** @type {Record<string, [number, number]>} */
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

/** @param {unknown} v */
function isArray(v) {
  try {
    return Array.isArray(v);
  } catch {
    return false; // a revoked proxy
  }
}

/** @param {unknown} v */
function describe(v) {
  if (v === null) return 'null';
  if (isArray(v)) return 'an array';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)}`;
  if (typeof v === 'object' || typeof v === 'function') return `a ${typeof v}`;
  return `${typeof v} ${String(v)}`;
}

/**
 * Reads the caller's input; a throw (a getter's, a proxy trap's, a revoked proxy's) is the
 * field's fault.
 * @template T
 * @param {Kind} kind
 * @param {string} field
 * @param {() => T} read
 * @returns {T}
 */
function reading(kind, field, read) {
  try {
    return read();
  } catch (e) {
    if (e instanceof ExecutorError) throw e;
    let what = 'a non-Error';
    try {
      what = e instanceof Error ? `${e.name}: ${e.message}` : describe(e);
    } catch { /* an error that throws when read */ }
    throw fault(kind, { field, problem: `reading it threw (${what})`, allowed: 'plain data, without getters or proxies that throw' });
  }
}

/**
 * The caller's object as plain data: its own keys checked against `known`, then each known
 * field read once (own or inherited), absent ones left out.
 * @param {Kind} kind
 * @param {string} field
 * @param {object} given
 * @param {string[]} known
 * @param {string} what
 * @returns {Record<string, unknown>}
 */
function snapshot(kind, field, given, known, what) {
  unknownKeys(kind, reading(kind, field, () => Object.keys(given)), known, what);
  /** @type {Record<string, unknown>} */
  const out = Object.create(null);
  for (const key of known) {
    if (reading(kind, key, () => key in given)) out[key] = reading(kind, key, () => /** @type {Record<string, unknown>} */ (given)[key]);
  }
  return out;
}

/**
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} value
 * @param {[number, number]} range
 * @param {string} [unit]
 * @returns {number}
 */
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

/**
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} value
 * @returns {Outbound | undefined}
 */
function checkOutbound(kind, field, value) {
  if (value === undefined || value === null || value === 'public' || value === 'native') return value;
  if (typeof value === 'function') return /** @type {OutboundPolicy} */ (value);
  throw fault(kind, {
    field,
    problem: `got ${describe(value)}`,
    allowed: "omitted or 'public' (native, to public addresses only), 'native' (any address the host can reach), null (blocked), or a function (routed)",
  });
}

/**
 * @param {Kind} kind
 * @param {string[]} keys
 * @param {string[]} known
 * @param {string} what
 */
function unknownKeys(kind, keys, known, what) {
  for (const key of keys) {
    if (!known.includes(key)) {
      throw fault(kind, {
        field: key,
        problem: `${what} has no such field`,
        allowed: known.join(', '),
      });
    }
  }
}

const OPTION_KEYS = ['workers', 'queueBound', 'timeout', 'memoryLimit', 'outbound', 'handlesIdleTimeout', 'onHandlesClosed', 'workerPath'];

/**
 * @param {unknown} given the constructor's argument
 * @param {string} defaultWorkerPath where the worker binary is when neither `workerPath` nor
 *   CODEMODE_WORKER_PATH says
 * @returns {ValidOptions}
 */
function options(given, defaultWorkerPath) {
  const kind = 'INVALID_OPTION';
  if (given === undefined) given = {};
  if (given === null || typeof given !== 'object' || reading(kind, 'options', () => Array.isArray(given))) {
    throw fault(kind, { field: 'options', problem: `got ${describe(given)}`, allowed: 'an object or nothing' });
  }
  const input = snapshot(kind, 'options', given, OPTION_KEYS, 'IsolateExecutor options');
  /** @type {ValidOptions} */
  const o = {
    workers: Math.min(typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length, 256),
    queueBound: 1024,
    timeout: 30_000,
    memoryLimit: 128,
    handlesIdleTimeout: 300_000,
    outbound: undefined,
    onHandlesClosed: undefined,
    workerPath: process.env.CODEMODE_WORKER_PATH || defaultWorkerPath,
  };
  for (const key of /** @type {const} */ (['workers', 'queueBound', 'timeout', 'memoryLimit', 'handlesIdleTimeout'])) {
    if (input[key] !== undefined) o[key] = integerIn(kind, key, input[key], LIMITS[key], key === 'memoryLimit' ? ' (MiB)' : key === 'timeout' || key === 'handlesIdleTimeout' ? ' (ms)' : '');
  }
  if (input.outbound !== undefined) o.outbound = checkOutbound(kind, 'outbound', input.outbound);
  if (input.onHandlesClosed !== undefined) {
    if (typeof input.onHandlesClosed !== 'function') {
      throw fault(kind, { field: 'onHandlesClosed', problem: `got ${describe(input.onHandlesClosed)}`, allowed: "a function ({ executionId, reason }) => void" });
    }
    o.onHandlesClosed = /** @type {ValidOptions['onHandlesClosed']} */ (input.onHandlesClosed);
  }
  if (input.workerPath !== undefined) {
    if (typeof input.workerPath !== 'string' || input.workerPath === '') {
      throw fault(kind, { field: 'workerPath', problem: `got ${describe(input.workerPath)}`, allowed: 'a path to the codemode-worker binary' });
    }
    o.workerPath = input.workerPath;
  }
  return o;
}

const REQUEST_KEYS = ['code', 'modules', 'providers', 'dispatch', 'timeout', 'memoryLimit', 'outbound', 'retainHandles', 'signal', 'onLog'];

/**
 * An AbortSignal (or one from another realm or a polyfill: `aborted`, `reason` and
 * `addEventListener`), or undefined.
 * @param {'INVALID_REQUEST'} kind
 * @param {string} field
 * @param {unknown} signal
 * @returns {AbortSignal | undefined}
 */
function checkSignal(kind, field, signal) {
  if (signal === undefined) return undefined;
  const ok =
    signal !== null &&
    typeof signal === 'object' &&
    reading(kind, field, () => {
      if (signal instanceof AbortSignal) return true;
      const s = /** @type {Record<string, unknown>} */ (signal);
      return typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function' && typeof s.removeEventListener === 'function';
    });
  if (!ok) throw fault(kind, { field, problem: `got ${describe(signal)}`, allowed: 'an AbortSignal or omitted' });
  return /** @type {AbortSignal} */ (signal);
}

/**
 * @param {unknown} given `execute`'s argument
 * @param {Outbound | undefined} executorOutbound the executor's policy, for a
 *   request without `outbound`
 * @returns {ValidRequest}
 */
function request(given, executorOutbound) {
  const kind = 'INVALID_REQUEST';
  if (given === null || typeof given !== 'object' || reading(kind, 'request', () => Array.isArray(given))) {
    throw fault(kind, { field: 'request', problem: `got ${describe(given)}`, allowed: 'an object { code, modules?, providers?, dispatch?, timeout?, memoryLimit?, outbound? }' });
  }
  const input = snapshot(kind, 'request', given, REQUEST_KEYS, 'an execute request');
  if (typeof input.code !== 'string') {
    throw fault(kind, { field: 'code', problem: `got ${describe(input.code)}`, allowed: 'a string holding one expression that evaluates to a function' });
  }
  /** @type {[string, string][]} */
  const modules = [];
  if (input.modules !== undefined) {
    const m = input.modules;
    if (m === null || typeof m !== 'object' || reading(kind, 'modules', () => Array.isArray(m))) {
      throw fault(kind, { field: 'modules', problem: `got ${describe(m)}`, allowed: 'an object mapping specifiers to ES module source strings' });
    }
    for (const [spec, source] of reading(kind, 'modules', () => Object.entries(m))) {
      if (typeof source !== 'string') {
        throw fault(kind, { field: `modules[${JSON.stringify(spec)}]`, problem: `got ${describe(source)}`, allowed: 'ES module source as a string' });
      }
      modules.push([spec, source]);
    }
  }
  /** @type {NativeProvider[]} */
  const providers = [];
  if (input.providers !== undefined) {
    const declared = input.providers;
    if (!reading(kind, 'providers', () => Array.isArray(declared))) {
      throw fault(kind, { field: 'providers', problem: `got ${describe(declared)}`, allowed: "an array of { name, tools: string[] | '*' }" });
    }
    const seen = new Set();
    reading(kind, 'providers', () => Array.from(/** @type {unknown[]} */ (declared))).forEach((p, i) => {
      const field = `providers[${i}]`;
      if (p === null || typeof p !== 'object') {
        throw fault(kind, { field, problem: `got ${describe(p)}`, allowed: "{ name, tools: string[] | '*' }" });
      }
      const { name, list } = reading(kind, field, () => {
        const { name, tools: list } = /** @type {{ name?: unknown, tools?: unknown }} */ (p);
        return { name, list };
      });
      const listed = reading(kind, `${field}.tools`, () => (Array.isArray(list) ? Array.from(list) : list));
      if (typeof name !== 'string' || !IDENTIFIER.test(name) || RESERVED.has(name)) {
        throw fault(kind, { field: `${field}.name`, problem: `got ${describe(name)}`, allowed: 'a JavaScript identifier that is not a runtime global (console, fetch, Math, ...)' });
      }
      if (seen.has(name)) {
        throw fault(kind, { field: `${field}.name`, problem: `"${name}" is declared twice`, allowed: 'each provider name once' });
      }
      seen.add(name);
      /** @type {string[] | undefined} */
      let tools;
      if (listed === '*') tools = undefined; // an open list
      else if (Array.isArray(listed) && listed.every((t) => typeof t === 'string')) tools = listed;
      else {
        throw fault(kind, { field: `${field}.tools`, problem: `got ${describe(listed)}`, allowed: "an array of tool names, or '*' for an open list" });
      }
      providers.push({ name, tools });
    });
  }
  if (providers.length > 0 && typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)} while providers are declared`, allowed: 'a function ({ provider, tool, args }) => value | Promise<value>' });
  }
  if (input.dispatch !== undefined && typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)}`, allowed: 'a function ({ provider, tool, args }) => value | Promise<value>' });
  }
  const dispatch = /** @type {Dispatch | undefined} */ (input.dispatch);
  const timeout = input.timeout === undefined ? undefined : integerIn(kind, 'timeout', input.timeout, LIMITS.timeout, ' (ms)');
  const memoryLimit = input.memoryLimit === undefined ? undefined : integerIn(kind, 'memoryLimit', input.memoryLimit, LIMITS.memoryLimit, ' (MiB)');
  // Given (null or a function), the request's policy wins over the executor's; undefined is the
  // field left out, so it inherits and never opens a network the executor closed.
  const policy = input.outbound !== undefined ? checkOutbound(kind, 'outbound', input.outbound) : executorOutbound;
  if (input.retainHandles !== undefined && typeof input.retainHandles !== 'boolean') {
    throw fault(kind, { field: 'retainHandles', problem: `got ${describe(input.retainHandles)}`, allowed: 'true, false or omitted' });
  }
  const retainHandles = input.retainHandles === true;
  /** @type {OutboundMode} */
  const outbound = policy === undefined || policy === 'public' ? 'public' : policy === 'native' ? 'native' : policy === null ? 'blocked' : 'routed';
  const route = typeof policy === 'function' ? policy : undefined;
  const signal = checkSignal(kind, 'signal', input.signal);
  if (input.onLog !== undefined && typeof input.onLog !== 'function') {
    throw fault(kind, { field: 'onLog', problem: `got ${describe(input.onLog)}`, allowed: 'a function (entry: { level, message }) => void, or omitted' });
  }
  const onLog = /** @type {((entry: import('../index').LogEntry) => void) | undefined} */ (input.onLog);
  const liveLogs = onLog !== undefined;
  return { code: input.code, modules, providers, timeout, memoryLimit, outbound, retainHandles, liveLogs, dispatch, route, signal, onLog };
}

/**
 * `invokeHandle`'s options: `{ signal? }`.
 * @param {unknown} given
 * @returns {{ signal: AbortSignal | undefined }}
 */
function invokeOptions(given) {
  const kind = 'INVALID_REQUEST';
  if (given === undefined) return { signal: undefined };
  if (given === null || typeof given !== 'object' || reading(kind, 'options', () => Array.isArray(given))) {
    throw fault(kind, { field: 'options', problem: `got ${describe(given)}`, allowed: 'an object { signal? } or omitted' });
  }
  const input = snapshot(kind, 'options', given, ['signal'], 'invokeHandle options');
  return { signal: checkSignal(kind, 'options.signal', input.signal) };
}

/**
 * `invokeHandle`'s and `closeHandles`' execution id.
 * @param {unknown} id
 * @returns {string}
 */
function executionId(id) {
  if (typeof id !== 'string' || id === '') {
    throw fault('INVALID_REQUEST', { field: 'executionId', problem: `got ${describe(id)}`, allowed: 'the executionId string an execute outcome granted' });
  }
  return id;
}

/**
 * `invokeHandle`'s handle name.
 * @param {unknown} name
 * @returns {string}
 */
function handleName(name) {
  if (typeof name !== 'string') {
    throw fault('INVALID_REQUEST', { field: 'name', problem: `got ${describe(name)}`, allowed: "a granted handle name, e.g. 'fetch'" });
  }
  return name;
}

/**
 * A WireRequest for a retained handle, as the addon takes it.
 * @param {unknown} given
 * @returns {import('../native').NativeWireRequest}
 */
function wireRequest(given) {
  const kind = 'INVALID_REQUEST';
  const shape = '{ method, url, headers: [name, value][], body: ArrayBuffer | null }';
  if (given === null || typeof given !== 'object' || reading(kind, 'request', () => Array.isArray(given))) {
    throw fault(kind, { field: 'request', problem: `got ${describe(given)}`, allowed: `a WireRequest ${shape}` });
  }
  const { method, url, headers: pairs = [], body = null } = reading(kind, 'request', () => {
    const { method, url, headers, body } = /** @type {Record<string, unknown>} */ (given);
    return { method, url, headers, body };
  });
  // Copied once: the pairs checked are the pairs sent.
  const headers = reading(kind, 'request.headers', () => (Array.isArray(pairs) ? Array.from(pairs, (h) => (Array.isArray(h) ? Array.from(h) : h)) : pairs));
  if (typeof method !== 'string' || method === '') {
    throw fault(kind, { field: 'request.method', problem: `got ${describe(method)}`, allowed: 'an HTTP method string' });
  }
  if (typeof url !== 'string') {
    throw fault(kind, { field: 'request.url', problem: `got ${describe(url)}`, allowed: 'an absolute URL string' });
  }
  if (!Array.isArray(headers) || !headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string')) {
    throw fault(kind, { field: 'request.headers', problem: `got ${describe(headers)}`, allowed: 'an array of [name, value] string pairs' });
  }
  let bytes;
  if (body === null) bytes = undefined;
  else if (reading(kind, 'request.body', () => body instanceof ArrayBuffer)) bytes = Buffer.from(/** @type {ArrayBuffer} */ (body));
  else if (ArrayBuffer.isView(body)) bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  else throw fault(kind, { field: 'request.body', problem: `got ${describe(body)}`, allowed: 'an ArrayBuffer (or a view of one) or null' });
  return { method, url, headers: headers.map(([k, v]) => /** @type {[string, string]} */ ([k, v])), body: bytes };
}

const POOL_KEYS = ['workers', 'queueBound', 'timeout', 'memoryLimit', 'handlesIdleTimeout', 'workerPath'];
const CONNECTION_BOUND_KEYS = /** @type {const} */ (['maxConnections', 'maxConnectionsPerAddress', 'helloTimeout', 'idleTimeout', 'maxMessageBytes']);
const SERVE_KEYS = ['host', 'port', 'token', 'onConnection', 'log', 'maxInFlight', 'allowOrigins', 'allowHosts', 'outbound', ...CONNECTION_BOUND_KEYS, ...POOL_KEYS];
/** The daemon's outbound ceilings, as serve() and `--outbound` spell them (null: blocked). */
const SERVE_OUTBOUND = [null, 'routed', 'public', 'native'];
/** The daemon's bounds beyond the pool's (docs/protocol.md, "Bounds"); their defaults live in crates/daemon (`Bounds`). */
const SERVE_LIMITS = {
  port: /** @type {[number, number]} */ ([0, 65_535]),
  maxInFlight: /** @type {[number, number]} */ ([1, 65_536]),
  maxConnections: /** @type {[number, number]} */ ([1, 1_000_000]),
  maxConnectionsPerAddress: /** @type {[number, number]} */ ([1, 1_000_000]),
  helloTimeout: /** @type {[number, number]} */ ([1, 3_600_000]),
  idleTimeout: /** @type {[number, number]} */ ([0, 2_147_483_647]),
  // A message must hold the largest payload (16 MiB) with its header; at most 1 GiB.
  maxMessageBytes: /** @type {[number, number]} */ ([17 * 1024 * 1024, 1024 * 1024 * 1024]),
};
/** @type {Record<string, string>} */
const BOUND_UNITS = { helloTimeout: ' (ms)', idleTimeout: ' (ms; 0: never)', maxMessageBytes: ' (bytes)' };

/**
 * The daemon's options: the pool's (as the IsolateExecutor takes them, without `outbound` and
 * `onHandlesClosed`, which belong to each caller) and the server's.
 * @typedef {object} ValidServeOptions
 * @property {string} host
 * @property {number} port
 * @property {string | undefined} token
 * @property {import('../index').ServeOptions['onConnection']} onConnection
 * @property {((line: string) => void) | undefined} log
 * @property {number} maxInFlight
 * @property {string[]} allowOrigins
 * @property {string[]} allowHosts
 * @property {'null' | 'routed' | 'public' | 'native' | undefined} outbound the ceiling (absent: the daemon's, public)
 * @property {Partial<Record<typeof CONNECTION_BOUND_KEYS[number], number>>} bounds
 * @property {NativeOptions} pool
 *
 * @param {unknown} given `serve`'s argument
 * @param {string} defaultWorkerPath
 * @returns {ValidServeOptions}
 */
function serveOptions(given, defaultWorkerPath) {
  const kind = 'INVALID_OPTION';
  if (given === undefined) given = {};
  if (given === null || typeof given !== 'object' || reading(kind, 'options', () => Array.isArray(given))) {
    throw fault(kind, { field: 'options', problem: `got ${describe(given)}`, allowed: 'an object or nothing' });
  }
  const input = snapshot(kind, 'options', given, SERVE_KEYS, 'serve options');
  /** @type {Record<string, unknown>} */
  const poolInput = {};
  for (const key of POOL_KEYS) if (input[key] !== undefined) poolInput[key] = input[key];
  const { outbound: _outbound, onHandlesClosed: _hook, ...pool } = options(poolInput, defaultWorkerPath);
  let host = '127.0.0.1';
  if (input.host !== undefined) {
    if (typeof input.host !== 'string' || input.host === '') {
      throw fault(kind, { field: 'host', problem: `got ${describe(input.host)}`, allowed: "an address to listen on, e.g. '127.0.0.1' or '0.0.0.0'" });
    }
    host = input.host;
  }
  const port = input.port === undefined ? 8080 : integerIn(kind, 'port', input.port, SERVE_LIMITS.port, ' (0 picks a free port)');
  const maxInFlight = input.maxInFlight === undefined ? 1024 : integerIn(kind, 'maxInFlight', input.maxInFlight, SERVE_LIMITS.maxInFlight);
  if (input.token !== undefined && (typeof input.token !== 'string' || input.token === '')) {
    throw fault(kind, { field: 'token', problem: `got ${describe(input.token)}`, allowed: 'a non-empty string every client must present' });
  }
  /** @type {Record<string, string[]>} */
  const lists = { allowOrigins: [], allowHosts: [] };
  for (const key of /** @type {const} */ (['allowOrigins', 'allowHosts'])) {
    const list = input[key];
    if (list === undefined) continue;
    const origin = key === 'allowOrigins';
    const allowed = origin ? "an array of origins, e.g. ['https://app.example']" : "an array of host names, e.g. ['executor.internal']";
    if (!Array.isArray(list)) throw fault(kind, { field: key, problem: `got ${describe(list)}`, allowed });
    for (const item of list) {
      const ok = typeof item === 'string' && (origin ? /^https?:\/\/[^\s/?#]+\/?$/i.test(item) : /^[^\s/:?#]+$/.test(item));
      if (!ok) throw fault(kind, { field: key, problem: `got ${describe(item)} in the list`, allowed });
      lists[key].push(item);
    }
  }
  if (input.outbound !== undefined && !SERVE_OUTBOUND.includes(/** @type {any} */ (input.outbound))) {
    throw fault(kind, { field: 'outbound', problem: `got ${describe(input.outbound)}`, allowed: "the most network a caller may get: null, 'routed', 'public' (the default) or 'native'" });
  }
  /** @type {ValidServeOptions['bounds']} */
  const bounds = {};
  for (const key of CONNECTION_BOUND_KEYS) {
    if (input[key] !== undefined) bounds[key] = integerIn(kind, key, input[key], SERVE_LIMITS[key], BOUND_UNITS[key] ?? '');
  }
  for (const key of /** @type {const} */ (['onConnection', 'log'])) {
    if (input[key] !== undefined && typeof input[key] !== 'function') {
      const allowed = key === 'log' ? 'a function (line) => void' : 'a function (info) => name | { name } | undefined, throwing to refuse';
      throw fault(kind, { field: key, problem: `got ${describe(input[key])}`, allowed });
    }
  }
  return {
    host,
    port,
    token: /** @type {string | undefined} */ (input.token),
    onConnection: /** @type {ValidServeOptions['onConnection']} */ (input.onConnection),
    log: /** @type {ValidServeOptions['log']} */ (input.log),
    maxInFlight,
    allowOrigins: lists.allowOrigins,
    allowHosts: lists.allowHosts,
    outbound: input.outbound === undefined ? undefined : /** @type {ValidServeOptions['outbound']} */ (String(input.outbound)),
    bounds,
    pool,
  };
}

const CONNECT_KEYS = ['websocket', 'token', 'outbound', 'onHandlesClosed', 'connectTimeout'];

/**
 * `connect`'s arguments.
 * @typedef {object} ValidConnect
 * @property {string} url
 * @property {new (url: string, protocols: string[]) => any} WebSocketClass
 * @property {string | undefined} token
 * @property {Outbound | undefined} outbound the default of requests without one
 * @property {((event: import('../index').HandlesClosed) => void) | undefined} onHandlesClosed
 * @property {number} connectTimeout
 *
 * @param {unknown} url
 * @param {unknown} given
 * @returns {ValidConnect}
 */
function connectOptions(url, given) {
  const kind = 'INVALID_OPTION';
  if (typeof url !== 'string' || !/^wss?:\/\/[^/]/i.test(url)) {
    throw fault(kind, { field: 'url', problem: `got ${describe(url)}`, allowed: "a ws:// or wss:// URL, e.g. 'ws://127.0.0.1:8080'" });
  }
  if (given === undefined) given = {};
  if (given === null || typeof given !== 'object' || reading(kind, 'options', () => Array.isArray(given))) {
    throw fault(kind, { field: 'options', problem: `got ${describe(given)}`, allowed: 'an object { websocket?, token?, outbound?, onHandlesClosed?, connectTimeout? } or nothing' });
  }
  const input = snapshot(kind, 'options', given, CONNECT_KEYS, 'connect options');
  const WebSocketClass = input.websocket ?? /** @type {{ WebSocket?: unknown }} */ (globalThis).WebSocket;
  if (typeof WebSocketClass !== 'function') {
    const problem = input.websocket === undefined ? 'was not given, and this runtime has no global WebSocket' : `got ${describe(input.websocket)}`;
    throw fault(kind, { field: 'websocket', problem, allowed: "a WebSocket class, e.g. require('ws') on Node 20" });
  }
  if (input.token !== undefined && (typeof input.token !== 'string' || input.token === '')) {
    throw fault(kind, { field: 'token', problem: `got ${describe(input.token)}`, allowed: "the daemon's shared secret, a non-empty string" });
  }
  if (input.onHandlesClosed !== undefined && typeof input.onHandlesClosed !== 'function') {
    throw fault(kind, { field: 'onHandlesClosed', problem: `got ${describe(input.onHandlesClosed)}`, allowed: 'a function ({ executionId, reason }) => void' });
  }
  const connectTimeout = input.connectTimeout === undefined ? 10_000 : integerIn(kind, 'connectTimeout', input.connectTimeout, [1, 600_000], ' (ms)');
  return {
    url,
    WebSocketClass: /** @type {ValidConnect['WebSocketClass']} */ (WebSocketClass),
    token: /** @type {string | undefined} */ (input.token),
    outbound: checkOutbound(kind, 'outbound', input.outbound),
    onHandlesClosed: /** @type {ValidConnect['onHandlesClosed']} */ (input.onHandlesClosed),
    connectTimeout,
  };
}

module.exports = { options, request, invokeOptions, executionId, handleName, wireRequest, serveOptions, connectOptions, reading, snapshot, describe };
