// @ts-check
'use strict';
// CodemodeExecutor: @cloudflare/codemode's Executor dialect (execute(code, providers, options) ->
// { result, error?, logs? }) over any native executor. The reference's behaviour is recorded in
// the project's dialect notes; where the reference is broken this adapter does the sane thing,
// and docs/dialect-deviations.md lists each such place.

const { normalizeCode } = require('./codemode/normalize');
const { sanitizeToolName, validateNames } = require('./model/names');
const codec = require('./codemode/json-codec');
const { constructorDefaults } = require('./codemode/options');
const { callArguments } = require('./codemode/call');
const { BUDGETS } = require('./validate');
const { fault } = require('./errors');
const { reading } = require('./validate/fields');

const LEGACY_WARNING =
  '[@cloudflare/codemode] Passing raw fns to executor.execute() is deprecated. Use ResolvedProvider[] instead. This will be removed in the next major version.';
const LATE_CALL = 'The code execution finished before this tool call settled. Await every tool call before returning.';
const TIMED_OUT = 'Execution timed out';

// The sandbox side of one provider namespace: own properties (a prelude's) first, any other
// string key is a tool whose call crosses as JSON through the hidden native provider.
/**
 * @param {unknown} name
 * @param {string} nativeName
 */
function providerProxy(name, nativeName) {
  return `const ${name} = new Proxy({}, { get(t, k) {
    if (Object.prototype.hasOwnProperty.call(t, k)) return t[k];
    if (typeof k !== 'string') return undefined;
    return async (...args) => {
      const data = __cmParse(await ${nativeName}[k](__cmStringify(args)));
      if (data.error) throw new Error(data.error);
      return data.result;
    };
  } });`;
}

// A connector namespace: only the first argument goes to callTool, values cross as structured
// clones, and the reference's control objects are honoured.
/**
 * @param {unknown} name
 * @param {string} nativeName
 */
function connectorProxy(name, nativeName) {
  return `const ${name} = new Proxy({}, { get(t, k) {
    if (Object.prototype.hasOwnProperty.call(t, k)) return t[k];
    if (typeof k !== 'string') return undefined;
    return async (args) => {
      const r = await ${nativeName}[k](args);
      if (r && typeof r === 'object' && r.__codemode_control__ === 'pause') throw new Error('__CODEMODE_PAUSE__');
      if (r && typeof r === 'object' && r.__codemode_control__ === 'error') throw new Error(String(r.message));
      return r;
    };
  } });`;
}

/** The sandbox's function that names a thrown value, as source. */
function describeThrown() {
  return `(e) => {
    if (e instanceof Error) return e.message || e.name;
    if (e !== null && typeof e === 'object' && typeof e.message === 'string' && e.message !== '') return e.message;
    return String(e);
  }`;
}

/**
 * A syntax error's text with the place moved from the wrapped program to the line of the code
 * the model wrote (dialect deviation D3: the reference rejects, naming its own module's line).
 * Any other failure's text is returned as it is.
 * @param {{ code: string, message: string, line?: number, module?: string }} error
 * @param {string} head the program's text before the model's code
 * @param {{ code: string, origin?: { line: number, modelLine: number } }} normalized
 */
function syntaxAtModelLine(error, head, normalized) {
  if (error.code !== 'SYNTAX_ERROR' || error.line === undefined || error.module !== undefined || !normalized.origin) return error.message;
  const first = head.split('\n').length;
  const n = error.line - first + 1;
  if (n < 1 || n > normalized.code.split('\n').length) return error.message;
  const line = normalized.origin.modelLine + (n - normalized.origin.line);
  if (line < 1) return error.message;
  return error.message.replace(/ \(line \d+, column \d+\)(\.?)$/, ` (line ${line})$1`);
}

class CodemodeExecutor {
  #native;
  #defaults;

