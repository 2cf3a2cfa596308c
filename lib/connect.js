// @ts-check
'use strict';
// connect(): the client side of the executor protocol (docs/protocol.md). A RemoteExecutor has
// the native executor's methods; its requests travel to a daemon over one WebSocket, and the
// daemon's tool calls and routed fetches come back over it to run here, in the caller's process,
// through the same executor core as IsolateExecutor's (lib/executor-core.js).

const { ExecutorError, fault } = require('./errors');
const { ExecutorCore } = require('./executor-core');
const { loadNative } = require('./native');
const validate = require('./validate');

/**
 * @typedef {import('../index').ConnectOptions} ConnectOptions
 * @typedef {import('../index').RemoteStats} RemoteStats
 * @typedef {import('../native').NativeCompletion} NativeCompletion
 *
 * The part of the WHATWG WebSocket interface the client uses (the `ws` package has it too).
 * @typedef {object} Socket
 * @property {string} binaryType
 * @property {number} readyState
 * @property {(data: string | Uint8Array) => void} send
 * @property {(code?: number, reason?: string) => void} close
 * @property {(type: string, listener: (event: any) => void) => void} addEventListener
 *
 * A request waiting for its final answer, by wire id.
 * @typedef {{ kind: 'run' } | { kind: 'invoke', token: number } | { kind: 'close' | 'stats', resolve: (value: any) => void, reject: (error: unknown) => void }} Pending
 *
 * One message as received: its JSON, and the payload of a binary message.
 * @typedef {{ msg: Record<string, any>, payload: Buffer | undefined }} Received
 */

const SUBPROTOCOL = 'codemode-executor';
const TOKEN_SUBPROTOCOL = 'codemode-executor.token.';
const OPEN = 1;
const MAX_ID = 0xffff_ffff;

/** The protocol version this client speaks (the daemon crate's `PROTOCOL`, through the addon). */
function protocolVersion() {
  return loadNative().binding.executorProtocol();
}

/**
 * A message in the protocol's framing: JSON text, or, with a payload, a binary message of the
 * header's length (u32, big-endian), the header, and the payload.
 * @param {Record<string, unknown>} header
 * @param {Uint8Array} [payload]
 * @returns {string | Buffer}
 */
function frame(header, payload) {
  const json = JSON.stringify(header);
  if (!payload) return json;
  const head = Buffer.from(json);
  const out = Buffer.allocUnsafe(4 + head.length + payload.byteLength);
  out.writeUInt32BE(head.length, 0);
  head.copy(out, 4);
  out.set(payload, 4 + head.length);
  return out;
}

/**
 * @param {unknown} data a message event's data
 * @returns {Received | string} the message, or what is wrong with it
 */
function unframe(data) {
  let json;
  /** @type {Buffer | undefined} */
  let payload;
  if (typeof data === 'string') json = data;
  else {
    const bytes = data instanceof ArrayBuffer ? Buffer.from(data) : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : null;
    if (!bytes) return `a message of type ${typeof data}`;
    if (bytes.length < 4) return `a binary message of ${bytes.length} bytes, shorter than its header length`;
    const length = bytes.readUInt32BE(0);
    if (length > bytes.length - 4) return `a binary message whose header length ${length} passes its end`;
    json = bytes.toString('utf8', 4, 4 + length);
    payload = bytes.subarray(4 + length);
  }
  let msg;
  try {
    msg = JSON.parse(json);
  } catch {
    return 'a message that is not JSON';
  }
  if (msg === null || typeof msg !== 'object' || typeof msg.type !== 'string') return 'a message without a type';
  return { msg, payload };
}

/** @param {string} token */
function tokenProtocol(token) {
  return TOKEN_SUBPROTOCOL + Buffer.from(token, 'utf8').toString('base64url');
}

/**
 * Opens a connection to a daemon and resolves once it has welcomed this client.
 * @param {string} url
 * @param {ConnectOptions} [options]
 * @returns {Promise<RemoteExecutor>}
 */
