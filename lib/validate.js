// @ts-check
'use strict';
// Option and request validation: a bad field is an INVALID_OPTION / INVALID_REQUEST fault that
// names the field, what was wrong, and what is allowed. What passes is already in the shape the
// addon takes (NativeOptions, NativeRequest in native.d.ts), the outbound mode resolved. The
// caller's objects are read once each (a getter or proxy cannot answer one thing to the check
// and another to the pool), and a read that throws is the field's fault too.
// The executor's own entry points are here; the daemon's and connect()'s options are
// lib/validate/remote.js's, the approval fields lib/validate/approvals.js's, and the reading and
// the checks they share lib/validate/fields.js's.

const os = require('node:os');
const { limits } = require('./native');
const { fault, describe, reading, snapshot, integerIn, optionalBoolean, checkOutbound, outboundMode, checkSignal, objectArgument, isHeaderPairs, isResponseStatus } = require('./validate/fields');
const approvals = require('./validate/approvals');
const tenants = require('./validate/tenants');
const { hostLoop } = require('./host');

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
 * @typedef {NativeOptions & { outbound: Outbound | undefined, onHandlesClosed: ((event: import('../index').HandlesClosed) => void) | undefined, budgets: Budgets }} ValidOptions
 *
 * The budgets an executor gives each request that names none (each absent: no budget).
 * @typedef {{ cpuLimit?: number, toolCallLimit?: number, fetchLimit?: number }} Budgets
 *
 * One execution: the request the pool takes, plus the host-side functions that answer its tool
 * calls (`dispatch`) and, when `outbound` is `routed`, its fetches (`route`). The addon reads the
 * NativeRequest fields only.
 * `outboundNamed`: the request or its executor named an outbound policy; when neither did,
 * `outbound` is `public`, and a daemon applies its own ceiling instead (connect() sends none).
 * `decide`: the approval's callback (callback mode).
 * `approvalTimeoutNamed`: the request's callback `approval` named its `timeout` (otherwise the
 * default stands, which a daemon's lower `--approval-timeout` replaces).
 * @typedef {NativeRequest & { typecheck: boolean, declarations: string | undefined, outboundNamed: boolean, approvalTimeoutNamed: boolean, dispatch: Dispatch | undefined, route: OutboundPolicy | undefined, signal: AbortSignal | undefined, onLog: ((entry: import('../index').LogEntry) => void) | undefined, decide: import('../index').Decide | undefined }} ValidRequest
 */

/**
 * The language's globals: every name of the worker's global object that the runtime did not
 * install (V8 15.2's, rusty_v8 152.2.0, in crates/worker), and `WebAssembly` and
 * `SharedArrayBuffer`, which V8 creates but the worker deletes before any program runs
 * (crates/worker/src/engine/js/buffer_guard.js, again in engine/isolate.rs for each context) and
 * which programs still know by name. With the runtime's globals, which the addon names
 * (`limits().runtimeGlobals`, crates/protocol `RUNTIME_GLOBALS`), they are the names a provider
 * may not take: one would hide a global from programs. The list is the worker's whatever Node
 * hosts it (Node 20's own realm lacks `Temporal`, `Float16Array` and more), and
 * __test__/providers.test.mjs asks a worker for its globals and fails on any difference, so a new
 * V8 cannot add a global this list misses.
 */
const LANGUAGE_GLOBALS = [
  'globalThis', 'undefined', 'NaN', 'Infinity', 'eval', 'isFinite', 'isNaN', 'parseFloat', 'parseInt',
  'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'escape', 'unescape',
  'Object', 'Function', 'Boolean', 'Symbol', 'Number', 'BigInt', 'Math', 'Date', 'String', 'RegExp', 'JSON',
  'Error', 'AggregateError', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError', 'SuppressedError',
  'Array', 'ArrayBuffer', 'DataView', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'Float16Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
  'Map', 'Set', 'WeakMap', 'WeakSet', 'WeakRef', 'FinalizationRegistry', 'Promise', 'Proxy', 'Reflect', 'Atomics',
  'Iterator', 'DisposableStack', 'AsyncDisposableStack', 'Intl', 'Temporal',
  'WebAssembly', 'SharedArrayBuffer',
];

/**
 * Words a global cannot be named in a strict-mode module or function: a provider by one of them
 * would be declared to the model as a name its code cannot write.
 */
