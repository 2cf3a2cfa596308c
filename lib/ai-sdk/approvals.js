// @ts-check
'use strict';
// Which calls wait for a person, decided as the AI SDK decides (`toolApproval`, then the tool's
// `needsApproval`; docs/ai-sdk.md, "Approvals"), and what holds a run to it: the gate at dispatch
// (in interrupt mode a call that needs a person runs only as a person approved it), callback
// mode's `decide`, and a pause's calls sorted into those a person answers and those decided at
// once.

const { denial } = require('../errors');
const { describe } = require('../validate/fields');
const { normalizeStatus } = require('./options');
const { checkedInput } = require('./tools');

/**
 * @typedef {import('../../index').Decision} Decision
 * @typedef {import('../../index').CodeModeApprovalRequest} ApprovalRequest
 * @typedef {import('./options').Settings} Settings
 * @typedef {import('./options').Status} Status
 * @typedef {import('./tools').HostTool} HostTool
 * @typedef {import('./run').Run} Run
 */

/**
 * Whether calls of `name` may need a decision: what the provider's `approve` lists.
 * @param {Settings} settings
 * @param {string} name
 * @param {HostTool} t
 */
function mayNeedApproval(settings, name, t) {
  const ta = /** @type {any} */ (settings.toolApproval);
  if (typeof ta === 'function') return true;
  if (ta && Object.hasOwn(ta, name) && ta[name] !== undefined) return typeof ta[name] === 'function' || normalizeStatus(ta[name])?.type !== 'not-applicable';
  return t.needsApproval !== undefined && t.needsApproval !== null && t.needsApproval !== false;
}

/**
 * The tools of `byName` whose calls may need a decision (the provider's `approve`).
 * @param {Settings} settings
 * @param {Map<string, HostTool>} byName
 * @returns {string[]}
 */
function approvable(settings, byName) {
  return [...byName].filter(([name, t]) => mayNeedApproval(settings, name, t)).map(([name]) => name);
}

/**
 * What the AI SDK would decide for this call (its resolveToolApproval, in order: toolApproval,
 * then the tool's needsApproval). A check that throws denies the call.
 * @param {Run} run
 * @param {string} name
 * @param {unknown[]} args
 * @param {string} approvalId
 * @returns {Promise<{ status: Status, input?: unknown }>}
 */
async function statusOf(run, name, args, approvalId) {
  const t = run.byName.get(name);
  if (!t) return { status: { type: 'approved' } }; // dispatch refuses it
  const checked = await checkedInput(run.ai, run.settings.provider, name, t, args);
  // A call whose input its tool refuses cannot act: dispatch rejects it with the reason.
  if (!checked.ok) return { status: { type: 'approved' } };
  const input = checked.input;
  const messages = run.forwarded.messages;
  try {
    const ta = /** @type {any} */ (run.settings.toolApproval);
    /** @type {unknown} */
    let answer;
    if (typeof ta === 'function') {
      answer = await ta({ toolCall: { type: 'tool-call', toolCallId: approvalId, toolName: name, input }, tools: run.toolSet, messages, toolsContext: undefined, runtimeContext: undefined });
    } else if (ta && Object.hasOwn(ta, name) && ta[name] !== undefined) {
      answer = typeof ta[name] === 'function' ? await ta[name](input, { toolCallId: approvalId, messages, toolContext: run.forwarded.context, runtimeContext: undefined }) : ta[name];
    } else if (typeof t.needsApproval === 'function') {
      answer = (await t.needsApproval(input, { toolCallId: approvalId, messages, context: run.forwarded.context })) ? 'user-approval' : 'not-applicable';
    } else {
      answer = t.needsApproval ? 'user-approval' : 'not-applicable';
    }
    const status = normalizeStatus(answer);
    if (!status) return { status: { type: 'denied', reason: `its approval check answered ${describe(answer)}, which is not an approval status` }, input };
    return { status, input };
  } catch (e) {
    return { status: { type: 'denied', reason: `its approval check failed (${e instanceof Error ? e.message : describe(e)})` }, input };
  }
}

