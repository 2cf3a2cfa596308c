/**
 * @supolka/codemode-executor — run model-written JavaScript in fresh V8 isolates inside
 * supervised worker processes.
 *
 * One file: the package's whole public surface, the `types` its package.json names; `tsc`
 * checks lib/ against it and __test__/shapes.test.mjs holds it to the addon's shapes.
 */

/** A request as the outbound policy and retained handles see it. Bodies are ArrayBuffers. */
export interface WireRequest {
  method: string
  url: string
  headers: [string, string][]
  body: ArrayBuffer | null
  /**
   * The sandbox request's redirect mode (routed fetches only; a retained handle's request has
   * none). `'follow'`: the policy may follow redirects itself, and must then check every hop's
   * URL as it checked the first (the open-redirect trap, docs/runtime.md "Outbound");
   * `'error'`: a redirect response (301, 302, 303, 307, 308 with a `location`) the policy
   * answers rejects the sandbox's fetch with `FETCH_REDIRECTED`; `'manual'`: the sandbox reads
   * the redirect response itself.
   */
  redirect?: 'follow' | 'error' | 'manual'
}

/** A response in the same wire shape. */
export interface WireResponse {
  status: number
  statusText: string
  headers: [string, string][]
  body: ArrayBuffer | null
}

/** Routes the sandbox's outbound requests through the host process. */
export type OutboundPolicy = (request: WireRequest) => WireResponse | Promise<WireResponse>

/**
 * What the sandbox's `fetch` may reach (docs/runtime.md, "Outbound"):
 * - `'public'` (the default, also when omitted): the executor performs the request from its own
 *   machine, to public internet addresses only. Each hop's name (the first URL's and every
 *   redirect's) is resolved once and the connection goes to an address checked to be public
 *   unicast; loopback, private, carrier-grade NAT, link-local (cloud metadata), unique-local,
 *   multicast, reserved ranges and `localhost` names reject with `FETCH_NOT_PUBLIC`, with
 *   nothing sent. Proxy environment variables are not used in this mode.
 * - `'native'`: the executor performs the request to any address its machine can reach, its
 *   own network and services included. Ask for it only when the programs are trusted to.
 * - `null`: blocked, `fetch` rejects with the closed-network text (`NETWORK_CLOSED`).
 * - a function: routed, it answers each `WireRequest` in this process.
 */
export type Outbound = OutboundPolicy | 'public' | 'native' | null

/**
 * What one run may spend besides wall time (docs/bounds.md, "Budgets"). An executor's budgets
 * are the default of each request that names none; a request's win. None has a default: a
 * budget left out (or `undefined`) is no budget, and the wall `timeout` still holds. A retained
 * execution's invocations each start all three afresh.
 */
export interface Budgets {
  /**
   * Milliseconds of CPU the program's thread may spend, 1–2,147,483,647: the isolate running the
   * program, its microtasks and its timers' callbacks. Awaiting a tool call, a fetch or a timer
   * costs none. The worker stops a run past it at once (within about a millisecond) with the
   * `CPU_LIMIT` error; the host stops one whose worker does not, once the worker's process has
   * spent twice the budget and 100 ms more.
   */
  cpuLimit?: number
  /**
   * Tool calls the run may make, 0–1,000,000. The call past it rejects inside the sandbox with
   * the `TOOL_CALL_LIMIT` text (the program can catch it) without reaching dispatch.
   */
  toolCallLimit?: number
  /**
   * Fetches the run may make (and each invocation of its handles), 0–1,000,000, whatever its
   * outbound. The fetch past it rejects inside the sandbox with the `FETCH_LIMIT` text (the
   * program can catch it), with nothing sent.
   */
  fetchLimit?: number
}

/** Options of an {@link IsolateExecutor}. Unknown keys are refused with `INVALID_OPTION`. */
export interface IsolateExecutorOptions extends Budgets {
  /** Worker processes in the pool, 1–256. Default: the machine's available parallelism. */
  workers?: number
  /**
   * Executions that may wait when every worker is busy, 0–1,000,000. One more rejects at once
   * with `ExecutorError` `QUEUE_FULL` (retryable). Default 1024.
   */
  queueBound?: number
  /**
   * Milliseconds a run may take, measured on the host from the moment a worker takes it (time
   * parked in tool calls included). A run past it ends with the `TIMEOUT` error. Default 30,000.
   */
  timeout?: number
  /**
   * Memory budget of each run in MiB, 8–2,048: the isolate's heap limit, with ArrayBuffer
   * backing stores charged to the same budget. A run past it ends with `MEMORY_LIMIT`; the
   * worker lives on. Default 128.
   */
  memoryLimit?: number
  /**
   * What the sandbox's `fetch` may reach ({@link Outbound}; docs/runtime.md, "Outbound").
   * Omitted: `'public'`, the executor performs the request from its own machine, to public
   * internet addresses only. `'native'`: to any address the machine reaches (its private
   * network too), only when asked for. `null`: blocked, `fetch` rejects with the closed-network
   * text. A function: routed, it answers each `WireRequest` in this process. Note that this
   * reads the other way round from `@cloudflare/codemode`, where omitted means blocked: pass
   * `null` to keep that behaviour.
   */
  outbound?: Outbound
  /**
   * Milliseconds a retained execution lives without an invocation (counted from the grant or
   * the last invocation's answer); then it ends with reason `idle`. Default 300,000.
   */
  handlesIdleTimeout?: number
  /**
   * Called once for every retained execution that ends, with why: `closed` (`closeHandles`),
   * `idle` (the idle bound), `timeout` / `memory` (an invocation hit a run bound), `cpu` (its
   * timers kept the worker busy between invocations past the CPU bound), `worker-lost`,
   * `pool-closed` (`close()`). docs/handles.md.
   */
  onHandlesClosed?: (event: HandlesClosed) => void
  /**
   * Path of the `codemode-worker` binary. Default: the `CODEMODE_WORKER_PATH` environment
   * variable, else the binary next to the addon (as the platform package ships it).
   */
  workerPath?: string
  /**
   * The key approval tokens are signed with (docs/approvals.md): at least 32 bytes (a Buffer,
   * Uint8Array or string), the same on every executor or daemon that is to resume them; keep it
   * secret. Default: a random key of this process, so its tokens die with it.
   */
  approvalKey?: Buffer | Uint8Array | string
  /**
   * Record where each execute's time goes: every outcome's `stats.hops` then lists the steps of
   * its run path ({@link Hop}) with their times. A diagnostic, for `npm run bench:trace` and
   * for finding where a slow execute waited; it costs a few clock reads per step. Default false.
   */
  hops?: boolean
  /**
   * The tenants this executor knows by name, with the bounds of each (docs/tenants.md). A run
   * names its tenant (`ExecuteRequest.tenant`); a tenant not listed here gets `defaultTenant`'s
   * bounds. Names: 1 to 64 of `A-Z a-z 0-9 . _ -`.
   */
  tenants?: Record<string, TenantLimits>
  /** The bounds of a tenant not listed in `tenants`, and of runs that name none. Default: none. */
  defaultTenant?: TenantLimits
}

/**
 * One tenant's bounds (docs/tenants.md); each omitted: no bound of that kind beyond the
 * executor's own.
 */
export interface TenantLimits {
  /** Runs of the tenant running at once (1-256). Omitted: as many as there are workers. */
  maxRunning?: number
  /**
   * Runs of the tenant waiting for a worker (0-1,000,000); past it `execute` rejects with
   * `QUEUE_FULL` naming this bound. Omitted: only the executor's `queueBound` holds.
   */
  maxQueued?: number
  /**
   * CPU milliseconds the tenant's programs may spend in any minute (1-15,360,000). A run
   * submitted past it rejects with `TENANT_CPU_LIMIT` (retryable; its text says in how many
   * milliseconds), and runs already waiting wait until the minute has room. Omitted: none.
   */
  cpuPerMinute?: number
}

