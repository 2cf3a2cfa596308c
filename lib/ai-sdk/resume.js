// @ts-check
'use strict';
// A run carried to the tool's output: `settle` turns an outcome into the output, resuming at once
// (auto-resume, under the run's one time bound) a pause whose calls need no person; `resume`
// checks a person's answers against a paused output and resumes the run from its token, its
// approved calls let through the gate (docs/ai-sdk.md, "Approvals").

const errors = require('../errors');
const { fault, describe, snapshot, objectArgument, EXECUTOR_ALLOWED } = require('../validate/fields');
const { limits } = require('../native');
const { approvable, openGate, sortPending } = require('./approvals');
const { dispatchFor } = require('./dispatch');
const { placed } = require('./entry');
const { jsonResult } = require('./json');
const { newRun } = require('./run');
const { hostTools } = require('./tools');

/**
 * @typedef {import('../../index').Outcome} Outcome
 * @typedef {import('../../index').Decision} Decision
 * @typedef {import('../../index').CodeModeApprovalRequest} ApprovalRequest
 * @typedef {import('../../index').CodeModeOutput} CodeModeOutput
 * @typedef {import('./run').Run} Run
 * @typedef {import('./run').ToolSet} ToolSet
 */

const RESUME_KEYS = ['tools', 'abortSignal', 'messages', 'context'];
const RESPONSE_KEYS = ['type', 'approvalId', 'approved', 'reason', 'providerExecuted'];

/**
 * The run resumed from `token` with `decisions`, its calls dispatched as before.
 * @param {Run} run
 * @param {string} token
 * @param {Record<string, Decision>} decisions
 * @returns {Promise<Outcome>}
 */
function resumeRun(run, token, decisions) {
  const { executor, outbound, tenant } = run.settings;
  if (typeof executor.resume !== 'function') {
    throw fault('INVALID_OPTION', { field: 'executor', problem: 'it has no resume(), which a paused run needs', allowed: EXECUTOR_ALLOWED });
  }
  return executor.resume({
    token,
    decisions,
    dispatch: dispatchFor(run),
    ...(typeof outbound === 'function' ? { outbound } : {}),
    ...(run.signal ? { signal: run.signal } : {}),
    // The token is its tenant's: resumed for another (or for none), it is TOKEN_FOREIGN_KEY.
    ...(tenant === undefined ? {} : { tenant }),
  });
}

/**
 * The tool's output for an outcome; a pause whose calls need no person is resumed at once.
 * @param {Run} run
 * @param {Outcome} outcome
 * @returns {Promise<CodeModeOutput>}
 */
async function settle(run, outcome) {
  // Pauses whose calls need no person are resumed here, each a replay of the program: all of
  // them together get one time bound, the run's.
  const bound = /** @type {number} */ (run.settings.run.timeout ?? limits().defaults.timeout);
  const deadline = Date.now() + bound;
  for (;;) {
    if (!outcome.paused) {
      if (outcome.error) return { error: placed(outcome.error, run.entry), logs: outcome.logs, calls: outcome.calls };
      const read = jsonResult(outcome.result);
      if ('error' in read) return { error: read.error, logs: outcome.logs, calls: outcome.calls };
      return { result: read.result, logs: outcome.logs, calls: outcome.calls };
    }
    const { approvals, auto } = await sortPending(run, outcome.paused.pending);
    if (approvals.length > 0) {
      const continuation = { token: outcome.paused.token, toolCallId: run.outer, decided: auto, dispatched: Math.max(run.dispatched, outcome.stats.toolCalls - outcome.paused.pending.length), ...(run.entry ? { entry: run.entry } : {}) };
      return { approvals, continuation, logs: outcome.logs, calls: outcome.calls };
    }
    const left = deadline - Date.now();
    const timedOut = () => ({ error: { code: 'TIMEOUT', message: errors.render('TIMEOUT', { ms: bound }) }, logs: outcome.logs, calls: outcome.calls });
    if (left <= 0) return timedOut();
    const timer = AbortSignal.timeout(left);
    const outer = run.signal;
    run.signal = outer ? AbortSignal.any([outer, timer]) : timer;
    try {
      outcome = await resumeRun(run, outcome.paused.token, auto);
    } catch (e) {
      if (timer.aborted && !outer?.aborted) return timedOut();
      throw e;
    } finally {
      run.signal = outer;
    }
  }
}

