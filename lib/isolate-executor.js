// @ts-check
'use strict';
// IsolateExecutor: the native executor. A pool of codemode-worker processes runs each program
// in a fresh V8 isolate; this class validates input, routes tool calls to the host's dispatch
// and routed fetches to the outbound policy, and turns the pool's completions into outcomes.

const fs = require('node:fs');
const path = require('node:path');
const { loadNative } = require('./native');
const { ExecutorError, fault, fromNative, render } = require('./errors');
const { serialize, deserialize } = require('./clone');
const validate = require('./validate');

/**
 * @typedef {import('../index').Outcome} Outcome
 * @typedef {import('../index').OutboundPolicy} OutboundPolicy
 * @typedef {import('../index').Dispatch} Dispatch
 * @typedef {import('../native').NativePool} NativePool
 * @typedef {import('../native').NativeToolCall} NativeToolCall
 * @typedef {import('../native').NativeFetchCall} NativeFetchCall
 * @typedef {import('../native').NativeCompletion} NativeCompletion
 * @typedef {import('../native').NativeWireResponse} NativeWireResponse
 *
 * An execution in flight.
 * @typedef {object} Run
 * @property {(outcome: Outcome) => void} resolve
 * @property {(error: unknown) => void} reject
 * @property {Dispatch | undefined} dispatch
 * @property {OutboundPolicy | undefined} route the policy of a routed run
 * @property {Promise<Outcome>} promise
 *
 * A retained execution (docs/handles.md): its pool execution id, and the policy its handlers'
 * routed fetches go to.
 * @typedef {object} Held
 * @property {number} id
 * @property {OutboundPolicy | undefined} route
 *
 * An invocation in flight.
 * @typedef {object} Invocation
 * @property {(response: import('../index').WireResponse) => void} resolve
 * @property {(error: unknown) => void} reject
 */

const CLOSE_GRACE_MS = 2000;
const noop = () => {};

class IsolateExecutor {
  /** @type {NativePool} */
  #native;
  /** @type {import('./validate').ValidOptions} */
  #options;
  /** The bound the pool holds tool payloads to (the worker applies it to arguments). */
  #toolPayloadBytes;
  /** @type {Map<number, Run>} execution id -> run */
  #runs = new Map();
  /** @type {Map<string, Held>} executionId -> retained execution */
  #retained = new Map();
  /** @type {Map<number, string>} pool execution id -> executionId of a retained execution */
  #retainedIds = new Map();
  /** @type {Map<number, Invocation>} invocation token -> invocation in flight */
  #invocations = new Map();
  #nextInvocation = 1;
  /** @type {ReturnType<typeof setInterval> | null} */
  #keepAlive = null;
  #closed = false;
  /** @type {Promise<void> | 'done' | null} */
  #closing = null;

