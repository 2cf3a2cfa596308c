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
    if (this.#runs.size === 0) this.#keepAlive = setInterval(noop, 1 << 30);
    this.#runs.set(id, { resolve, reject, dispatch: checked.dispatch, route: checked.route, promise });
    return promise;
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
    const run = this.#runs.get(call.id);
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
    const run = this.#runs.get(done.id);
    if (!run) return;
    this.#runs.delete(done.id);
    if (this.#runs.size === 0 && this.#keepAlive) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = null;
    }
    if (done.fault) {
      run.reject(new ExecutorError(done.fault.code, done.fault.message));
      return;
    }
    // A completion holds either a fault or an outcome.
    const ended = /** @type {import('../native').NativeOutcome} */ (done.outcome);
    /** @type {Outcome} */
    const outcome = { result: undefined, logs: ended.logs, stats: ended.stats };
    if (ended.error) {
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
