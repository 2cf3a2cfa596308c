// @ts-check
'use strict';
// What the model sees of the code tool: its description (how to write the program, the host's
// tools declared as TypeScript, whether it has a network), the check of its input `{ code }`,
// and its output as the model reads it (the result cut to its bound, the console lines, a pause
// as what waits for a person, never the token).

const { describe } = require('../validate/fields');
const { IDENTIFIER } = require('../validate');
const { declareProvider } = require('../model/declarations');
const { truncateResult, consoleText, truncatedNote } = require('../model/truncate');

/**
 * @typedef {import('../../index').LogEntry} LogEntry
 * @typedef {import('../../index').CodeModeApprovalRequest} ApprovalRequest
 * @typedef {import('../../index').CodeModeOutput} CodeModeOutput
 * @typedef {import('./tools').Ai} Ai
 * @typedef {import('./tools').HostTool} HostTool
 * @typedef {import('./options').Settings} Settings
 */

/** Characters of one waiting call's input the model sees. */
const INPUT_CHARS = 2_000;

/**
 * A schema's JSON Schema through the AI SDK's own `asSchema` (zod, standard or JSON schemas);
 * `{}` (no type known) when it cannot be had synchronously.
 * @param {Ai} ai
 * @param {unknown} schema
 * @returns {object}
 */
function jsonSchemaOf(ai, schema) {
  try {
    const json = ai.asSchema(schema).jsonSchema;
    if (json === null || typeof json !== 'object' || typeof (/** @type {any} */ (json)).then === 'function') return {};
    return json;
  } catch {
    return {};
  }
}

/**
 * The host's tools as TypeScript, as the code tool's description shows them to the model:
 * `declare const <provider>`. With `untyped: 'any'`, what `typecheck` checks against: a tool
 * without an output schema resolves to `any` there, so no valid read of its result is refused.
 * @param {Ai} ai
 * @param {Map<string, HostTool>} byName
 * @param {string} provider
 * @param {string} [untyped] what a tool without an output schema resolves to
 */
function declarations(ai, byName, provider, untyped = 'unknown') {
  if (byName.size === 0) return `declare const ${provider}: {};`;
  const declared = [...byName].map(([name, t]) => {
    const about = [t.description, t.title].find((d) => typeof d === 'string');
    return { name, description: /** @type {string | undefined} */ (about), inputSchema: jsonSchemaOf(ai, t.inputSchema), outputSchema: t.outputSchema === undefined ? undefined : jsonSchemaOf(ai, t.outputSchema) };
  });
  return declareProvider(provider, declared, { untyped });
}

/**
 * The code tool's description: how to write the program, and the tools as TypeScript
 * (`declared`, declarations()'s text).
 * @param {Map<string, HostTool>} byName
 * @param {Settings} settings
 * @param {string} declared
 * @param {boolean} approvals
 */
function description(byName, settings, declared, approvals) {
  const p = settings.provider;
  const names = [...byName.keys()];
  /** @param {string} n */
  const call = (n) => `${p}${IDENTIFIER.test(n) ? `.${n}` : `[${JSON.stringify(n)}]`}({ /* its input */ })`;
  const example =
    names.length === 0
      ? []
      : ['', 'Example:', 'async () => {', ...(names.length === 1 ? [`  const found = await ${call(names[0])};`, '  return found;'] : [`  const [a, b] = await Promise.all([${call(names[0])}, ${call(names[1])}]);`, '  return { a, b };']), '}'];
  const network =
    settings.outbound === null ? 'The program has no network: fetch is closed; reach the outside only through the tools.'
      : settings.outbound === 'public' ? 'The program may fetch public internet addresses.'
        : settings.outbound === undefined ? null : 'The program may use fetch.';
  return [
    'Run a JavaScript or TypeScript program that calls these tools, and get back what it returns.',
    `Write one async arrow function: \`async () => { ... }\`. The tools are async methods of the global \`${p}\`, each taking one input object. Await the calls (Promise.all for independent ones), combine their results in code, and return only what is needed: the result comes back as JSON. console.log output comes back too.`,
    '',
    declared,
    '',
    `A tool's error rejects its call: catch it with try/catch.${approvals ? ' Some calls wait for a person\'s approval; a denied call rejects with the reason: do not retry it.' : ''}`,
    ...(network ? [network] : []),
    ...example,
  ].join('\n');
}

