// @ts-check
'use strict';
// createIsolateDriver: @tanstack/ai-code-mode's IsolateDriver over this executor
// (`@supolka/codemode-executor/tanstack`, docs/tanstack.md). Code mode hands a driver the
// model's program as a function body (its TypeScript already stripped by its transpiler, top-level
// `return` and `await` allowed), its tools as `external_<name>` bindings, and reads back
// `{ success, value, error, logs }`. Each execute here is one run of the executor: the body is
// wrapped in the executor's entry shape, every binding becomes a tool of one provider behind an
// `external_<name>` global, and values, logs and errors take the shapes @tanstack/ai-isolate-node
// gives them (values and tool arguments cross as JSON, logs as `ERROR: ` / `WARN: ` / `INFO: `
// prefixed strings, errors as isolated-vm copies them out). Where the two differ on purpose,
// docs/tanstack.md says so.

const { IsolateExecutor } = require('./isolate-executor');
const { ExecutorError, fault: executorFault } = require('./errors');
const { fault, describe, reading, snapshot, optionalBoolean, checkOutbound, objectArgument, runBounds, checkExecutor } = require('./validate/fields');
const { BUDGETS, budgets, reservedNames, IDENTIFIER } = require('./validate');
const { optionalTenant } = require('./validate/tenants');
const { moveListedPlaces, needTypescript } = require('./model/type-errors');

/**
 * @typedef {import('../tanstack').IsolateDriverOptions} IsolateDriverOptions
 * @typedef {import('../tanstack').IsolateDriver} IsolateDriver
 * @typedef {import('../tanstack').IsolateConfig} IsolateConfig
 * @typedef {import('../tanstack').IsolateContext} IsolateContext
 * @typedef {import('../tanstack').ExecutionResult} ExecutionResult
 * @typedef {import('../tanstack').NormalizedError} NormalizedError
 * @typedef {import('../tanstack').DriverExecutor} DriverExecutor
 * @typedef {import('../index').ExecuteRequest} ExecuteRequest
 * @typedef {import('../index').Outcome} Outcome
 * @typedef {import('../index').Outbound} Outbound
 */

/** The provider whose tools are the bindings; the `external_<name>` globals call it. */
const PROVIDER = '__tanstackBindings';
/** @tanstack/ai-code-mode's defaults, which @tanstack/ai-isolate-node shares. */
const DEFAULT_TIMEOUT = 30_000;
const DEFAULT_MEMORY_LIMIT = 128;
const OPTION_KEYS = ['executor', 'executorOptions', 'timeout', 'memoryLimit', 'outbound', 'tenant', 'typecheck', ...BUDGETS];
const CONFIG_KEYS = ['bindings', 'timeout', 'memoryLimit'];
const LOG_PREFIX = { log: '', info: 'INFO: ', warn: 'WARN: ', error: 'ERROR: ', debug: 'DEBUG: ' };
/** The first line's start: the model's code follows it on the same line. */
const HEAD = 'async () => { __tsdSetup(); try { const __tsdValue = await (async function () {';
/**
 * What the executor puts before the program's expression (docs/contract.md, "Entry shape"):
 * V8's stack columns on the first line count it; a failure's `column` does not.
 */
const ENTRY = 'export default (';

/**
 * The rest of the program after the model's code. `__tsdSetup` and `__tsdDescribe` are function
 * declarations, hoisted, so the first line can call them while the lines numbered as the model
 * wrote them come before them. The setup gives the sandbox what @tanstack/ai-isolate-node's
 * context has: `global`, `console.log/error/warn/info` rendering each argument as `JSON.stringify`
 * (objects) or `String` (the rest), joined by spaces, and one async global per binding that sends
 * `JSON.stringify(input ?? {})` and reads `{ success, value | error }` back. The describer reads
 * a thrown value as isolated-vm copies one out of its isolate (ExternalCopy::CopyThrownValue):
 * an object whose constructor is Error, RangeError, ReferenceError, SyntaxError or TypeError, or
 * that has a `message` or `stack`, is an error (its `name` kept only for other constructors); a
 * string and the other primitives are themselves; anything else is thrown on, for the
 * executor's own `Uncaught <value>`. The setup reaches the sandbox's globals through untyped
 * parameters (`__tsdInstall`'s), so that a program type-checked before it runs (`typecheck`)
 * finds no error in the wrapper: only in the code it was given.
 * @param {string[]} names
 */