/**
 * One step of an execute's run path (the executor's `hops` option; docs/operations.md): `entry`,
 * `validated`, `encoded`, `written`, `submitted`, `workerRead`, `isolateReady`, `parsed`,
 * `evaluated`, `settled`, `answered`, `answerRead`, `reported`, `delivered`, `decoded`, listed
 * in that order. Host and worker run in parallel, so a time may be earlier than the one listed
 * before it: the worker may read the frame (`workerRead`) before the host's write returns
 * (`written`, `submitted`), and a run that waited in the queue is `written` after `submitted`.
 * A step the run did not reach (a program that failed to parse has no `evaluated`) is left out.
 */
export interface Hop {
  hop: string
  /** Milliseconds since `entry`, on the machine's monotonic clock (the worker's steps too). */
  ms: number
}

/** One provider: a global object in the sandbox whose tools are async functions. */
export interface ProviderDeclaration {
  /** The global's name: a JavaScript identifier that is neither a global of the language or the runtime (`Math`, `TypeError`, `parseInt`, `console`, `fetch`, ...) nor a reserved word (`import`, `await`, `let`, ...). */
  name: string
  /**
   * The tools it offers. A closed list makes any other tool reject inside the sandbox with
   * `Tool "<tool>" not found` without reaching dispatch; `'*'` lets every name reach dispatch.
   */
  tools: string[] | '*'
  /**
   * The tools whose calls wait for a person's approval (docs/approvals.md): some of `tools`
   * (any names for `'*'`), or `true` for all. Such a call pauses the run (`approval.mode:
   * 'interrupt'`, the default) or is put to `approval.decide` (`'callback'`). Not with
   * `retainHandles`.
   */
  approve?: string[] | true
}

/** A tool call as `decide` receives it (callback mode): `args` are structured-clone copies. */
export interface ApprovalCall {
  provider: string
  tool: string
  args: unknown[]
}

/** A person's answer to a call that needs approval. A denial's `reason` reaches the program. */
export interface Decision {
  approved: boolean
  reason?: string
}

/**
 * Decides one call that needs approval (callback mode), while the run waits: its time bound
 * does not run meanwhile. A throw, a rejection or an answer that is not a {@link Decision}
 * denies the call, with what went wrong as the reason.
 */
export type Decide = (call: ApprovalCall) => Decision | Promise<Decision>

/**
 * How a request's calls that need approval wait (docs/approvals.md).
 * - `interrupt`: the run stops at the first such call (with the calls of the same turn);
 *   its outcome carries `paused` (a token and the pending calls) and no result; `resume` runs
 *   it on with the decisions. `expiresIn`: milliseconds the token stays good, 1 to 30 days
 *   (default a day).
 * - `callback`: `decide` is awaited for each such call while the run waits, for at most
 *   `timeout` milliseconds (1 ms to 1 hour, default 300,000; past it the call is denied). The
 *   run's time bound rests only while it waits on decisions and nothing else, for at most
 *   `timeout` over the run.
 */
export type Approval =
  | { mode: 'interrupt'; expiresIn?: number }
  | { mode: 'callback'; decide: Decide; timeout?: number }

/** A call a paused run waits on; `resume`'s decisions name it by `id`. */
export interface PendingCall {
  id: string
  provider: string
  tool: string
  args: unknown[]
}

/** A run paused for approval. */
export interface Paused {
  /**
   * Signed with the executor's `approvalKey` and good for `expiresIn`: it holds the program,
   * its modules and options, and every answer the run has had (docs/approvals.md, "The
   * token"), so any executor or daemon with the same key resumes it, after a restart too.
   * Keep it as you would the data it holds.
   */
  token: string
  /** The calls waiting, in the order the program made them. */
  pending: PendingCall[]
}

/** One tool call of a run, as `outcome.calls` lists it. */
export interface CallRecord {
  provider: string
  tool: string
  /**
   * `ok`: answered; `error`: its dispatch failed (or the run ended first); `denied`: a decision
   * (or its bound) said no, it was never dispatched; `pending`: the run paused on it;
   * `replayed`: a resume answered it from the token, without dispatch.
   */
  status: 'ok' | 'error' | 'denied' | 'pending' | 'replayed'
  /** Milliseconds from the call to its answer (0 when replayed, denied at once, or pending). */
  ms: number
}

/** `resume`'s request. Unknown keys are refused with `INVALID_REQUEST`. */
export interface ResumeRequest {
  /** `outcome.paused.token`. */
  token: string
  /** One decision per pending call, keyed by its `id`. */
  decisions: Record<string, Decision>
  /** Answers the approved calls and every call after them (the token's are not asked again). */
  dispatch: Dispatch
  /** The routed policy, when the run's outbound was one (a function is not in the token). */
  outbound?: Outbound
  signal?: AbortSignal
  onLog?: (entry: LiveLogEntry) => void
  /**
   * Whom the resume acts for: the tenant the paused run was for. A token of another tenant's
   * run is refused as one of another key (`TOKEN_FOREIGN_KEY`). Over `connect()` to a daemon
   * with `--tenants`, the connection's token says it.
   */
  tenant?: string
}

/** A tool call as dispatch receives it. `args` are structured-clone copies of the sandbox's. */
export interface ToolCall {
  provider: string
  tool: string
  args: unknown[]
}

/**
 * Answers tool calls in the host process. Its return value (or what its promise resolves to)
 * is copied into the sandbox with structuredClone semantics; a throw or rejection rejects that
 * tool call inside the sandbox with the thrown error's message. At most 64 calls of one run are
 * dispatched at once (later ones wait their turn, in arrival order), and a call whose arguments
 * would take the run's unanswered calls past 32 MiB (serialized) is rejected inside the sandbox
 * with `TOOL_BYTES_IN_FLIGHT` without reaching dispatch (docs/bounds.md).
 */
export type Dispatch = (call: ToolCall) => unknown | Promise<unknown>

/**
 * One execution. Unknown keys are refused with `INVALID_REQUEST`. Its {@link Budgets} override
 * the executor's.
 */
export interface ExecuteRequest extends Budgets {
  /**
   * One expression that evaluates to a function (normally `async () => { ... }`), optionally
   * preceded by `import` declarations. The function is called with no arguments and awaited.
   */
  code: string
  /**
   * The module map: specifier -> ES module source. Imports resolve only through it; `node:`
   * specifiers too. Relative specifiers also resolve against the importing module's key.
   */
  modules?: Record<string, string>
  /** Provider globals for this run. */
  providers?: ProviderDeclaration[]
  /** Required when `providers` is not empty. */
  dispatch?: Dispatch
  /** Overrides the executor's `timeout` for this run (ms). */
  timeout?: number
  /** Overrides the executor's `memoryLimit` for this run (MiB). */
  memoryLimit?: number
  /**
   * Overrides the executor's `outbound` for this run ({@link Outbound}: `'public'`, `'native'`,
   * `null` or a function); `undefined` is the field left out (it inherits).
   */
  outbound?: Outbound
  /**
   * Keep the isolate when the program returns a request handler (a function, or an object with
   * a `fetch` method): the outcome then carries `executionId` and `handles` instead of a result,
   * for `invokeHandle`. Any other result returns as usual and retains nothing. docs/handles.md.
   */
  retainHandles?: boolean
  /**
   * How calls of tools marked `approve` wait for a person (docs/approvals.md). Default, when a
   * provider marks one: `{ mode: 'interrupt' }`. Given without any `approve`: `INVALID_REQUEST`.
   */
  approval?: Approval
  /**
   * Cancels the run: aborted while it waits in the queue, it leaves the queue and never starts;
   * aborted while it runs, its isolate is terminated as at its time bound and the worker is
   * reused. Either way (and at once for a signal already aborted) `execute` rejects with
   * `ExecutorError` `ABORTED` (not retryable), the signal's `reason` as its `cause`. Over
   * `connect()`, the abort crosses the connection.
   */
  signal?: AbortSignal
  /**
   * Receives each console entry as the program writes it, in order, within the bounds of the
   * outcome's `logs` (which still carry every entry). A run without it sends nothing extra.
   * A throw from it is reported as uncaught; it does not affect the run.
   */
  onLog?: (entry: LiveLogEntry) => void
  /**
   * Whom the run is for (docs/tenants.md): 1 to 64 of `A-Z a-z 0-9 . _ -`. Its worker runs no
   * other tenant's code, before or after; the tenant's bounds (`IsolateExecutorOptions.tenants`)
   * hold it; what it retains or pauses belongs to the tenant. Omitted: the executor's one
   * unnamed domain (a tenant of its own). Over `connect()` to a daemon with `--tenants`, the
   * connection's token names the tenant, and naming another is `TENANT_MISMATCH`.
   */
  tenant?: string
  /**
   * TypeScript declarations of the providers (and any globals the host adds), e.g.
   * `declare const billing: { refund(input: { id: string }): Promise<{ ok: boolean }> }`: what
   * `typecheck` checks the program against. Required with `typecheck`.
   */
  declarations?: string
  /**
   * Check the program (JavaScript or TypeScript) against `declarations` and the sandbox's own
   * globals before it runs (docs/typecheck.md): on a type error nothing runs and no tool is
   * called, and the outcome's error is `TYPE_ERROR`, its text listing the first diagnostics (at
   * most 5) with their lines. Needs the `typescript` package in the host project
   * (`PEER_MISSING` otherwise). Default false.
   */
  typecheck?: boolean
}