  /** @param {import('../index').IsolateExecutorOptions} [options] */
  constructor(options) {
    const { binding, dir } = loadNative();
    const opts = validate.options(options, path.join(dir, 'codemode-worker'));
    if (!fs.existsSync(opts.workerPath)) throw fault('WORKER_NOT_FOUND', { path: opts.workerPath });
    this.#options = opts;
    try {
      this.#native = new binding.NativePool(
        opts,
        (call) => this.#onToolCall(call),
        (call) => this.#onFetch(call),
        (done) => this.#onDone(done),
      );
    } catch (e) {
      throw fromNative(e);
    }
    this.#toolPayloadBytes = this.#native.limits().toolPayloadBytes;
  }

  /**
   * @param {import('../index').ExecuteRequest} request
   * @returns {Promise<Outcome>}
   */
  execute(request) {
    if (this.#closed) return Promise.reject(fault('CLOSED'));
    let checked;
    try {
      checked = validate.request(request, this.#options.outbound);
    } catch (e) {
      return Promise.reject(e);
    }
    let id;
    try {
      id = this.#native.execute(checked);
    } catch (e) {
      return Promise.reject(fromNative(e));
    }
    let resolve = /** @type {Run['resolve']} */ (noop);
    let reject = /** @type {Run['reject']} */ (noop);
    /** @type {Promise<Outcome>} */
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.#runs.set(id, { resolve, reject, dispatch: checked.dispatch, route: checked.route, promise });
    this.#holdLoop();
    return promise;
  }

  /**
   * Calls handle `name` of a retained execution with a WireRequest.
   * @param {string} executionId
   * @param {string} name
   * @param {import('../index').WireRequest} request
   * @returns {Promise<import('../index').WireResponse>}
   */
  invokeHandle(executionId, name, request) {
    let native;
    try {
      executionId = validate.executionId(executionId);
      name = validate.handleName(name);
      native = validate.wireRequest(request);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#closing === 'done') return Promise.reject(fault('HANDLES_CLOSED', { id: executionId }));
    const token = this.#nextInvocation++;
    if (this.#nextInvocation > 0xffff_fff0) this.#nextInvocation = 1;
    try {
      this.#native.invokeHandle(executionId, name, native, token);
    } catch (e) {
      return Promise.reject(fromNative(e));
    }
    return new Promise((resolve, reject) => {
      this.#invocations.set(token, { resolve, reject });
      this.#holdLoop();
    });
  }

  /**
   * Ends a retained execution: its isolate is disposed and its worker returns to rotation.
   * @param {string} executionId
   * @returns {Promise<void>}
   */
  closeHandles(executionId) {
    try {
      executionId = validate.executionId(executionId);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#closing === 'done') return Promise.reject(fault('HANDLES_CLOSED', { id: executionId }));
    try {
      this.#native.closeHandles(executionId);
    } catch (e) {
      return Promise.reject(fromNative(e));
    }
    this.#ended(executionId, 'closed');
    return Promise.resolve();
  }

  /** Counts of workers and executions, retained ones included. */
  stats() {
    if (this.#closing === 'done') return { workers: 0, idle: 0, running: 0, queued: 0, retained: 0 };
    return this.#native.stats();
  }

  /** Node stays alive while executions or invocations are in flight (not for retained ones). */
  #holdLoop() {
    const busy = this.#runs.size > 0 || this.#invocations.size > 0;
    if (busy && !this.#keepAlive) this.#keepAlive = setInterval(noop, 1 << 30);
    if (!busy && this.#keepAlive) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = null;
    }
  }

  /**
   * Publishes the end of a retained execution, once.
   * @param {string} executionId
   * @param {import('../index').HandlesClosedReason} reason
   */
  #ended(executionId, reason) {
    const held = this.#retained.get(executionId);
    if (!held) return;
    this.#retained.delete(executionId);
    this.#retainedIds.delete(held.id);
    const hook = this.#options.onHandlesClosed;
    if (hook) {
      try {
        hook({ executionId, reason });
      } catch (e) {
        // A throwing hook must not take the executor down with it; surface it as Node would.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
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
    this.#closing = Promise.allSettled([...this.#runs.values()].map((r) => r.promise)).then(() => {
      this.#native.shutdown(CLOSE_GRACE_MS);
      this.#closing = 'done';
      for (const executionId of [...this.#retained.keys()]) this.#ended(executionId, 'pool-closed');
      for (const [token, invocation] of this.#invocations) {
        this.#invocations.delete(token);
        invocation.reject(fault('CLOSED'));
      }
      this.#holdLoop();
    });
    return this.#closing;
  }

  /** @param {NativeToolCall} call */
  #onToolCall(call) {
    const run = this.#runs.get(call.id);
    if (!run) return;
    /** @param {unknown} e */
    const fail = (e) => this.#native.rejectToolCall(call.id, call.callId, e instanceof Error ? e.message : String(e));
    /** @param {unknown} value */
    const succeed = (value) => {
      let bytes;
      try {
        bytes = serialize(value);
      } catch (e) {
        const detail = e instanceof Error ? e.message : String(e);
        return fail(render('TOOL_RESULT_NOT_CLONEABLE', { provider: call.provider, tool: call.tool, detail }));
      }
      if (bytes.length > this.#toolPayloadBytes) {
        const text = render('TOOL_PAYLOAD_TOO_LARGE', { what: 'answer', provider: call.provider, tool: call.tool, size: bytes.length, limit: this.#toolPayloadBytes });
        return fail(text);
      }
      this.#native.resolveToolCall(call.id, call.callId, bytes);
    };
    let returned;
    try {
      const args = /** @type {unknown[]} */ (deserialize(call.args)); // the worker sends the arguments array
      // A run with providers has a dispatch (validate.request); the pool only calls their tools.
      returned = /** @type {Dispatch} */ (run.dispatch)({ provider: call.provider, tool: call.tool, args });
    } catch (e) {
      return fail(e);
    }
    if (returned !== null && typeof returned === 'object' && typeof /** @type {{ then?: unknown }} */ (returned).then === 'function') {
      Promise.resolve(returned).then(succeed, fail);
    } else {
      succeed(returned);
    }
  }

  /**
   * A fetch of a routed run: the pool performs native ones itself, and a blocked run's fetch
   * rejects inside the sandbox.
   * @param {NativeFetchCall} call
   */
  #onFetch(call) {
    const retainedId = this.#retainedIds.get(call.id);
    const run = retainedId !== undefined ? this.#retained.get(retainedId) : this.#runs.get(call.id);
    if (!run) return;
    /** @param {string} message */
    const reject = (message) => this.#native.rejectFetch(call.id, call.callId, message);
    const route = /** @type {OutboundPolicy} */ (run.route);
    // An addon Buffer's memory is a plain ArrayBuffer, never shared.
    const body = call.body ? /** @type {ArrayBuffer} */ (call.body.buffer.slice(call.body.byteOffset, call.body.byteOffset + call.body.byteLength)) : null;
    const request = { method: call.method, url: call.url, headers: call.headers, body };
    Promise.resolve()
      .then(() => route(request))
      .then(
        (response) => {
          const checked = checkWireResponse(response);
          if (typeof checked === 'string') {
            return reject(render('OUTBOUND_INVALID_RESPONSE', { url: call.url, detail: checked }));
          }
          this.#native.resolveFetch(call.id, call.callId, checked);
        },
        (e) => reject(e instanceof Error ? e.message : String(e)),
      );
  }

  /** @param {NativeCompletion} done */
  #onDone(done) {
    if (done.closed) {
      this.#ended(done.closed.executionId, /** @type {import('../index').HandlesClosedReason} */ (done.closed.reason));
      return;
    }
    if (done.invocation !== undefined && done.invocation !== null) {
      this.#onInvoked(done.invocation, done);
      return;
    }
    const run = this.#runs.get(done.id);
    if (!run) return;
    this.#runs.delete(done.id);
    this.#holdLoop();
    if (done.fault) {
      run.reject(new ExecutorError(done.fault.code, done.fault.message));
      return;
    }
    // A completion holds either a fault or an outcome.
    const ended = /** @type {import('../native').NativeOutcome} */ (done.outcome);
    /** @type {Outcome} */
    const outcome = { result: undefined, logs: ended.logs, stats: ended.stats };
    if (ended.grant) {
      const { executionId, handles } = ended.grant;
      this.#retained.set(executionId, { id: done.id, route: run.route });
      this.#retainedIds.set(done.id, executionId);
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
    run.resolve(outcome);
  }

  /**
   * @param {number} token
   * @param {NativeCompletion} done
   */
  #onInvoked(token, done) {
    const invocation = this.#invocations.get(token);
    if (!invocation) return;
    this.#invocations.delete(token);
    this.#holdLoop();
    if (done.fault || !done.response) {
      const f = done.fault ?? { code: 'INTERNAL', message: render('INTERNAL', { detail: 'an invocation ended without an answer' }) };
      invocation.reject(new ExecutorError(f.code, f.message));
      return;
    }
    const r = done.response;
    // Exactly the four wire fields; the body as an ArrayBuffer of its own.
    invocation.resolve({
      status: r.status,
      statusText: r.statusText,
      headers: r.headers,
      body: r.body ? /** @type {ArrayBuffer} */ (r.body.buffer.slice(r.body.byteOffset, r.body.byteOffset + r.body.byteLength)) : null,
    });
  }
}

module.exports = { IsolateExecutor };

/**
 * The policy's answer as the addon takes it, or a description of what is wrong with it.
 * @param {unknown} r
 * @returns {NativeWireResponse | string}
 */
function checkWireResponse(r) {
  if (r === null || typeof r !== 'object') return `got ${r === null ? 'null' : typeof r}, not an object`;
  const { status, statusText = '', headers = [], body = null } = /** @type {Record<string, unknown>} */ (r);
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) return '`status` must be an integer from 100 to 599';
  if (typeof statusText !== 'string') return '`statusText` must be a string';
  if (!Array.isArray(headers) || !headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string')) {
    return '`headers` must be an array of [name, value] string pairs';
  }
  let bytes;
  if (body === null) bytes = undefined;
  else if (body instanceof ArrayBuffer) bytes = Buffer.from(body);
  else if (ArrayBuffer.isView(body)) bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  else return '`body` must be an ArrayBuffer or null';
  return { status, statusText, headers: headers.map(([k, v]) => /** @type {[string, string]} */ ([k, v])), body: bytes };
}
