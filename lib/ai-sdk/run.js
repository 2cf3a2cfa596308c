// @ts-check
'use strict';
// One invocation of the code tool (a Run): the tool set it runs over, what the outer call gives
// each host tool's execute, its counters (calls dispatched, approvals asked), the approval gate's
// state and where the model's expression starts.

/**
 * @typedef {import('./tools').Ai} Ai
 * @typedef {import('./tools').HostTool} HostTool
 * @typedef {import('./options').Settings} Settings
 * @typedef {import('./entry').Entry} Entry
 *
 * The code tool over one tool set (the given one, or the one the AI SDK binds).
 * @typedef {object} ToolSet
 * @property {Ai} ai the host's AI SDK
 * @property {Settings} settings
 * @property {Map<string, HostTool>} byName the tools a program may call
 * @property {Record<string, unknown>} toolSet the set as given, which `toolApproval` is shown
 * @property {string[]} approve the tools whose calls may need approval
 * @property {string} declarations the tools as TypeScript, as the model is shown them
 * @property {string} checked what `typecheck` checks each program against: the same, but a tool
 *   that declares no output schema resolves to `any` (its result is whatever the tool returns,
 *   so a valid program may read any property of it)
 *
 * One invocation: the tool set, the outer call's options, and its counters.
 * @typedef {object} RunState
 * @property {string} outer the code tool call's id
 * @property {Record<string, unknown>} forwarded what each host tool's execute receives from the outer call
 * @property {AbortSignal | undefined} signal
 * @property {number} dispatched calls dispatched so far (their ids count on from it)
 * @property {number} asked approvals asked in callback mode so far
 * @property {Array<{ toolName: string, input: unknown }> | null} gate interrupt mode: the calls a
 *   person approved (a resume's), each dispatched once; a call that needs a person and is not
 *   among them is refused at dispatch, whatever the paused output said. null in callback mode.
 * @property {Entry | null} entry where the model's expression starts in the code the executor
 *   runs (null: the code went as it was), which a failure's place is counted back from
 *
 * @typedef {ToolSet & RunState} Run
 */

/** Counts the runs whose outer call has no id (a direct `execute` without one), to name them. */
let anonymous = 0;

/**
 * A run of the code tool over `set`.
 * @param {ToolSet} set
 * @param {Record<string, any>} options the outer call's execution options
 * @returns {Run}
 */
function newRun(set, options) {
  /** @type {Record<string, unknown>} */
  const forwarded = { messages: Array.isArray(options.messages) ? options.messages : [] };
  for (const key of ['abortSignal', 'context', 'experimental_context', 'experimental_sandbox']) if (options[key] !== undefined) forwarded[key] = options[key];
  return {
    ...set,
    outer: typeof options.toolCallId === 'string' ? options.toolCallId : `codemode-${++anonymous}`,
    forwarded,
    signal: options.abortSignal,
    dispatched: 0,
    asked: 0,
    gate: set.settings.approval.mode === 'interrupt' ? [] : null,
    entry: null,
  };
}

module.exports = { newRun };