function tail(names) {
  return `
    })();
    return { __tsd: 'ok', json: JSON.stringify(__tsdValue) };
  } catch (__tsdError) {
    return __tsdDescribe(__tsdError);
  }
  function __tsdSetup() {
    __tsdInstall(globalThis, console);
  }
  function __tsdInstall(g, c) {
    const provider = g.${PROVIDER};
    g.global = g;
    const format = (args) => args.map((a) => (typeof a === 'object' ? JSON.stringify(a) : String(a))).join(' ');
    for (const level of ['log', 'error', 'warn', 'info']) {
      const write = c[level].bind(c);
      c[level] = (...args) => write('%s', format(args));
    }
    for (const name of ${JSON.stringify(names)}) {
      const binding = async function (input) {
        const resultJson = await provider[name](JSON.stringify(input ?? {}));
        const result = JSON.parse(resultJson);
        if (!result.success) {
          throw new Error(result.error);
        }
        return result.value;
      };
      Object.defineProperty(binding, 'name', { value: name });
      g[name] = binding;
    }
  }
  function __tsdDescribe(e) {
    if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
      let ctor = 'Object';
      try {
        for (let p = e; p !== null; p = Object.getPrototypeOf(p)) {
          const d = Object.getOwnPropertyDescriptor(p, 'constructor');
          if (d !== undefined && typeof d.value === 'function') {
            ctor = String(d.value.name);
            break;
          }
        }
      } catch {}
      const read = (key) => {
        try {
          const v = e[key];
          return v === undefined ? undefined : \`\${v}\`;
        } catch {
          return undefined;
        }
      };
      const standard = ctor === 'Error' || ctor === 'RangeError' || ctor === 'ReferenceError' || ctor === 'SyntaxError' || ctor === 'TypeError';
      const message = read('message');
      const stack = read('stack');
      if (standard || message !== undefined || stack !== undefined) {
        return { __tsd: 'error', name: standard ? ctor : read('name'), message: message ?? '', stack };
      }
      throw e;
    }
    if (typeof e === 'string') return { __tsd: 'string', message: e };
    if (typeof e === 'symbol') throw e;
    return { __tsd: 'primitive', message: String(e) };
  }
}`;
}

/**
 * V8's header of an error's stack (ErrorUtils::ToString): what isolated-vm's copy of an error
 * without a `stack` of its own shows.
 * @param {string} name
 * @param {string} message
 */
function errorHeader(name, message) {
  if (name === '') return message;
  if (message === '') return name;
  return `${name}: ${message}`;
}

/** What ends a line for V8's line numbers. */
const LINE_BREAK = /\r\n|[\n\r\u2028\u2029]/;

/**
 * The wrapper's answer read strictly: the program runs inside the sandbox and may have replaced
 * `JSON`, or closed the wrapper's function and returned an object of its own. Anything but the
 * shapes the wrapper writes, with the types it writes, is a failure, never a rejection.
 * @param {unknown} result
 * @param {number} codeLines
 * @returns {{ success: true, value: any } | { success: false, error: { name: string, message: string, stack?: string } }}
 */
function readResult(result, codeLines) {
  const r = /** @type {Record<string, unknown>} */ (result);
  const forged = { success: /** @type {const} */ (false), error: { name: 'Error', message: 'The program returned from outside its body (it closed the function the driver runs it in): return from the body instead' } };
  if (r === null || typeof r !== 'object' || typeof r.__tsd !== 'string') return forged;
  const text = (/** @type {unknown} */ v) => (typeof v === 'string' ? v : undefined);
  switch (r.__tsd) {
    case 'ok':
      if (r.json === undefined) return { success: true, value: undefined };
      if (typeof r.json !== 'string') return forged;
      return { success: true, value: JSON.parse(r.json) };
    case 'string':
      return { success: false, error: { name: 'Error', message: text(r.message) ?? '' } };
    case 'primitive':
      return { success: false, error: { name: 'UnknownError', message: text(r.message) ?? '' } };
    case 'error': {
      const name = text(r.name) ?? 'Error';
      const message = text(r.message) ?? '';
      const stack = text(r.stack);
      return { success: false, error: { name, message, stack: stack === undefined ? errorHeader(name, message) : modelStack(stack, codeLines) } };
    }
    default:
      return forged;
  }
}

/**
 * A stack from the sandbox with the wrapper's frames left out and the first line's columns
 * counted from the model's code, so every place is one in the code the driver was given.
 * @param {string} stack
 * @param {number} codeLines
 */
