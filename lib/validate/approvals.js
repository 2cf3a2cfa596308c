// @ts-check
'use strict';
// Validation of approvals (docs/approvals.md): the executor's `approvalKey`, a provider's
// `approve`, a request's `approval`, and `resume`'s request. What passes is in the shapes the
// addon takes (NativeApproval, NativeDecision in native.d.ts).

const { limits } = require('../native');
const { fault, describe, reading, snapshot, integerIn, objectArgument, checkSignal, checkOutbound, outboundMode } = require('./fields');

/**
 * @typedef {import('../../native').NativeApproval} NativeApproval
 * @typedef {import('../../native').NativeDecision} NativeDecision
 * @typedef {import('../../index').Decide} Decide
 * @typedef {import('../../index').Outbound} Outbound
 * @typedef {'INVALID_OPTION' | 'INVALID_REQUEST'} Kind
 */

/**
 * The range of `expiresIn` or `timeout` (crates/protocol `limits::options`, through the addon).
 * @param {'expiresIn' | 'timeout'} key
 * @returns {[number, number]}
 */
function range(key) {
  const [min, max] = limits().approval[key];
  return [Number(min), Number(max)];
}

/**
 * The executor's `approvalKey`: a string (its UTF-8 bytes) or bytes, at least the bound.
 * @param {unknown} key
 * @returns {Buffer}
 */
function approvalKey(key) {
  const min = limits().approval.keyMinBytes;
  const allowed = `a Buffer, Uint8Array or string of at least ${min} bytes (e.g. crypto.randomBytes(32)), the same on every executor that resumes these tokens`;
  let bytes;
  if (typeof key === 'string') bytes = Buffer.from(key, 'utf8');
  else if (key instanceof Uint8Array) bytes = Buffer.from(key.buffer.slice(key.byteOffset, key.byteOffset + key.byteLength));
  else throw fault('INVALID_OPTION', { field: 'approvalKey', problem: `got ${describe(key)}`, allowed });
  if (bytes.length < min) throw fault('INVALID_OPTION', { field: 'approvalKey', problem: `got ${bytes.length} bytes`, allowed });
  return bytes;
}

/**
 * A provider's `approve`: `true` (every tool) or tool names (of its list, when it is closed).
 * @param {string} field
 * @param {unknown} approve
 * @param {string[] | undefined} tools the provider's closed list (undefined: open)
 * @returns {string[] | null} the tools (null: all)
 */
function providerApprove(field, approve, tools) {
  const allowed = tools ? `true, or some of the provider's tools (${tools.join(', ')})` : 'true, or an array of tool names';
  if (approve === true) return null;
  if (!Array.isArray(approve) || !approve.every((t) => typeof t === 'string')) {
    throw fault('INVALID_REQUEST', { field, problem: `got ${describe(approve)}`, allowed });
  }
  const unknown = tools ? approve.find((t) => !tools.includes(t)) : undefined;
  if (unknown !== undefined) {
    throw fault('INVALID_REQUEST', { field, problem: `"${unknown}" is not one of the provider's tools`, allowed });
  }
  return [...approve];
}

const INTERRUPT_KEYS = ['mode', 'expiresIn'];
const CALLBACK_KEYS = ['mode', 'decide', 'timeout'];

/**
 * A request's `approval`, with the tools its providers mark `approve`.
 * @param {unknown} given
 * @param {[string, string[] | null][]} approve
 * @param {boolean} retainHandles
 * @returns {{ approval: NativeApproval | undefined, decide: Decide | undefined }}
 */
function approval(given, approve, retainHandles) {
  const kind = 'INVALID_REQUEST';
  if (given === undefined && approve.length === 0) return { approval: undefined, decide: undefined };
  if (retainHandles) {
    throw fault(kind, { field: 'retainHandles', problem: 'true in a request with approvals', allowed: 'retainHandles or approvals (approve on a provider, approval), not both' });
  }
  if (approve.length === 0) {
    throw fault(kind, { field: 'approval', problem: 'given, but no provider marks a tool with approve', allowed: "approve: ['tool', ...] or approve: true on the providers whose calls need approval" });
  }
  const input = given === undefined ? { mode: 'interrupt' } : snapshot(kind, 'approval', objectArgument(kind, 'approval', given, "{ mode: 'interrupt', expiresIn? } or { mode: 'callback', decide, timeout? }", false), ['mode', 'expiresIn', 'decide', 'timeout'], 'approval');
  const bounds = limits().approval;
  if (input.mode === 'interrupt') {
    const extra = Object.keys(input).find((k) => !INTERRUPT_KEYS.includes(k));
    if (extra) throw fault(kind, { field: `approval.${extra}`, problem: "given in interrupt mode", allowed: "{ mode: 'interrupt', expiresIn? }" });
    const expiresIn = input.expiresIn === undefined ? bounds.defaultExpiresIn : integerIn(kind, 'approval.expiresIn', input.expiresIn, range('expiresIn'), ' (ms)');
    return { approval: { approve, mode: 'interrupt', expiresIn }, decide: undefined };
  }
  if (input.mode === 'callback') {
    const extra = Object.keys(input).find((k) => !CALLBACK_KEYS.includes(k));
    if (extra) throw fault(kind, { field: `approval.${extra}`, problem: 'given in callback mode', allowed: "{ mode: 'callback', decide, timeout? }" });
    if (typeof input.decide !== 'function') {
      throw fault(kind, { field: 'approval.decide', problem: `got ${describe(input.decide)}`, allowed: 'a function ({ provider, tool, args }) => { approved, reason? } | Promise of it' });
    }
    const timeout = input.timeout === undefined ? bounds.defaultTimeout : integerIn(kind, 'approval.timeout', input.timeout, range('timeout'), ' (ms)');
    return { approval: { approve, mode: 'callback', timeout }, decide: /** @type {Decide} */ (input.decide) };
  }
  throw fault(kind, { field: 'approval.mode', problem: `got ${describe(input.mode)}`, allowed: "'interrupt' or 'callback'" });
}

