// @ts-check
'use strict';
// The daemon's options (serve(), and the CLI through it) and connect()'s: the pool's options as
// the executor's (lib/validate.js), plus the server's bounds and the client's socket.

const { fault, describe, snapshot, integerIn, checkOutbound, objectArgument } = require('./fields');
const { options, budgets, BUDGETS } = require('../validate');
const { limits } = require('../native');
const { tenantTable } = require('./tenants');

/**
 * @typedef {import('../../index').Outbound} Outbound
 * @typedef {import('../../native').NativeOptions} NativeOptions
 * @typedef {import('../validate').Budgets} Budgets
 */

const POOL_KEYS = ['workers', 'queueBound', 'timeout', 'memoryLimit', 'handlesIdleTimeout', 'workerPath', 'approvalKey', 'defaultTenant'];
// The server's integer bounds: on connections, and `approvalTimeout`, the most one decision of
// a callback-mode run may take here (its worker stays held while it waits).
const CONNECTION_BOUND_KEYS = /** @type {const} */ (['maxConnections', 'maxConnectionsPerAddress', 'helloTimeout', 'idleTimeout', 'maxMessageBytes', 'approvalTimeout']);
const SERVE_KEYS = ['host', 'port', 'token', 'tenants', 'onConnection', 'log', 'maxInFlight', 'allowOrigins', 'allowHosts', 'outbound', ...CONNECTION_BOUND_KEYS, ...POOL_KEYS, ...BUDGETS];
/** The daemon's outbound ceilings, as serve() and `--outbound` spell them (null: blocked). */
const SERVE_OUTBOUND = [null, 'routed', 'public', 'native'];
/**
 * The range a daemon option may take (docs/protocol.md, "Bounds"): crates/daemon `options`,
 * through the addon, as its defaults are.
 * @param {string} key
 * @returns {[number, number]}
 */
function serveRange(key) {
  const [min, max] = limits().serveOptions[key];
  return [min, max];
}
/** @type {Record<string, string>} */
const BOUND_UNITS = { helloTimeout: ' (ms)', idleTimeout: ' (ms; 0: never)', maxMessageBytes: ' (bytes)', approvalTimeout: ' (ms)' };

/**
 * The daemon's options: the pool's (as the IsolateExecutor takes them, without `outbound` and
 * `onHandlesClosed`, which belong to each caller) and the server's.
 * @typedef {object} ValidServeOptions
 * @property {string} host
 * @property {number} port
 * @property {string | undefined} token
 * @property {{ name: string, token: string }[] | undefined} tenantTokens one token per tenant
 * @property {import('../../index').ServeOptions['onConnection']} onConnection
 * @property {((line: string) => void) | undefined} log
 * @property {number} maxInFlight
 * @property {string[]} allowOrigins
 * @property {string[]} allowHosts
 * @property {'null' | 'routed' | 'public' | 'native' | undefined} outbound the ceiling (absent: the daemon's, public)
 * @property {Partial<Record<typeof CONNECTION_BOUND_KEYS[number], number>>} bounds
 * @property {Budgets} budgets the budget ceilings (each absent: none), in the ranges of the
 *   budgets they cap
 * @property {NativeOptions} pool
 *
 * @param {unknown} given `serve`'s argument
 * @param {string} defaultWorkerPath
 * @returns {ValidServeOptions}
 */
function serveOptions(given, defaultWorkerPath) {
  const kind = 'INVALID_OPTION';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, 'an object or nothing'), SERVE_KEYS, 'serve options');
  /** @type {Record<string, unknown>} */
  const poolInput = {};
  for (const key of POOL_KEYS) if (input[key] !== undefined) poolInput[key] = input[key];
  const { outbound: _outbound, onHandlesClosed: _hook, budgets: _budgets, ...pool } = options(poolInput, defaultWorkerPath);
  let host = '127.0.0.1';
  if (input.host !== undefined) {
    if (typeof input.host !== 'string' || input.host === '') {
      throw fault(kind, { field: 'host', problem: `got ${describe(input.host)}`, allowed: "an address to listen on, e.g. '127.0.0.1' or '0.0.0.0'" });
    }
    host = input.host;
  }
  const { serveDefaults } = limits();
  const port = input.port === undefined ? serveDefaults.port : integerIn(kind, 'port', input.port, serveRange('port'), ' (0 picks a free port)');
  const maxInFlight = input.maxInFlight === undefined ? serveDefaults.maxInFlight : integerIn(kind, 'maxInFlight', input.maxInFlight, serveRange('maxInFlight'));
  if (input.token !== undefined && (typeof input.token !== 'string' || input.token === '')) {
    throw fault(kind, { field: 'token', problem: `got ${describe(input.token)}`, allowed: 'a non-empty string every client must present' });
  }
  let tenantTokens;
  if (input.tenants !== undefined) {
    const table = tenantTable(input.tenants, true);
    pool.tenants = table.tenants;
    tenantTokens = table.tokens;
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
    if (input[key] !== undefined) bounds[key] = integerIn(kind, key, input[key], serveRange(key), BOUND_UNITS[key] ?? '');
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
    tenantTokens,
    onConnection: /** @type {ValidServeOptions['onConnection']} */ (input.onConnection),
    log: /** @type {ValidServeOptions['log']} */ (input.log),
    maxInFlight,
    allowOrigins: lists.allowOrigins,
    allowHosts: lists.allowHosts,
    outbound: input.outbound === undefined ? undefined : /** @type {ValidServeOptions['outbound']} */ (String(input.outbound)),
    bounds,
    budgets: budgets(kind, input),
    pool,
  };
}

const CONNECT_KEYS = ['websocket', 'token', 'outbound', 'onHandlesClosed', 'connectTimeout', ...BUDGETS];

/**
 * `connect`'s arguments.
 * @typedef {object} ValidConnect
 * @property {string} url
 * @property {new (url: string, protocols: string[]) => any} WebSocketClass
 * @property {string | undefined} token
 * @property {Outbound | undefined} outbound the default of requests without one
 * @property {Budgets} budgets the defaults of requests without their own (each absent: the
 *   daemon's ceiling, or none)
 * @property {((event: import('../../index').HandlesClosed) => void) | undefined} onHandlesClosed
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
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, 'an object { websocket?, token?, outbound?, onHandlesClosed?, connectTimeout?, cpuLimit?, toolCallLimit?, fetchLimit? } or nothing'), CONNECT_KEYS, 'connect options');
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
    budgets: budgets(kind, input),
    onHandlesClosed: /** @type {ValidConnect['onHandlesClosed']} */ (input.onHandlesClosed),
    connectTimeout,
  };
}

module.exports = { serveOptions, connectOptions };