/** `invokeHandle`'s options. */
export interface InvokeOptions {
  /**
   * Cancels the invocation: one waiting for its turn is dropped; the one running is stopped as at
   * its time bound (which ends the retained execution, reason `timeout`). The promise rejects
   * with `ExecutorError` `ABORTED`, the signal's `reason` as its `cause`.
   */
  signal?: AbortSignal
  /**
   * Whom the caller acts for: the tenant of the run that granted the handles. Another tenant's
   * execution rejects with `HANDLES_CLOSED`, as an id never granted. Omitted: the unnamed domain.
   */
  tenant?: string
}

/** `closeHandles`' options. */
export interface CloseHandlesOptions {
  /** Whom the caller acts for, as {@link InvokeOptions.tenant}. */
  tenant?: string
}

/** One sample of a metric: its series name (a histogram's `_bucket`, `_sum`, `_count`), labels, value. */
export interface MetricSample {
  name: string
  labels: Record<string, string>
  value: number
}

/** One metric of the pool (docs/operations.md lists them all) with its samples now. */
export interface Metric {
  name: string
  kind: 'counter' | 'gauge' | 'histogram'
  help: string
  samples: MetricSample[]
}

/** One console call inside the sandbox, rendered as text. */
export interface LogEntry {
  /** `console.trace` logs at `debug`; `dir`, `table`, `group` at `log`; `count`/`time*` at `info`; `assert` at `error`. */
  level: 'log' | 'info' | 'warn' | 'error' | 'debug'
  message: string
}

/** A line as `onLog` receives it while the run goes on: a {@link LogEntry}, and whom the run is for. */
export interface LiveLogEntry extends LogEntry {
  /** The run's tenant (`ExecuteRequest.tenant` / `ResumeRequest.tenant`), when it named one. */
  tenant?: string
}

/** A program failure, written for the model that wrote the program. */
export interface ProgramError {
  /** A code from docs/failures.md (kind "program"), e.g. `PROGRAM_ERROR`, `SYNTAX_ERROR`, `TIMEOUT`. */
  code: string
  /** The text; when the place is known it ends with it: `(line 3, column 7)`, or `(module "./a.js", line 3, column 7)`. */
  message: string
  /**
   * Where it happened in the model's own code, 1-based (a thrown Error: where it was created,
   * in the innermost frame of the program or a module; a syntax error: where the parser
   * stopped). Positions are those of the code as written, TypeScript included.
   */
  line?: number
  /** The 1-based column on `line`, in UTF-16 units (as editors and stack traces count). */
  column?: number
  /** The module it happened in (its key in `modules`), when not the program itself. */
  module?: string
}

/** What one run used (docs/bounds.md, "Accounting"). */
export interface RunStats {
  /** Host wall time from the moment a worker started the run (its `Started`) to its answer (the clock `timeout` uses). */
  wallMs: number
  /** CPU time of the worker thread that ran the program. */
  cpuMs: number
  /** Largest V8 heap size sampled during the run. */
  heapPeakBytes: number
  /** Largest total of live ArrayBuffer backing stores (charged to `memoryLimit` too). */
  buffersPeakBytes: number
  /** Tool calls the program made. */
  toolCalls: number
  /** The process id of the worker that ran the program (on the daemon's host, over `connect()`). */
  workerPid: number
  /**
   * CPU time the run's `cpuLimit` counted: the program's thread from the run's start to its end,
   * the clock the budget is enforced on (`cpuMs` also counts the run's setting up). 0 without a
   * budget.
   */
  cpuBudgetMs: number
  /** Fetches the program made (whatever its outbound). */
  fetches: number
  /** Where the execute's time went: present when the executor's `hops` option is set. */
  hops?: Hop[]
}

/** How a run ended. A program failure is reported here and never rejects `execute`. */
export interface Outcome {
  /** The awaited return value, as structuredClone would copy it; `undefined` when `error` is set. */
  result: unknown
  /** Present when the program failed: a thrown error, `TIMEOUT`, `MEMORY_LIMIT`, `RESULT_TOO_LARGE`, ... */
  error?: ProgramError
  /**
   * Console output in call order, including that of a failed run. At most 1,000 entries and
   * 1 MiB; past that a final `warn` entry says how many were dropped.
   */
  logs: LogEntry[]
  stats: RunStats
  /**
   * Present only when `retainHandles` was set and the program returned a request handler: the
   * id `invokeHandle` and `closeHandles` take (a random v4 UUID). The key is absent otherwise.
   */
  executionId?: string
  /** The handle names `invokeHandle` accepts (`['fetch']`); present with `executionId`. */
  handles?: string[]
  /**
   * Present when the run paused at calls that need approval (`approval.mode: 'interrupt'`);
   * `result` and `error` are absent then. Pass its token to `resume`.
   */
  paused?: Paused
  /**
   * The run's tool calls in the order the program made them (the audit trail), at most 1,000
   * (`stats.toolCalls` counts them all).
   */
  calls: CallRecord[]
}

/** Why a retained execution ended. */
export type HandlesClosedReason = 'closed' | 'idle' | 'timeout' | 'memory' | 'cpu' | 'worker-lost' | 'pool-closed'

/** What `onHandlesClosed` receives. */
export interface HandlesClosed {
  executionId: string
  reason: HandlesClosedReason
}

/** What the pool holds right now. */
export interface ExecutorStats {
  /** Live worker processes. */
  workers: number
  /** Workers with a prepared isolate and nothing to do. */
  idle: number
  /** Executions running (retained ones not counted). */
  running: number
  /** Executions waiting for a worker. */
  queued: number
  /** Retained executions; each holds a worker until it ends. */
  retained: number
  /**
   * The engine the workers run programs on (docs/architecture.md, "The engine"), once the
   * first worker has started: V8's version and whether its heap sandbox is on.
   */
  engine?: Engine
}

/** The engine a worker runs programs on. */
export interface Engine {
  /** V8's version as V8 says it, e.g. `'15.2.124.1-rusty'`. */
  v8: string
  /** Whether V8's heap sandbox is on (docs/threat-model.md). */
  sandbox: boolean
}

/** An entry of the failure grammar (docs/failures.md). */
export interface FailureEntry {
  code: string
  /**
   * `program`: in `Outcome.error`; `fault`: an `ExecutorError`; `sandbox`: a rejection inside
   * the sandbox; `log`: a notice the executor appends to the logs.
   */
  kind: 'program' | 'fault' | 'sandbox' | 'log'
  retryable: boolean
  when: string
  /** The text, with `{name}` placeholders. */
  text: string
}

/**
 * The executor could not run the request: a bad option or request, a closed executor, a full
 * queue, a lost worker. `code` is one of the `fault` codes in docs/failures.md.
 */
export declare class ExecutorError extends Error {
  readonly name: 'ExecutorError'
  readonly code: string
  /** Whether sending the same request again may succeed (e.g. `QUEUE_FULL`, `WORKER_LOST`). */
  readonly retryable: boolean
  constructor(code: string, message: string, retryable?: boolean)
}

/**
 * The native executor: a pool of `codemode-worker` processes, each running one program at a
 * time in a fresh V8 isolate. Throws `ExecutorError` (`INVALID_OPTION`, `WORKER_NOT_FOUND`,
 * `WORKER_START_FAILED`) when it cannot start.
 */
