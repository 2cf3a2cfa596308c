'use strict';
// IsolateExecutor: the native executor. A pool of codemode-worker processes runs each program
// in a fresh V8 isolate; this class validates input, routes tool calls to the host's dispatch,
// and turns the pool's completions into outcomes.

const fs = require('node:fs');
const path = require('node:path');
const { loadNative } = require('./native');
const { ExecutorError, fault, render } = require('./errors');
const { serialize, deserialize } = require('./clone');
const validate = require('./validate');

const CLOSE_GRACE_MS = 2000;
const OUTBOUND_NATIVE = 0;
const OUTBOUND_BLOCKED = 1;
const OUTBOUND_ROUTED = 2;
// The same bound the worker applies to tool arguments (crates/protocol limits).
let TOOL_PAYLOAD_BYTES = 0;
const noop = () => {};

class IsolateExecutor {
  #native;
  #options;
  #runs = new Map(); // execution id -> { resolve, reject, dispatch, promise }
  #keepAlive = null;
  #closed = false;
  #closing = null;

  /** @param {import('../index').IsolateExecutorOptions} [options] */
  constructor(options) {
    const opts = validate.options(options);
    const { binding, dir } = loadNative();
    TOOL_PAYLOAD_BYTES = binding.limits().toolPayloadBytes;
    const workerPath = opts.workerPath ?? path.join(dir, 'codemode-worker');
    if (!fs.existsSync(workerPath)) throw fault('WORKER_NOT_FOUND', { path: workerPath });
    this.#options = opts;
    try {
      this.#native = new binding.NativePool(
        {
          workers: opts.workers,
          workerPath,
          queueBound: opts.queueBound,
          timeout: opts.timeout,
          memoryLimit: opts.memoryLimit,
        },
        (call) => this.#onToolCall(call),
        (call) => this.#onFetch(call),
        (done) => this.#onDone(done),
      );
    } catch (e) {
      // The pool reports "CODE: text".
      const m = /^([A-Z_]+): ([\s\S]*)$/.exec(e.message);
      if (m) throw new ExecutorError(m[1], m[2]);
      throw e;
    }
  }

  /**
   * @param {import('../index').ExecuteRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  execute(request) {
    if (this.#closed) return Promise.reject(fault('CLOSED'));
    let checked;
    try {
      checked = validate.request(request);
    } catch (e) {
      return Promise.reject(e);
    }
    const policy = 'outbound' in request ? request.outbound : this.#options.outbound;
    checked.native.outbound = policy === undefined ? OUTBOUND_NATIVE : policy === null ? OUTBOUND_BLOCKED : OUTBOUND_ROUTED;
    const accepted = this.#native.execute(checked.native);
    if (accepted.id == null) {
      return Promise.reject(new ExecutorError(accepted.faultCode, accepted.faultMessage));
    }
    let entry;
    const promise = new Promise((resolve, reject) => {
      entry = { resolve, reject, dispatch: checked.dispatch, outbound: typeof policy === 'function' ? policy : null };
    });
    entry.promise = promise;
    if (this.#runs.size === 0) this.#keepAlive = setInterval(noop, 1 << 30);
    this.#runs.set(accepted.id, entry);
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

  #onToolCall(call) {
    const entry = this.#runs.get(call.id);
    if (!entry) return;
    const answer = (ok, payload) => this.#native.answerToolCall(call.id, call.callId, ok, payload);
    const fail = (e) => answer(false, Buffer.from(e instanceof Error ? e.message : String(e)));
    const succeed = (value) => {
      let bytes;
      try {
        bytes = serialize(value);
      } catch (e) {
        const text = render('TOOL_RESULT_NOT_CLONEABLE', { provider: call.provider, tool: call.tool, detail: e.message });
        return answer(false, Buffer.from(text));
      }
      if (bytes.length > TOOL_PAYLOAD_BYTES) {
        const text = render('TOOL_PAYLOAD_TOO_LARGE', { what: 'answer', provider: call.provider, tool: call.tool, size: bytes.length, limit: TOOL_PAYLOAD_BYTES });
        return answer(false, Buffer.from(text));
      }
      answer(true, bytes);
    };
    let returned;
    try {
      const args = deserialize(call.args);
      returned = entry.dispatch({ provider: call.provider, tool: call.tool, args });
    } catch (e) {
      return fail(e);
    }
    if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
      Promise.resolve(returned).then(succeed, fail);
    } else {
      succeed(returned);
    }
  }

  #onFetch(call) {
    const entry = this.#runs.get(call.id);
    if (!entry) return;
    const reject = (message) => this.#native.answerFetch(call.id, call.callId, undefined, message);
    if (!entry.outbound) return reject(render('NETWORK_CLOSED'));
    const request = {
      method: call.method,
      url: call.url,
      headers: call.headers.map(([k, v]) => [k, v]),
      body: call.body ? call.body.buffer.slice(call.body.byteOffset, call.body.byteOffset + call.body.byteLength) : null,
    };
    Promise.resolve()
      .then(() => entry.outbound(request))
      .then(
        (response) => {
          const checked = checkWireResponse(response);
          if (typeof checked === 'string') {
            return reject(render('OUTBOUND_INVALID_RESPONSE', { url: call.url, detail: checked }));
          }
          this.#native.answerFetch(call.id, call.callId, checked, undefined);
        },
        (e) => reject(e instanceof Error ? e.message : String(e)),
      );
  }

  #onDone(done) {
    const entry = this.#runs.get(done.id);
    if (!entry) return;
    this.#runs.delete(done.id);
    if (this.#runs.size === 0 && this.#keepAlive) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = null;
    }
    if (done.faultCode) {
      entry.reject(new ExecutorError(done.faultCode, done.faultMessage));
      return;
    }
    const outcome = { result: undefined, logs: done.logs, stats: done.stats };
    if (done.errorCode) {
      outcome.error = { code: done.errorCode, message: done.errorMessage };
    } else if (done.result) {
      try {
        outcome.result = deserialize(done.result);
      } catch (e) {
        outcome.error = { code: 'RESULT_NOT_CLONEABLE', message: render('RESULT_NOT_CLONEABLE', { detail: e.message }) };
      }
    }
    entry.resolve(outcome);
  }
}

module.exports = { IsolateExecutor };

/** The policy's answer as the addon takes it, or a description of what is wrong with it. */
function checkWireResponse(r) {
  if (r === null || typeof r !== 'object') return `got ${r === null ? 'null' : typeof r}, not an object`;
  const { status, statusText = '', headers = [], body = null } = r;
  if (!Number.isInteger(status) || status < 100 || status > 599) return '`status` must be an integer from 100 to 599';
  if (typeof statusText !== 'string') return '`statusText` must be a string';
  if (!Array.isArray(headers) || !headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string')) {
    return '`headers` must be an array of [name, value] string pairs';
  }
  let bytes;
  if (body === null) bytes = undefined;
  else if (body instanceof ArrayBuffer) bytes = Buffer.from(body);
  else if (ArrayBuffer.isView(body)) bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  else return '`body` must be an ArrayBuffer or null';
  return { status, statusText, headers: headers.map(([k, v]) => [k, v]), body: bytes };
}
