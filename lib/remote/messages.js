// @ts-check
'use strict';
// The daemon's messages as connect() reads them (docs/protocol.md, "Messages: daemon to
// client"): each frame is unframed (lib/remote/framing.js) and its header checked against its
// type's fields before anything reads it, so a message that passes has exactly the types the
// executor relies on. A message that does not is described (what, which field) for the
// PROTOCOL_ERROR it becomes. A type this client does not know is passed on as `unknown`: a newer
// daemon may send more.
// The types below are the addon's (native.d.ts, written from the same Rust definitions the
// daemon serializes), so what connect() hands the executor core is typed without a cast; the
// SHAPES table is what makes them true of a message. __test__/wire-messages.test.mjs holds
// SHAPES to the daemon's own samples of every message (__test__/fixtures/wire-messages.json,
// written by crates/daemon/tests/messages_fixtures.rs).

const { limits } = require('../native');
const { unframe } = require('./framing');
const { isHeaderPairs, isResponseStatus } = require('../validate/fields');

/** A v4 UUID, as a pool mints a retained execution's id (crates/worker, `uuid::Uuid::new_v4`). */
const EXECUTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * @typedef {import('../../native').FailureReport} FailureReport
 * @typedef {import('../../native').LogEntry} LogEntry
 * @typedef {import('../../native').RunUsage} RunUsage
 * @typedef {import('../../native').Grant} Grant
 * @typedef {import('../../native').CallRecord} CallRecord
 * @typedef {import('../../native').Engine} Engine
 * @typedef {import('../../native').Outbound} Outbound
 * @typedef {import('../../native').Redirect} Redirect
 * @typedef {import('../../native').LogLevel} LogLevel
 * @typedef {{ timeout: number, memoryLimit: number, outbound: Outbound, cpuLimit: number | null, toolCallLimit: number | null, fetchLimit: number | null, toolPayloadBytes: number, approvalTimeout?: number, maxMessageBytes?: number, maxInFlight?: number, resultBytes?: number, fetchBodyBytes?: number }} WelcomeLimits
 *
 * @typedef {{ type: 'welcome', protocol: number, daemon: string, name: string, limits: WelcomeLimits }} Welcome
 * @typedef {{ type: 'refused' | 'error', code: string, message: string, id?: number }} Refusal
 * @typedef {{ type: 'toolCall', id: number, callId: number, provider: string, tool: string }} ToolCall
 * @typedef {{ type: 'fetch', id: number, callId: number, executionId?: string, method: string, url: string, headers: [string, string][], hasBody: boolean, redirect?: Redirect }} Fetch
 * @typedef {{ token: string, pending: { id: string, provider: string, tool: string, argsBytes: number }[] }} PausedMsg
 * @typedef {{ type: 'done', id: number, hasResult: boolean, error?: FailureReport, logs: LogEntry[], stats: RunUsage, grant?: Grant, calls: CallRecord[], paused?: PausedMsg }} Done
 * @typedef {{ type: 'approve', id: number, callId: number, provider: string, tool: string }} Approve
 * @typedef {{ type: 'invoked', id: number, status: number, statusText: string, headers: [string, string][], hasBody: boolean }} Invoked
 * @typedef {{ type: 'ack', id: number }} Ack
 * @typedef {{ type: 'stats', id: number, workers: number, idle: number, running: number, queued: number, retained: number, connections: number, engine?: Engine }} Stats
 * @typedef {{ type: 'failed', id: number, code: string, message: string, retryable?: boolean }} Failed
 * @typedef {{ type: 'handlesClosed', executionId: string, reason: string }} HandlesClosed
 * @typedef {{ type: 'log', id: number, level: LogLevel, message: string }} Log
 * @typedef {{ type: 'unknown', name: string }} Unknown
 * @typedef {Welcome | Refusal | ToolCall | Fetch | Done | Invoked | Ack | Stats | Failed | HandlesClosed | Log | Approve | Unknown} DaemonMessage
 *
 * A message that passed its checks, and the payload of a binary one.
 * @typedef {{ msg: DaemonMessage, payload: Buffer | undefined }} Decoded
 * What was wrong with one that did not, and the request id it named, when it named one.
 * @typedef {{ problem: string, id: number | undefined }} Undecodable
 */