export declare class IsolateExecutor {
  constructor(options?: IsolateExecutorOptions)
  /**
   * Runs one program. Resolves with its outcome (program failures included); rejects with
   * `ExecutorError` for `INVALID_REQUEST`, `CLOSED`, `QUEUE_FULL`, `WORKER_LOST` and
   * `REQUEST_TOO_LARGE` (code, modules and tool lists together pass the frame bound; not
   * retryable).
   */
  execute(request: ExecuteRequest): Promise<Outcome>
  /**
   * Resumes a run that paused for approval (docs/approvals.md): the program runs again in a
   * fresh isolate, every call the token holds answered from it (dispatch is not called for
   * them), each pending call by its decision (approved: dispatched; denied: it rejects inside
   * the sandbox with `APPROVAL_DENIED`), and on. Resolves with an ordinary outcome, which may
   * pause again. Rejects with `TOKEN_TAMPERED`, `TOKEN_FOREIGN_KEY`, `TOKEN_EXPIRED`,
   * `DECISIONS_INVALID`, `INVALID_REQUEST`, `CLOSED`, `QUEUE_FULL`.
   */
  resume(request: ResumeRequest): Promise<Outcome>
  /**
   * Calls handle `name` of a retained execution with `request`, one invocation at a time per
   * execution in arrival order, under the execution's own timeout and memory limit (each
   * invocation starts the time bound again). Resolves with exactly `status`, `statusText`,
   * `headers` and `body`. Rejects with `ExecutorError`: `HANDLES_CLOSED` (closed, expired,
   * ended, or never granted), `HANDLE_NOT_FOUND`, `HANDLER_ERROR` (the handler threw; its
   * message), `HANDLE_NOT_RESPONSE`, `HANDLE_RESPONSE_INVALID`, `TIMEOUT` / `MEMORY_LIMIT`
   * (which end the execution), `WORKER_LOST`, `INVALID_REQUEST`, `REQUEST_TOO_LARGE` (the
   * request passes the frame bound), `ABORTED` (`options.signal` fired).
   */
  invokeHandle(executionId: string, name: string, request: WireRequest, options?: InvokeOptions): Promise<WireResponse>
  /**
   * Ends a retained execution: its isolate is disposed and its worker returns to rotation.
   * Rejects with `HANDLES_CLOSED` when it holds no handles (or another tenant owns it). Call it
   * in a `finally`.
   */
  closeHandles(executionId: string, options?: CloseHandlesOptions): Promise<void>
  /** Counts of workers and executions, retained ones included. */
  stats(): ExecutorStats
  /**
   * The pool's metrics, the figures a daemon serves at `GET /metrics` under the same names
   * (docs/operations.md): executions by outcome code, execution and tool-call latency
   * histograms, queue depth, workers by state, worker restarts by cause, bytes to and from
   * workers, aborts. Structured, to register with a host's own exporter; with `'prometheus'`,
   * as one string in the Prometheus text format.
   */
  metrics(): Metric[]
  metrics(format: 'prometheus'): string
  /**
   * Refuses new executions (`CLOSED`), lets queued and running ones finish, then stops and reaps
   * every worker; every retained execution ends with reason `pool-closed`. Idempotent.
   */
  close(): Promise<void>
  /** Process ids of the live workers, for supervision and diagnostics; empty after `close()`. */
  workerPids(): number[]
}

/** The failure grammar: every code the executor reports, with its kind, retryability and text. */
export declare function failureCatalog(): FailureEntry[]

/**
 * `connect()`'s options. Its {@link Budgets} are the defaults of requests without their own, as
 * `IsolateExecutor`'s are (an `undefined` budget is the field left out); a budget named by
 * neither is left out of the request, so the daemon's ceiling applies (`serve({ cpuLimit })`,
 * none unless its operator set one). A budget above the daemon's ceiling is refused with
 * `INVALID_OPTION` when the request reaches it.
 */
export interface ConnectOptions extends Budgets {
  /**
   * The WebSocket class to open the connection with: the runtime's global `WebSocket` when
   * omitted. Node 20 has none: pass the `ws` package's class (or any implementation, e.g. one
   * that adds headers for a gateway).
   */
  websocket?: new (url: string, protocols: string[]) => unknown
  /** The daemon's shared secret (`serve({ token })`, `--token-file`), sent in the handshake. */
  token?: string
  /**
   * The default for requests without their own `outbound`, as `IsolateExecutor`'s option
   * ({@link Outbound}): omitted or `'public'`, the daemon performs a run's fetches from its
   * machine, to public addresses only; `'native'`, to any address its machine reaches; `null`
   * blocks them; a function routes them back over this connection to run here.
   */
  outbound?: Outbound
  /**
   * Called once when a retained execution this connection was granted ends (the daemon sends the
   * notice while this connection is open).
   */
  onHandlesClosed?: (event: HandlesClosed) => void
  /** Milliseconds to wait for the daemon's welcome before `DAEMON_UNREACHABLE`. Default 10000. */
  connectTimeout?: number
  // There is no `approvalKey` here: the daemon signs and checks approval tokens with its own
  // key (`ServeOptions.approvalKey`, `--approval-key-file`); the key never crosses the wire.
}

/**
 * What a daemon lets a request ask for at most (`RemoteExecutor.ceilings`), as its welcome said:
 * each is also what a request without that field gets. A request above one is refused with
 * `INVALID_OPTION` naming the field and the `serve` flag that set it.
 */
export interface RemoteCeilings {
  /** ms: `serve --timeout` (`ServeOptions.timeout`). */
  timeout: number
  /** MiB: `serve --memory-limit`. */
  memoryLimit: number
  /** The most network: `serve --outbound` (`'blocked'` is `null` there). */
  outbound: 'blocked' | 'routed' | 'public' | 'native'
  /** ms of CPU ({@link Budgets.cpuLimit}): `serve --cpu-limit`; `null`: none set, a request without one has no CPU budget. */
  cpuLimit: number | null
  /** Tool calls per run ({@link Budgets.toolCallLimit}): `serve --tool-call-limit`; `null`: none set. */
  toolCallLimit: number | null
  /** Fetches per run ({@link Budgets.fetchLimit}): `serve --fetch-limit`; `null`: none set. */
  fetchLimit: number | null
  /**
   * ms: the most one decision of a callback-mode run may take (`approval.timeout`): `serve
   * --approval-timeout` ({@link ServeOptions.approvalTimeout}); `null` from a daemon too old to say.
   */
  approvalTimeout: number | null
}

/** A daemon's counts: its pool's, and its open connections. */
export interface RemoteStats extends ExecutorStats {
  connections: number
}

/**
 * The native executor over a connection to a daemon (`connect()`): the same methods, types and
 * `ExecutorError` codes as `IsolateExecutor`. Dispatch and routed outbound functions run in this
 * process; only data crosses. When the connection is lost, what is in flight rejects with
 * `CONNECTION_LOST` (retryable) and the next call opens a new connection (`DAEMON_UNREACHABLE`,
 * retryable, when it cannot). An invocation goes to the daemon that granted the handle, through
 * a connection pinned to it (`?daemon=<id>`, a load balancer's routing key). An open connection
 * keeps Node running; `close()` it when done.
 */