const RESERVED_WORDS = [
  'break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'enum',
  'export', 'extends', 'false', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'null',
  'return', 'super', 'switch', 'this', 'throw', 'true', 'try', 'typeof', 'var', 'void', 'while', 'with', 'yield',
  'let', 'static', 'implements', 'interface', 'package', 'private', 'protected', 'public', 'await', 'arguments',
];

/** @type {Set<string> | null} */
let reserved = null;
/** The names a provider may not take: the language's globals, the runtime's, and reserved words. */
function reservedNames() {
  if (!reserved) reserved = new Set([...LANGUAGE_GLOBALS, ...RESERVED_WORDS, ...limits().runtimeGlobals]);
  return reserved;
}

/**
 * The range option `key` may take (crates/protocol `limits::options`, through the addon).
 * @param {'workers' | 'queueBound' | 'timeout' | 'memoryLimit' | 'handlesIdleTimeout' | Budget} key
 * @returns {[number, number]}
 */
function range(key) {
  const [min, max] = limits().options[key];
  return [Number(min), Number(max)];
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * The budgets a run may be given (docs/bounds.md, "Budgets"): an executor's option is the
 * default of its requests; none has a default of its own.
 * @typedef {'cpuLimit' | 'toolCallLimit' | 'fetchLimit'} Budget
 */
/** @type {readonly Budget[]} */
const BUDGETS = ['cpuLimit', 'toolCallLimit', 'fetchLimit'];
/** @type {Record<Budget, string>} */
const BUDGET_UNITS = { cpuLimit: ' (ms of CPU)', toolCallLimit: ' (tool calls per run)', fetchLimit: ' (fetches per run)' };

/**
 * The budgets of `input` (an executor's options or a request), each checked against its range;
 * one left out (or `undefined`) takes `inherited`'s.
 * @param {'INVALID_OPTION' | 'INVALID_REQUEST'} kind
 * @param {Record<string, unknown>} input
 * @param {Budgets} [inherited]
 * @returns {Budgets}
 */
function budgets(kind, input, inherited = {}) {
  /** @type {Budgets} */
  const out = { ...inherited };
  for (const key of BUDGETS) {
    if (input[key] !== undefined) out[key] = integerIn(kind, key, input[key], range(key), BUDGET_UNITS[key]);
  }
  return out;
}

const OPTION_KEYS = ['workers', 'queueBound', 'timeout', 'memoryLimit', 'outbound', 'handlesIdleTimeout', 'onHandlesClosed', 'workerPath', 'approvalKey', 'hops', 'tenants', 'defaultTenant', ...BUDGETS];

/**
 * @param {unknown} given the constructor's argument
 * @param {string} defaultWorkerPath where the worker binary is when neither `workerPath` nor
 *   CODEMODE_WORKER_PATH says
 * @returns {ValidOptions}
 */
function options(given, defaultWorkerPath) {
  const kind = 'INVALID_OPTION';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, 'an object or nothing'), OPTION_KEYS, 'IsolateExecutor options');
  const { defaults } = limits();
  /** @type {ValidOptions} */
  const o = {
    workers: Math.min(typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length, range('workers')[1]),
    queueBound: defaults.queueBound,
    timeout: defaults.timeout,
    memoryLimit: defaults.memoryLimit,
    handlesIdleTimeout: defaults.handlesIdleTimeout,
    outbound: undefined,
    onHandlesClosed: undefined,
    workerPath: process.env.CODEMODE_WORKER_PATH || defaultWorkerPath,
    budgets: {},
    hops: false,
    hostLoop: hostLoop(),
  };
  for (const key of /** @type {const} */ (['workers', 'queueBound', 'timeout', 'memoryLimit', 'handlesIdleTimeout'])) {
    if (input[key] !== undefined) o[key] = integerIn(kind, key, input[key], range(key), key === 'memoryLimit' ? ' (MiB)' : key === 'timeout' || key === 'handlesIdleTimeout' ? ' (ms)' : '');
  }
  o.budgets = budgets(kind, input);
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
  if (input.approvalKey !== undefined) o.approvalKey = approvals.approvalKey(input.approvalKey);
  o.hops = optionalBoolean(kind, 'hops', input.hops) ?? false;
  if (input.tenants !== undefined) o.tenants = tenants.tenantTable(input.tenants, false).tenants;
  if (input.defaultTenant !== undefined) o.defaultTenant = tenants.tenantLimits('defaultTenant', input.defaultTenant).limits;
  return o;
}

