// @ts-check
'use strict';
// codeModeTool: the AI SDK's own tools (`tool()`, zod or JSON schemas) as one code-mode tool whose
// programs run in this executor, usable directly in `tools` or, with `ai` 7's
// `experimental_toolCallers`, as the local tool caller that replaces @ai-sdk/code-mode's QuickJS
// one. The host brings its own `ai` (an optional peer dependency), loaded here only when
// codeModeTool is called. docs/ai-sdk.md.
//
// Here the code tool is put together over a tool set; the rest of this folder holds its parts:
// options.js (the options checked), tools.js (the host's `ai` and tools, a call's input checked),
// model-view.js (what the model sees), entry.js and json.js (the program wrapped so its values
// are JSON), run.js (one invocation), approvals.js (who decides a call, the gate), dispatch.js
// (the execute request and its dispatch), resume.js (settling, auto-resume and `resume`).

const { checkOptions } = require('./options');
const { loadAi, hostTools } = require('./tools');
const { declarations, description, inputSchema, modelOutput } = require('./model-view');
const { wrapEntry } = require('./entry');
const { newRun } = require('./run');
const { approvable } = require('./approvals');
const { requestFor } = require('./dispatch');
const { settle, resume } = require('./resume');

/**
 * @typedef {import('../../index').CodeModeOutput} CodeModeOutput
 * @typedef {import('./tools').Ai} Ai
 * @typedef {import('./tools').HostTool} HostTool
 * @typedef {import('./options').Settings} Settings
 * @typedef {import('./run').ToolSet} ToolSet
 */

/**
 * Builds the code tool over one tool set (the given one, or the one the AI SDK binds).
 * @param {Ai} ai
 * @param {Settings} settings
 * @param {Map<string, HostTool>} byName
 * @param {Record<string, unknown>} toolSet
 */
function makeTool(ai, settings, byName, toolSet) {
  /** @type {ToolSet} */
  const set = { ai, settings, byName, toolSet, approve: approvable(settings, byName), declarations: declarations(ai, byName, settings.provider), checked: declarations(ai, byName, settings.provider, 'any') };
  const codeTool = ai.tool({
    description: description(byName, settings, set.declarations, set.approve.length > 0),
    inputSchema: inputSchema(ai, settings.provider, [...byName.keys()]),
    execute: async (/** @type {{ code: string }} */ input, /** @type {Record<string, any>} */ options = {}) => {
      const run = newRun(set, options);
      // Checked (with `typecheck`), the program goes with the TypeScript the model wrote.
      const wrapped = wrapEntry(input.code, settings.typecheck);
      run.entry = wrapped.entry;
      return settle(run, await settings.executor.execute(requestFor(run, wrapped.code)));
    },
    toModelOutput: (/** @type {{ output: CodeModeOutput }} */ { output }) => modelOutput(output, settings.maxResultChars),
  });
  codeTool.resume = (/** @type {unknown} */ paused, /** @type {unknown} */ responses, /** @type {unknown} */ options) => resume(set, paused, responses, options);
  return codeTool;
}

/**
 * @param {unknown} tools
 * @param {unknown} options
 */
function codeModeTool(tools, options) {
  const ai = loadAi();
  const settings = checkOptions(options);
  const byName = hostTools(tools, 'tools');
  const base = makeTool(ai, settings, byName, /** @type {Record<string, unknown>} */ (tools ?? {}));
  if (typeof ai.experimental_toolCaller !== 'function') return base;
  const caller = ai.experimental_toolCaller(base, {
    type: 'local',
    // The tools that name this tool among their callers in experimental_toolCallers.
    bind: (/** @type {Record<string, unknown>} */ bound) => makeTool(ai, settings, hostTools(bound, 'bound tools'), bound),
  });
  caller.resume = base.resume;
  return caller;
}

module.exports = { codeModeTool };
