// @ts-check
'use strict';
// A run's execute request (the host's tools as one provider, the run's bounds and approval), and
// the dispatch that answers the program's calls: the input checked against its tool's schema, the
// approval gate passed, the host tool's execute run, and its answer passed back as JSON.

const { render } = require('../errors');
const { admit, requestApproval } = require('./approvals');
const { checkedInput } = require('./tools');
const { throughJson } = require('./json');

/**
 * @typedef {import('../../index').ExecuteRequest} ExecuteRequest
 * @typedef {import('./run').Run} Run
 */

/** @param {unknown} v @returns {v is AsyncIterable<unknown>} */
const isAsyncIterable = (v) => v !== null && typeof v === 'object' && typeof (/** @type {any} */ (v))[Symbol.asyncIterator] === 'function';

/**
 * The dispatch of a run's tool calls (its execute request's, and each resume's).
 * @param {Run} run
 * @returns {import('../../index').Dispatch}
 */
function dispatchFor(run) {
  return async ({ tool: name, args }) => {
    const { provider } = run.settings;
    const t = run.byName.get(name);
    if (!t || typeof t.execute !== 'function') throw new Error(`Tool "${name}" not found`);
    const checked = await checkedInput(run.ai, provider, name, t, args);
    if (!checked.ok) throw new TypeError(checked.message);
    await admit(run, name, args);
    const output = t.execute(checked.input, { ...run.forwarded, toolCallId: `${run.outer}:${++run.dispatched}` });
    let answer;
    if (isAsyncIterable(output)) {
      for await (const part of output) answer = part; // a streaming tool's last output is its output
    } else {
      answer = await output;
    }
    const json = throughJson(answer);
    if ('problem' in json) throw new Error(render('TOOL_RESULT_NOT_CLONEABLE', { provider, tool: name, detail: `it is passed as JSON, and ${json.problem}` }));
    return json.value;
  };
}

/**
 * The execute request of a run, for `code` (the wrapped program).
 * @param {Run} run
 * @param {string} code
 * @returns {ExecuteRequest}
 */
function requestFor(run, code) {
  const { settings } = run;
  const approval = requestApproval(run);
  return /** @type {ExecuteRequest} */ ({
    code,
    ...settings.run,
    providers: [{ name: settings.provider, tools: [...run.byName.keys()], ...(run.approve.length > 0 ? { approve: run.approve } : {}) }],
    dispatch: dispatchFor(run),
    ...(run.signal ? { signal: run.signal } : {}),
    ...(approval === undefined ? {} : { approval }),
    // Checked before it runs against what the model was shown (docs/typecheck.md).
    ...(settings.typecheck ? { declarations: run.checked, typecheck: true } : {}),
  });
}

module.exports = { dispatchFor, requestFor };
