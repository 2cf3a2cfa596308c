// @ts-check
'use strict';
// codeModeTool's options checked into the Settings every code tool it builds shares
// (docs/ai-sdk.md, "Options"), and the approval statuses `toolApproval` may give, read as the AI
// SDK normalizes them (here for the option's check, and for approvals.js's reading of answers).

const { fault, describe, reading, snapshot, integerIn, optionalBoolean, checkOutbound, objectArgument, runBounds, checkExecutor } = require('../validate/fields');
const { BUDGETS, budgets, reservedNames, IDENTIFIER } = require('../validate');
const { limits } = require('../native');
const { RESULT_CHARS } = require('../model/truncate');
const { optionalTenant } = require('../validate/tenants');
const { needTypescript } = require('../model/type-errors');

/**
 * An executor as the code tool uses it: `resume` only when a run pauses.
 * @typedef {{ execute(request: import('../../index').ExecuteRequest): Promise<import('../../index').Outcome>, resume?(request: import('../../index').ResumeRequest): Promise<import('../../index').Outcome> }} Executor
 *
 * An approval status as `ai` 7's `toolApproval` writes it, normalized.
 * @typedef {{ type: 'not-applicable' | 'approved' | 'denied' | 'user-approval', reason?: string }} Status
 *
 * What the options come to once checked.
 * @typedef {object} Settings
 * @property {Executor} executor
 * @property {string} provider the global's name in the program
 * @property {{ mode: 'interrupt', expiresIn?: number } | { mode: 'callback', timeout?: number }} approval
 * @property {((request: import('../../index').CodeModeApprovalRequest) => unknown) | undefined} decide callback mode's
 * @property {unknown} toolApproval
 * @property {Record<string, unknown>} run the fields each execute request carries
 * @property {string | undefined} tenant whom every run is for (each execute, each resume)
 * @property {import('../../index').Outbound | undefined} outbound
 * @property {number} maxResultChars
 * @property {boolean} typecheck whether each program is type-checked against the declarations
 *   the model is shown before it runs (docs/typecheck.md)
 */

const STATUSES = ['not-applicable', 'approved', 'denied', 'user-approval'];
const OPTION_KEYS = ['executor', 'approval', 'toolApproval', 'provider', 'timeout', 'memoryLimit', 'outbound', 'modules', 'maxResultChars', 'tenant', 'typecheck', ...BUDGETS];

/**
 * @param {unknown} given
 * @returns {Settings}
 */
function checkOptions(given) {
  const kind = 'INVALID_OPTION';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, '{ executor, approval?, toolApproval?, provider?, ... }', false), OPTION_KEYS, 'codeModeTool options');
  const executor = checkExecutor(kind, 'executor', input.executor);
  const provider = input.provider ?? 'tools';
  if (typeof provider !== 'string' || !IDENTIFIER.test(provider) || reservedNames().has(provider)) {
    throw fault(kind, { field: 'provider', problem: `got ${describe(provider)}`, allowed: "a JavaScript identifier that is not a runtime global (default 'tools')" });
  }
  /** @type {Record<string, unknown>} */
  const run = {};
  const { timeout, memoryLimit } = runBounds(kind, input);
  if (timeout !== undefined) run.timeout = timeout;
  if (memoryLimit !== undefined) run.memoryLimit = memoryLimit;
  Object.assign(run, budgets(kind, input));
  // Closed unless the host opens it, as @ai-sdk/code-mode's sandbox is: a tool's answer that
  // carries instructions must not find a way out of the machine.
  const outbound = input.outbound === undefined ? null : checkOutbound(kind, 'outbound', input.outbound);
  run.outbound = outbound;
  if (input.modules !== undefined) {
    const allowed = 'an object mapping specifiers to ES module source strings (bundleModules() makes one)';
    const m = objectArgument(kind, 'modules', input.modules, allowed, false);
    const sources = reading(kind, 'modules', () => Object.entries(m));
    if (!sources.every(([, v]) => typeof v === 'string')) throw fault(kind, { field: 'modules', problem: `got ${describe(m)}`, allowed });
    run.modules = Object.fromEntries(sources);
  }
  // Whom every run is for: its execute request's `tenant` (run) and each resume's.
  const tenant = optionalTenant(kind, input.tenant);
  if (tenant !== undefined) run.tenant = tenant;
  const maxResultChars = input.maxResultChars === undefined ? RESULT_CHARS : integerIn(kind, 'maxResultChars', input.maxResultChars, [100, 2_147_483_647], ' (characters)');
  const typecheck = optionalBoolean(kind, 'typecheck', input.typecheck) === true;
  // The check reads the program as one expression: an `import` before it cannot be checked yet.
  if (typecheck && run.modules !== undefined) {
    throw fault(kind, { field: 'typecheck', problem: 'given with modules: a program that imports cannot be type-checked yet', allowed: 'true without modules, false or omitted' });
  }
  if (typecheck) needTypescript("codeModeTool's typecheck");
  const { approval, decide } = checkApproval(input.approval);
  return { executor, provider, approval, decide, toolApproval: checkToolApproval(input.toolApproval), run, tenant, outbound, maxResultChars, typecheck };
}

