/**
 * @supolka/codemode-executor/tanstack — a driver for `@tanstack/ai-code-mode`: its
 * `IsolateDriver` interface over this executor, so `createCodeMode({ driver, tools })` runs the
 * model's programs in fresh V8 isolates inside supervised worker processes. The mapping and the
 * places it differs from `@tanstack/ai-isolate-node` on purpose: docs/tanstack.md.
 *
 * The types below are `@tanstack/ai-code-mode`'s (0.3.x, `src/types.ts`), declared here so this
 * file needs nothing else installed; they are structurally the same, so the driver is accepted
 * wherever an `IsolateDriver` is.
 */

import type { Budgets, ExecuteRequest, IsolateExecutorOptions, Outbound, Outcome } from './index'

/** What a driver runs programs on: an `IsolateExecutor`, or the executor `connect()` resolves to. */
export interface DriverExecutor {
  execute(request: ExecuteRequest): Promise<Outcome>
}

/**
 * Options of {@link createIsolateDriver}. Unknown keys are refused with `INVALID_OPTION`.
 * `cpuLimit`, `toolCallLimit` and `fetchLimit` ({@link Budgets}) go on every run.
 */
export interface IsolateDriverOptions extends Budgets {
  /**
   * The executor to run on. Default: one the driver makes on creation,
   * `new IsolateExecutor({ outbound: null, ...executorOptions })`, which `close()` closes. An
   * executor given here is the caller's to close.
   */
  executor?: DriverExecutor
  /** Options of the executor the driver makes (not with `executor`). */
  executorOptions?: IsolateExecutorOptions
  /**
   * Milliseconds a run may take when `createContext`'s config names none (code mode always names
   * one, its own `timeout`, default 30,000). Measured on the host, tool calls included; past it
   * the run ends with an error whose `code` is `TIMEOUT`. Default 30,000.
   */
  timeout?: number
  /**
   * MiB of memory a run may use when the config names none (code mode always names one, its own
   * `memoryLimit`, default 128): heap and ArrayBuffers together. Past it the run ends with an
   * error whose `code` is `MEMORY_LIMIT`. Default 128.
   */
  memoryLimit?: number
  /**
   * What the sandbox's `fetch` may reach, on every run ({@link Outbound}). Default `null`:
   * blocked, as code mode's system prompt tells the model ("no network access"); `fetch` rejects
   * with the closed-network text.
   */
  outbound?: Outbound
  /**
   * Whom every run is for (`ExecuteRequest.tenant`, docs/tenants.md): each run's worker process
   * runs only this tenant's code, and the tenant's bounds hold it (past its `cpuPerMinute` a run
   * answers `{ success: false, error: { code: 'TENANT_CPU_LIMIT', ... } }`). 1 to 64 characters
   * of `A-Z a-z 0-9 . _ -`, else `INVALID_OPTION`. Default: the executor's unnamed domain.
   */
  tenant?: string
  /**
   * Type-check each program before it runs (docs/typecheck.md) against the declarations code
   * mode shows the model: `generateTypeStubs` of the context's bindings (its system prompt's
   * "Type Definitions", `declare function external_getWeather(...)`), and the prelude's
   * `global`. A program that does not check is not run and no binding is called: it answers
   * `{ success: false, error: { name: 'TypeScriptError', message, code: 'TYPE_ERROR' } }`, the
   * message listing the diagnostics with their lines in the code the driver was given. Needs
   * the `typescript` package and, for the stubs, `@tanstack/ai-code-mode` (else
   * `PEER_MISSING`); the first check of a process takes about a second. Default false.
   */
  typecheck?: boolean
}

/** A tool as code mode hands it to the driver (`@tanstack/ai-code-mode`'s `ToolBinding`). */
export interface ToolBinding {
  name: string
  description: string
  inputSchema: Record<string, unknown>
  outputSchema?: Record<string, unknown> | undefined
  /** Called with the parsed JSON of the program's argument; its value goes back as JSON. */
  execute: (args: unknown, context?: any) => Promise<unknown>
}

