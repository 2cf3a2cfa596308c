// @ts-check
'use strict';
// The host side of an executor, whatever carries it: the runs and invocations in flight, the
// retained executions this host was granted, the answers to tool calls (the request's dispatch)
// and routed fetches (its outbound policy), and outcomes built from completions. The in-process
// pool (lib/isolate-executor.js) and a daemon connection (lib/connect.js) each supply a
// Transport and feed the core the same completion shapes (NativeToolCall, NativeFetchCall,
// NativeCompletion in native.d.ts), so both behave the same by construction. Each run's tool
// calls are its ToolCalls' (lib/tool-calls.js: the byte budget, the dispatch cap, the answers).
// While runs or invocations are in flight the core holds Node's event loop open with a timer
// (#holdLoop): the addon's callbacks are weak, so an idle executor never keeps Node alive.
// One file over 500 lines: one class, the state both carriers share, whose handlers read and
// change it together.

const { ExecutorError, render, fault } = require('./errors');
const { deserialize } = require('./clone');
const { ToolCalls } = require('./tool-calls');
const { loadNative } = require('./native');
const tracing = require('./tracing');
const validate = require('./validate');
const hops = require('./hops');

/**
 * @typedef {import('../index').Outcome} Outcome
 * @typedef {import('./validate').ValidRequest} ValidRequest
 * @typedef {import('../index').OutboundPolicy} OutboundPolicy
 * @typedef {import('../index').Dispatch} Dispatch
 * @typedef {import('../index').HandlesClosedReason} HandlesClosedReason
 * @typedef {import('../native').NativeRequest} NativeRequest
 * @typedef {import('../native').NativeToolCall} NativeToolCall
 * @typedef {import('../native').NativeFetchCall} NativeFetchCall
 * @typedef {import('../native').NativeCompletion} NativeCompletion
 * @typedef {import('../native').NativeWireRequest} NativeWireRequest
 * @typedef {import('../native').NativeWireResponse} NativeWireResponse
 *
 * What carries requests to the pool and answers back to it. Each method may throw an error the
 * addon threw (a failure code in `code`) or an ExecutorError; `closeHandles` may return a
 * promise when the answer comes later.
 * @typedef {object} Transport
 * @property {(request: import('./validate').ValidRequest) => number} execute submits a run (the
 *   addon reads its NativeRequest fields); returns its id
 * @property {(id: number) => void} abort the caller aborted run `id` (it completes, with ABORTED)
 * @property {(executionId: string, name: string, request: NativeWireRequest, token: number, tenant: string | undefined) => (() => void)} invokeHandle
 *   submits an invocation for `tenant`; returns what aborts it
 * @property {(executionId: string, tenant: string | undefined) => void | Promise<void>} closeHandles
 * @property {(call: NativeToolCall, value: Buffer) => void} resolveToolCall answers the call as it came
 * @property {(call: NativeToolCall, message: string) => void} rejectToolCall
 * @property {(call: NativeToolCall, message: string) => void} denyToolCall rejects the call as a
 *   denial (the dispatch threw `errors.denial`)
 * @property {(call: NativeFetchCall, response: NativeWireResponse) => void} resolveFetch
 * @property {(call: NativeFetchCall, message: string) => void} rejectFetch
 * @property {(request: ResumeRequest) => number} resume submits the resumption of a paused run
 *   (docs/approvals.md); returns its id
 * @property {(id: number, callId: number, approved: boolean, reason: string | undefined) => void} decide
 *   answers a call the run's `decide` was asked about (callback mode)
 *
 * `resume`'s request, validated (lib/validate/approvals.js).
 * @typedef {ReturnType<typeof import('./validate/approvals').resumeRequest>} ResumeRequest
 *
 * An execution in flight.
 * @typedef {object} Run
 * @property {(outcome: Outcome) => void} resolve
 * @property {(error: unknown) => void} reject
 * @property {Dispatch | undefined} dispatch
 * @property {OutboundPolicy | undefined} route the policy of a routed run
 * @property {Promise<Outcome>} promise
 * @property {((entry: import('../index').LiveLogEntry) => void) | undefined} onLog
 * @property {string | undefined} tenant whom the run is for, when its request named one
 * @property {boolean} aborted the caller aborted it: its promise rejected, its completion is dropped
 * @property {() => void} unlisten stops listening to its signal
 * @property {import('./tracing').RunTrace | null} trace
 * @property {ToolCalls | null} calls its tool calls, from the first one on
 * @property {import('../index').Decide | undefined} decide its approval's callback (callback mode)
 * @property {number} decideTimeout how long one `decide` may take (ms)
 * @property {Record<string, number> | null} hops the steps this host recorded (ns), when the
 *   executor records them (lib/hops.js)
 *
 * A retained execution (docs/handles.md): its run id, and the policy its handlers' routed
 * fetches go to.
 * @typedef {object} Held
 * @property {number} id
 * @property {OutboundPolicy | undefined} route
 *
 * An invocation in flight.
 * @typedef {object} Invocation
 * @property {(response: import('../index').WireResponse) => void} resolve
 * @property {(error: unknown) => void} reject
 * @property {Promise<unknown>} promise
 * @property {boolean} aborted
 * @property {() => void} unlisten
 * @property {import('./tracing').InvokeTrace | null} trace
 */