/**
 * The code tool's `resume`: a paused output carried on with a person's answers (the AI SDK's
 * tool-approval-response parts), over the code tool's tool set or the one `options.tools` gives.
 * @param {ToolSet} set the code tool's
 * @param {unknown} paused
 * @param {unknown} responses
 * @param {unknown} [options]
 * @returns {Promise<CodeModeOutput>}
 */
async function resume(set, paused, responses, options) {
  const kind = 'INVALID_REQUEST';
  const o = snapshot(kind, 'options', objectArgument(kind, 'options', options, '{ tools?, abortSignal?, messages?, context? } or omitted'), RESUME_KEYS, 'resume options');
  const p = /** @type {any} */ (paused);
  const c = p?.continuation;
  if (!p || typeof p !== 'object' || !Array.isArray(p.approvals) || !c || typeof c.token !== 'string' || typeof c.toolCallId !== 'string' || c.decided === null || typeof c.decided !== 'object') {
    throw fault(kind, { field: 'paused', problem: `got ${describe(paused)}`, allowed: "the code tool's output for a paused program, { approvals, continuation, logs, calls }, as it was returned" });
  }
  const pending = /** @type {ApprovalRequest[]} */ (p.approvals);
  const ids = pending.map((a) => JSON.stringify(a.approvalId)).join(', ');
  if (!Array.isArray(responses)) {
    throw fault(kind, { field: 'responses', problem: `got ${describe(responses)}`, allowed: "an array of { approvalId, approved, reason? } (the AI SDK's tool-approval-response parts), one per approval" });
  }
  /** @type {Map<string, Decision>} */
  const answers = new Map();
  responses.forEach((r, i) => {
    const field = `responses[${i}]`;
    const { approvalId, approved, reason } = snapshot(kind, field, objectArgument(kind, field, r, '{ approvalId, approved, reason? }', false), RESPONSE_KEYS, 'an approval response');
    if (typeof approved !== 'boolean') throw fault(kind, { field: `${field}.approved`, problem: `got ${describe(approved)}`, allowed: 'true or false' });
    if (reason !== undefined && typeof reason !== 'string') throw fault(kind, { field: `${field}.reason`, problem: `got ${describe(reason)}`, allowed: 'a string or omitted' });
    if (typeof approvalId !== 'string' || !pending.some((a) => a.approvalId === approvalId)) {
      throw errors.fault('DECISIONS_INVALID', { detail: `${describe(approvalId)} names no approval of this pause`, ids });
    }
    if (answers.has(approvalId)) throw errors.fault('DECISIONS_INVALID', { detail: `"${approvalId}" is answered twice`, ids });
    answers.set(approvalId, approved ? { approved } : { approved, ...(reason === undefined ? {} : { reason: /** @type {string} */ (reason) }) });
  });
  /** @type {Record<string, Decision>} */
  const decisions = { ...c.decided };
  const prefix = `${c.toolCallId}:approval-`;
  for (const a of pending) {
    const answer = answers.get(a.approvalId);
    if (!answer) throw errors.fault('DECISIONS_INVALID', { detail: `no response for approval "${a.approvalId}"`, ids });
    if (typeof a.approvalId !== 'string' || !a.approvalId.startsWith(prefix)) {
      throw fault(kind, { field: 'paused', problem: `approval ${describe(a.approvalId)} is not one of this pause's`, allowed: "the code tool's output for a paused program, as it was returned" });
    }
    decisions[a.approvalId.slice(prefix.length)] = answer;
  }
  /** @type {ToolSet} */
  let tools = set;
  if (o.tools !== undefined) {
    const byName = hostTools(o.tools, 'tools');
    tools = { ...set, byName, toolSet: /** @type {Record<string, unknown>} */ (o.tools), approve: approvable(set.settings, byName) };
  }
  const run = newRun(tools, { toolCallId: c.toolCallId, messages: o.messages, abortSignal: o.abortSignal, context: o.context });
  // The calls before the pause are answered from the token; new ones count on past every call
  // the run made (its `calls` keeps only the first 1,000).
  run.dispatched = Number.isSafeInteger(c.dispatched) && c.dispatched >= 0 ? c.dispatched : Array.isArray(p.calls) ? p.calls.length : 0;
  // Only where a failure's place is counted from: the token decides what runs.
  const at = c.entry;
  run.entry = at !== null && typeof at === 'object' && Number.isSafeInteger(at.line) && at.line > 0 && Number.isSafeInteger(at.column) && at.column > 0 ? { line: at.line, column: at.column } : null;
  openGate(run, pending, answers);
  return settle(run, await resumeRun(run, c.token, decisions));
}

module.exports = { settle, resume };