/** @type {Record<string, (v: unknown) => boolean>} */
const KINDS = {
  id: (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffff_ffff,
  count: (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0,
  // A budget ceiling: a count, or null when the daemon sets none.
  ceiling: (v) => v === null || (typeof v === 'number' && Number.isInteger(v) && v >= 0),
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  string: (v) => typeof v === 'string',
  boolean: (v) => typeof v === 'boolean',
  headers: isHeaderPairs,
  redirect: (v) => v === 'follow' || v === 'error' || v === 'manual',
  outbound: (v) => v === 'blocked' || v === 'routed' || v === 'public' || v === 'native',
  logLevel: (v) => v === 'log' || v === 'info' || v === 'warn' || v === 'error' || v === 'debug',
  callStatus: (v) => v === 'ok' || v === 'error' || v === 'denied' || v === 'pending' || v === 'replayed',
  strings: (v) => Array.isArray(v) && v.every((s) => typeof s === 'string'),
  // The id a pool mints for a retained execution (a v4 UUID): what the process-wide table of
  // holders (holders.js) is keyed by, so a daemon cannot name another's entry in another shape.
  executionId: (v) => typeof v === 'string' && EXECUTION_ID.test(v),
  // A response's status: the rule the pool holds a handler's answer to in process
  // (crates/protocol RESPONSE_STATUS, through the addon).
  status: isResponseStatus,
};

/** What each kind is called when a value is not one. */
const KIND_NAMES = /** @type {Record<string, () => string>} */ ({
  id: () => 'a request id',
  executionId: () => 'an execution id',
  status: () => `a response status from ${limits().responseStatus.join(' to ')}`,
  ceiling: () => 'a count or null',
  callStatus: () => "one of 'ok', 'error', 'denied', 'pending', 'replayed'",
  logLevel: () => "one of 'log', 'info', 'warn', 'error', 'debug'",
});

/**
 * Each type's fields: name -> kind (a KINDS key, a nested shape, or `[shape]` for an array of
 * them). A kind ending in `?`, and a nested shape with a `'?'` key, may be absent.
 * @typedef {{ [field: string]: string | Shape | [Shape] }} Shape
 * @type {Record<string, Shape>}
 */
const SHAPES = {
  // The limits connect() relies on are required; the rest are checked when present (connect()
  // reads `approvalTimeout` only when given: a daemon from before it does not send it).
  welcome: {
    protocol: 'number',
    daemon: 'string',
    name: 'string',
    limits: { timeout: 'number', memoryLimit: 'number', outbound: 'outbound', cpuLimit: 'ceiling', toolCallLimit: 'ceiling', fetchLimit: 'ceiling', toolPayloadBytes: 'count', approvalTimeout: 'count?', maxMessageBytes: 'count?', maxInFlight: 'count?', resultBytes: 'count?', fetchBodyBytes: 'count?' },
  },
  refused: { code: 'string', message: 'string' },
  error: { code: 'string', message: 'string', id: 'id?' },
  toolCall: { id: 'id', callId: 'id', provider: 'string', tool: 'string' },
  fetch: { id: 'id', callId: 'id', executionId: 'executionId?', method: 'string', url: 'string', headers: 'headers', hasBody: 'boolean', redirect: 'redirect?' },
  done: {
    id: 'id',
    hasResult: 'boolean',
    error: { code: 'string', message: 'string', line: 'count?', column: 'count?', module: 'string?', '?': '' },
    logs: [{ level: 'logLevel', message: 'string' }],
    stats: { wallMs: 'number', cpuMs: 'number', heapPeakBytes: 'number', buffersPeakBytes: 'number', toolCalls: 'count', workerPid: 'count', cpuBudgetMs: 'number', fetches: 'count' },
    grant: { executionId: 'executionId', handles: 'strings', '?': '' },
    calls: [{ provider: 'string', tool: 'string', status: 'callStatus', ms: 'number' }],
    paused: { token: 'string', pending: [{ id: 'string', provider: 'string', tool: 'string', argsBytes: 'count' }], '?': '' },
  },
  approve: { id: 'id', callId: 'id', provider: 'string', tool: 'string' },
  invoked: { id: 'id', status: 'status', statusText: 'string', headers: 'headers', hasBody: 'boolean' },
  ack: { id: 'id' },
  stats: { id: 'id', workers: 'count', idle: 'count', running: 'count', queued: 'count', retained: 'count', connections: 'count', engine: { v8: 'string', sandbox: 'boolean', '?': '' } },
  failed: { id: 'id', code: 'string', message: 'string', retryable: 'boolean?' },
  handlesClosed: { executionId: 'executionId', reason: 'string' },
  log: { id: 'id', level: 'logLevel', message: 'string' },
};

/**
 * What is wrong with `value` as `shape` (its path named from `at`), or null.
 * @param {unknown} value
 * @param {string | Shape | [Shape]} shape
 * @param {string} at
 * @returns {string | null}
 */
function mismatch(value, shape, at) {
  if (typeof shape === 'string') {
    const optional = shape.endsWith('?');
    if (optional && value === undefined) return null;
    const kind = optional ? shape.slice(0, -1) : shape;
    return /** @type {(v: unknown) => boolean} */ (KINDS[kind])(value) ? null : `\`${at}\` ${value === undefined ? 'missing' : `is not ${KIND_NAMES[kind]?.() ?? `a ${kind}`}`}`;
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return `\`${at}\` is not an array`;
    for (const [i, item] of value.entries()) {
      const wrong = mismatch(item, shape[0], `${at}[${i}]`);
      if (wrong) return wrong;
    }
    return null;
  }
  if (value === undefined && '?' in shape) return null;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `\`${at}\` ${value === undefined ? 'missing' : 'is not an object'}`;
  for (const [field, kind] of Object.entries(shape)) {
    if (field === '?') continue;
    const wrong = mismatch(/** @type {Record<string, unknown>} */ (value)[field], kind, at ? `${at}.${field}` : field);
    if (wrong) return wrong;
  }
  return null;
}

/**
 * @param {unknown} data a message event's data
 * @returns {Decoded | Undecodable}
 */
function decode(data) {
  const unframed = unframe(data);
  if (typeof unframed === 'string') return { problem: unframed, id: undefined };
  const { header, payload } = unframed;
  const id = KINDS.id?.(header.id) ? /** @type {number} */ (header.id) : undefined;
  const type = header.type;
  if (typeof type !== 'string') return { problem: 'a message without a type', id };
  const shape = SHAPES[type];
  if (!shape || !Object.hasOwn(SHAPES, type)) return { msg: { type: 'unknown', name: type }, payload };
  const wrong = mismatch(header, shape, '');
  if (wrong) return { problem: `a \`${type}\` message whose ${wrong}`, id };
  return { msg: /** @type {DaemonMessage} */ (/** @type {unknown} */ (header)), payload };
}

module.exports = { decode, SHAPES };
