// @ts-check
'use strict';
// Validation of approvals (docs/approvals.md): the executor's `approvalKey`, a provider's
// `approve`, a request's `approval`, and `resume`'s request. What passes is in the shapes the
// addon takes (NativeApproval, NativeDecision in native.d.ts). Here only the shape of what
// JavaScript gave is read; the rules (an `approve` of a closed list names its tools, an
// `approval` comes with some `approve` and without `retainHandles`, its bound in range, the
// defaults) are the addon's `readApproval`, the same the daemon holds a client's request to.

const { limits, loadNative } = require('../native');
const { fault, describe, reading, snapshot, objectArgument, checkSignal, checkOutbound, outboundMode } = require('./fields');
const { optionalTenant } = require('./tenants');

/**
 * @typedef {import('../../native').NativeApproval} NativeApproval
 * @typedef {import('../../native').NativeApprovalProvider} NativeApprovalProvider
 * @typedef {import('../../native').NativeDecision} NativeDecision
 * @typedef {import('../../index').Decide} Decide
 * @typedef {import('../../index').Outbound} Outbound
 * @typedef {'INVALID_OPTION' | 'INVALID_REQUEST'} Kind
 */

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
 * A provider's `approve` read for the rules: `true` (every tool), tool names, or nothing.
 * @param {string} field
 * @param {string} name the provider's name
 * @param {unknown} approve
 * @param {string[] | undefined} tools the provider's closed list (undefined: open)
 * @returns {NativeApprovalProvider}
 */
function providerApprove(field, name, approve, tools) {
  const provider = { name, tools, approveAll: approve === true };
  if (approve === undefined || approve === true) return provider;
  if (!Array.isArray(approve) || !approve.every((t) => typeof t === 'string')) {
    throw fault('INVALID_REQUEST', { field, problem: `got ${describe(approve)}`, allowed: 'true, or an array of tool names' });
  }
  return { ...provider, approve: [...approve] };
}

const INTERRUPT_KEYS = ['mode', 'expiresIn'];
const CALLBACK_KEYS = ['mode', 'decide', 'timeout'];

/**
 * A bound of `approval` as given: a number (the rules check it is an integer in range).
 * @param {string} field
 * @param {unknown} ms
 * @returns {number | undefined}
 */
function milliseconds(field, ms) {
  if (ms === undefined || typeof ms === 'number') return ms;
  throw fault('INVALID_REQUEST', { field, problem: `got ${describe(ms)}`, allowed: 'a whole number of milliseconds' });
}

/**
 * A request's `approval`, with its providers' `approve` (every provider, in order): its shape
 * read here, its rules the addon's (`readApproval`).
 * @param {unknown} given
 * @param {NativeApprovalProvider[]} providers
 * @param {boolean} retainHandles
 * @returns {{ approval: NativeApproval | undefined, decide: Decide | undefined }}
 */
function approval(given, providers, retainHandles) {
  const kind = 'INVALID_REQUEST';
  // Nothing marked and nothing asked: no approvals, without a call into the addon (every run).
  if (given === undefined && !providers.some((p) => p.approveAll || p.approve)) return { approval: undefined, decide: undefined };
  /** @type {{ mode?: 'interrupt' | 'callback', expiresIn?: number, timeout?: number }} */
  let asked = {};
  /** @type {Decide | undefined} */
  let decide;
  if (given !== undefined) {
    const input = snapshot(kind, 'approval', objectArgument(kind, 'approval', given, "{ mode: 'interrupt', expiresIn? } or { mode: 'callback', decide, timeout? }", false), ['mode', 'expiresIn', 'decide', 'timeout'], 'approval');
    if (input.mode === 'interrupt') {
      const extra = Object.keys(input).find((k) => !INTERRUPT_KEYS.includes(k));
      if (extra) throw fault(kind, { field: `approval.${extra}`, problem: "given in interrupt mode", allowed: "{ mode: 'interrupt', expiresIn? }" });
      asked = { mode: 'interrupt', expiresIn: milliseconds('approval.expiresIn', input.expiresIn) };
    } else if (input.mode === 'callback') {
      const extra = Object.keys(input).find((k) => !CALLBACK_KEYS.includes(k));
      if (extra) throw fault(kind, { field: `approval.${extra}`, problem: 'given in callback mode', allowed: "{ mode: 'callback', decide, timeout? }" });
      if (typeof input.decide !== 'function') {
        throw fault(kind, { field: 'approval.decide', problem: `got ${describe(input.decide)}`, allowed: 'a function ({ provider, tool, args }) => { approved, reason? } | Promise of it' });
      }
      decide = /** @type {Decide} */ (input.decide);
      asked = { mode: 'callback', timeout: milliseconds('approval.timeout', input.timeout) };
    } else {
      throw fault(kind, { field: 'approval.mode', problem: `got ${describe(input.mode)}`, allowed: "'interrupt' or 'callback'" });
    }
  }
  const read = loadNative().binding.readApproval({ providers, ...asked, retainHandles });
  if (read.refused) throw fault(kind, read.refused);
  return { approval: read.approval ?? undefined, decide: read.approval ? decide : undefined };
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

const RESUME_KEYS = ['token', 'decisions', 'dispatch', 'outbound', 'signal', 'onLog', 'tenant'];

/**
 * `resume`'s request.
 * @param {unknown} given
 * @param {Outbound | undefined} executorOutbound the executor's policy, for a routed run's
 *   fetches when the request names none
 */
function resumeRequest(given, executorOutbound) {
  const kind = 'INVALID_REQUEST';
  const input = snapshot(kind, 'request', objectArgument(kind, 'request', given, '{ token, decisions, dispatch, outbound?, signal?, onLog?, tenant? }', false), RESUME_KEYS, 'a resume request');
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
    tenant: optionalTenant(kind, input.tenant),
  };
}

module.exports = { approvalKey, providerApprove, approval, decision, resumeRequest };