const REQUEST_KEYS = ['code', 'modules', 'providers', 'dispatch', 'timeout', 'memoryLimit', 'outbound', 'retainHandles', 'signal', 'onLog', 'approval', 'tenant', 'declarations', 'typecheck', ...BUDGETS];

/**
 * @param {unknown} given `execute`'s argument
 * @param {Outbound | undefined} executorOutbound the executor's policy, for a
 *   request without `outbound`
 * @param {Budgets} [executorBudgets] the executor's budgets, for a request without its own
 * @returns {ValidRequest}
 */
function request(given, executorOutbound, executorBudgets) {
  const kind = 'INVALID_REQUEST';
  const input = snapshot(kind, 'request', objectArgument(kind, 'request', given, 'an object { code, modules?, providers?, dispatch?, timeout?, memoryLimit?, outbound? }', false), REQUEST_KEYS, 'an execute request');
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
  /** @type {import('../native').NativeApprovalProvider[]} each provider's `approve`, in order */
  const approveList = [];
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
      const { name, list, approve } = reading(kind, field, () => {
        const { name, tools: list, approve } = /** @type {{ name?: unknown, tools?: unknown, approve?: unknown }} */ (p);
        return { name, list, approve: Array.isArray(approve) ? Array.from(approve) : approve };
      });
      const listed = reading(kind, `${field}.tools`, () => (Array.isArray(list) ? Array.from(list) : list));
      if (typeof name !== 'string' || !IDENTIFIER.test(name) || reservedNames().has(name)) {
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
      approveList.push(approvals.providerApprove(`${field}.approve`, name, approve, tools));
    });
  }
  if (providers.length > 0 && typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)} while providers are declared`, allowed: 'a function ({ provider, tool, args }) => value | Promise<value>' });
  }
  if (input.dispatch !== undefined && typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)}`, allowed: 'a function ({ provider, tool, args }) => value | Promise<value>' });
  }
  const dispatch = /** @type {Dispatch | undefined} */ (input.dispatch);
  const timeout = input.timeout === undefined ? undefined : integerIn(kind, 'timeout', input.timeout, range('timeout'), ' (ms)');
  const memoryLimit = input.memoryLimit === undefined ? undefined : integerIn(kind, 'memoryLimit', input.memoryLimit, range('memoryLimit'), ' (MiB)');
  // Given ('public', 'native', null or a function), the request's policy wins over the
  // executor's; undefined is the field left out, so it inherits and never opens a network the
  // executor closed.
  const policy = input.outbound !== undefined ? checkOutbound(kind, 'outbound', input.outbound) : executorOutbound;
  const retainHandles = optionalBoolean(kind, 'retainHandles', input.retainHandles) === true;
  const { approval, decide } = approvals.approval(input.approval, approveList, retainHandles);
  /** @type {OutboundMode} */
  const outbound = outboundMode(policy);
  const route = typeof policy === 'function' ? policy : undefined;
  const signal = checkSignal(kind, 'signal', input.signal);
  if (input.onLog !== undefined && typeof input.onLog !== 'function') {
    throw fault(kind, { field: 'onLog', problem: `got ${describe(input.onLog)}`, allowed: 'a function (entry: { level, message }) => void, or omitted' });
  }
  const onLog = /** @type {((entry: import('../index').LogEntry) => void) | undefined} */ (input.onLog);
  const liveLogs = onLog !== undefined;
  const tenant = tenants.optionalTenant(kind, input.tenant);
  const typecheck = optionalBoolean(kind, 'typecheck', input.typecheck) === true;
  if (input.declarations !== undefined && typeof input.declarations !== 'string') {
    throw fault(kind, { field: 'declarations', problem: `got ${describe(input.declarations)}`, allowed: "TypeScript declarations of the providers, e.g. 'declare const billing: { refund(input: { id: string }): Promise<void> }'" });
  }
  if (typecheck && input.declarations === undefined) {
    throw fault(kind, { field: 'declarations', problem: 'none, with typecheck: true', allowed: "the TypeScript declarations the program is checked against ('' when there are no tools)" });
  }
  return { typecheck, declarations: /** @type {string | undefined} */ (input.declarations), tenant, code: input.code, modules, providers, timeout, memoryLimit, ...budgets(kind, input, executorBudgets), outbound, outboundNamed: policy !== undefined, retainHandles, liveLogs, dispatch, route, signal, onLog, approval, decide, approvalTimeoutNamed: approval?.mode === 'callback' && /** @type {{ timeout?: unknown }} */ (input.approval).timeout !== undefined };
}

