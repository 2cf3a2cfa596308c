// @ts-check
'use strict';
// codeModeTool: the AI SDK's own tools (`tool()`, zod or JSON schemas) as one code-mode tool whose
// programs run in this executor, usable directly in `tools` or, with `ai` 7's
// `experimental_toolCallers`, as the local tool caller that replaces @ai-sdk/code-mode's QuickJS
// one. The host brings its own `ai` (an optional peer dependency), loaded here only when
// codeModeTool is called. docs/ai-sdk.md.

const acorn = require('acorn');
const { denial, fault, render } = require('./errors');
const { describe, reading, snapshot, integerIn, checkOutbound, objectArgument } = require('./validate/fields');
const { BUDGETS, range, reservedNames, IDENTIFIER } = require('./validate');
const { limits, loadNative } = require('./native');
const { declareProvider } = require('./model/declarations');
const { truncateResult, RESULT_CHARS, consoleText, truncatedNote } = require('./model/truncate');

/**
 * @typedef {import('../index').Outcome} Outcome
 * @typedef {import('../index').LogEntry} LogEntry
 * @typedef {import('../index').Decision} Decision
 * @typedef {import('../index').ExecuteRequest} ExecuteRequest
 * @typedef {import('../index').ResumeRequest} ResumeRequest
 * @typedef {import('../index').CodeModeApprovalRequest} ApprovalRequest
 * @typedef {import('../index').CodeModeOutput} CodeModeOutput
 * @typedef {import('../index').CodeModePaused} CodeModePaused
 * @typedef {{ execute(request: ExecuteRequest): Promise<Outcome>, resume?(request: ResumeRequest): Promise<Outcome> }} Executor
 *
 * The AI SDK as this module uses it (`ai` 7's exports of these names).
 * @typedef {{ tool: (t: any) => any, jsonSchema: (s: object, o?: { validate?: (v: unknown) => unknown }) => any, asSchema: (s: any) => { jsonSchema: unknown, validate?: (v: unknown) => any }, experimental_toolCaller?: (t: any, d: any) => any }} Ai
 *
 * An AI SDK tool as far as it is read here.
 * @typedef {{ description?: unknown, title?: unknown, inputSchema?: unknown, outputSchema?: unknown, needsApproval?: unknown, execute?: Function }} HostTool
 *
 * An approval status as `ai` 7's `toolApproval` writes it, normalized.
 * @typedef {{ type: 'not-applicable' | 'approved' | 'denied' | 'user-approval', reason?: string }} Status
 *
 * What the options come to once checked.
 * @typedef {object} Settings
 * @property {Executor} executor
 * @property {string} provider the global's name in the program
 * @property {{ mode: 'interrupt', expiresIn?: number } | { mode: 'callback', timeout?: number }} approval
 * @property {((request: ApprovalRequest) => unknown) | undefined} decide callback mode's
 * @property {unknown} toolApproval
 * @property {Record<string, unknown>} run the fields each execute request carries
 * @property {import('../index').Outbound | undefined} outbound
 * @property {number} maxResultChars
 *
 * One invocation: the tool set, the outer call's options, and its counters.
 * @typedef {object} Run
 * @property {Map<string, HostTool>} byName
 * @property {Record<string, unknown>} toolSet
 * @property {string[]} approve the tools whose calls may need approval
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
 * The 1-based line and column (UTF-16 units) at which the model's expression starts, and so the
 * wrapper around it (`HEAD`).
 * @typedef {{ line: number, column: number }} Entry
 */

/** Characters of one waiting call's input the model sees. */
const INPUT_CHARS = 2_000;
const STATUSES = ['not-applicable', 'approved', 'denied', 'user-approval'];
const OPTION_KEYS = ['executor', 'approval', 'toolApproval', 'provider', 'timeout', 'memoryLimit', 'outbound', 'modules', 'maxResultChars', ...BUDGETS];
const RESUME_KEYS = ['tools', 'abortSignal', 'messages', 'context'];
const RESPONSE_KEYS = ['type', 'approvalId', 'approved', 'reason', 'providerExecuted'];
/** Counts the runs whose outer call has no id (a direct `execute` without one), to name them. */
let anonymous = 0;