const noop = () => {};

/**
 * The ABORTED fault, its cause the signal's reason.
 * @param {'execution' | 'invocation'} what
 * @param {AbortSignal} signal
 */
function abortError(what, signal) {
  const e = fault('ABORTED', { what });
  e.cause = signal.reason;
  return e;
}

/**
 * Lets `signal` abort `entry`, a run or an invocation, while `live()` says it is the one in
 * flight: it is marked aborted (its completion will be dropped), the carrier is told (`stop`),
 * its span ends and its promise rejects with ABORTED, the signal's reason as the cause.
 * @param {AbortSignal} signal
 * @param {'execution' | 'invocation'} what
 * @param {{ aborted: boolean, unlisten: () => void, reject: (error: unknown) => void }} entry
 * @param {() => boolean} live
 * @param {() => void} stop
 * @param {(error: ExecutorError) => void} endSpan
 */
function abortOn(signal, what, entry, live, stop, endSpan) {
  const onAbort = () => {
    if (entry.aborted || !live()) return;
    entry.aborted = true;
    try {
      stop();
    } catch {
      // The carrier is gone: the run or invocation ends with it.
    }
    endSpan(abortError(what, signal));
    entry.reject(abortError(what, signal));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  entry.unlisten = () => signal.removeEventListener('abort', onAbort);
}

/**
 * Calls `hook` with `arg`; a throw surfaces as Node would (uncaught), never inside the executor.
 * @template T
 * @param {(arg: T) => void} hook
 * @param {T} arg
 */
function callHook(hook, arg) {
  try {
    hook(arg);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}

class ExecutorCore {
  /** @type {Transport} */
  #transport;
  /** @type {import('./tool-calls').Bounds} what each run's tool calls are held to */
  #toolBounds;
  /** @type {((event: import('../index').HandlesClosed) => void) | undefined} */
  #onHandlesClosed;
  /** @type {Map<number, Run>} run id -> run */
  #runs = new Map();
  /** @type {Map<string, Held>} executionId -> retained execution */
  #retained = new Map();
  /** @type {Map<number, string>} run id -> executionId of a retained execution */
  #retainedIds = new Map();
  /** @type {Map<number, Invocation>} invocation token -> invocation in flight */
  #invocations = new Map();
  #nextInvocation = 1;
  /** @type {ReturnType<typeof setInterval> | null} */
  #keepAlive = null;
  /** @type {Map<string, unknown>} executionId -> the span context of the run that granted it */
  #grantSpans = new Map();

  /**
   * @param {Transport} transport
   * @param {number} toolPayloadBytes
   * @param {((event: import('../index').HandlesClosed) => void) | undefined} onHandlesClosed
   */
  constructor(transport, toolPayloadBytes, onHandlesClosed) {
    this.#transport = transport;
    // This host's own bounds (a connect() client's too): they protect the heap that dispatches.
    const { toolBytesInFlight, dispatches } = loadNative().binding.dispatchLimits();
    this.#toolBounds = { toolPayloadBytes, toolBytesInFlight, dispatches };
    this.#onHandlesClosed = onHandlesClosed;
  }

  /**
   * Submits a validated request.
   * @param {import('./validate').ValidRequest} checked
   * @param {Record<string, number> | null} [steps] the steps recorded so far, when the
   *   executor records them (lib/hops.js)
   * @returns {Promise<Outcome>}
   */
  execute(checked, steps = null) {
    if (checked.typecheck) return this.#checkThenSubmit(checked, steps);
    return this.#submit(checked, () => this.#transport.execute(checked), steps);
  }

  /**
   * Type-checks the program against its declarations (docs/typecheck.md) and runs it only when
   * it checks: otherwise the outcome is `TYPE_ERROR`, and no worker, isolate or tool was used.
   * @param {ValidRequest} checked
   * @param {Record<string, number> | null} steps
   * @returns {Promise<Outcome>}
   */
  async #checkThenSubmit(checked, steps) {
    const typecheck = require('./typecheck');
    const found = await typecheck.check(checked.code, checked.declarations ?? '');
    if (found.count > 0) return typecheck.typeErrorOutcome(found);
    return this.#submit(checked, () => this.#transport.execute(checked), steps);
  }

  /**
   * Resumes a paused run (docs/approvals.md).
   * @param {ResumeRequest} checked
   * @returns {Promise<Outcome>}
   */
  resume(checked) {
    return this.#submit({ ...checked, decide: undefined, approval: undefined }, () => this.#transport.resume(checked));
  }

  /**
   * Submits a run through `submit` (which returns its id) and follows it to its end.
   * @param {{ signal: AbortSignal | undefined, dispatch: Dispatch | undefined, route: OutboundPolicy | undefined, onLog: Run['onLog'], decide: Run['decide'], approval?: import('../native').NativeApproval | undefined, tenant?: string | undefined }} checked
   * @param {() => number} submit
   * @param {Record<string, number> | null} [steps] the steps recorded so far (lib/hops.js)
   * @returns {Promise<Outcome>}
   */
  #submit(checked, submit, steps = null) {
    const { signal } = checked;
    const trace = tracing.startRun(checked.tenant);
    if (signal?.aborted) return tracing.rejected(trace, abortError('execution', signal));
    let id;
    try {
      id = submit();
    } catch (e) {
      return tracing.rejected(trace, e);
    }
    if (steps) steps.submitted = hops.now();
    /** @type {Deferred<Outcome>} */
    const { resolve, reject, promise } = deferred();
    /** @type {Run} */
    const run = { resolve, reject, dispatch: checked.dispatch, route: checked.route, promise, onLog: checked.onLog, tenant: checked.tenant, aborted: false, unlisten: noop, trace, calls: null, decide: checked.decide, decideTimeout: checked.approval?.timeout ?? 0, hops: steps };
    if (signal) {
      abortOn(signal, 'execution', run, () => this.#runs.get(id) === run, () => this.#transport.abort(id), (e) => tracing.endRun(trace, undefined, e));
    }
    this.#runs.set(id, run);
    this.#holdLoop();
    return promise;
  }

  /**
   * @param {string} executionId
   * @param {string} name
   * @param {NativeWireRequest} request validated
   * @param {AbortSignal} [signal] validated
   * @param {string} [tenant] validated: whom the caller acts for
   * @returns {Promise<import('../index').WireResponse>}
   */
  invokeHandle(executionId, name, request, signal, tenant) {
    const trace = tracing.startInvoke(executionId, name, this.#grantSpans.get(executionId), tenant);
    if (signal?.aborted) return tracing.rejected(trace, abortError('invocation', signal));
    const token = this.#nextInvocation++;
    if (this.#nextInvocation > 0xffff_fff0) this.#nextInvocation = 1;
    let abort;
    try {
      abort = this.#transport.invokeHandle(executionId, name, request, token, tenant);
    } catch (e) {
      return tracing.rejected(trace, e);
    }
    /** @type {Deferred<import('../index').WireResponse>} */
    const { resolve, reject, promise } = deferred();
    /** @type {Invocation} */
    const invocation = { resolve, reject, promise, aborted: false, unlisten: noop, trace };
    if (signal) {
      abortOn(signal, 'invocation', invocation, () => this.#invocations.get(token) === invocation, abort, (e) => tracing.endInvoke(trace, undefined, e));
    }
    this.#invocations.set(token, invocation);
    this.#holdLoop();
    return promise;
  }

  /**
   * @param {string} executionId validated
   * @param {string} [tenant] validated: whom the caller acts for
   * @returns {Promise<void>}
   */
  async closeHandles(executionId, tenant) {
    await this.#transport.closeHandles(executionId, tenant);
    this.ended(executionId, 'closed');
  }

  /** Settles when every run now in flight has. */
  settledRuns() {
    return Promise.allSettled([...this.#runs.values()].map((r) => r.promise));
  }

  /** Settles when every run and invocation now in flight has. */
  settled() {
    return Promise.allSettled([...this.#runs.values(), ...this.#invocations.values()].map((r) => r.promise));
  }

  /**
   * Ends what is still in flight with `error`. Every retained execution is published as ended
   * with `reason` (the pool is gone), or, with `null`, forgotten without a notice (the
   * carrier is gone but the executions live on, reachable another way).
   * @param {() => unknown} error makes the rejection for each
   * @param {HandlesClosedReason | null} reason
   */
  abandonAll(error, reason) {
    for (const executionId of [...this.#retained.keys()]) {
      if (reason) this.ended(executionId, reason);
      else this.#forget(executionId);
    }
    for (const [id, run] of this.#runs) {
      this.#runs.delete(id);
      run.calls?.drop();
      run.unlisten();
      if (run.aborted) continue;
      const e = error();
      tracing.endRun(run.trace, undefined, e);
      run.reject(e);
    }
    for (const [token, invocation] of this.#invocations) {
      this.#invocations.delete(token);
      invocation.unlisten();
      if (invocation.aborted) continue;
      const e = error();
      tracing.endInvoke(invocation.trace, undefined, e);
      invocation.reject(e);
    }
    this.#holdLoop();
  }

  /**
   * Node stays alive while executions or invocations are in flight (not for retained ones):
   * the one timer that holds the loop open for both carriers. The addon's callbacks and libuv
   * handles are unreferenced (src/lib.rs, src/uv.rs), so without it an awaited run could let
   * Node exit.
   */
  #holdLoop() {
    const busy = this.#runs.size > 0 || this.#invocations.size > 0;
    if (busy && !this.#keepAlive) this.#keepAlive = setInterval(noop, 1 << 30);
    if (!busy && this.#keepAlive) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = null;
    }
  }

  /** Forgets every retained execution without a notice (their carrier is gone; they live on). */
  forgetRetained() {
    for (const executionId of [...this.#retained.keys()]) this.#forget(executionId);
  }

  /** @param {string} executionId */
  #forget(executionId) {
    const held = this.#retained.get(executionId);
    if (!held) return;
    this.#retained.delete(executionId);
    this.#retainedIds.delete(held.id);
  }

  /**
   * Publishes the end of a retained execution, once.
   * @param {string} executionId
   * @param {HandlesClosedReason} reason
   */
  ended(executionId, reason) {
    if (!this.#retained.has(executionId)) return;
    this.#forget(executionId);
    this.#grantSpans.delete(executionId);
    const hook = this.#onHandlesClosed;
    // A throwing hook must not take the executor down with it; it surfaces as Node would.
    if (hook) callHook(hook, { executionId, reason });
  }

  /**
   * Whether run `id` is granted handles and still retained (its id stays in use).
   * @param {number} id
   */
  holds(id) {
    return this.#retainedIds.has(id);
  }

  /**
   * A tool call of a run: its run's ToolCalls (lib/tool-calls.js) holds it to the run's byte
   * budget and dispatch cap, and answers it with the run's dispatch.
   * @param {NativeToolCall} call
   */
  onToolCall(call) {
    const run = this.#runs.get(call.id);
    if (!run || run.aborted) return;
    run.calls ??= new ToolCalls(this.#toolBounds, this.#transport, /** @type {Dispatch} */ (run.dispatch), run.trace, () => !run.aborted && this.#runs.get(call.id) === run);
    run.calls.offer(call);
  }

  /**
   * A fetch of a routed run: the pool performs native ones itself, and a blocked run's fetch
   * rejects inside the sandbox.
   * @param {NativeFetchCall} call
   */
  onFetch(call) {
    const retainedId = this.#retainedIds.get(call.id);
    const run = retainedId !== undefined ? this.#retained.get(retainedId) : this.#runs.get(call.id);
    if (!run) return;
    const transport = this.#transport;
    const span = tracing.startFetch(this.#runs.get(call.id)?.trace ?? null, call.method, call.url);
    /** @param {string} message */
    const reject = (message) => {
      tracing.endChild(span, message);
      transport.rejectFetch(call, message);
    };
    const route = /** @type {OutboundPolicy} */ (run.route);
    const request = { method: call.method, url: call.url, headers: call.headers, body: call.body ? ownBuffer(call.body) : null, redirect: call.redirect };
    Promise.resolve()
      .then(() => tracing.within(span, () => route(request)))
      .then(
        (response) => {
          const checked = validate.wireResponse(response);
          if (typeof checked === 'string') {
            return reject(render('OUTBOUND_INVALID_RESPONSE', { url: call.url, detail: checked }));
          }
          tracing.endChild(span, undefined, checked.status);
          transport.resolveFetch(call, checked);
        },
        (e) => reject(e instanceof Error ? e.message : String(e)),
      );
  }

  /** @param {NativeCompletion} done */
  onDone(done) {
    switch (done.kind) {
      case 'log': {
        const run = this.#runs.get(done.id);
        if (run?.onLog && !run.aborted) callHook(run.onLog, run.tenant === undefined ? { level: done.level, message: done.message } : { level: done.level, message: done.message, tenant: run.tenant });
        return;
      }
      case 'handlesClosed':
        return this.ended(done.executionId, done.reason);
      case 'approve':
        return this.#approve(done.call);
      case 'invoked':
      case 'invokeFailed':
        return this.#onInvoked(done);
      case 'done':
      case 'failed':
        return this.#onEnded(done);
    }
  }

  /** @param {Extract<NativeCompletion, { kind: 'done' | 'failed' }>} done */
  #onEnded(done) {
    const run = this.#runs.get(done.id);
    if (!run) return;
    if (run.hops) run.hops.delivered = hops.now();
    this.#runs.delete(done.id);
    run.calls?.drop();
    this.#holdLoop();
    run.unlisten();
    if (run.aborted) return;
    if (done.kind === 'failed') {
      const error = new ExecutorError(done.fault.code, done.fault.message);
      tracing.endRun(run.trace, undefined, error);
      run.reject(error);
      return;
    }
    const ended = done.outcome;
    /** @type {Outcome} */
    const outcome = { result: undefined, logs: ended.logs, stats: ended.stats, calls: ended.calls };
    if (ended.paused) {
      const { token, pending } = ended.paused;
      /** @type {NonNullable<Outcome['paused']>['pending']} */
      const calls = [];
      for (const c of pending) {
        try {
          calls.push({ id: c.id, provider: c.provider, tool: c.tool, args: /** @type {unknown[]} */ (deserialize(c.args)) });
        } catch (e) {
          // Arguments this Node cannot read (clone.js): no one could approve what they cannot
          // see, so the run ends with the arguments' failure and its token is dropped. Thrown
          // here, it would reach the addon's callback and end the host process.
          const detail = e instanceof Error ? e.message : String(e);
          outcome.error = { code: 'TOOL_ARGS_NOT_CLONEABLE', message: render('TOOL_ARGS_NOT_CLONEABLE', { provider: c.provider, tool: c.tool, detail }) };
          break;
        }
      }
      if (!outcome.error) outcome.paused = { token, pending: calls };
    } else if (ended.grant) {
      const { executionId, handles } = ended.grant;
      this.#retained.set(executionId, { id: done.id, route: run.route });
      this.#retainedIds.set(done.id, executionId);
      const context = tracing.spanContext(run.trace);
      if (context) this.#grantSpans.set(executionId, context);
      outcome.executionId = executionId;
      outcome.handles = handles;
    } else if (ended.error) {
      outcome.error = ended.error;
    } else if (ended.result) {
      try {
        outcome.result = deserialize(ended.result);
      } catch (e) {
        const detail = e instanceof Error ? e.message : String(e);
        outcome.error = { code: 'RESULT_NOT_CLONEABLE', message: render('RESULT_NOT_CLONEABLE', { detail }) };
      }
    }
    if (run.hops) {
      run.hops.decoded = hops.now();
      outcome.stats = { ...outcome.stats, hops: hops.report(run.hops, ended.hops) };
    }
    tracing.endRun(run.trace, outcome, undefined);
    run.resolve(outcome);
  }

  /**
   * A call of a callback-mode run that needs approval: the run's `decide` is awaited (for at
   * most its approval's timeout) while the run waits, and its answer goes to the pool. A throw,
   * or an answer that is not `{ approved }`, denies the call with what went wrong as the reason.
   * @param {NativeToolCall} call
   */
  #approve(call) {
    const run = this.#runs.get(call.id);
    const transport = this.#transport;
    if (!run || run.aborted) {
      // Nobody waits for the run any more: denied at once, so its worker is not held.
      try {
        transport.decide(call.id, call.callId, false, 'the run was aborted');
      } catch {
        // The carrier is gone: the run ends with it.
      }
      return;
    }
    let settled = false;
    /** @param {boolean} approved @param {string | undefined} reason */
    const answer = (approved, reason) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        transport.decide(call.id, call.callId, approved, reason);
      } catch {
        // The carrier is gone: the run ends with it.
      }
    };
    const ms = run.decideTimeout;
    const timer = setTimeout(() => answer(false, `no decision came within ${ms} ms`), ms);
    const decide = /** @type {import('../index').Decide} */ (run.decide);
    Promise.resolve()
      .then(() => decide({ provider: call.provider, tool: call.tool, args: /** @type {unknown[]} */ (deserialize(call.args)) }))
      .then(
        (d) => {
          try {
            const { approved, reason } = validate.decision('INVALID_REQUEST', 'decide()', d);
            answer(approved, reason);
          } catch (e) {
            answer(false, e instanceof Error ? e.message : String(e));
          }
        },
        (e) => answer(false, e instanceof Error ? e.message : String(e)),
      );
  }

  /** @param {Extract<NativeCompletion, { kind: 'invoked' | 'invokeFailed' }>} done */
  #onInvoked(done) {
    const invocation = this.#invocations.get(done.invocation);
    if (!invocation) return;
    this.#invocations.delete(done.invocation);
    this.#holdLoop();
    invocation.unlisten();
    if (invocation.aborted) return;
    if (done.kind === 'invokeFailed') {
      const error = new ExecutorError(done.fault.code, done.fault.message);
      tracing.endInvoke(invocation.trace, undefined, error);
      invocation.reject(error);
      return;
    }
    const r = done.response;
    tracing.endInvoke(invocation.trace, r.status, undefined);
    // Exactly the four wire fields; the body as an ArrayBuffer of its own.
    invocation.resolve({ status: r.status, statusText: r.statusText, headers: r.headers, body: r.body ? ownBuffer(r.body) : null });
  }
}

/**
 * A promise with its settle functions.
 * @template T
 * @typedef {{ promise: Promise<T>, resolve: (value: T) => void, reject: (error: unknown) => void }} Deferred
 */

/**
 * @template T
 * @returns {Deferred<T>}
 */
function deferred() {
  let resolve = /** @type {(value: T) => void} */ (noop);
  let reject = /** @type {(error: unknown) => void} */ (noop);
  /** @type {Promise<T>} */
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * The bytes of `view` in an ArrayBuffer of their own (an addon or socket Buffer may share its
 * memory with others; it is never a SharedArrayBuffer).
 * @param {Uint8Array} view
 * @returns {ArrayBuffer}
 */
function ownBuffer(view) {
  return /** @type {ArrayBuffer} */ (view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength));
}

module.exports = { ExecutorCore };
