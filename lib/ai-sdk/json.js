// @ts-check
'use strict';
// Values are JSON, as @ai-sdk/code-mode's are (docs/ai-sdk.md, "Values are JSON"): the program's
// result is turned into JSON text inside the sandbox (by entry.js's wrapper, where its own toJSON
// methods and getters run) and parsed here; tool inputs and answers go through JSON here, on the
// host (a tool input arrives as a structured clone, which holds no code of the program's; an
// answer is the host's).

const { render } = require('../errors');
const { describe } = require('../validate/fields');

/** The key of the wrapper's answer, which says what became of the program's value. */
const JSON_TAG = 'codemode:json';

/**
 * Why JSON.stringify gave nothing for a value of this type.
 * @param {string} type
 */
function noJsonValue(type) {
  if (type === 'function' || type === 'symbol') return `JSON has no value for a ${type}`;
  return 'its toJSON() gave no JSON value';
}

/**
 * `value` through JSON on the host: `{ value }` (undefined stays undefined), or `{ problem }`
 * saying why it has no JSON.
 * @param {unknown} value
 * @returns {{ value: unknown } | { problem: string }}
 */
function throughJson(value) {
  if (value === undefined) return { value };
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    return { problem: `JSON.stringify threw ${e instanceof Error ? `${e.name}: ${e.message}` : describe(e)}` };
  }
  if (text === undefined) return { problem: noJsonValue(typeof value) };
  return { value: JSON.parse(text) };
}

/**
 * The program's result as the output carries it: the wrapper's JSON text parsed, or the failure
 * that it has no JSON. A result that is not the wrapper's (code that went as it was) goes through
 * JSON here.
 * @param {unknown} result
 * @returns {{ result: unknown } | { error: import('../../index').ProgramError }}
 */
function jsonResult(result) {
  /** @param {string} problem */
  const refused = (problem) => ({ error: { code: 'RESULT_NOT_JSON', message: render('RESULT_NOT_JSON', { detail: problem }) } });
  const r = /** @type {Record<string, unknown>} */ (result);
  if (r === null || typeof r !== 'object' || Array.isArray(r) || !Object.hasOwn(r, JSON_TAG)) {
    const json = throughJson(result);
    return 'problem' in json ? refused(json.problem) : { result: json.value };
  }
  const { [JSON_TAG]: kind, detail } = r;
  if (kind === 'json' && typeof detail === 'string') {
    try {
      return { result: JSON.parse(detail) };
    } catch {
      // JSON.stringify was replaced before the wrapper took it: below.
    }
  }
  if (kind === 'threw' && typeof detail === 'string') return refused(`JSON.stringify threw ${detail}`);
  if (kind === 'none' && typeof detail === 'string') return refused(noJsonValue(detail));
  return refused('JSON.stringify, replaced by the program, did not give JSON text');
}

module.exports = { JSON_TAG, throughJson, jsonResult };