export declare class RemoteExecutor {
  private constructor()
  /** The daemon's id (stable for its lifetime; `GET /healthz` reports the same). */
  readonly daemon: string
  /** The name the daemon's `onConnection` hook gave this connection. */
  readonly name: string
  /**
   * The most time, memory, network, CPU, tool calls and fetches a request may ask of this daemon
   * ({@link RemoteCeilings}), which is also what a request without them gets. A request above
   * one is refused with `INVALID_OPTION` naming the ceiling. `CodemodeExecutor`'s own 60 s
   * default is lowered to the daemon's timeout when the host set none.
   */
  readonly ceilings: RemoteCeilings
  /**
   * Runs one program on the daemon, as `IsolateExecutor.execute`. Also rejects with `DRAINING`
   * (retryable: the daemon is shutting down), `IN_FLIGHT_LIMIT` (retryable) and
   * `CONNECTION_LOST` (retryable; the daemon stops a run whose caller is gone).
   */
  execute(request: ExecuteRequest): Promise<Outcome>
  /**
   * Resumes a run that paused for approval, as `IsolateExecutor.resume`, on the daemon this
   * executor reaches: any daemon whose approval key (`serve({ approvalKey })`,
   * `--approval-key-file`) signed the token, so behind a load balancer whichever daemon takes the
   * request resumes it. `dispatch`, `outbound` and `onLog` run here, as for `execute`. Rejects
   * with `TOKEN_TAMPERED`, `TOKEN_FOREIGN_KEY` (another key: a daemon without the key, or one
   * left with its random per-process key), `TOKEN_EXPIRED`, `DECISIONS_INVALID`,
   * `INVALID_REQUEST`, `INVALID_OPTION` (the paused run asks more than this daemon's ceilings),
   * and as `execute` (`DRAINING`, `IN_FLIGHT_LIMIT`, `CONNECTION_LOST`, ...). A request in
   * callback mode (`approval.decide`) is asked here: the daemon sends each call, and the run
   * waits for `decide` on this connection.
   */
  resume(request: ResumeRequest): Promise<Outcome>
  /**
   * Calls a handle of an execution the daemon retains, as `IsolateExecutor.invokeHandle`. Any
   * connection to the same daemon may invoke it: handles are keyed on the daemon. An aborted
   * `options.signal` crosses the connection.
   */
  invokeHandle(executionId: string, name: string, request: WireRequest, options?: InvokeOptions): Promise<WireResponse>
  /** Ends a retained execution on the daemon, as `IsolateExecutor.closeHandles`. */
  closeHandles(executionId: string, options?: CloseHandlesOptions): Promise<void>
  /** The daemon's counts. */
  stats(): Promise<RemoteStats>
  /** Lets the requests in flight finish, then closes the connection; later calls reject `CLOSED`. */
  close(): Promise<void>
}

/**
 * Connects to a daemon (`codemode-executor serve`, or `serve()`), resolving once it has welcomed
 * this client. Rejects with `ExecutorError`: `INVALID_OPTION`, `DAEMON_UNREACHABLE` (retryable),
 * `CONNECTION_REFUSED` (a wrong token, or the daemon's `onConnection` refused; the reason in the
 * message), `PROTOCOL_MISMATCH`. `new CodemodeExecutor(await connect(url))` works unchanged.
 */
export declare function connect(url: string, options?: ConnectOptions): Promise<RemoteExecutor>

/** Who is connecting, as `onConnection` sees it. */
export interface ConnectionInfo {
  /** The daemon's number for this connection (in its logs). */
  id: number
  remoteAddress: string
  remotePort: number
  /** The upgrade request's path. */
  path: string
  /** The upgrade request's headers, names lower-case. */
  headers: [string, string][]
}

/**
 * `serve()`'s options: the pool's (as `IsolateExecutor` takes them) and the server's. Its
 * {@link Budgets} are ceilings (`--cpu-limit`, `--tool-call-limit`, `--fetch-limit`): each given
 * is what a request without that budget gets and the most one may ask for (above it:
 * `INVALID_OPTION` naming the flag); each omitted, the daemon sets none, and a request without
 * that budget has none. The welcome reports them (`RemoteExecutor.ceilings`, `null` when none).
 */
export interface ServeOptions extends Budgets {
  /**
   * Address to listen on. Default `127.0.0.1`. Any address other than loopback (`0.0.0.0`, a
   * LAN address, a name that resolves off loopback) needs a `token`: without one `serve`
   * rejects with `TOKEN_REQUIRED`.
   */
  host?: string
  /** Port to listen on; `0` picks a free one. Default 8080. */
  port?: number
  /**
   * A shared secret every client must present (`connect(url, { token })`); a connection without
   * it is refused before any message is read. At least 16 characters (`INVALID_OPTION`
   * otherwise), e.g. `openssl rand -hex 32`. Required off loopback (or `tenants`).
   */
  token?: string
  /**
   * One token per tenant (docs/tenants.md; `--tenants FILE` on the command line): a client
   * presents its tenant's token, and every request of its connection acts for that tenant
   * (a request naming another is `TENANT_MISMATCH`). Each token at least 16 characters and
   * distinct; not with `token` (`INVALID_OPTION` naming the entry otherwise).
   */
  tenants?: Record<string, TenantLimits & { token: string }>
  /** The bounds of runs that name no tenant here (none can, with `tenants`). */
  defaultTenant?: TenantLimits
  /**
   * Origins (`https://app.example`) whose web pages may open a connection. Browsers send
   * `Origin` on every WebSocket upgrade and apply no same-origin rule to it, so an upgrade that
   * carries an `Origin` outside this list is refused (403). Clients that send no `Origin`
   * (`connect()`, `ws`) are not affected. Default: none.
   */
  allowOrigins?: string[]
  /**
   * Names (without port) a request's `Host` may use besides the bound address (and `localhost`
   * on loopback): the name a proxy or DNS gives the daemon. Any other `Host` is refused (403),
   * which closes DNS rebinding. A daemon bound to every address (`0.0.0.0`, `::`) accepts any
   * `Host` until this list is given. Default: none.
   */
  allowHosts?: string[]
  /** WebSocket connections open at once; the next upgrade gets 503. Default 1024. */
  maxConnections?: number
  /** WebSocket connections open at once from one address; the next gets 503. Default 64. */
  maxConnectionsPerAddress?: number
  /** ms a new connection may take to send `hello`; then it is closed with 4008. Default 10,000. */
  helloTimeout?: number
  /**
   * ms a connection with nothing in flight, no call waiting and no retained execution may stay
   * silent; then it is closed with 1001 (`connect()` opens a new one for its next call).
   * `0`: never. Default 300,000.
   */
  idleTimeout?: number
  /**
   * The largest message a client may send, in bytes (at least 17 MiB, so the largest payload
   * fits); a larger one is answered `PROTOCOL_ERROR` and the connection closed with 1009.
   * Default 20 MiB.
   */
  maxMessageBytes?: number
  /**
   * The most one decision of a callback-mode run may take here, in ms (`approval.timeout`,
   * docs/approvals.md): while a run waits on decisions only, its time bound rests and its
   * worker stays held, so this bounds how long a caller can hold a worker waiting for a person.
   * A request naming more is refused with `INVALID_OPTION` naming `--approval-timeout`; one
   * naming none gets the request default (5 minutes) or this, whichever is less. 1 ms to
   * 1 hour; default 300,000 (5 minutes). `serve --approval-timeout`.
   */
  approvalTimeout?: number
  /**
   * The outbound ceiling: the most network a caller's run may get, and what a request that
   * names none gets. `null` (fetch closed), `'routed'` (the caller's own policy, in its
   * process), `'public'` (the daemon performs the request, to public addresses only) or
   * `'native'` (everything the daemon's machine reaches). A request asking for more is refused
   * with `INVALID_OPTION` naming the ceiling. Default `'public'`.
   */
  outbound?: null | 'routed' | 'public' | 'native'
  /**
   * Names each caller, or refuses it: return a name (or `{ name }`, or nothing for the default
   * `address:port`); throw or reject to refuse, and the client's `connect()` rejects with
   * `CONNECTION_REFUSED` carrying the message. The name appears in the logs; it limits no call.
   * Unanswered within 10 s, the connection is refused.
   */
  onConnection?: (info: ConnectionInfo) => string | { name?: string } | void | Promise<string | { name?: string } | void>
  /** Receives the daemon's log lines (connections, refusals, protocol errors, drain). Default: none. */
  log?: (line: string) => void
  /** Requests in flight on one connection before `IN_FLIGHT_LIMIT`. Default 1024. */
  maxInFlight?: number
  workers?: number
  /** Executions that may wait for a worker, and invocations that may wait for one retained execution (`QUEUE_FULL` past it). */
  queueBound?: number
  /** ms: the time bound of a run without one, and the most a request may ask for (`INVALID_OPTION` above it). */
  timeout?: number
  /** MiB: the memory limit of a run without one, and the most a request may ask for (`INVALID_OPTION` above it). */
  memoryLimit?: number
  handlesIdleTimeout?: number
  /**
   * The key the daemon signs approval tokens with (docs/approvals.md), as `IsolateExecutor`'s
   * `approvalKey`: at least 32 bytes (`INVALID_OPTION` otherwise). Give every daemon behind one
   * balancer the same key, so a token paused on one resumes on any (`RemoteExecutor.resume`).
   * Omitted: a random key of this process, so its tokens die with it. Whoever holds the key can
   * mint tokens this daemon replays: keep it as secret as `token` (docs/threat-model.md).
   * `--approval-key-file` on the command line.
   */
  approvalKey?: Buffer | Uint8Array | string
  workerPath?: string
}