function modelStack(stack, codeLines) {
  const out = [];
  for (const line of stack.split(LINE_BREAK)) {
    const m = /program\.js:(\d+):(\d+)/.exec(line);
    if (!m) {
      out.push(line);
      continue;
    }
    const n = Number(m[1]);
    const col = Number(m[2]);
    const shift = ENTRY.length + HEAD.length;
    if (n > codeLines || (n === 1 && col <= shift)) continue;
    out.push(n === 1 ? line.replace(m[0], `program.js:1:${col - shift}`) : line);
  }
  return out.join('\n');
}

/**
 * A failure the executor reported (its text for the model, its code kept in `code`), with the
 * place counted in the code the driver was given: the first line's columns without the
 * wrapper's head, and a place past the code's last line (a bracket the code left open, found
 * in the wrapper's closing lines) said as the end of the code.
 * @param {import('../index').ProgramError} error
 * @param {number} codeLines
 */
function programFailure(error, codeLines) {
  let message = error.message;
  if (error.line !== undefined && error.module === undefined) {
    const line = error.line;
    message = message.replace(/\(line (\d+), column (\d+)\)(\.?)$/, (whole, _l, col, dot) => {
      if (line > codeLines) return `(at the end of the code)${dot}`;
      if (line === 1 && Number(col) > HEAD.length) return `(line 1, column ${Number(col) - HEAD.length})${dot}`;
      return whole;
    });
  }
  if (error.code === 'TYPE_ERROR') {
    message = moveListedPlaces(message, (line, column) => {
      if (line > codeLines) return 'at the end of the code';
      return { line, column: line === 1 && column > HEAD.length ? column - HEAD.length : column };
    });
  }
  /** @type {NormalizedError} */
  const out = { name: 'Error', message, code: error.code };
  if (error.code === 'SYNTAX_ERROR') {
    out.name = 'SyntaxError';
    out.message = message.replace(/^SyntaxError: /, '');
  } else if (error.code === 'TYPESCRIPT_UNSUPPORTED' || error.code === 'TYPE_ERROR') {
    out.name = 'TypeScriptError';
  }
  return out;
}

/**
 * An error thrown on the host, as @tanstack/ai-isolate-node's normalizeError shapes one.
 * @param {unknown} e
 * @returns {NormalizedError}
 */
function hostFailure(e) {
  if (e instanceof Error) {
    const code = /** @type {{ code?: unknown }} */ (e).code;
    return {
      name: e.name,
      message: e.message,
      ...(e.stack !== undefined ? { stack: e.stack } : {}),
      ...(code !== undefined ? { code: String(code) } : {}),
    };
  }
  return { name: 'UnknownError', message: String(e) };
}

/**
 * Checks createContext's config: the bindings (each an identifier that is no global of the
 * sandbox, with an `execute` function) and the bounds.
 * @param {unknown} config
 * @returns {{ bindings: Map<string, (args: unknown) => Promise<unknown>>, given: Record<string, unknown>, timeout: number | undefined, memoryLimit: number | undefined }}
 */
function checkConfig(config) {
  const kind = 'INVALID_REQUEST';
  const input = snapshot(kind, 'config', objectArgument(kind, 'config', config, 'an object { bindings, timeout?, memoryLimit? }', false), CONFIG_KEYS, 'createContext config');
  const raw = objectArgument(kind, 'bindings', input.bindings, 'an object of tool bindings keyed by their names ({ external_x: { execute } })', false);
  /** @type {Map<string, (args: unknown) => Promise<unknown>>} */
  const bindings = new Map();
  /** @type {Record<string, unknown>} */
  const given = {};
  for (const [name, binding] of reading(kind, 'bindings', () => Object.entries(raw))) {
    const problem = !IDENTIFIER.test(name)
      ? 'is not a JavaScript identifier, so a program could not call it'
      : reservedNames().has(name)
        ? 'is a global the sandbox already has'
        : name === '__proto__' || name === PROVIDER
          ? 'is reserved'
          : null;
    if (problem) {
      throw fault(kind, { field: `bindings.${name}`, problem: `${JSON.stringify(name)} ${problem}`, allowed: 'a JavaScript identifier that is not a global the sandbox already has (console, fetch, JSON, ...), e.g. external_getWeather' });
    }
    const execute = reading(kind, `bindings.${name}`, () => (binding !== null && typeof binding === 'object' ? /** @type {{ execute?: unknown }} */ (binding).execute : undefined));
    if (typeof execute !== 'function') {
      throw fault(kind, { field: `bindings.${name}.execute`, problem: `got ${describe(execute)}`, allowed: 'a function (args) => Promise<unknown>' });
    }
    const fn = /** @type {Function} */ (execute);
    bindings.set(name, (args) => fn.call(binding, args));
    given[name] = binding;
  }
  return { bindings, given, ...runBounds(kind, input) };
}

