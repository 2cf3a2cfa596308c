// @ts-check
'use strict';
// IsolateExecutor: the native executor. A pool of codemode-worker processes runs each program
// in a fresh V8 isolate; this class validates input and carries requests to the in-process
// pool. What the host does with tool calls, routed fetches and completions is the executor
// core's (lib/executor-core.js), shared with connect()'s remote executor.

const fs = require('node:fs');
const path = require('node:path');
const { loadNative } = require('./native');
const { fault, fromNative } = require('./errors');
const { ExecutorCore } = require('./executor-core');
const validate = require('./validate');
const { checkValueFormat } = require('./clone');
const hops = require('./hops');

/** @typedef {import('../native').NativePool} NativePool */

const CLOSE_GRACE_MS = 2000;

/**
 * Calls the addon, turning an error it throws into an ExecutorError.
 * @template T
 * @param {() => T} call
 * @returns {T}
 */
function native(call) {
  try {
    return call();
  } catch (e) {
    throw fromNative(e);
  }
}

class IsolateExecutor {
  /** @type {NativePool} */
  #native;
  /** @type {import('./validate').ValidOptions} */
  #options;
  /** @type {ExecutorCore} */
  #core;
  #closed = false;
  /** @type {Promise<void> | 'done' | null} */
  #closing = null;

  /** @param {import('../index').IsolateExecutorOptions} [options] */
  constructor(options) {
    const { binding, dir } = loadNative();
    const opts = validate.options(options, path.join(dir, 'codemode-worker'));
    if (!fs.existsSync(opts.workerPath)) throw fault('WORKER_NOT_FOUND', { path: opts.workerPath });
    checkValueFormat();
    this.#options = opts;
    const pool = native(
      () =>
        new binding.NativePool(
          opts,
          (call) => this.#core.onToolCall(call),
          (call) => this.#core.onFetch(call),
          (done) => this.#core.onDone(done),
        ),
    );
    this.#native = pool;
    this.#core = new ExecutorCore(
      {
        execute: (request) => native(() => pool.execute(request)),
        abort: (id) => pool.abort(id),
        invokeHandle: (executionId, name, request, token, tenant) => {
          const number = native(() => pool.invokeHandle(executionId, name, request, token, tenant));
          return () => pool.abortInvocation(number);
        },
        closeHandles: (executionId, tenant) => native(() => pool.closeHandles(executionId, tenant)),
        resolveToolCall: (call, value) => pool.resolveToolCall(call.id, call.callId, value),
        rejectToolCall: (call, message) => pool.rejectToolCall(call.id, call.callId, message),
        denyToolCall: (call, message) => pool.denyToolCall(call.id, call.callId, message),
        resolveFetch: (call, response) => pool.resolveFetch(call.id, call.callId, response),
        rejectFetch: (call, message) => pool.rejectFetch(call.id, call.callId, message),
        // A resumed run gets the tighter of its token's bounds and this executor's.
        resume: (request) => native(() => pool.resume(request.token, request.decisions, request.route !== undefined, request.liveLogs, { outbound: request.outbound, ...opts.budgets }, request.tenant)),
        decide: (id, callId, approved, reason) => pool.decide(id, callId, approved, reason),
      },
      pool.limits().toolPayloadBytes,
      opts.onHandlesClosed,
    );
  }

  /**
   * @param {import('../index').ExecuteRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  execute(request) {
    if (this.#closed) return Promise.reject(fault('CLOSED'));
    const entry = this.#options.hops ? hops.now() : 0;
    let checked;
    try {
      checked = validate.request(request, this.#options.outbound, this.#options.budgets);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#core.execute(checked, entry ? { entry, validated: hops.now() } : null);
  }

  /**
   * Resumes a run paused for approval (docs/approvals.md) with a decision per pending call.
   * @param {import('../index').ResumeRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  resume(request) {
    if (this.#closed) return Promise.reject(fault('CLOSED'));
    let checked;
    try {
      checked = validate.resume(request, this.#options.outbound);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#core.resume(checked);
  }

  /**
   * Calls handle `name` of a retained execution with a WireRequest.
   * @param {string} executionId
   * @param {string} name
   * @param {import('../index').WireRequest} request
   * @param {import('../index').InvokeOptions} [options]
   * @returns {Promise<import('../index').WireResponse>}
   */
  invokeHandle(executionId, name, request, options) {
    let wire;
    let signal;
    let tenant;
    try {
      executionId = validate.executionId(executionId);
      name = validate.handleName(name);
      wire = validate.wireRequest(request);
      ({ signal, tenant } = validate.invokeOptions(options));
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#closing === 'done') return Promise.reject(fault('HANDLES_CLOSED', { id: executionId }));
    return this.#core.invokeHandle(executionId, name, wire, signal, tenant);
  }

  /**
   * Ends a retained execution: its isolate is disposed and its worker returns to rotation.
   * @param {string} executionId
   * @param {import('../index').CloseHandlesOptions} [options]
   * @returns {Promise<void>}
   */
  closeHandles(executionId, options) {
    let tenant;
    try {
      executionId = validate.executionId(executionId);
      ({ tenant } = validate.closeOptions(options));
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#closing === 'done') return Promise.reject(fault('HANDLES_CLOSED', { id: executionId }));
    return this.#core.closeHandles(executionId, tenant);
  }

  /** Counts of workers and executions, retained ones included. */
  stats() {
    if (this.#closing === 'done') return { workers: 0, idle: 0, running: 0, queued: 0, retained: 0 };
    return this.#native.stats();
  }

  /**
   * The pool's metrics (docs/operations.md): each with its samples now, or, with
   * `'prometheus'`, all of them in the Prometheus text format.
   * @param {'prometheus'} [format]
   * @returns {any}
   */
  metrics(format) {
    validate.metricsFormat(format);
    if (this.#closing === 'done') return format ? '' : [];
    if (format) return this.#native.metricsText();
    return this.#native.metrics().map((m) => ({ ...m, samples: m.samples.map((s) => ({ name: s.name, labels: Object.fromEntries(s.labels), value: s.value })) }));
  }

  /** Process ids of the live worker processes (for supervision and diagnostics). */
  workerPids() {
    return this.#closed && this.#closing === 'done' ? [] : this.#native.workerPids();
  }

  /** Refuses new executions, lets queued and running ones finish, then stops every worker. */
  close() {
    if (this.#closing) return this.#closing === 'done' ? Promise.resolve() : this.#closing;
    this.#closed = true;
    this.#native.close();
    this.#closing = this.#core.settledRuns().then(() => {
      this.#native.shutdown(CLOSE_GRACE_MS);
      this.#closing = 'done';
      this.#core.abandonAll(() => fault('CLOSED'), 'pool-closed');
    });
    return this.#closing;
  }
}

module.exports = { IsolateExecutor };