/**
 * One decision: `{ approved: boolean, reason?: string }`.
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} given
 * @returns {{ approved: boolean, reason: string | undefined }}
 */
function decision(kind, field, given) {
  const allowed = '{ approved: true } or { approved: false, reason?: string }';
  if (given === null || typeof given !== 'object') throw fault(kind, { field, problem: `got ${describe(given)}`, allowed });
  const input = snapshot(kind, field, given, ['approved', 'reason'], 'a decision');
  if (typeof input.approved !== 'boolean') throw fault(kind, { field: `${field}.approved`, problem: `got ${describe(input.approved)}`, allowed });
  if (input.reason !== undefined && typeof input.reason !== 'string') throw fault(kind, { field: `${field}.reason`, problem: `got ${describe(input.reason)}`, allowed });
  return { approved: input.approved, reason: /** @type {string | undefined} */ (input.reason) };
}

const RESUME_KEYS = ['token', 'decisions', 'dispatch', 'outbound', 'signal', 'onLog'];

/**
 * `resume`'s request.
 * @param {unknown} given
 * @param {Outbound | undefined} executorOutbound the executor's policy, for a routed run's
 *   fetches when the request names none
 */
function resumeRequest(given, executorOutbound) {
  const kind = 'INVALID_REQUEST';
  const input = snapshot(kind, 'request', objectArgument(kind, 'request', given, '{ token, decisions, dispatch, outbound?, signal?, onLog? }', false), RESUME_KEYS, 'a resume request');
  if (typeof input.token !== 'string' || input.token === '') {
    throw fault(kind, { field: 'token', problem: `got ${describe(input.token)}`, allowed: "the token of a paused outcome (outcome.paused.token)" });
  }
  const given_ = input.decisions;
  if (given_ === null || typeof given_ !== 'object' || Array.isArray(given_)) {
    throw fault(kind, { field: 'decisions', problem: `got ${describe(given_)}`, allowed: '{ [pendingId]: { approved, reason? } }, one per pending call' });
  }
  /** @type {NativeDecision[]} */
  const decisions = reading(kind, 'decisions', () => Object.entries(given_)).map(([id, d]) => ({ id, ...decision(kind, `decisions[${JSON.stringify(id)}]`, d) }));
  if (typeof input.dispatch !== 'function') {
    throw fault(kind, { field: 'dispatch', problem: `got ${describe(input.dispatch)}`, allowed: "a function ({ provider, tool, args }) => value | Promise<value>: the approved calls and those after them are dispatched" });
  }
  const policy = input.outbound !== undefined ? checkOutbound(kind, 'outbound', input.outbound) : executorOutbound;
  if (input.onLog !== undefined && typeof input.onLog !== 'function') {
    throw fault(kind, { field: 'onLog', problem: `got ${describe(input.onLog)}`, allowed: 'a function (entry: { level, message }) => void, or omitted' });
  }
  return {
    token: input.token,
    decisions,
    dispatch: /** @type {import('../../index').Dispatch} */ (input.dispatch),
    route: typeof policy === 'function' ? policy : undefined,
    // The most network the resumed run may reach here: a token's policy is narrowed to it.
    // `outboundNamed`: the request or its executor named one (connect() sends only a named one).
    outboundNamed: policy !== undefined,
    outbound: outboundMode(policy),
    signal: checkSignal(kind, 'signal', input.signal),
    onLog: /** @type {((entry: import('../../index').LogEntry) => void) | undefined} */ (input.onLog),
    liveLogs: input.onLog !== undefined,
  };
}

module.exports = { approvalKey, providerApprove, approval, decision, resumeRequest };