  /**
   * @param {{ execute(request: import('../index').ExecuteRequest): Promise<import('../index').Outcome> }} native an IsolateExecutor, or any
   *   executor with the native contract.
   * @param {{ modules?: Record<string, string>, timeout?: number, globalOutbound?: { fetch(request: Request): Response | Promise<Response> } | Function | 'public' | 'native' | null, cpuLimit?: number, toolCallLimit?: number, fetchLimit?: number }} [options]
   *   DynamicWorkerExecutor's options besides `loader`, and the native executor's budgets, as
   *   defaults for every call; anything else is refused with INVALID_OPTION.
   */
  constructor(native, options = {}) {
    if (native === null || typeof native !== 'object' || reading('INVALID_OPTION', 'native', () => typeof native.execute !== 'function')) {
      throw fault('INVALID_OPTION', { field: 'native', problem: `got ${native === null ? 'null' : typeof native}`, allowed: 'an executor with the native contract, e.g. new IsolateExecutor()' });
    }
    this.#defaults = constructorDefaults(options);
    this.#native = native;
  }

  /**
   * @param {string} code
   * @param {Array<{ name: string, fns: Record<string, Function>, prelude?: string }> | Record<string, Function>} providersOrFns
   * @param {{ connectors?: Array<{ name: string, binding: { callTool(method: string, args: unknown): unknown } }>, modules?: Record<string, string>, timeout?: number, outbound?: Function | 'public' | 'native' | null, signal?: AbortSignal, tenant?: string, cpuLimit?: number, toolCallLimit?: number, fetchLimit?: number }} [options]
   */
  async execute(code, providersOrFns, options = {}) {
    const call = callArguments(code, providersOrFns, options);
    if (call.legacy) console.warn(LEGACY_WARNING);
    const { providers, connectors } = call;
    options = call.options;
    const refused = validateNames(providers, connectors);
    if (refused) return { result: undefined, error: refused };

    /** @type {import('../index').ProviderDeclaration[]} */
    const nativeProviders = [];
    const tables = new Map(); // native provider name -> { kind, fns | binding }
    const lines = [];
    for (const [i, p] of providers.entries()) {
      const fns = new Map();
      for (const [raw, fn] of p.fns) {
        const safe = sanitizeToolName(raw);
        if (fns.has(safe)) {
          return { result: undefined, error: `Tool names "${fns.get(safe).raw}" and "${raw}" both sanitize to "${safe}" in provider "${p.name}"` };
        }
        fns.set(safe, { raw, fn });
      }
      const nativeName = `__cmProvider${i}`;
      nativeProviders.push({ name: nativeName, tools: [...fns.keys()] });
      tables.set(nativeName, { kind: 'provider', fns });
      lines.push(providerProxy(p.name, nativeName));
    }
    for (const [i, c] of connectors.entries()) {
      const nativeName = `__cmConnector${i}`;
      nativeProviders.push({ name: nativeName, tools: '*' });
      tables.set(nativeName, { kind: 'connector', binding: c.binding });
      lines.push(connectorProxy(c.name, nativeName));
    }
    for (const p of providers) if (typeof p.prelude === 'string' && p.prelude !== '') lines.push(p.prelude);

    const normalized = normalizeCode(call.code, true);
    if (normalized.refused) return { result: undefined, error: normalized.refused, logs: [] };
    const head = `${normalized.imports}
async () => {
  const __cmLog = console.log.bind(console), __cmWarn = console.warn.bind(console), __cmError = console.error.bind(console);
  console.log = (...a) => __cmLog(a.map(String).join(' '));
  console.warn = (...a) => __cmWarn(a.map(String).join(' '));
  console.error = (...a) => __cmError(a.map(String).join(' '));
  ${codec.SANDBOX_CODEC}
  ${lines.join('\n  ')}
  try {
    return { ok: true, result: await (`;
    const program = `${head}${normalized.code}
    )() };
  } catch (e) {
    return { ok: false, error: (${describeThrown()})(e) };
  }
}`;

    let settled = false;
    /** @type {import('../index').Dispatch} */
    const dispatch = async ({ provider, tool, args }) => {
      const table = tables.get(provider);
      if (table.kind === 'connector') {
        if (settled) return { __codemode_control__: 'error', message: LATE_CALL };
        return table.binding.callTool(tool, args[0]);
      }
      const entry = table.fns.get(tool);
      if (settled) return codec.stringify({ error: LATE_CALL });
      try {
        const parsed = codec.parse(/** @type {string} */ (args[0]));
        const value = await entry.fn(...parsed);
        return codec.stringify({ result: value });
      } catch (err) {
        return JSON.stringify({ error: err instanceof Error ? err.message : String(err) });
      }
    };

    /** @type {import('../index').ExecuteRequest} */
    const request = {
      code: program,
      providers: nativeProviders,
      dispatch,
      timeout: /** @type {number | undefined} */ (options.timeout) ?? this.#defaults.timeout,
    };
    // The reference's own default (60 s) asks no more than a daemon allows: over connect(), a
    // daemon's --timeout is a ceiling, and a host that set no timeout gets the daemon's.
    const ceiling = /** @type {{ ceilings?: { timeout?: unknown } }} */ (this.#native).ceilings?.timeout;
    if (options.timeout === undefined && !this.#defaults.timeoutGiven && typeof ceiling === 'number' && ceiling < /** @type {number} */ (request.timeout)) {
      request.timeout = ceiling;
    }
    const modules = options.modules ?? this.#defaults.modules;
    if (modules !== undefined) request.modules = modules;
    // The native executor validates it, and rejects with ABORTED when it fires.
    if (options.signal !== undefined) request.signal = options.signal;
    // Whom the run is for (checked by callArguments): its worker runs only this tenant's code.
    if (options.tenant !== undefined) request.tenant = /** @type {string} */ (options.tenant);
    // A budget per call wins over the constructor's; left out (or undefined) in both, the
    // native executor's own applies. The native executor checks a per-call one's range.
    for (const key of BUDGETS) {
      const budget = options[key] !== undefined ? options[key] : this.#defaults.budgets[key];
      if (budget !== undefined) request[key] = /** @type {number} */ (budget);
    }
    // undefined is the option left out: it inherits (globalOutbound, else the native executor's).
    if (options.outbound !== undefined) request.outbound = /** @type {import('../index').Outbound} */ (options.outbound);
    else if ('outbound' in this.#defaults) request.outbound = /** @type {import('../index').Outbound} */ (this.#defaults.outbound);
    let outcome;
    try {
      outcome = await this.#native.execute(request);
    } finally {
      settled = true;
    }
    const logs = [];
    for (const l of outcome.logs) {
      if (l.level === 'log') logs.push(l.message);
      else if (l.level === 'warn') logs.push(`[warn] ${l.message}`);
      else if (l.level === 'error') logs.push(`[error] ${l.message}`);
      // console.info and console.debug are not captured by the reference: they reach the host.
      else console[l.level === 'debug' ? 'debug' : 'info'](l.message);
    }
    // A run that ended early answers { result: undefined, error, logs }: a timeout with the
    // reference's text; a spent CPU budget (CPU_LIMIT, which the reference has no bound for),
    // like every other failure, with its declared text (dialect deviation D19). A tool call or
    // fetch past its count rejects inside the sandbox, where the program may catch it.
    if (outcome.error) {
      const error = outcome.error.code === 'TIMEOUT' ? TIMED_OUT : syntaxAtModelLine(outcome.error, head, normalized);
      return { result: undefined, error, logs };
    }
    // The program above answers { ok, result } or { ok: false, error }.
    const r = /** @type {{ ok: boolean, result?: unknown, error?: string }} */ (outcome.result);
    if (!r.ok) return { result: undefined, error: r.error, logs };
    return { result: r.result, logs };
  }
}

module.exports = { CodemodeExecutor, normalizeCode: (/** @type {string} */ code) => normalizeCode(code).code, sanitizeToolName };