/** @param {Status} status @returns {Decision} */
function decided(status) {
  return status.type === 'denied' ? { approved: false, reason: status.reason ?? "the host's approval policy denies it" } : { approved: true };
}

/**
 * The gate a call passes at dispatch before its tool runs (interrupt mode, a tool of `approve`):
 * checked again here, not taken from the paused output (which travels through the client in UI
 * streams), so a call that needs a person runs only as a person approved it, each approval once.
 * Throws the denial the program's call rejects with.
 * @param {Run} run
 * @param {string} name
 * @param {unknown[]} args
 */
async function admit(run, name, args) {
  if (!run.gate || !run.approve.includes(name)) return;
  const { status, input } = await statusOf(run, name, args, `${run.outer}:${run.dispatched + 1}`);
  const denied = (/** @type {string} */ reason) => denial(run.settings.provider, name, reason);
  if (status.type === 'denied') throw denied(status.reason ?? "the host's approval policy denies it");
  if (status.type === 'user-approval') {
    const key = JSON.stringify(input);
    const i = run.gate.findIndex((a) => a.toolName === name && JSON.stringify(a.input) === key);
    if (i < 0) throw denied('no person approved this call with these arguments');
    run.gate.splice(i, 1);
  }
}

/**
 * The calls a person approved in answer to a pause, let through the gate of the run that resumes
 * it (each once).
 * @param {Run} run
 * @param {ApprovalRequest[]} approvals the pause's
 * @param {Map<string, Decision>} answers the person's, by approval id
 */
function openGate(run, approvals, answers) {
  for (const a of approvals) if (answers.get(a.approvalId)?.approved) /** @type {NonNullable<Run['gate']>} */ (run.gate).push({ toolName: a.toolName, input: a.input });
}

/**
 * A run's request `approval` (none when no tool may need one): interrupt mode's settings, or
 * callback mode's with a `decide` that asks the host's only for calls that need a person.
 * @param {Run} run
 * @returns {import('../../index').ExecuteRequest['approval']}
 */
function requestApproval(run) {
  const { settings } = run;
  if (run.approve.length === 0) return undefined;
  if (settings.approval.mode === 'interrupt') return settings.approval;
  return {
    ...settings.approval,
    decide: async (/** @type {import('../../index').ApprovalCall} */ call) => {
      const approvalId = `${run.outer}:approval-${++run.asked}`;
      const { status, input } = await statusOf(run, call.tool, call.args, approvalId);
      if (status.type !== 'user-approval') return decided(status);
      const answer = await /** @type {NonNullable<Settings['decide']>} */ (settings.decide)({ approvalId, toolName: call.tool, input, ...(status.reason === undefined ? {} : { reason: status.reason }) });
      if (typeof answer === 'boolean') return { approved: answer };
      return /** @type {Decision} */ (answer); // the executor denies anything else, saying why
    },
  };
}

/**
 * A pause's pending calls sorted: those a person must answer (the approvals the output shows)
 * and those the host's policy decides at once, by call id.
 * @param {Run} run
 * @param {import('../../index').PendingCall[]} pending
 * @returns {Promise<{ approvals: ApprovalRequest[], auto: Record<string, Decision> }>}
 */
async function sortPending(run, pending) {
  /** @type {ApprovalRequest[]} */
  const approvals = [];
  /** @type {Record<string, Decision>} */
  const auto = {};
  for (const call of pending) {
    const approvalId = `${run.outer}:approval-${call.id}`;
    const { status, input } = await statusOf(run, call.tool, call.args, approvalId);
    if (status.type === 'user-approval') approvals.push({ approvalId, toolName: call.tool, input, ...(status.reason === undefined ? {} : { reason: status.reason }) });
    else auto[call.id] = decided(status);
  }
  return { approvals, auto };
}

module.exports = { approvable, admit, openGate, requestApproval, sortPending };