/**
 * @param {unknown} given
 * @returns {{ approval: Settings['approval'], decide: Settings['decide'] }}
 */
function checkApproval(given) {
  const kind = 'INVALID_OPTION';
  if (given === undefined) return { approval: { mode: 'interrupt' }, decide: undefined };
  const allowed = "{ mode: 'interrupt', expiresIn? } or { mode: 'callback', decide, timeout? }";
  const input = snapshot(kind, 'approval', objectArgument(kind, 'approval', given, allowed, false), ['mode', 'expiresIn', 'decide', 'timeout'], 'approval');
  const bounds = limits().approval;
  /** @param {'expiresIn' | 'timeout'} key */
  const rangeOf = (key) => /** @type {[number, number]} */ (bounds[key].map(Number));
  if (input.mode === 'interrupt') {
    if (input.decide !== undefined || input.timeout !== undefined) {
      throw fault(kind, { field: input.decide !== undefined ? 'approval.decide' : 'approval.timeout', problem: 'given in interrupt mode', allowed: "{ mode: 'interrupt', expiresIn? }" });
    }
    const expiresIn = input.expiresIn === undefined ? undefined : integerIn(kind, 'approval.expiresIn', input.expiresIn, rangeOf('expiresIn'), ' (ms)');
    return { approval: { mode: 'interrupt', ...(expiresIn === undefined ? {} : { expiresIn }) }, decide: undefined };
  }
  if (input.mode === 'callback') {
    if (input.expiresIn !== undefined) throw fault(kind, { field: 'approval.expiresIn', problem: 'given in callback mode', allowed: "{ mode: 'callback', decide, timeout? }" });
    if (typeof input.decide !== 'function') {
      throw fault(kind, { field: 'approval.decide', problem: `got ${describe(input.decide)}`, allowed: 'a function ({ approvalId, toolName, input, reason? }) => boolean | { approved, reason? } | a Promise of it' });
    }
    const timeout = input.timeout === undefined ? undefined : integerIn(kind, 'approval.timeout', input.timeout, rangeOf('timeout'), ' (ms)');
    return { approval: { mode: 'callback', ...(timeout === undefined ? {} : { timeout }) }, decide: /** @type {Settings['decide']} */ (input.decide) };
  }
  throw fault(kind, { field: 'approval.mode', problem: `got ${describe(input.mode)}`, allowed: "'interrupt' or 'callback'" });
}

/**
 * `toolApproval` as `generateText` takes it: a function of every call, or per tool a status or
 * a function of the input.
 * @param {unknown} given
 */
function checkToolApproval(given) {
  const kind = 'INVALID_OPTION';
  if (given === undefined || typeof given === 'function') return given;
  const allowed = "a function ({ toolCall, tools, messages }) => status, or { [toolName]: status | (input, options) => status } with a status of 'not-applicable', 'approved', 'denied', 'user-approval' or { type, reason? }";
  const perTool = objectArgument(kind, 'toolApproval', given, allowed, false);
  // No prototype: a tool named `constructor` or `toString` must not find Object's.
  /** @type {Record<string, unknown>} */
  const out = Object.create(null);
  for (const [name, entry] of reading(kind, 'toolApproval', () => Object.entries(perTool))) {
    if (entry !== undefined && typeof entry !== 'function' && normalizeStatus(entry) === null) {
      throw fault(kind, { field: `toolApproval.${name}`, problem: `got ${describe(entry)}`, allowed });
    }
    out[name] = entry;
  }
  return out;
}

/**
 * A status as the AI SDK normalizes it (undefined is `not-applicable`), or null when it is none.
 * @param {unknown} status
 * @returns {Status | null}
 */
function normalizeStatus(status) {
  if (status === undefined) return { type: 'not-applicable' };
  if (typeof status === 'string') return STATUSES.includes(status) ? { type: /** @type {Status['type']} */ (status) } : null;
  if (status === null || typeof status !== 'object') return null;
  const { type, reason } = /** @type {{ type?: unknown, reason?: unknown }} */ (status);
  if (typeof type !== 'string' || !STATUSES.includes(type)) return null;
  if (reason !== undefined && typeof reason !== 'string') return null;
  return { type: /** @type {Status['type']} */ (type), ...(reason === undefined ? {} : { reason }) };
}

module.exports = { checkOptions, normalizeStatus };