function connect(url, options) {
  let opts;
  try {
    opts = validate.connectOptions(url, options);
  } catch (e) {
    return Promise.reject(e);
  }
  const { WebSocketClass, token, connectTimeout } = opts;
  url = opts.url;
  return new Promise((resolve, reject) => {
    /** @param {string} detail */
    const unreachable = (detail) => fault('DAEMON_UNREACHABLE', { url, detail });
    /** @type {Socket} */
    let socket;
    try {
      socket = new WebSocketClass(url, token ? [SUBPROTOCOL, tokenProtocol(token)] : [SUBPROTOCOL]);
      socket.binaryType = 'arraybuffer';
    } catch (e) {
      reject(unreachable(e instanceof Error ? e.message : String(e)));
      return;
    }
    let settled = false;
    /** @param {unknown} error */
    const fail = (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(error);
      try {
        socket.close();
      } catch {
        // already closing
      }
    };
    const timer = setTimeout(() => fail(unreachable(`no welcome within ${connectTimeout} ms`)), connectTimeout);
    /** @type {unknown} */
    let refusal = null;
    let errorDetail = '';
    socket.addEventListener('open', () => {
      socket.send(frame({ type: 'hello', protocol: protocolVersion(), client: 'codemode-executor (node)' }));
    });
    socket.addEventListener('error', (event) => {
      errorDetail = event?.message || event?.error?.message || 'the socket failed';
    });
    socket.addEventListener('message', (event) => {
      if (settled) return;
      const received = unframe(event.data);
      if (typeof received === 'string') return fail(fault('PROTOCOL_ERROR', { detail: `the daemon sent ${received}` }));
      const { msg } = received;
      if (msg.type === 'welcome') {
        settled = true;
        clearTimeout(timer);
        resolve(new RemoteExecutor(socket, opts, msg));
      } else if (msg.type === 'refused' || msg.type === 'error') {
        refusal = new ExecutorError(String(msg.code), String(msg.message));
      } else {
        fail(fault('PROTOCOL_ERROR', { detail: `the daemon sent ${JSON.stringify(msg.type)} before its welcome` }));
      }
    });
    socket.addEventListener('close', (event) => {
      if (refusal) return fail(refusal);
      const why = closeDetail(event, errorDetail || 'the connection closed during the handshake');
      fail(unreachable(why));
    });
  });
}

/**
 * @param {{ code?: number, reason?: string } | undefined} event
 * @param {string} fallback
 */
function closeDetail(event, fallback) {
  const code = event?.code;
  const reason = event?.reason;
  if (code === undefined || code === 1005 || code === 1006) return fallback;
  return reason ? `close code ${code}: ${reason}` : `close code ${code}`;
}

class RemoteExecutor {
  /** @type {Socket} */
  #socket;
  #url;
  /** @type {ExecutorCore} */
  #core;
  /** @type {Map<number, Pending>} wire id -> request waiting for its answer */
  #pending = new Map();
  #nextId = 1;
  /** @type {ExecutorError | null} set once the connection is gone: what later calls reject with */
  #lost = null;
  #closed = false;
  /** @type {Promise<void> | null} */
  #closing = null;
  /** @type {() => void} */
  #onClosed = () => {};
  #daemon;
  #name;
  #limits;
  /** @type {import('../index').OutboundPolicy | null | undefined} */
  #outbound;