/**
 * `@tanstack/ai-code-mode`'s own renderer of the bindings' declarations, loaded when a driver with
 * `typecheck` makes its first context (code mode is an ES module; the name through a variable,
 * so the host library's type check does not read code mode's types).
 * @type {Promise<{ generateTypeStubs(bindings: Record<string, unknown>): string }> | undefined}
 */
let codeMode;

/** The global the driver's prelude adds besides the bindings (@tanstack/ai-isolate-node's `global`). */
const GLOBAL_DECLARATION = 'declare var global: typeof globalThis;';

/**
 * The bindings' declarations as code mode shows them to the model: its system prompt's "Type
 * Definitions" (`declare function external_getWeather(input: ...): Promise<...>`, with their
 * input and output interfaces) and `discover_tools`' stubs are `generateTypeStubs` of them; and
 * the prelude's `global`, which a program may use too.
 * @param {Record<string, unknown>} given
 * @returns {Promise<string>}
 */
async function bindingDeclarations(given) {
  const specifier = '@tanstack/ai-code-mode';
  codeMode ??= import(specifier);
  let render;
  try {
    render = (await codeMode).generateTypeStubs;
  } catch (e) {
    codeMode = undefined;
    throw executorFault('PEER_MISSING', { feature: "the TanStack driver's typecheck", package: '@tanstack/ai-code-mode', version: '0.3', problem: `it could not be loaded (${e instanceof Error ? e.message.split('\n')[0] : String(e)})` });
  }
  if (typeof render !== 'function') {
    throw executorFault('PEER_MISSING', { feature: "the TanStack driver's typecheck", package: '@tanstack/ai-code-mode', version: '0.3', problem: 'the installed one has no generateTypeStubs()' });
  }
  try {
    return `${render(given)}\n\n${GLOBAL_DECLARATION}\n`;
  } catch (e) {
    throw fault('INVALID_REQUEST', { field: 'bindings', problem: `their declarations could not be made (${e instanceof Error ? e.message : String(e)})`, allowed: "code mode's tool bindings, each with its inputSchema (and outputSchema) as JSON Schema" });
  }
}

/**
 * One context: its bindings and bounds; each execute is a fresh isolate.
 * @implements {IsolateContext}
 */
class Context {
  /** @type {() => DriverExecutor} */
  #executor;
  /** @type {ReturnType<typeof checkConfig>} */
  #config;
  /** @type {Omit<ExecuteRequest, 'code'>} */
  #base;
  /** @type {Set<AbortController>} */
  #running = new Set();
  #disposed = false;

  /**
   * @param {() => DriverExecutor} executor
   * @param {ReturnType<typeof checkConfig>} config
   * @param {Omit<ExecuteRequest, 'code'>} base
   */
  constructor(executor, config, base) {
    this.#executor = executor;
    this.#config = config;
    this.#base = base;
    this.execute = this.execute.bind(this);
    this.dispose = this.dispose.bind(this);
  }