/** `createContext`'s config (`@tanstack/ai-code-mode`'s `IsolateConfig`). */
export interface IsolateConfig {
  /**
   * Each key becomes an async global of that name (`external_getWeather(input)`): a JavaScript
   * identifier that is no global the sandbox already has, else `createContext` rejects with
   * `ExecutorError` `INVALID_REQUEST`.
   */
  bindings: Record<string, ToolBinding>
  /** Milliseconds each run may take (1 to 2,147,483,647); default the driver's `timeout`. */
  timeout?: number
  /** MiB each run may use (8 to 2,048); default the driver's `memoryLimit`. */
  memoryLimit?: number
}

/**
 * A failure (`@tanstack/ai-code-mode`'s `NormalizedError`). A thrown value is described as
 * isolated-vm copies it out of its isolate: an Error keeps its `name` (for Error, RangeError,
 * ReferenceError, SyntaxError and TypeError, the constructor's), `message` and `stack`; a thrown
 * string is `{ name: 'Error', message }`; a number, boolean, bigint, null or undefined is
 * `{ name: 'UnknownError', message: String(value) }`. A failure of the executor's own (a bound,
 * a syntax error, an executor fault) carries its `code` from docs/failures.md.
 */
export interface NormalizedError {
  name: string
  message: string
  /** The sandbox's stack, its places counted in the code the driver was given. */
  stack?: string
  /** The executor's failure code: `TIMEOUT`, `MEMORY_LIMIT`, `SYNTAX_ERROR`, `CLOSED`, ... */
  code?: string
}

/** What one execute answers (`@tanstack/ai-code-mode`'s `ExecutionResult`). */
export interface ExecutionResult<T = unknown> {
  success: boolean
  /** The returned value as `JSON.parse(JSON.stringify(value))` gives it; present when `success`. */
  value?: T
  error?: NormalizedError
  /**
   * The console output: `console.log` as it is, `console.info` / `warn` / `error` prefixed
   * `INFO: ` / `WARN: ` / `ERROR: ` (code mode reads the level from the prefix), `console.debug`
   * prefixed `DEBUG: `; arguments rendered as `JSON.stringify` (objects) or `String` (the rest),
   * joined by spaces.
   */
  logs?: Array<string>
}

/** A context (`@tanstack/ai-code-mode`'s `IsolateContext`). */
export interface IsolateContext {
  /**
   * Runs `code`, a function body (top-level `return` and `await` allowed, TypeScript types
   * stripped), in a fresh isolate: nothing carries over from an earlier execute. Never rejects:
   * every failure is `{ success: false, error }`.
   */
  execute: <T = unknown>(code: string) => Promise<ExecutionResult<T>>
  /**
   * Stops the runs in flight, which answer `{ name: 'DisposedError' }`; an execute after it
   * answers the same at once.
   */
  dispose: () => Promise<void>
}

/** The driver (`@tanstack/ai-code-mode`'s `IsolateDriver`, plus `close`). */
export interface IsolateDriver {
  /**
   * A context whose runs have `config.bindings` as globals and its bounds. Rejects with
   * `ExecutorError` `INVALID_REQUEST` on a bad config, `CLOSED` after `close()`.
   */
  createContext: (config: IsolateConfig) => Promise<IsolateContext>
  /** Closes the executor the driver made (not one given as `executor`). */
  close(): Promise<void>
}

/**
 * A driver for `createCodeMode({ driver, tools })` of `@tanstack/ai-code-mode` that runs each
 * program in a fresh isolate of this executor. Throws `ExecutorError` `INVALID_OPTION` on a bad
 * option.
 *
 * ```js
 * const { createIsolateDriver } = require('@supolka/codemode-executor/tanstack')
 * const driver = createIsolateDriver()
 * const { tool, systemPrompt } = createCodeMode({ driver, tools: [weatherTool] })
 * ```
 */
export declare function createIsolateDriver(options?: IsolateDriverOptions): IsolateDriver