/**
 * The code tool's input schema: `{ code: string }`, with an example call of the first tool
 * whose name is an identifier.
 * @param {Ai} ai
 * @param {string} provider
 * @param {string[]} names
 */
function inputSchema(ai, provider, names) {
  return ai.jsonSchema(
    {
      type: 'object',
      properties: {
        code: { type: 'string', description: `The program: one async arrow function, e.g. \`async () => { const r = await ${provider}.${names.find((n) => IDENTIFIER.test(n)) ?? 'someTool'}({ ... }); return r }\`.` },
      },
      required: ['code'],
      additionalProperties: false,
    },
    // The SDK answers the model with this when its input is not `{ code: string }`.
    { validate: checkInput },
  );
}

/**
 * The code tool's input, `{ code: string }` and nothing else, as the AI SDK's schema validation
 * answers.
 * @param {unknown} value
 * @returns {{ success: true, value: { code: string } } | { success: false, error: Error }}
 */
function checkInput(value) {
  const v = /** @type {any} */ (value);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { success: false, error: new TypeError(`The input must be an object { code: string }; got ${describe(value)}`) };
  if (typeof v.code !== 'string') return { success: false, error: new TypeError(`The input's \`code\` must be a string holding the program; got ${v.code === undefined ? 'none' : describe(v.code)}`) };
  const extra = Object.keys(v).find((k) => k !== 'code');
  if (extra !== undefined) return { success: false, error: new TypeError(`The input has only \`code\`; it has \`${extra}\` too`) };
  return { success: true, value: { code: v.code } };
}

/**
 * The model's view of an output: the result cut to `max` characters and the console lines; a
 * pause shows what waits, never the token.
 * @param {CodeModeOutput} output
 * @param {number} max
 */
function modelOutput(output, max) {
  const out = /** @type {any} */ (output ?? {});
  /** @type {LogEntry[]} */
  const entries = Array.isArray(out.logs) ? out.logs : [];
  const lines = entries.map((l) => `[${l.level}] ${l.message}`);
  const text = consoleText(entries);
  // One line an entry, or the cut text as one when the entries were too long.
  const withLogs = lines.length === 0 ? {} : { logs: text.length < lines.join('\n').length ? [text] : lines };
  if (Array.isArray(out.approvals)) {
    return {
      type: 'json',
      value: {
        waitingForApproval: out.approvals.map((/** @type {ApprovalRequest} */ a) => ({ tool: a.toolName, input: /** @type {any} */ (truncateResult(a.input, INPUT_CHARS).value) ?? null, ...(a.reason === undefined ? {} : { reason: a.reason }) })),
        note: 'The program is paused until a person decides on these calls; its result comes when they have. Do not run it again.',
        ...withLogs,
      },
    };
  }
  if (out.error) {
    const error = truncateResult(`${out.error.code}: ${out.error.message}`, max).value;
    return { type: 'error-json', value: { error: /** @type {string} */ (error), ...withLogs } };
  }
  if (out.result === undefined) return { type: 'json', value: { note: 'The program returned undefined.', ...withLogs } };
  const { value, truncated } = truncateResult(out.result, max);
  return {
    type: 'json',
    value: {
      result: /** @type {any} */ (value),
      ...(truncated ? { note: truncatedNote(max) } : {}),
      ...withLogs,
    },
  };
}

module.exports = { declarations, description, inputSchema, modelOutput };
