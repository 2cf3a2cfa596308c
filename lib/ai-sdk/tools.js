// @ts-check
'use strict';
// The host's AI SDK and its tools: the host's own `ai` (an optional peer dependency) loaded, a
// tool set read into the tools a program may call, and a call's input checked as its tool takes
// it (bounded, through JSON, then the tool's schema, whose failure is the text the call rejects
// with).

const errors = require('../errors');
const { fault, describe, reading, objectArgument } = require('../validate/fields');
const { throughJson } = require('./json');

/**
 * The AI SDK as this adapter uses it (`ai` 7's exports of these names).
 * @typedef {{ tool: (t: any) => any, jsonSchema: (s: object, o?: { validate?: (v: unknown) => unknown }) => any, asSchema: (s: any) => { jsonSchema: unknown, validate?: (v: unknown) => any }, experimental_toolCaller?: (t: any, d: any) => any }} Ai
 *
 * An AI SDK tool as far as it is read here.
 * @typedef {{ description?: unknown, title?: unknown, inputSchema?: unknown, outputSchema?: unknown, needsApproval?: unknown, execute?: Function }} HostTool
 */

/** Values a tool's input may hold at most (every array item and object entry, nested ones too). */
const INPUT_VALUES = 100_000;
/** Levels a tool's input may nest. */
const INPUT_DEPTH = 64;

/** @returns {Ai} */
function loadAi() {
  /** @type {any} */
  let ai;
  try {
    ai = require('ai');
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
    throw errors.fault('PEER_MISSING', { feature: 'codeModeTool', package: 'ai', version: '7', problem: `it could not be loaded (${why}; on Node 20 and 22, ai 7 loads from Node 20.19 and 22.12)` });
  }
  for (const name of ['tool', 'jsonSchema', 'asSchema']) {
    if (typeof ai[name] !== 'function') {
      throw errors.fault('PEER_MISSING', { feature: 'codeModeTool', package: 'ai', version: '7', problem: `the installed one has no ${name}()` });
    }
  }
  return ai;
}

/**
 * The tools a program may call: those with an `execute` (a provider-executed tool runs at the
 * model's provider, not here).
 * @param {unknown} tools
 * @param {string} field
 * @returns {Map<string, HostTool>}
 */
function hostTools(tools, field) {
  const kind = 'INVALID_OPTION';
  const given = objectArgument(kind, field, tools, "an object of AI SDK tools, { name: tool({ description, inputSchema, execute }) } (or {} with experimental_toolCallers)");
  /** @type {Map<string, HostTool>} */
  const out = new Map();
  for (const [name, t] of reading(kind, field, () => Object.entries(given))) {
    if (t === null || typeof t !== 'object') throw fault(kind, { field: `${field}.${name}`, problem: `got ${describe(t)}`, allowed: 'an AI SDK tool, tool({ description, inputSchema, execute })' });
    if (typeof (/** @type {HostTool} */ (t)).execute === 'function') out.set(name, /** @type {HostTool} */ (t));
  }
  return out;
}

/**
 * What keeps `value` from being the JSON data a tool's input is, checked before it goes through
 * JSON or any schema reads it (a sparse array of 2^32 - 1 slots crosses the sandbox in a few
 * bytes, and JSON would write every slot): null when it is within bounds. A typed array counts
 * its elements, each a value in JSON.
 * @param {unknown} value
 * @returns {string | null}
 */
function jsonShapeProblem(value) {
  let budget = INPUT_VALUES;
  /** @param {unknown} v @param {number} depth @returns {string | null} */
  const walk = (v, depth) => {
    if (v === null || typeof v !== 'object') return null;
    if (depth > INPUT_DEPTH) return `it nests more than ${INPUT_DEPTH} levels`;
    const entries = Array.isArray(v) ? v.length : ArrayBuffer.isView(v) ? (/** @type {{ length?: number }} */ (v).length ?? 0) : Object.keys(v).length;
    budget -= entries;
    if (budget < 0) return `it holds more than ${INPUT_VALUES} values; pass less (an id or a page)`;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const problem = walk(v[i], depth + 1);
        if (problem) return problem;
      }
      return null;
    }
    for (const key of Object.keys(v)) {
      const problem = walk(/** @type {Record<string, unknown>} */ (v)[key], depth + 1);
      if (problem) return problem;
    }
    return null;
  };
  return walk(value, 0);
}

/**
 * A validation failure as one line the model can act on: `path: message` per issue (zod and
 * standard schemas list issues; the AI SDK wraps them in its error's `cause`), else the message.
 * @param {unknown} error
 * @returns {string}
 */
function validationText(error) {
  const e = /** @type {any} */ (error);
  const issues = [e?.issues, e?.cause?.issues].find((i) => Array.isArray(i) && i.length > 0);
  if (!issues) return e instanceof Error ? e.message : describe(error);
  const shown = issues.slice(0, 10).map((/** @type {any} */ i) => {
    const path = Array.isArray(i?.path) ? i.path.map((/** @type {any} */ p) => (p !== null && typeof p === 'object' ? String(p.key) : String(p))).join('.') : '';
    return `${path ? `${path}: ` : ''}${typeof i?.message === 'string' ? i.message : 'invalid'}`;
  });
  return shown.join('; ') + (issues.length > 10 ? `; and ${issues.length - 10} more` : '');
}

/**
 * The input a call of `provider.name` carries, checked against its tool's schema: `ok: false`
 * with the text the program's call rejects with.
 * @param {Ai} ai
 * @param {string} provider the global's name in the program
 * @param {string} name
 * @param {HostTool} t
 * @param {unknown[]} args
 * @returns {Promise<{ ok: true, input: unknown } | { ok: false, message: string }>}
 */
async function checkedInput(ai, provider, name, t, args) {
  if (args.length > 1) return { ok: false, message: `${provider}.${name} takes one argument, its input object; it was given ${args.length}` };
  const shape = jsonShapeProblem(args[0]);
  if (shape) return { ok: false, message: `Invalid input for tool "${name}": ${shape}` };
  const json = throughJson(args[0]);
  if ('problem' in json) return { ok: false, message: `Invalid input for tool "${name}": it is passed as JSON, and ${json.problem}` };
  const schema = ai.asSchema(t.inputSchema);
  if (typeof schema.validate !== 'function') return { ok: true, input: json.value };
  const checked = await schema.validate(json.value);
  if (checked.success) return { ok: true, input: checked.value };
  return { ok: false, message: `Invalid input for tool "${name}": ${validationText(checked.error)}` };
}

module.exports = { loadAi, hostTools, checkedInput };