  /**
   * Use `connect()`.
   * @param {Socket} socket an open socket the daemon has welcomed
   * @param {import('./validate').ValidConnect} opts
   * @param {Record<string, any>} welcome
   */
  constructor(socket, opts, welcome) {
    this.#socket = socket;
    this.#url = opts.url;
    this.#outbound = opts.outbound;
    this.#daemon = String(welcome.daemon);
    this.#name = String(welcome.name);
    this.#limits = welcome.limits ?? {};
    const send = this.#send.bind(this);
    this.#core = new ExecutorCore(
      {
        execute: (request) => {
          const id = this.#request({ kind: 'run' });
          const providers = request.providers.map((p) => ({ name: p.name, tools: p.tools ?? null }));
          const { code, modules, timeout, memoryLimit, outbound, retainHandles } = request;
          send({ type: 'execute', id, code, modules, providers, timeout, memoryLimit, outbound, retainHandles });
          return id;
        },
        invokeHandle: (executionId, handle, req, token) => {
          const id = this.#request({ kind: 'invoke', token });
          send({ type: 'invoke', id, executionId, handle, method: req.method, url: req.url, headers: req.headers, hasBody: Boolean(req.body) }, req.body);
        },
        closeHandles: (executionId) =>
          new Promise((resolve, reject) => {
            const id = this.#request({ kind: 'close', resolve, reject });
            send({ type: 'closeHandles', id, executionId });
          }),
        resolveToolCall: (id, callId, value) => send({ type: 'toolResult', id, callId, ok: true }, value),
        rejectToolCall: (id, callId, message) => send({ type: 'toolResult', id, callId, ok: false, message }),
        resolveFetch: (id, callId, r) => send({ type: 'fetchResult', id, callId, ok: true, status: r.status, statusText: r.statusText, headers: r.headers, hasBody: Boolean(r.body) }, r.body),
        rejectFetch: (id, callId, message) => send({ type: 'fetchResult', id, callId, ok: false, message }),
      },
      Number(this.#limits.toolPayloadBytes),
      opts.onHandlesClosed,
    );
    socket.addEventListener('message', (event) => this.#receive(event.data));
    socket.addEventListener('close', (event) => this.#gone(closeDetail(event, 'the connection dropped')));
  }

  /** The id of the daemon this connection reached (stable for the daemon's lifetime). */
  get daemon() {
    return this.#daemon;
  }

  /** The name the daemon's onConnection hook gave this connection. */
  get name() {
    return this.#name;
  }

  /**
   * @param {import('../index').ExecuteRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  execute(request) {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    let checked;
    try {
      // Omitted here too, outbound means native: the daemon performs the request.
      checked = validate.request(request, this.#outbound);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#core.execute(checked);
  }

  /**
   * @param {string} executionId
   * @param {string} name
   * @param {import('../index').WireRequest} request
   * @returns {Promise<import('../index').WireResponse>}
   */
  invokeHandle(executionId, name, request) {
    let wire;
    try {
      executionId = validate.executionId(executionId);
      name = validate.handleName(name);
      wire = validate.wireRequest(request);
    } catch (e) {
      return Promise.reject(e);
    }
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#core.invokeHandle(executionId, name, wire);
  }

  /**
   * @param {string} executionId
   * @returns {Promise<void>}
   */
  closeHandles(executionId) {
    try {
      executionId = validate.executionId(executionId);
    } catch (e) {
      return Promise.reject(e);
    }
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return this.#core.closeHandles(executionId);
  }

  /** @returns {Promise<RemoteStats>} */
  stats() {
    const refused = this.#refusal();
    if (refused) return Promise.reject(refused);
    return new Promise((resolve, reject) => {
      const id = this.#request({ kind: 'stats', resolve, reject });
      this.#send({ type: 'stats', id });
    });
  }

  /** Lets the requests in flight finish, then closes the connection. Idempotent. */
  close() {
    if (this.#closing) return this.#closing;
    this.#closed = true;
    this.#closing = this.#core.settled().then(
      () =>
        new Promise((resolve) => {
          if (this.#lost) return resolve();
          this.#onClosed = resolve;
          this.#socket.close(1000, 'closed by the client');
        }),
    );
    return this.#closing;
  }

  /** Why a new request cannot be sent, if it cannot. */
  #refusal() {
    if (this.#lost) return this.#lost;
    if (this.#closed) return fault('CLOSED');
    return null;
  }

  /**
   * Registers a request and returns its wire id: never one in flight or one a retained
   * execution still goes by.
   * @param {Pending} pending
   */
  #request(pending) {
    let id = this.#nextId;
    while (this.#pending.has(id) || this.#core.holds(id)) id = id >= MAX_ID ? 1 : id + 1;
    this.#nextId = id >= MAX_ID ? 1 : id + 1;
    this.#pending.set(id, pending);
    return id;
  }

  /**
   * @param {Record<string, unknown>} header
   * @param {Uint8Array} [payload]
   */
  #send(header, payload) {
    if (this.#lost || this.#socket.readyState !== OPEN) return;
    this.#socket.send(frame(header, payload));
  }

  /** @param {unknown} data */
  #receive(data) {
    const received = unframe(data);
    if (typeof received === 'string') return; // nothing can be answered to it; the daemon never sends one
    const { msg, payload } = received;
    const id = Number(msg.id);
    const core = this.#core;
    switch (msg.type) {
      case 'toolCall':
        return core.onToolCall({ id, callId: msg.callId, provider: msg.provider, tool: msg.tool, args: payload ?? Buffer.alloc(0) });
      case 'fetch':
        // A retained execution's fetch names the id of the execute that granted it: this client
        // never reuses such an id while the execution is retained (#request), so the core finds
        // the grant's outbound policy by it, and the answer names it as the daemon expects.
        return core.onFetch({ id, callId: msg.callId, method: msg.method, url: msg.url, headers: msg.headers, body: msg.hasBody ? payload : undefined });
      case 'handlesClosed':
        return core.onDone(completion({ id: 0, closed: { executionId: msg.executionId, reason: msg.reason } }));
      case 'done': {
        if (this.#pending.get(id)?.kind !== 'run') return;
        this.#pending.delete(id);
        const outcome = { result: msg.hasResult ? payload : undefined, error: msg.error, logs: msg.logs, stats: msg.stats, grant: msg.grant };
        return core.onDone(completion({ id, outcome }));
      }
      case 'invoked': {
        const pending = this.#pending.get(id);
        if (pending?.kind !== 'invoke') return;
        this.#pending.delete(id);
        const response = { status: msg.status, statusText: msg.statusText, headers: msg.headers, body: msg.hasBody ? payload : undefined };
        return core.onDone(completion({ id: 0, invocation: pending.token, response }));
      }
      case 'ack':
      case 'stats': {
        const pending = this.#pending.get(id);
        if (!pending || (pending.kind !== 'close' && pending.kind !== 'stats')) return;
        this.#pending.delete(id);
        if (pending.kind === 'close') return pending.resolve(undefined);
        const { workers, idle, running, queued, retained, connections } = msg;
        return pending.resolve({ workers, idle, running, queued, retained, connections });
      }
      case 'failed':
      case 'error': {
        const pending = this.#pending.get(id);
        if (!pending) return;
        this.#pending.delete(id);
        const f = { code: String(msg.code), message: String(msg.message) };
        if (pending.kind === 'run') return core.onDone(completion({ id, fault: f }));
        if (pending.kind === 'invoke') return core.onDone(completion({ id: 0, invocation: pending.token, fault: f }));
        return pending.reject(new ExecutorError(f.code, f.message, typeof msg.retryable === 'boolean' ? msg.retryable : undefined));
      }
      default:
        return;
    }
  }

  /**
   * The connection is gone: everything in flight rejects with CONNECTION_LOST (retryable), and
   * so does every later request. Retained executions stay with the daemon; a new connection may
   * invoke them, so none is published as closed.
   * @param {string} detail
   */
  #gone(detail) {
    if (this.#lost) return;
    const lost = () => fault('CONNECTION_LOST', { url: this.#url, detail });
    this.#lost = this.#closed ? fault('CLOSED') : lost();
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      if (pending.kind === 'close' || pending.kind === 'stats') pending.reject(lost());
    }
    this.#core.abandonAll(lost, null);
    this.#onClosed();
  }
}

/**
 * A completion in the addon's shape, from fields a daemon message gave.
 * @param {Record<string, unknown>} fields
 * @returns {NativeCompletion}
 */
function completion(fields) {
  return /** @type {NativeCompletion} */ (/** @type {unknown} */ (fields));
}

module.exports = { connect, RemoteExecutor, frame, unframe, protocolVersion, tokenProtocol };