/** A running daemon. */
export interface Server {
  /** `ws://host:port`, for `connect()`. */
  url: string
  host: string
  /** The port it listens on (the one picked, with `port: 0`). */
  port: number
  /** The daemon's id. */
  daemon: string
  stats(): RemoteStats
  /** Process ids of its live workers. */
  workerPids(): number[]
  /**
   * Drains and stops: new connections and `/healthz` get 503, new executions `DRAINING`; running
   * executions finish within their bounds; retained executions end with `pool-closed`; then every
   * connection is closed and the workers stop. Idempotent.
   */
  close(): Promise<void>
}

/**
 * Starts the executor daemon in this process (the CLI `codemode-executor serve` calls it). Rejects
 * with `ExecutorError`: `INVALID_OPTION`, `TOKEN_REQUIRED`, `LISTEN_FAILED`, `WORKER_NOT_FOUND`,
 * `WORKER_START_FAILED`. Node stays alive until it is closed.
 */
export declare function serve(options?: ServeOptions): Promise<Server>

/** A provider as @cloudflare/codemode's executors take it. */
export interface ResolvedProvider {
  /** The namespace's global name in the sandbox (a JavaScript identifier, not a reserved name). */
  name: string
  /** Tool name -> function, run in this process. Names are sanitized as the reference does. */
  fns: Record<string, (...args: any[]) => unknown>
  /** JavaScript pasted into the sandbox after the namespaces exist; its properties win over tools. */
  prelude?: string
}

/** A connector: calls reach `binding.callTool(tool, firstArgument)` as structured clones. */
export interface ConnectorBinding {
  name: string
  binding: { callTool(method: string, args: unknown): unknown }
}

/**
 * @cloudflare/codemode's `ExecuteOptions`, plus what the dialect has no field for. Its
 * {@link Budgets} win over the constructor's (`undefined` is the field left out); a run past
 * its `cpuLimit` answers `{ result: undefined, error: <the CPU_LIMIT text>, logs }`, and a call
 * past `toolCallLimit` or `fetchLimit` rejects inside the sandbox (docs/dialect-deviations.md,
 * D10 and D19).
 */
export interface ExtendedExecuteOptions extends Budgets {
  connectors?: ConnectorBinding[]
  /** The module map for this call, in place of the constructor's `modules` (not merged with it). */
  modules?: Record<string, string>
  /** ms for this call, in place of the constructor's `timeout`. A run past it answers `Execution timed out`. */
  timeout?: number
  /**
   * This call's outbound policy ({@link Outbound}, see IsolateExecutorOptions.outbound:
   * `'public'`, `'native'`, `null` or a function); given, it wins over the constructor's
   * `globalOutbound`; `undefined` is the field left out, so the constructor's (or the native
   * executor's) applies.
   */
  outbound?: Outbound
  /** Forwarded to the native executor (`ExecuteRequest.signal`): `execute` rejects with `ABORTED`. */
  signal?: AbortSignal
  /**
   * Whom this call runs for, forwarded to the native executor (`ExecuteRequest.tenant`,
   * docs/tenants.md): its worker process runs only this tenant's code, and the tenant's bounds
   * hold it (a tenant past its `cpuPerMinute` makes `execute` reject with `TENANT_CPU_LIMIT`).
   * 1 to 64 characters of `A-Z a-z 0-9 . _ -`; anything else rejects with `INVALID_REQUEST`
   * before anything runs. Omitted (or `undefined`): the native executor's unnamed domain.
   */
  tenant?: string
}

/** A Workers `Fetcher` as `globalOutbound` uses it: every sandbox `fetch` becomes a call of `fetch`. */
export interface Fetcher {
  fetch(request: Request): Response | Promise<Response>
}

/**
 * `DynamicWorkerExecutorOptions` without `loader`: defaults for every call of a
 * {@link CodemodeExecutor}, each overridden by the same field of {@link ExtendedExecuteOptions},
 * and the native executor's {@link Budgets} (checked against their ranges here, else
 * `INVALID_OPTION`): left out in both, the native executor's own apply.
 * Any other key (`loader`, `bindings`, ...) is refused with `INVALID_OPTION`.
 */
export interface CodemodeExecutorOptions extends Budgets {
  /** Specifier -> source text, importable (statically or with `import()`) by every call's code. */
  modules?: Record<string, string>
  /** ms, a whole number of 1 or more; default 60,000, as the reference. */
  timeout?: number
  /**
   * Where the sandbox's `fetch` goes: `null` (or `undefined` given) blocks it, as the reference
   * does; a Fetcher receives each request as a `Request` and its `Response` is the answer (a throw
   * rejects that fetch with its message); an {@link OutboundPolicy} function routes as it does per
   * call; `'public'` and `'native'` let the executor fetch itself, to public addresses only or to
   * any ({@link Outbound}). Omitted, the native executor's own `outbound` applies, and its
   * default is `'public'`.
   */
  globalOutbound?: Fetcher | OutboundPolicy | 'public' | 'native' | null
}

/** @cloudflare/codemode's `ExecuteResult`. */
export interface ExecuteResult {
  result: unknown
  error?: string
  logs?: string[]
}

/**
 * @cloudflare/codemode's executor dialect over any native executor: replace
 * `new DynamicWorkerExecutor({ loader })` with `new CodemodeExecutor(new IsolateExecutor())`.
 * Differences from the reference: docs/dialect-deviations.md.
 */
export declare class CodemodeExecutor {
  /**
   * @param native an IsolateExecutor, a `connect()`ed RemoteExecutor, or any executor with the
   *   native contract.
   * @param options the reference's constructor options besides `loader`, as defaults for every
   *   call; unknown keys and wrong types throw `ExecutorError` `INVALID_OPTION`.
   */
  constructor(native: { execute(request: ExecuteRequest): Promise<Outcome> }, options?: CodemodeExecutorOptions)
  /**
   * Runs model-written code (normalized as the reference does) with the providers' functions
   * as tools. A record of functions is the deprecated form (one provider named `codemode`).
   * Code longer than 1 MiB, or nested more than 500 levels deep, is not read: `error` carries
   * the `CODE_TOO_LARGE` or `NESTING_TOO_DEEP` text (docs/bounds.md, "Program text").
   */
  execute(
    code: string,
    providersOrFns: ResolvedProvider[] | Record<string, (...args: any[]) => unknown>,
    options?: ExtendedExecuteOptions,
  ): Promise<ExecuteResult>
}

/**
 * Makes `cloudflare:workers` importable on plain Node, with stand-ins for what
 * `@cloudflare/codemode` uses from it (`WorkerEntrypoint`, `DurableObject`, `RpcTarget`, `env`),
 * so its root and `/ai` entries load. Call it before importing them. The same as starting Node
 * with `--import @supolka/codemode-executor/register`. The resolution hook goes through
 * `module.registerHooks()` where Node has it (22.15+, so no `DEP0205` on Node 26), else through
 * `module.register()` (Node 20); a second call does nothing.
 */
export declare function register(): void