/**
 * `invokeHandle`'s options: `{ signal?, tenant? }`.
 * @param {unknown} given
 * @returns {{ signal: AbortSignal | undefined, tenant: string | undefined }}
 */
function invokeOptions(given) {
  const kind = 'INVALID_REQUEST';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, 'an object { signal?, tenant? } or omitted'), ['signal', 'tenant'], 'invokeHandle options');
  return { signal: checkSignal(kind, 'options.signal', input.signal), tenant: tenants.optionalTenant(kind, input.tenant, 'options.tenant') };
}

/**
 * `closeHandles`' options: `{ tenant? }`.
 * @param {unknown} given
 * @returns {{ tenant: string | undefined }}
 */
function closeOptions(given) {
  const kind = 'INVALID_REQUEST';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, 'an object { tenant? } or omitted'), ['tenant'], 'closeHandles options');
  return { tenant: tenants.optionalTenant(kind, input.tenant, 'options.tenant') };
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
 * `metrics`' format: `'prometheus'` or omitted.
 * @param {unknown} format
 * @returns {'prometheus' | undefined}
 */
function metricsFormat(format) {
  if (format !== undefined && format !== 'prometheus') {
    throw fault('INVALID_REQUEST', { field: 'format', problem: `got ${describe(format)}`, allowed: "'prometheus' or omitted" });
  }
  return format;
}

/**
 * A WireRequest for a retained handle, as the addon takes it.
 * @param {unknown} given
 * @returns {import('../native').NativeWireRequest}
 */
function wireRequest(given) {
  const kind = 'INVALID_REQUEST';
  const shape = '{ method, url, headers: [name, value][], body: ArrayBuffer | null }';
  given = objectArgument(kind, 'request', given, `a WireRequest ${shape}`, false);
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
  if (!isHeaderPairs(headers)) {
    throw fault(kind, { field: 'request.headers', problem: `got ${describe(headers)}`, allowed: 'an array of [name, value] string pairs' });
  }
  const bytes = reading(kind, 'request.body', () => bodyBytes(body));
  if (bytes === false) throw fault(kind, { field: 'request.body', problem: `got ${describe(body)}`, allowed: 'an ArrayBuffer (or a view of one) or null' });
  return { method, url, headers: headerPairs(headers), body: bytes };
}

/**
 * A routed fetch's answer from the host's outbound policy, as the addon takes it, or what is
 * wrong with it (the OUTBOUND_INVALID_RESPONSE the sandbox's fetch rejects with). Its status
 * range is crates/protocol's `RESPONSE_STATUS` (through the addon), the pool's rule for a
 * retained handler's answer too.
 * @param {unknown} r
 * @returns {import('../native').NativeWireResponse | string}
 */
function wireResponse(r) {
  if (r === null || typeof r !== 'object') return `got ${r === null ? 'null' : typeof r}, not an object`;
  const { status, statusText = '', headers = [], body = null } = /** @type {Record<string, unknown>} */ (r);
  if (!isResponseStatus(status)) return `\`status\` must be an integer from ${limits().responseStatus.join(' to ')}`;
  if (typeof statusText !== 'string') return '`statusText` must be a string';
  if (!isHeaderPairs(headers)) return '`headers` must be an array of [name, value] string pairs';
  const bytes = bodyBytes(body);
  if (bytes === false) return '`body` must be an ArrayBuffer or null';
  return { status, statusText, headers: headerPairs(headers), body: bytes };
}

/**
 * Copies of the pairs (exactly two strings each).
 * @param {[string, string][]} headers
 * @returns {[string, string][]}
 */
function headerPairs(headers) {
  return headers.map(([k, v]) => [k, v]);
}

/**
 * A wire body's bytes (a view of the caller's, not a copy): none for null, false for anything
 * but an ArrayBuffer or a view of one.
 * @param {unknown} body
 * @returns {Buffer | undefined | false}
 */
function bodyBytes(body) {
  if (body === null) return undefined;
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return false;
}

module.exports = { options, request, reservedNames, LANGUAGE_GLOBALS, IDENTIFIER, range, resume: approvals.resumeRequest, decision: approvals.decision, budgets, BUDGETS, invokeOptions, closeOptions, executionId, handleName, metricsFormat, wireRequest, wireResponse };