/** @returns {Ai} */
function loadAi() {
  /** @type {any} */
  let ai;
  try {
    ai = require('ai');
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
    throw fault('PEER_MISSING', { feature: 'codeModeTool', package: 'ai', version: '7', problem: `it could not be loaded (${why}; on Node 20 and 22, ai 7 loads from Node 20.19 and 22.12)` });
  }
  for (const name of ['tool', 'jsonSchema', 'asSchema']) {
    if (typeof ai[name] !== 'function') {
      throw fault('PEER_MISSING', { feature: 'codeModeTool', package: 'ai', version: '7', problem: `the installed one has no ${name}()` });
    }
  }
  return ai;
}

/**
 * @param {unknown} given
 * @returns {Settings}
 */
function checkOptions(given) {
  const kind = 'INVALID_OPTION';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', given, '{ executor, approval?, toolApproval?, provider?, ... }', false), OPTION_KEYS, 'codeModeTool options');
  const executor = /** @type {Executor} */ (input.executor);
  if (executor === null || typeof executor !== 'object' || reading(kind, 'executor', () => typeof executor.execute !== 'function')) {
    throw fault(kind, { field: 'executor', problem: `got ${describe(executor)}`, allowed: 'an IsolateExecutor, or the executor connect() resolves to' });
  }
  const provider = input.provider ?? 'tools';
  if (typeof provider !== 'string' || !IDENTIFIER.test(provider) || reservedNames().has(provider)) {
    throw fault(kind, { field: 'provider', problem: `got ${describe(provider)}`, allowed: "a JavaScript identifier that is not a runtime global (default 'tools')" });
  }
  /** @type {Record<string, unknown>} */
  const run = {};
  if (input.timeout !== undefined) run.timeout = integerIn(kind, 'timeout', input.timeout, range('timeout'), ' (ms)');
  if (input.memoryLimit !== undefined) run.memoryLimit = integerIn(kind, 'memoryLimit', input.memoryLimit, range('memoryLimit'), ' (MiB)');
  for (const key of BUDGETS) if (input[key] !== undefined) run[key] = integerIn(kind, key, input[key], range(key));
  // Closed unless the host opens it, as @ai-sdk/code-mode's sandbox is: a tool's answer that
  // carries instructions must not find a way out of the machine.
  const outbound = input.outbound === undefined ? null : checkOutbound(kind, 'outbound', input.outbound);
  run.outbound = outbound;
  if (input.modules !== undefined) {
    const m = input.modules;
    if (m === null || typeof m !== 'object' || Array.isArray(m) || !Object.values(m).every((v) => typeof v === 'string')) {
      throw fault(kind, { field: 'modules', problem: `got ${describe(m)}`, allowed: 'an object mapping specifiers to ES module source strings (bundleModules() makes one)' });
    }
    run.modules = { ...m };
  }
  const maxResultChars = input.maxResultChars === undefined ? RESULT_CHARS : integerIn(kind, 'maxResultChars', input.maxResultChars, [100, 2_147_483_647], ' (characters)');
  const { approval, decide } = checkApproval(input.approval);
  return { executor, provider, approval, decide, toolApproval: checkToolApproval(input.toolApproval), run, outbound, maxResultChars };
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
  if (given === null || typeof given !== 'object' || Array.isArray(given)) throw fault(kind, { field: 'toolApproval', problem: `got ${describe(given)}`, allowed });
  // No prototype: a tool named `constructor` or `toString` must not find Object's.
  /** @type {Record<string, unknown>} */
  const out = Object.create(null);
  for (const [name, entry] of reading(kind, 'toolApproval', () => Object.entries(given))) {
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

/**
 * The tools a program may call: those with an `execute` (a provider-executed tool runs at the
 * model's provider, not here).
 * @param {unknown} tools
 * @param {string} field
 * @returns {Map<string, HostTool>}
 */
function hostTools(tools, field) {
  const kind = 'INVALID_OPTION';
  if (tools === undefined) return new Map();
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw fault(kind, { field, problem: `got ${describe(tools)}`, allowed: "an object of AI SDK tools, { name: tool({ description, inputSchema, execute }) } (or {} with experimental_toolCallers)" });
  }
  /** @type {Map<string, HostTool>} */
  const out = new Map();
  for (const [name, t] of reading(kind, field, () => Object.entries(tools))) {
    if (t === null || typeof t !== 'object') throw fault(kind, { field: `${field}.${name}`, problem: `got ${describe(t)}`, allowed: 'an AI SDK tool, tool({ description, inputSchema, execute })' });
    if (typeof (/** @type {HostTool} */ (t)).execute === 'function') out.set(name, /** @type {HostTool} */ (t));
  }
  return out;
}

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
 * The code tool's description: how to write the program, and the tools as TypeScript.
 * @param {Ai} ai
 * @param {Map<string, HostTool>} byName
 * @param {Settings} settings
 * @param {boolean} approvals
 */
function description(ai, byName, settings, approvals) {
  const p = settings.provider;
  const declared = [...byName].map(([name, t]) => {
    const about = [t.description, t.title].find((d) => typeof d === 'string');
    return { name, description: /** @type {string | undefined} */ (about), inputSchema: jsonSchemaOf(ai, t.inputSchema), outputSchema: t.outputSchema === undefined ? undefined : jsonSchemaOf(ai, t.outputSchema) };
  });
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
    names.length === 0 ? `declare const ${p}: {};` : declareProvider(p, declared),
    '',
    `A tool's error rejects its call: catch it with try/catch.${approvals ? ' Some calls wait for a person\'s approval; a denied call rejects with the reason: do not retry it.' : ''}`,
    ...(network ? [network] : []),
    ...example,
  ].join('\n');
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

/** Values a tool's input may hold at most (every array item and object entry, nested ones too). */
const INPUT_VALUES = 100_000;
/** Levels a tool's input may nest. */
const INPUT_DEPTH = 64;

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

/** @param {unknown} v @returns {v is AsyncIterable<unknown>} */
const isAsyncIterable = (v) => v !== null && typeof v === 'object' && typeof (/** @type {any} */ (v))[Symbol.asyncIterator] === 'function';

// Values are JSON, as @ai-sdk/code-mode's are (docs/ai-sdk.md, "Values are JSON"): the program's
// result is turned into JSON text inside the sandbox, where its own toJSON methods and getters
// run, and parsed here; tool inputs and answers go through JSON here, on the host (a tool input
// arrives as a structured clone, which holds no code of the program's; an answer is the host's).

/** The key of the wrapper's answer, which says what became of the program's value. */
const JSON_TAG = 'codemode:json';
/**
 * What goes in front of the model's expression (with `TAIL` after it), on the expression's own
 * line: a function that calls the model's function as the executor would (no arguments, no
 * `this`), awaits it, and answers `{ [JSON_TAG]: 'json', detail: <JSON text> }`, or `'threw'`
 * with what JSON.stringify threw, or `'none'` with the type of a value JSON has none for.
 * JSON.stringify is taken before the model's expression is evaluated. A value that is not a
 * function passes through, for the executor's own ENTRY_SHAPE. One line: only the columns of
 * that line after it move, by its length (`placed` counts them back).
 */
const HEAD = `((s) => (f) => typeof f !== 'function' ? f : async () => { const v = await f(); if (v === undefined) return v; let t; try { t = s(v); } catch (e) { let d; try { d = e instanceof Error ? e.name + ': ' + e.message : String(e); } catch { d = 'a value that cannot be named'; } return { '${JSON_TAG}': 'threw', detail: d }; } return t === undefined ? { '${JSON_TAG}': 'none', detail: typeof v } : { '${JSON_TAG}': 'json', detail: t }; })(JSON.stringify)((`;
const TAIL = '))';

/**
 * acorn, reading the model's code here only to find its expression: without acorn's lists of
 * declared names, so the parse is linear whatever the declarations (the worker reports a
 * redeclaration itself).
 */
const EntryParser = acorn.Parser.extend(
  (Base) =>
    /** @type {typeof acorn.Parser} */ (/** @type {unknown} */ (class extends /** @type {new (...args: any[]) => object} */ (/** @type {unknown} */ (Base)) {
      declareName() {}
    })),
);

/** @param {string} src @returns {acorn.Program | null} */
function parseEntry(src) {
  try {
    return EntryParser.parse(src, { ecmaVersion: 'latest', sourceType: 'module', locations: true });
  } catch {
    return null;
  }
}

/**
 * The code the executor runs for the model's: its expression wrapped in `HEAD` and `TAIL`, every
 * other line and column as the model wrote them (TypeScript goes with its types blanked, as the
 * worker blanks them). Code that is not the entry shape, or that cannot be read here, goes as it
 * is, for the executor to report (entry null); code too long or too deeply nested for a parser on
 * this thread is not read at all.
 * @param {string} code
 * @returns {{ code: string, entry: Entry | null }}
 */
function wrapEntry(code) {
  const binding = loadNative().binding;
  if (binding.checkProgram(code) != null) return { code, entry: null };
  let src = code;
  let ast = parseEntry(src);
  if (!ast) {
    const stripped = binding.stripTypes(code).code;
    if (typeof stripped !== 'string') return { code, entry: null };
    src = stripped;
    ast = parseEntry(src);
    if (!ast) return { code, entry: null };
  }
  const body = ast.body.filter((n) => n.type !== 'EmptyStatement');
  const last = body[body.length - 1];
  if (!last || last.type !== 'ExpressionStatement' || body.slice(0, -1).some((n) => n.type !== 'ImportDeclaration')) return { code, entry: null };
  const { start, end, loc } = last.expression;
  if (!loc) return { code, entry: null };
  return { code: src.slice(0, start) + HEAD + src.slice(start, end) + TAIL + src.slice(end), entry: { line: loc.start.line, column: loc.start.column + 1 } };
}

/**
 * A failure with its place counted in the code the model wrote: on the expression's first line,
 * the columns after the wrapper move back by its length (in `column` and the text's `(line L,
 * column C)`). A place inside the wrapper (its call of the model's function: a class called
 * without `new`) is none in the model's code, as when the executor calls the function: dropped.
 * @param {import('../index').ProgramError} error
 * @param {Entry | null} entry
 */
function placed(error, entry) {
  const out = { ...error };
  if (!entry || out.module !== undefined || out.line !== entry.line || typeof out.column !== 'number' || out.column < entry.column) return out;
  const at = `(line ${out.line}, column ${out.column})`;
  const i = out.message.lastIndexOf(at);
  if (out.column < entry.column + HEAD.length) {
    if (i >= 0) out.message = `${out.message.slice(0, i).replace(/ $/, '')}${out.message.slice(i + at.length)}`;
    delete out.line;
    delete out.column;
    return out;
  }
  const column = out.column - HEAD.length;
  if (i >= 0) out.message = `${out.message.slice(0, i)}(line ${out.line}, column ${column})${out.message.slice(i + at.length)}`;
  out.column = column;
  return out;
}

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
 * @returns {{ result: unknown } | { error: import('../index').ProgramError }}
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

/**
 * Builds the code tool over one tool set (the given one, or the one the AI SDK binds).
 * @param {Ai} ai
 * @param {Settings} settings
 * @param {Map<string, HostTool>} byName
 * @param {Record<string, unknown>} toolSet
 */
function makeTool(ai, settings, byName, toolSet) {
  const names = [...byName.keys()];
  const approve = names.filter((n) => mayNeedApproval(settings, n, /** @type {HostTool} */ (byName.get(n))));

  /**
   * @param {Record<string, any>} options the outer call's execution options
   * @param {Map<string, HostTool>} tools
   * @param {Record<string, unknown>} set
   * @param {string[]} approveList
   * @returns {Run}
   */
  const newRun = (options, tools, set, approveList) => {
    /** @type {Record<string, unknown>} */
    const forwarded = { messages: Array.isArray(options.messages) ? options.messages : [] };
    for (const key of ['abortSignal', 'context', 'experimental_context', 'experimental_sandbox']) if (options[key] !== undefined) forwarded[key] = options[key];
    return {
      byName: tools,
      toolSet: set,
      approve: approveList,
      outer: typeof options.toolCallId === 'string' ? options.toolCallId : `codemode-${++anonymous}`,
      forwarded,
      signal: options.abortSignal,
      dispatched: 0,
      asked: 0,
      gate: settings.approval.mode === 'interrupt' ? [] : null,
      entry: null,
    };
  };

  /**
   * The input a call carries, checked against its tool's schema: `ok: false` with the text the
   * program's call rejects with.
   * @param {string} name
   * @param {HostTool} t
   * @param {unknown[]} args
   * @returns {Promise<{ ok: true, input: unknown } | { ok: false, message: string }>}
   */
  const inputOf = async (name, t, args) => {
    if (args.length > 1) return { ok: false, message: `${settings.provider}.${name} takes one argument, its input object; it was given ${args.length}` };
    const shape = jsonShapeProblem(args[0]);
    if (shape) return { ok: false, message: `Invalid input for tool "${name}": ${shape}` };
    const json = throughJson(args[0]);
    if ('problem' in json) return { ok: false, message: `Invalid input for tool "${name}": it is passed as JSON, and ${json.problem}` };
    const schema = ai.asSchema(t.inputSchema);
    if (typeof schema.validate !== 'function') return { ok: true, input: json.value };
    const checked = await schema.validate(json.value);
    if (checked.success) return { ok: true, input: checked.value };
    return { ok: false, message: `Invalid input for tool "${name}": ${validationText(checked.error)}` };
  };

  /**
   * What the AI SDK would decide for this call (its resolveToolApproval, in order: toolApproval,
   * then the tool's needsApproval). A check that throws denies the call.
   * @param {Run} run
   * @param {string} name
   * @param {unknown[]} args
   * @param {string} approvalId
   * @returns {Promise<{ status: Status, input?: unknown }>}
   */
  const statusOf = async (run, name, args, approvalId) => {
    const t = run.byName.get(name);
    if (!t) return { status: { type: 'approved' } }; // dispatch refuses it
    const checked = await inputOf(name, t, args);
    // A call whose input its tool refuses cannot act: dispatch rejects it with the reason.
    if (!checked.ok) return { status: { type: 'approved' } };
    const input = checked.input;
    const messages = run.forwarded.messages;
    try {
      const ta = /** @type {any} */ (settings.toolApproval);
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
  };

  /** @param {Status} status @returns {Decision} */
  const decided = (status) => (status.type === 'denied' ? { approved: false, reason: status.reason ?? "the host's approval policy denies it" } : { approved: true });

  /** @param {Run} run @returns {import('../index').Dispatch} */
  const dispatchFor = (run) => async ({ tool: name, args }) => {
    const t = run.byName.get(name);
    if (!t || typeof t.execute !== 'function') throw new Error(`Tool "${name}" not found`);
    const checked = await inputOf(name, t, args);
    if (!checked.ok) throw new TypeError(checked.message);
    if (run.gate && run.approve.includes(name)) {
      // Checked again here, not taken from the paused output (which travels through the
      // client in UI streams): a call that needs a person runs only as a person approved it.
      const { status, input } = await statusOf(run, name, args, `${run.outer}:${run.dispatched + 1}`);
      const denied = (/** @type {string} */ reason) => denial(settings.provider, name, reason);
      if (status.type === 'denied') throw denied(status.reason ?? "the host's approval policy denies it");
      if (status.type === 'user-approval') {
        const key = JSON.stringify(input);
        const i = run.gate.findIndex((a) => a.toolName === name && JSON.stringify(a.input) === key);
        if (i < 0) throw denied('no person approved this call with these arguments');
        run.gate.splice(i, 1);
      }
    }
    const output = t.execute(checked.input, { ...run.forwarded, toolCallId: `${run.outer}:${++run.dispatched}` });
    let answer;
    if (isAsyncIterable(output)) {
      for await (const part of output) answer = part; // a streaming tool's last output is its output
    } else {
      answer = await output;
    }
    const json = throughJson(answer);
    if ('problem' in json) throw new Error(render('TOOL_RESULT_NOT_CLONEABLE', { provider: settings.provider, tool: name, detail: `it is passed as JSON, and ${json.problem}` }));
    return json.value;
  };

  /** @param {Run} run @returns {ExecuteRequest} */
  const requestFor = (run) => {
    const list = [...run.byName.keys()];
    /** @type {any} */
    const request = {
      code: '',
      ...settings.run,
      providers: [{ name: settings.provider, tools: list, ...(run.approve.length > 0 ? { approve: run.approve } : {}) }],
      dispatch: dispatchFor(run),
      ...(run.signal ? { signal: run.signal } : {}),
    };
    if (run.approve.length > 0) {
      if (settings.approval.mode === 'interrupt') request.approval = settings.approval;
      else {
        request.approval = {
          ...settings.approval,
          decide: async (/** @type {import('../index').ApprovalCall} */ call) => {
            const approvalId = `${run.outer}:approval-${++run.asked}`;
            const { status, input } = await statusOf(run, call.tool, call.args, approvalId);
            if (status.type !== 'user-approval') return decided(status);
            const answer = await /** @type {NonNullable<Settings['decide']>} */ (settings.decide)({ approvalId, toolName: call.tool, input, ...(status.reason === undefined ? {} : { reason: status.reason }) });
            if (typeof answer === 'boolean') return { approved: answer };
            return /** @type {Decision} */ (answer); // the executor denies anything else, saying why
          },
        };
      }
    }
    return request;
  };

  /** @param {Run} run @param {string} token @param {Record<string, Decision>} decisions */
  const resumeRun = (run, token, decisions) => {
    const executor = settings.executor;
    if (typeof executor.resume !== 'function') {
      throw fault('INVALID_OPTION', { field: 'executor', problem: 'it has no resume(), which a paused run needs', allowed: 'an IsolateExecutor, or the executor connect() resolves to' });
    }
    return executor.resume({
      token,
      decisions,
      dispatch: dispatchFor(run),
      ...(typeof settings.outbound === 'function' ? { outbound: settings.outbound } : {}),
      ...(run.signal ? { signal: run.signal } : {}),
    });
  };

  /**
   * The tool's output for an outcome; a pause whose calls need no person is resumed at once.
   * @param {Run} run
   * @param {Outcome} outcome
   * @returns {Promise<CodeModeOutput>}
   */
  const settle = async (run, outcome) => {
    // Pauses whose calls need no person are resumed here, each a replay of the program: all of
    // them together get one time bound, the run's.
    const bound = /** @type {number} */ (settings.run.timeout ?? limits().defaults.timeout);
    const deadline = Date.now() + bound;
    for (;;) {
      if (!outcome.paused) {
        if (outcome.error) return { error: placed(outcome.error, run.entry), logs: outcome.logs, calls: outcome.calls };
        const read = jsonResult(outcome.result);
        if ('error' in read) return { error: read.error, logs: outcome.logs, calls: outcome.calls };
        return { result: read.result, logs: outcome.logs, calls: outcome.calls };
      }
      /** @type {ApprovalRequest[]} */
      const approvals = [];
      /** @type {Record<string, Decision>} */
      const auto = {};
      for (const call of outcome.paused.pending) {
        const approvalId = `${run.outer}:approval-${call.id}`;
        const { status, input } = await statusOf(run, call.tool, call.args, approvalId);
        if (status.type === 'user-approval') approvals.push({ approvalId, toolName: call.tool, input, ...(status.reason === undefined ? {} : { reason: status.reason }) });
        else auto[call.id] = decided(status);
      }
      if (approvals.length > 0) {
        const continuation = { token: outcome.paused.token, toolCallId: run.outer, decided: auto, dispatched: Math.max(run.dispatched, outcome.stats.toolCalls - outcome.paused.pending.length), ...(run.entry ? { entry: run.entry } : {}) };
        return { approvals, continuation, logs: outcome.logs, calls: outcome.calls };
      }
      const left = deadline - Date.now();
      const timedOut = () => ({ error: { code: 'TIMEOUT', message: render('TIMEOUT', { ms: bound }) }, logs: outcome.logs, calls: outcome.calls });
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
  };

  const codeTool = ai.tool({
    description: description(ai, byName, settings, approve.length > 0),
    inputSchema: ai.jsonSchema(
      {
        type: 'object',
        properties: {
          code: { type: 'string', description: `The program: one async arrow function, e.g. \`async () => { const r = await ${settings.provider}.${names.find((n) => IDENTIFIER.test(n)) ?? 'someTool'}({ ... }); return r }\`.` },
        },
        required: ['code'],
        additionalProperties: false,
      },
      // The SDK answers the model with this when its input is not `{ code: string }`.
      { validate: checkInput },
    ),
    execute: async (/** @type {{ code: string }} */ input, /** @type {Record<string, any>} */ options = {}) => {
      const run = newRun(options, byName, toolSet, approve);
      const request = requestFor(run);
      const wrapped = wrapEntry(input.code);
      request.code = wrapped.code;
      run.entry = wrapped.entry;
      return settle(run, await settings.executor.execute(request));
    },
    toModelOutput: (/** @type {{ output: CodeModeOutput }} */ { output }) => modelOutput(output, settings.maxResultChars),
  });

  /**
   * @param {unknown} paused
   * @param {unknown} responses
   * @param {unknown} [options]
   */
  const resume = async (paused, responses, options) => {
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
      if (r === null || typeof r !== 'object') throw fault(kind, { field, problem: `got ${describe(r)}`, allowed: '{ approvalId, approved, reason? }' });
      const { approvalId, approved, reason } = snapshot(kind, field, r, RESPONSE_KEYS, 'an approval response');
      if (typeof approved !== 'boolean') throw fault(kind, { field: `${field}.approved`, problem: `got ${describe(approved)}`, allowed: 'true or false' });
      if (reason !== undefined && typeof reason !== 'string') throw fault(kind, { field: `${field}.reason`, problem: `got ${describe(reason)}`, allowed: 'a string or omitted' });
      if (typeof approvalId !== 'string' || !pending.some((a) => a.approvalId === approvalId)) {
        throw fault('DECISIONS_INVALID', { detail: `${describe(approvalId)} names no approval of this pause`, ids });
      }
      if (answers.has(approvalId)) throw fault('DECISIONS_INVALID', { detail: `"${approvalId}" is answered twice`, ids });
      answers.set(approvalId, approved ? { approved } : { approved, ...(reason === undefined ? {} : { reason: /** @type {string} */ (reason) }) });
    });
    /** @type {Record<string, Decision>} */
    const decisions = { ...c.decided };
    const prefix = `${c.toolCallId}:approval-`;
    for (const a of pending) {
      const answer = answers.get(a.approvalId);
      if (!answer) throw fault('DECISIONS_INVALID', { detail: `no response for approval "${a.approvalId}"`, ids });
      if (typeof a.approvalId !== 'string' || !a.approvalId.startsWith(prefix)) {
        throw fault(kind, { field: 'paused', problem: `approval ${describe(a.approvalId)} is not one of this pause's`, allowed: "the code tool's output for a paused program, as it was returned" });
      }
      decisions[a.approvalId.slice(prefix.length)] = answer;
    }
    const tools = o.tools === undefined ? byName : hostTools(o.tools, 'tools');
    const set = o.tools === undefined ? toolSet : /** @type {Record<string, unknown>} */ (o.tools);
    const approveList = o.tools === undefined ? approve : [...tools.keys()].filter((n) => mayNeedApproval(settings, n, /** @type {HostTool} */ (tools.get(n))));
    const run = newRun({ toolCallId: c.toolCallId, messages: o.messages, abortSignal: o.abortSignal, context: o.context }, tools, set, approveList);
    // The calls before the pause are answered from the token; new ones count on past every call
    // the run made (its `calls` keeps only the first 1,000).
    run.dispatched = Number.isSafeInteger(c.dispatched) && c.dispatched >= 0 ? c.dispatched : Array.isArray(p.calls) ? p.calls.length : 0;
    // Only where a failure's place is counted from: the token decides what runs.
    const at = c.entry;
    run.entry = at !== null && typeof at === 'object' && Number.isSafeInteger(at.line) && at.line > 0 && Number.isSafeInteger(at.column) && at.column > 0 ? { line: at.line, column: at.column } : null;
    for (const a of pending) if (answers.get(a.approvalId)?.approved) /** @type {NonNullable<Run['gate']>} */ (run.gate).push({ toolName: a.toolName, input: a.input });
    return settle(run, await resumeRun(run, c.token, decisions));
  };

  codeTool.resume = resume;
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