/** Options of {@link bundleModules}. */
export interface BundleModulesOptions {
  /**
   * Package specifiers as the program imports them (`'lodash-es'`, `'date-fns'`,
   * `'@scope/pkg/sub'`); each becomes one module-map entry holding the package bundled into one
   * ES module. Each must be an npm package name (optionally `@scope/`) with an optional subpath
   * of plain segments: a `.` or `..` segment, an empty segment, a backslash, a percent-encoding,
   * an absolute path or a URL scheme (`file:`, `node:`) rejects with `INVALID_OPTION` naming
   * the entry and the problem, and an entry that resolves (after symlinks) outside its
   * package's directory rejects with `BUNDLE_FAILED`, so no specifier bundles a host file the
   * package does not hold.
   */
  packages: string[]
  /** The directory packages (and esbuild) are resolved from, as Node resolves. Default: `process.cwd()`. */
  from?: string
  /**
   * Node built-ins a package may import, each mapped to a package or a file (relative to
   * `from`) written for the sandbox, e.g. `{ 'node:events': 'events' }`. The package's imports
   * of it stay `import ... from 'node:events'`, and the map gains a `node:events` entry with the
   * target bundled. Any other built-in refuses the package (`BUNDLE_NODE_BUILTIN`). A target
   * that is not a file (does not start with `.` or `/`) is a package, held to the rules of
   * `packages`.
   */
  alias?: Record<string, string>
  /**
   * A directory to keep bundles in across processes. Bundles are always cached in memory for
   * the process, keyed by package name, installed version, aliases and esbuild's version.
   */
  cacheDir?: string
  /** Minify the bundles (smaller requests). Default: `false`. */
  minify?: boolean
}

/**
 * Bundles npm packages installed in the host project into a module map for the sandbox:
 * `execute({ code, modules: await bundleModules({ packages: ['lodash-es'] }) })`, or
 * `ExtendedExecuteOptions.modules` for the dialect. Each package is bundled with esbuild (an
 * optional peer dependency: install it in the host project) with the resolution Workers use
 * (`browser` field, `workerd` / `worker` / `browser` conditions). The sandbox has no Node: a
 * package that imports a Node built-in rejects with `ExecutorError` `BUNDLE_NODE_BUILTIN`
 * naming the built-in and the package, unless `alias` maps it. A package that is not installed,
 * or that esbuild cannot bundle, rejects with `BUNDLE_FAILED`. The modules count against the
 * request size bound like any other (`REQUEST_TOO_LARGE`).
 */
export declare function bundleModules(options: BundleModulesOptions): Promise<Record<string, string>>

/**
 * One upstream MCP server of the gateway, as the `mcpServers` entries of Claude Desktop and
 * Cursor write it: a stdio server (`command`, `args`, `env`, `cwd`) or a Streamable HTTP one
 * (`url`, `headers`). `disabled: true` leaves it out. Any other key is refused
 * (`MCP_CONFIG_INVALID`).
 */
export type McpServerEntry =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string; type?: 'stdio'; disabled?: boolean; description?: string }
  | { url: string; headers?: Record<string, string>; type?: 'http' | 'streamable-http' | 'streamableHttp'; disabled?: boolean; description?: string }

/** {@link createMcpGateway}'s options (docs/mcp.md). Bad ones reject with `INVALID_OPTION` or `MCP_CONFIG_INVALID`. */
export interface McpGatewayOptions {
  /**
   * The upstream servers keyed by name (or a whole config holding `mcpServers`). Each becomes
   * the global its name sanitizes to (`my-server` → `my_server`) in the model's programs.
   */
  servers: Record<string, McpServerEntry> | { mcpServers: Record<string, McpServerEntry> }
  /** Runs the programs: an {@link IsolateExecutor} (its bounds and outbound apply) or a {@link RemoteExecutor}. Stays the caller's to close. */
  executor: { execute(request: ExecuteRequest): Promise<Outcome> }
  /**
   * How the model learns the tools: `'full'`, every declaration in the `code` tool's
   * description; `'search'`, a `search` and a `describe` tool load them on demand; `'auto'`
   * (default), full until the declarations pass 32,000 characters.
   */
  catalog?: 'auto' | 'full' | 'search'
  /**
   * Calls that wait for a person's yes, as `server.tool` or `server.*` (the server's configured
   * name; the tool's own or sanitized name). The gateway asks through MCP elicitation; a
   * client without it gets the call refused inside the program with a text saying why.
   */
  approve?: string[]
  /** Milliseconds a call waits for that yes (default 300,000; then it is denied). */
  approvalTimeout?: number
  /** Milliseconds a tool call waits for its upstream (default 60,000): then `UPSTREAM_TIMEOUT`, and the upstream is restarted. */
  callTimeout?: number
  /** The answer's text bound in characters (default 24,000): a larger result is cut structurally and says so. */
  maxResultChars?: number
  /** Whether the executor lets programs fetch (only changes what the description tells the model). Default false. */
  network?: boolean
  /**
   * Whom every program the gateway runs is for ({@link ExecuteRequest.tenant},
   * docs/tenants.md; the command's `--tenant`): each run names it, so its worker process runs
   * only this tenant's code and the tenant's bounds hold it (past its `cpuPerMinute` the `code`
   * call answers `The program could not be run (TENANT_CPU_LIMIT): ...`). 1 to 64 characters of
   * `A-Z a-z 0-9 . _ -`. Omitted: the executor's unnamed domain.
   */
  tenant?: string
  /**
   * Type-check each program before it runs (docs/typecheck.md; the command's `--typecheck`)
   * against the catalogue's declarations, every server's: those the `code` tool's description
   * shows and those it leaves to `search` and `describe` alike (a server whose tools are not
   * all declared, or not known yet, also takes any other tool name, untyped). A program that
   * does not check is not run and no upstream is called: the `code` call answers `The program
   * failed (TYPE_ERROR): ...`, the diagnostics with their lines. Needs the `typescript` package
   * (else `PEER_MISSING`); the first check of a process takes about a second. Default false.
   */
  typecheck?: boolean
  /** The gateway's diagnostic lines (upstream restarts, their stderr). Default: stderr. */
  log?: (line: string) => void
}

/**
 * Starts an MCP gateway: connects every upstream (one that fails keeps retrying with backoff)
 * and resolves with an MCP SDK `Server` offering the `code` tool (and `search` / `describe`),
 * ready for `server.connect(transport)`. Its `close()` also closes the upstreams (stdio
 * servers' processes end). docs/mcp.md.
 */
export declare function createMcpGateway(options: McpGatewayOptions): Promise<import('@modelcontextprotocol/sdk/server/index.js').Server>

/**
 * A call of the code tool's program that waits for a person (interrupt mode), or that
 * `approval.decide` is asked about (callback mode), in the fields of the AI SDK's tool approval
 * requests.
 */
export interface CodeModeApprovalRequest {
  /**
   * `<code tool call id>:approval-<n>`: unique in the conversation; a
   * {@link CodeModeApprovalResponse} names it.
   */
  approvalId: string
  /** The host tool the program called. */
  toolName: string
  /** The input it passed, as the tool's input schema validated it. */
  input: unknown
  /** Why it needs approval, when a `toolApproval` status of `{ type: 'user-approval', reason }` said. */
  reason?: string
}

/**
 * A person's answer to a {@link CodeModeApprovalRequest}: the AI SDK's `tool-approval-response`
 * part, whose `type` and `providerExecuted` are allowed and ignored. A denial's `reason` reaches
 * the program (the call rejects with `APPROVAL_DENIED`, which it can catch).
 */
export interface CodeModeApprovalResponse {
  type?: 'tool-approval-response'
  approvalId: string
  approved: boolean
  reason?: string
  providerExecuted?: boolean
}

/** The code tool's output when the program returned. */
export interface CodeModeCompleted {
  /**
   * What the program's function returned, as JSON (docs/ai-sdk.md, "Values are JSON"): the
   * value `JSON.parse(JSON.stringify(value))` gives inside the sandbox, as `@ai-sdk/code-mode`'s
   * is; a result with no JSON form fails with `RESULT_NOT_JSON`.
   */
  result: unknown
  /** Its console output (at most 1,000 entries and 1 MiB, as {@link Outcome}'s). */
  logs: LogEntry[]
  /** Its tool calls in order, with their status (the audit trail, as {@link Outcome}'s). */
  calls: CallRecord[]
}

/**
 * The code tool's output when the program failed (it threw, timed out, ...): a program failure
 * is an output the model reads and can fix, not a tool error. A fault of the executor (a full
 * queue, a closed executor, an abort) rejects instead, and the AI SDK reports a tool error.
 */
export interface CodeModeFailed {
  error: ProgramError
  logs: LogEntry[]
  calls: CallRecord[]
}

