// @ts-check
'use strict';
// Approvals through MCP elicitation: the question put to the person behind a client before a
// call `--approve` names runs. It names the server's own tool and shows the call's input whole,
// one line a leaf, every character that could make it read as something else escaped; a call
// that cannot be shown so within ASK_BOUNDS is refused without asking. docs/mcp.md, "Approvals".

const { callInput, notOneObject, clip } = require('./run');

/** @typedef {import('@modelcontextprotocol/sdk/server/index.js').Server} Server */
/** @typedef {import('./upstream').Upstream} Upstream */
/** @typedef {import('./run').Call} Call */
/** @typedef {import('./run').Run} Run */
/** @typedef {import('./run').Decision} Decision */

/**
 * What one approval question shows at most (docs/mcp.md, Approvals). It shows a call's input
 * whole, one line a leaf (`options.amount: 9999999`), or it is not asked: a call whose input
 * passes any of these bounds is refused, saying which, since a view with anything cut or left
 * out could hide the part that matters.
 */
const ASK_BOUNDS = Object.freeze({
  /** Leaves of the input (values that are not a non-empty object or array), one line each. */
  leaves: 40,
  /** Characters of one value as shown: its JSON, escapes included. */
  valueChars: 500,
  /** Characters of one key as shown (quoted and escaped when it is not an identifier). */
  keyChars: 100,
  /** Characters of one leaf's path as shown (`items[0].id`): bounds how deep the input nests. */
  pathChars: 200,
});
/** How much of a key or path a refusal's reason quotes. */
const ASK_QUOTE_CHARS = 60;
/** Questions one run may put to a person; later calls that need a yes are refused. */
const ASKS_PER_RUN = 16;
/** A denial's reason when the client cannot ask a person. */
const NO_ELICITATION = 'the MCP client cannot ask a person: it does not support elicitation, so calls that need approval are refused; use a client that supports it, or run the gateway without --approve for this tool';

/**
 * Asks the person behind `server`'s client whether `call` may run (`elicitation/create`, on the
 * `code` call's own request). The question names the server's own tool and shows the input
 * whole, one line a leaf, so the program cannot push the part that matters out of view; a call
 * that cannot be shown whole (askView) is refused without asking.
 * @param {Server} server the client's
 * @param {Call} call
 * @param {Run} run
 * @param {{ upstreams: Upstream[], timeout: number, requestId: string | number }} context
 * @returns {Promise<Decision>}
 */
async function ask(server, call, run, { upstreams, timeout, requestId }) {
  if (!server.getClientCapabilities()?.elicitation) return { approved: false, reason: NO_ELICITATION };
  const up = upstreams.find((u) => u.spec.provider === call.provider);
  const names = run.names.get(call.provider);
  const tool = (names && names.size > 0 ? names : up?.byName)?.get(call.tool);
  const original = tool?.original ?? call.tool;
  run.pinned.set(`${call.provider}.${call.tool}`, original);
  const input = callInput(call);
  if (!input) return { approved: false, reason: `it was not put to a person: ${notOneObject(call)}` };
  const view = askView(input);
  if ('refusal' in view) return { approved: false, reason: `it was not put to a person: ${view.refusal}` };
  const [serverName, toolName] = [up?.spec.name ?? call.provider, original].map((n) => visible(JSON.stringify(n)));
  if (toolName.length > ASK_BOUNDS.keyChars) {
    return { approved: false, reason: `it was not put to a person: the server's name for the tool is ${toolName.length} characters long as shown, more than the ${ASK_BOUNDS.keyChars} a question shows of a name; the server must use a shorter name` };
  }
  if (++run.asked > ASKS_PER_RUN) {
    return { approved: false, reason: `the run has asked ${ASKS_PER_RUN} times already, the most one run may ask; ask for fewer approvals in one run` };
  }
  const n = view.lines.length;
  const answer = await server.elicitInput(
    {
      message: [
        `The program wants to call ${serverName} tool ${toolName} with ${n === 0 ? 'an empty input ({}).' : `this input (${n} ${n === 1 ? 'value' : 'values'}):`}`,
        ...view.lines,
        'Allow this call?',
      ].join('\n'),
      requestedSchema: { type: 'object', properties: {} },
    },
    { relatedRequestId: requestId, timeout },
  );
  if (answer.action === 'accept') return { approved: true };
  return { approved: false, reason: answer.action === 'decline' ? 'the person declined it' : 'the person dismissed the question' };
}