  /**
   * @template [T=unknown]
   * @param {string} code
   * @returns {Promise<import('../tanstack').ExecutionResult<T>>}
   */
  async execute(code) {
    if (this.#disposed) return { success: false, error: { name: 'DisposedError', message: 'Context has been disposed' }, logs: [] };
    if (typeof code !== 'string') {
      return { success: false, error: hostFailure(fault('INVALID_REQUEST', { field: 'code', problem: `got ${describe(code)}`, allowed: "a string: the program's body" })), logs: [] };
    }
    const names = [...this.#config.bindings.keys()];
    const bindings = this.#config.bindings;
    const abort = new AbortController();
    this.#running.add(abort);
    /** @type {Outcome} */
    let outcome;
    try {
      outcome = await this.#executor().execute({
        ...this.#base,
        code: HEAD + code + tail(names),
        providers: [{ name: PROVIDER, tools: names }],
        dispatch: async ({ tool, args }) => {
          const execute = /** @type {(args: unknown) => Promise<unknown>} */ (bindings.get(tool));
          try {
            const value = await execute(JSON.parse(/** @type {string} */ (args[0])));
            return JSON.stringify({ success: true, value });
          } catch (error) {
            return JSON.stringify({ success: false, error: error instanceof Error ? error.message : String(error) });
          }
        },
        signal: abort.signal,
      });
    } catch (e) {
      if (e instanceof ExecutorError && e.code === 'ABORTED' && this.#disposed) {
        return { success: false, error: { name: 'DisposedError', message: 'Context has been disposed', code: 'ABORTED' }, logs: [] };
      }
      return { success: false, error: hostFailure(e), logs: [] };
    } finally {
      this.#running.delete(abort);
    }
    const logs = outcome.logs.map((l) => LOG_PREFIX[l.level] + l.message);
    const codeLines = code.split(LINE_BREAK).length;
    if (outcome.error) return { success: false, error: programFailure(outcome.error, codeLines), logs };
    try {
      return { ...readResult(outcome.result, codeLines), logs };
    } catch (e) {
      return { success: false, error: { name: 'Error', message: `The program's result could not be read (${e instanceof Error ? e.message : String(e)})` }, logs };
    }
  }

  /** Stops the runs in flight (they answer `DisposedError`); later executes answer it at once. */
  async dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const abort of this.#running) abort.abort(new Error('Context has been disposed'));
  }
}

/**
 * @param {IsolateDriverOptions} [options]
 * @returns {IsolateDriver}
 */
function createIsolateDriver(options) {
  const kind = 'INVALID_OPTION';
  const input = snapshot(kind, 'options', objectArgument(kind, 'options', options, 'an object { executor?, executorOptions?, timeout?, memoryLimit?, outbound?, tenant?, typecheck?, cpuLimit?, toolCallLimit?, fetchLimit? }'), OPTION_KEYS, 'createIsolateDriver options');
  const provided = input.executor === undefined ? undefined : checkExecutor(kind, 'executor', input.executor);
  if (provided !== undefined && input.executorOptions !== undefined) {
    throw fault(kind, { field: 'executorOptions', problem: 'given with an executor', allowed: 'executorOptions only when the driver makes its own executor (no executor given)' });
  }
  const executorOptions = input.executorOptions === undefined ? undefined : /** @type {import('../index').IsolateExecutorOptions} */ (objectArgument(kind, 'executorOptions', input.executorOptions, "IsolateExecutor's options", false));
  const bounds = runBounds(kind, input);
  const timeout = bounds.timeout ?? DEFAULT_TIMEOUT;
  const memoryLimit = bounds.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
  // Blocked unless asked for: code mode's system prompt tells the model the sandbox has no network.
  const outbound = 'outbound' in input ? checkOutbound(kind, 'outbound', input.outbound) : null;
  const spend = budgets(kind, input);
  // Whom every run is for: each run's worker runs only this tenant's code.
  const tenant = optionalTenant(kind, input.tenant);
  const typecheck = optionalBoolean(kind, 'typecheck', input.typecheck) === true;
  if (typecheck) needTypescript("the TanStack driver's typecheck");

  /** @type {DriverExecutor | undefined} */
  let own;
  let closed = false;
  const executor = () => {
    if (provided !== undefined) return /** @type {DriverExecutor} */ (provided);
    if (closed) throw executorFault('CLOSED');
    own ??= new IsolateExecutor({ outbound: null, ...executorOptions });
    return own;
  };
  // The driver's own executor is made here, so a bad executorOptions is refused at once.
  if (provided === undefined) executor();

  return {
    async createContext(config) {
      const checked = checkConfig(config);
      executor();
      // Each program is checked, before it runs, against the declarations code mode shows the model.
      const declarations = typecheck ? await bindingDeclarations(checked.given) : undefined;
      /** @type {Omit<ExecuteRequest, 'code'>} */
      const base = { timeout: checked.timeout ?? timeout, memoryLimit: checked.memoryLimit ?? memoryLimit, outbound, ...spend, ...(tenant === undefined ? {} : { tenant }), ...(declarations === undefined ? {} : { declarations, typecheck: true }) };
      return new Context(executor, checked, base);
    },
    async close() {
      closed = true;
      if (own !== undefined) await /** @type {IsolateExecutor} */ (own).close();
    },
  };
}

module.exports = { createIsolateDriver };