/**
 * The code tool's output when the program paused at calls that need a person (interrupt mode):
 * show `approvals`, then pass this output and the answers to {@link CodeModeTool.resume}. Keep it
 * on the server: `continuation.token` holds the program and every answer its tools gave
 * (signed, not encrypted; docs/approvals.md, "The token"). The model is shown the waiting calls,
 * never the token. The AI SDK's UI streams carry tool outputs to the browser as they are: a
 * client can read this and send back an altered copy, so `resume` trusts none of it but the
 * signed token: each call that needs a person is checked again as it is dispatched and runs
 * only as a person approved it (its tool and input).
 */
export interface CodeModePaused {
  approvals: CodeModeApprovalRequest[]
  continuation: {
    /** The executor's approval token (`outcome.paused.token`). */
    token: string
    /** The code tool call's id, which the approval ids extend. */
    toolCallId: string
    /**
     * Decisions already made for pending calls that needed no person (by `toolApproval` or a
     * `needsApproval` function), keyed by the executor's pending call id.
     */
    decided: Record<string, Decision>
    /** Tool calls the run made before it paused: the ids of later dispatches count on from it. */
    dispatched?: number
    /** Where the model's expression starts in the program run, for failure positions after a resume. */
    entry?: { line: number; column: number }
  }
  logs: LogEntry[]
  calls: CallRecord[]
}

/** What the code tool's `execute` (and {@link CodeModeTool.resume}) resolves to. */
export type CodeModeOutput = CodeModeCompleted | CodeModeFailed | CodeModePaused

/** {@link codeModeTool}'s options. Unknown keys and bad values throw `ExecutorError` `INVALID_OPTION`. */
export interface CodeModeToolOptions extends Budgets {
  /** Runs the programs: an {@link IsolateExecutor} or a `connect()`ed {@link RemoteExecutor}. Stays the caller's to close. */
  executor: { execute(request: ExecuteRequest): Promise<Outcome>; resume?(request: ResumeRequest): Promise<Outcome> }
  /**
   * How calls that need a person wait (docs/ai-sdk.md, "Approvals"). Default `{ mode:
   * 'interrupt' }`: the run pauses and the tool's output is a {@link CodeModePaused}; resume it
   * with {@link CodeModeTool.resume} (`expiresIn`: how long its token stays good, as
   * {@link Approval}'s). `callback`: `decide` is awaited while the run waits (its time bound
   * resting); `true` / `false` or a {@link Decision}. A call that needs no person (its
   * `needsApproval` function said `false`, or `toolApproval` said `approved` / `denied`) is
   * decided without asking, in both modes.
   */
  approval?:
    | { mode: 'interrupt'; expiresIn?: number }
    | { mode: 'callback'; decide: (request: CodeModeApprovalRequest) => boolean | Decision | Promise<boolean | Decision>; timeout?: number }
  /**
   * The AI SDK 7 `toolApproval` setting of `generateText` / `streamText`, applied to the
   * program's calls (the SDK applies it only to the model's own calls): per tool a status
   * (`'not-applicable'`, `'approved'`, `'denied'`, `'user-approval'`, or `{ type, reason }`) or a
   * function of the input; or one function of every call. Where it names a tool, it wins over
   * that tool's `needsApproval`, as in the SDK.
   */
  toolApproval?: import('ai').ToolApprovalConfiguration<any, any>
  /** The global the program calls the tools on (default `tools`, as @ai-sdk/code-mode's). */
  provider?: string
  /** ms each run may take (the executor's own bound otherwise). */
  timeout?: number
  /** MiB each run may use (the executor's own bound otherwise). */
  memoryLimit?: number
  /** What each run's `fetch` may reach ({@link Outbound}); the description tells the model. Default `null` (closed), as `@ai-sdk/code-mode`'s sandbox is. */
  outbound?: Outbound
  /** A module map each program may import from (e.g. {@link bundleModules}'s). */
  modules?: Record<string, string>
  /** Characters of the result the model is shown (default 24,000); a longer one is cut structurally and says so. The tool's output keeps it whole. */
  maxResultChars?: number
  /**
   * Whom every run of this tool is for ({@link ExecuteRequest.tenant}, docs/tenants.md): each
   * execute and each {@link CodeModeTool.resume} names it, so a run's worker process runs only
   * this tenant's code, the tenant's bounds hold it (past its `cpuPerMinute` the tool's
   * `execute` rejects with `TENANT_CPU_LIMIT`), and a paused output resumes only through a tool
   * of the same tenant (another's gets `TOKEN_FOREIGN_KEY`). 1 to 64 characters of
   * `A-Z a-z 0-9 . _ -`. Omitted: the executor's unnamed domain.
   */
  tenant?: string
  /**
   * Type-check each program before it runs (docs/typecheck.md) against the declarations the
   * description shows the model (`declare const tools: { ... }`), TypeScript as it was written.
   * A program that does not check is not run and no tool is called: the output is a
   * {@link CodeModeFailed} with `error.code` `'TYPE_ERROR'` (the model reads it as any failed
   * program, the diagnostics with their lines). A tool without an `outputSchema` is declared to
   * resolve to `unknown`, so a program must narrow its result before reading it. Not with
   * `modules` (a program that imports cannot be checked yet). Needs the `typescript` package
   * (else `PEER_MISSING`); the first check of a process takes about a second. Default false.
   */
  typecheck?: boolean
}

/** {@link CodeModeTool.resume}'s options. */
export interface CodeModeResumeOptions {
  /**
   * The tools to dispatch to. Default: those the tool was made with. With
   * `experimental_toolCallers`, pass the tools given to `generateText`: the token allows only
   * the calls of the tools the AI SDK bound to the code tool.
   */
  tools?: import('ai').ToolSet
  abortSignal?: AbortSignal
  /** Given to each host tool's `execute` (and approval checks) as `messages`. */
  messages?: import('ai').ModelMessage[]
  /** Given to each host tool's `execute` as `context`. */
  context?: unknown
}

/**
 * The AI SDK tool {@link codeModeTool} returns: its input is `{ code }`, its output a
 * {@link CodeModeOutput}; the model is shown the result (cut to `maxResultChars`), the console
 * lines and, for a pause, the waiting calls. It is also a local tool caller (`ai` 7's
 * `experimental_toolCallers`): the tools that name it as their caller are bound to it.
 */
export type CodeModeTool = import('ai').Experimental_ToolCallerTool<import('ai').Tool<{ code: string }, CodeModeOutput>> & {
  /**
   * Runs a paused program on with a person's answers, one per approval (the AI SDK's
   * `tool-approval-response` parts can be passed as they are), on this tool's executor or any
   * with the same `approvalKey`. Resolves to the program's next output: completed, failed, or
   * paused again at a later call. Rejects with `INVALID_REQUEST` for a `paused` that is not a
   * paused output, `DECISIONS_INVALID` when the answers do not match its approvals one to one,
   * and with the executor's `resume` faults (`TOKEN_EXPIRED`, `TOKEN_FOREIGN_KEY`, ...).
   */
  resume(paused: CodeModePaused, responses: CodeModeApprovalResponse[], options?: CodeModeResumeOptions): Promise<CodeModeOutput>
}

/**
 * The AI SDK's own tools (`tool()` with zod or JSON schemas) as one code-mode tool whose
 * programs run in `options.executor` (docs/ai-sdk.md). The model sees each tool declared in
 * TypeScript (its input type, its output type when it has an `outputSchema`, its description)
 * as a method of the global `tools`, and writes one async arrow function; each call is
 * validated against the tool's input schema and runs its `execute` in this process. `needsApproval`
 * (and `options.toolApproval`) map onto the executor's approvals. Use it in `tools` directly, or
 * as `ai` 7's local tool caller in place of @ai-sdk/code-mode's:
 * `tools: { codemode: codeModeTool({}, { executor }), getOrder }, experimental_toolCallers: { getOrder: ['codemode'] }`.
 * Tools without `execute` are left out. Loads the host's `ai` (7.x, an optional peer
 * dependency): without it, `PEER_MISSING` saying what to install.
 */
export declare function codeModeTool(tools: import('ai').ToolSet | Record<string, never> | undefined, options: CodeModeToolOptions): CodeModeTool