/**
 * Characters that can make a question read as something it is not: controls (NEL among them),
 * format characters (zero-width, bidirectional controls, tags), line and paragraph separators,
 * spaces other than U+0020, characters drawn as nothing (default ignorable), and look-alikes of
 * the quotes around keys and strings.
 */
const DECEIVING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Default_Ignorable_Code_Point}\u00ab\u00bb\u02b9-\u02bc\u02c8\u02dd\u02ee\u05f3\u05f4\u2018-\u201f\u2032-\u2037\u2039\u203a\u275b-\u2760\u301d-\u301f\uff02\uff07]/gu;

/**
 * `text` with every DECEIVING character written as an escape (`\u200b`, `\u{e0041}`).
 * @param {string} text
 */
function visible(text) {
  return text.replace(DECEIVING, (c) => {
    if (c === ' ') return c;
    const code = /** @type {number} */ (c.codePointAt(0));
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Keys written bare in a path; any other is quoted: `options["a.b"]`. */
const BARE_KEY = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * What a person is shown of a call's input: one line a leaf, `- path: value`, written from the
 * JSON its server receives (a Date as its string, NaN as null, undefined left out), every
 * DECEIVING character an escape; or why it cannot be shown whole within ASK_BOUNDS.
 * @param {Record<string, unknown>} input
 * @returns {{ lines: string[] } | { refusal: string }}
 */
function askView(input) {
  /** @type {unknown} */
  let wire;
  try {
    wire = JSON.parse(JSON.stringify(input));
  } catch (e) {
    return { refusal: `its input cannot be written as JSON, the form its server receives (${/** @type {Error} */ (e).message}); pass plain data` };
  }
  /** @type {string[]} */
  const lines = [];
  let leaves = 0;
  // Depth first, in key order; `path` is null once past the leaf bound (only counting then).
  /** @type {Array<[string | null, unknown]>} */
  const stack = [['', wire]];
  while (stack.length > 0) {
    const [path, value] = /** @type {[string | null, unknown]} */ (stack.pop());
    const children = value !== null && typeof value === 'object' ? Object.entries(value) : [];
    if (path === null) {
      if (children.length === 0) leaves++;
      for (let i = children.length - 1; i >= 0; i--) stack.push([null, children[i][1]]);
      continue;
    }
    if (children.length === 0) {
      if (path === '') break; // the empty input: no lines
      if (++leaves > ASK_BOUNDS.leaves) continue;
      const shown = visible(JSON.stringify(value));
      if (shown.length > ASK_BOUNDS.valueChars) {
        return { refusal: `the value at ${path} is ${shown.length} characters long as shown, more than the ${ASK_BOUNDS.valueChars} a question shows of one value; pass a shorter value` };
      }
      lines.push(`- ${path}: ${shown}`);
      continue;
    }
    const array = Array.isArray(value);
    for (let i = children.length - 1; i >= 0; i--) {
      if (leaves >= ASK_BOUNDS.leaves) {
        stack.push([null, children[i][1]]);
        continue;
      }
      const key = children[i][0];
      const bare = !array && BARE_KEY.test(key);
      const shownKey = array ? key : bare ? key : visible(JSON.stringify(key));
      if (shownKey.length > ASK_BOUNDS.keyChars) {
        return { refusal: `a key in ${path === '' ? 'the input' : path} is ${shownKey.length} characters long as shown (${clip(shownKey, ASK_QUOTE_CHARS)}), more than the ${ASK_BOUNDS.keyChars} a question shows of one key; use shorter keys` };
      }
      const child = array || !bare ? `${path}[${shownKey}]` : path === '' ? key : `${path}.${key}`;
      if (child.length > ASK_BOUNDS.pathChars) {
        return { refusal: `its input nests too deep to show: the path ${clip(child, ASK_QUOTE_CHARS)} is longer than the ${ASK_BOUNDS.pathChars} characters a question shows of one path; nest less deeply` };
      }
      stack.push([child, children[i][1]]);
    }
  }
  if (leaves > ASK_BOUNDS.leaves) {
    return { refusal: `its input has ${leaves} values, more than the ${ASK_BOUNDS.leaves} one question shows (one a line); make calls of fewer values each` };
  }
  return { lines };
}

module.exports = { ask, askView, ASK_BOUNDS, NO_ELICITATION };
