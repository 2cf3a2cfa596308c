// @ts-check
'use strict';
// connect(): the client side of the executor protocol (docs/protocol.md). A RemoteExecutor has
// the native executor's methods; its requests travel to a daemon over WebSocket channels, and
// the daemon's tool calls and routed fetches come back over them to run here, in the caller's
// process, through the same executor core as IsolateExecutor's (lib/executor-core.js).
// Over 500 lines on purpose: the channel (open, reopen, pinning, close codes) and the executor
// over it change together; lib/executor-core.js holds everything the two carriers share.
//
// Channels: executions go over the primary channel, opened again on the next request after it
// is lost (behind a load balancer that reaches a surviving daemon). An invocation goes to the
// daemon that holds the execution: the primary when it is that daemon, else a channel pinned to
// it through `?daemon=<id>`, the routing key a load balancer sticks on (docs/deployment.md).

const { ExecutorError, fault } = require('./errors');
const { ExecutorCore } = require('./executor-core');
const { loadNative } = require('./native');
const validate = require('./validate');
const { checkValueFormat } = require('./clone');

/**
 * @typedef {import('../index').ConnectOptions} ConnectOptions
 * @typedef {import('../index').RemoteStats} RemoteStats
 * @typedef {import('../native').NativeCompletion} NativeCompletion
 * @typedef {import('./validate').ValidConnect} ValidConnect
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
 * @typedef {{ kind: 'run' } | { kind: 'invoke', token: number, executionId: string } | { kind: 'close', executionId: string, resolve: (value: any) => void, reject: (error: unknown) => void } | { kind: 'stats', resolve: (value: any) => void, reject: (error: unknown) => void }} Pending
 *
 * One message as received: its JSON, and the payload of a binary message.
 * @typedef {{ msg: Record<string, any>, payload: Buffer | undefined }} Received
 */

const SUBPROTOCOL = 'codemode-executor';
const TOKEN_SUBPROTOCOL = 'codemode-executor.token.';
const OPEN = 1;
const MAX_ID = 0xffff_ffff;
/** Executions whose holding daemon this process remembers (the oldest are forgotten first). */
const HOLDERS_BOUND = 65_536;

/** executionId -> id of the daemon that holds it, for every grant this process received. */
const holders = new Map();

/**
 * @param {string} executionId
 * @param {string} daemon
 */
function remember(executionId, daemon) {
  holders.delete(executionId);
  holders.set(executionId, daemon);
  if (holders.size > HOLDERS_BOUND) holders.delete(holders.keys().next().value);
}

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
 * @param {{ code?: number, reason?: string } | undefined} event
 * @param {string} fallback
 */
function closeDetail(event, fallback) {
  const code = event?.code;
  const reason = event?.reason;
  if (code === undefined || code === 1005 || code === 1006) return fallback;
  return reason ? `close code ${code}: ${reason}` : `close code ${code}`;
}

/**
 * `url` with the routing key that pins a connection to daemon `daemon`.
 * @param {string} url
 * @param {string} daemon
 */
function pinnedUrl(url, daemon) {
  const u = new URL(url);
  u.searchParams.set('daemon', daemon);
  return u.toString();
}

/** One WebSocket to one daemon, welcomed. */
class Channel {
  /** @type {Map<number, Pending>} wire id -> request waiting for its answer */
  pending = new Map();
  /** @type {string | null} why the socket is gone, once it is */
  lost = null;
  #socket;
  #nextId = 1;
  /** @type {() => void} */
  #onClosed = () => {};

  /**
   * @param {Socket} socket
   * @param {Record<string, any>} welcome
   */
  constructor(socket, welcome) {
    this.#socket = socket;
    this.daemon = String(welcome.daemon);
    this.name = String(welcome.name);
    this.limits = welcome.limits ?? {};
  }

  /**
   * Delivers this channel's messages and its loss.
   * @param {(channel: Channel, data: unknown) => void} onMessage
   * @param {(channel: Channel, detail: string) => void} onGone
   */
  listen(onMessage, onGone) {
    this.#socket.addEventListener('message', (event) => onMessage(this, event.data));
    this.#socket.addEventListener('close', (event) => {
      if (this.lost) return;
      this.lost = closeDetail(event, 'the connection dropped');
      onGone(this, this.lost);
      this.#onClosed();
    });
  }

  /**
   * Registers a request and returns its wire id: never one in flight, nor one `inUse` claims.
   * @param {Pending} pending
   * @param {(id: number) => boolean} inUse
   */
  request(pending, inUse) {
    let id = this.#nextId;
    while (this.pending.has(id) || inUse(id)) id = id >= MAX_ID ? 1 : id + 1;
    this.#nextId = id >= MAX_ID ? 1 : id + 1;
    this.pending.set(id, pending);
    return id;
  }

  /**
   * @param {Record<string, unknown>} header
   * @param {Uint8Array} [payload]
   */
  send(header, payload) {
    if (this.lost || this.#socket.readyState !== OPEN) return;
    this.#socket.send(frame(header, payload));
  }

  /** Closes the socket; resolves once it has closed. */
  close() {
    if (this.lost) return Promise.resolve();
    return new Promise((resolve) => {
      this.#onClosed = () => resolve(undefined);
      this.#socket.close(1000, 'closed by the client');
    });
  }
}

/**
 * Opens one channel: resolves once the daemon has welcomed it.
 * @param {string} url
 * @param {ValidConnect} opts
 * @returns {Promise<Channel>}
 */
function open(url, opts) {
  const { WebSocketClass, token, connectTimeout } = opts;
  return new Promise((resolve, reject) => {
    /** @param {string} detail */
    const unreachable = (detail) => fault('DAEMON_UNREACHABLE', { url: opts.url, detail });
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
        resolve(new Channel(socket, msg));
      } else if (msg.type === 'refused' || msg.type === 'error') {
        refusal = new ExecutorError(String(msg.code), String(msg.message));
      } else {
        fail(fault('PROTOCOL_ERROR', { detail: `the daemon sent ${JSON.stringify(msg.type)} before its welcome` }));
      }
    });
    socket.addEventListener('close', (event) => {
      if (refusal) return fail(refusal);
      fail(unreachable(closeDetail(event, errorDetail || 'the connection closed during the handshake')));
    });
  });
}

/**
 * Opens a connection to a daemon and resolves once it has welcomed this client.
 * @param {string} url
 * @param {ConnectOptions} [options]
 * @returns {Promise<RemoteExecutor>}
 */
async function connect(url, options) {
  const opts = validate.connectOptions(url, options);
  checkValueFormat();
  const channel = await open(opts.url, opts);
  return new RemoteExecutor(channel, opts);
}

class RemoteExecutor {
  #opts;
  /** @type {ExecutorCore} */
  #core;
  /** @type {Channel} the channel executions go over (the last one opened) */
  #primary;
  /** @type {Promise<Channel> | null} the primary being opened again */
  #reopening = null;
  /** @type {Map<string, Promise<Channel>>} daemon id -> a channel pinned to it, for invocations */
  #pinned = new Map();
  /** @type {Map<string, Channel>} daemon id -> pinned channel, once open */
  #pinnedNow = new Map();
  /** @type {WeakMap<object, Channel>} a tool call or fetch -> the channel it came over */
  #via = new WeakMap();
  /** @type {Map<number, Channel>} run id -> the channel its execute went over, while in flight */
  #runChannels = new Map();
  #closed = false;
  /** @type {Promise<void> | null} */
  #closing = null;

  /**
   * Use `connect()`.
   * @param {Channel} channel the first primary channel, welcomed
   * @param {ValidConnect} opts
   */
  constructor(channel, opts) {
    this.#opts = opts;
    this.#primary = channel;
    /**
     * @param {object} call
     * @param {Record<string, unknown>} header
     * @param {Uint8Array} [payload]
     */
    const answer = (call, header, payload) => this.#via.get(call)?.send(header, payload);
    this.#core = new ExecutorCore(
      {
        execute: (request) => {
          const primary = this.#usable(this.#primary);
          const id = primary.request({ kind: 'run' }, (n) => this.#core.holds(n));
          const providers = request.providers.map((p) => ({ name: p.name, tools: p.tools ?? null }));
          const { code, modules, timeout, memoryLimit, outbound, retainHandles, liveLogs } = request;
          primary.send({ type: 'execute', id, code, modules, providers, timeout, memoryLimit, outbound, retainHandles, liveLogs: liveLogs || undefined });
          this.#runChannels.set(id, primary);
          return id;
        },
        abort: (id) => {
          const channel = this.#runChannels.get(id);
          if (channel?.pending.get(id)?.kind === 'run') channel.send({ type: 'abort', id });
        },
        invokeHandle: (executionId, handle, req, token) => {
          const channel = this.#usable(this.#route(executionId));
          const id = channel.request({ kind: 'invoke', token, executionId }, () => false);
          channel.send({ type: 'invoke', id, executionId, handle, method: req.method, url: req.url, headers: req.headers, hasBody: Boolean(req.body) }, req.body);
          return () => {
            if (channel.pending.get(id)?.kind === 'invoke') channel.send({ type: 'abort', id });
          };
        },
        closeHandles: (executionId) =>
          new Promise((resolve, reject) => {
            const channel = this.#usable(this.#route(executionId));
            const id = channel.request({ kind: 'close', executionId, resolve, reject }, () => false);
            channel.send({ type: 'closeHandles', id, executionId });
          }),
        resolveToolCall: (call, value) => answer(call, { type: 'toolResult', id: call.id, callId: call.callId, ok: true }, value),
        rejectToolCall: (call, message) => answer(call, { type: 'toolResult', id: call.id, callId: call.callId, ok: false, message }),
        resolveFetch: (call, r) =>
          answer(call, { type: 'fetchResult', id: call.id, callId: call.callId, ok: true, status: r.status, statusText: r.statusText, headers: r.headers, hasBody: Boolean(r.body) }, r.body),
        rejectFetch: (call, message) => answer(call, { type: 'fetchResult', id: call.id, callId: call.callId, ok: false, message }),
      },
      Number(channel.limits.toolPayloadBytes),
      opts.onHandlesClosed,
    );
    this.#attach(channel);
  }

  /** The id of the daemon the primary channel reached (stable for that daemon's lifetime). */
  get daemon() {
    return this.#primary.daemon;
  }

  /** The name the daemon's onConnection hook gave the primary channel. */
  get name() {
    return this.#primary.name;
  }

  /**
   * The most time (ms) and memory (MiB) a request may ask of this daemon (its `--timeout` and
   * `--memory-limit`), as its welcome said: a request above either is refused `INVALID_OPTION`.
   * @returns {{ timeout: number, memoryLimit: number, outbound: 'blocked' | 'routed' | 'public' | 'native' }}
   */
  get ceilings() {
    const { timeout, memoryLimit, outbound } = this.#primary.limits;
    return { timeout: Number(timeout), memoryLimit: Number(memoryLimit), outbound: /** @type {any} */ (outbound) };
  }

  /**
   * @param {import('../index').ExecuteRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  async execute(request) {
    if (this.#closed) throw fault('CLOSED');
    // Omitted here too, outbound means public: the daemon performs the request, to public
    // addresses only.
    const checked = validate.request(request, this.#opts.outbound);
    // Named by neither the request nor connect(): the daemon's outbound ceiling applies (public
    // unless its operator chose otherwise), so nothing is sent.
    if (this.#opts.outbound === undefined && request.outbound === undefined) {
      /** @type {{ outbound: unknown }} */ (checked).outbound = undefined;
    }
    await this.#ensurePrimary();
    return this.#core.execute(checked);
  }

  /**
   * @param {string} executionId
   * @param {string} name
   * @param {import('../index').WireRequest} request
   * @param {import('../index').InvokeOptions} [options]
   * @returns {Promise<import('../index').WireResponse>}
   */
  async invokeHandle(executionId, name, request, options) {
    executionId = validate.executionId(executionId);
    name = validate.handleName(name);
    const wire = validate.wireRequest(request);
    const { signal } = validate.invokeOptions(options);
    if (this.#closed) throw fault('CLOSED');
    await this.#reach(executionId);
    return this.#core.invokeHandle(executionId, name, wire, signal);
  }

  /**
   * @param {string} executionId
   * @returns {Promise<void>}
   */
  async closeHandles(executionId) {
    executionId = validate.executionId(executionId);
    if (this.#closed) throw fault('CLOSED');
    await this.#reach(executionId);
    return this.#core.closeHandles(executionId);
  }

  /** @returns {Promise<RemoteStats>} */
  async stats() {
    if (this.#closed) throw fault('CLOSED');
    const primary = await this.#ensurePrimary();
    return new Promise((resolve, reject) => {
      const id = primary.request({ kind: 'stats', resolve, reject }, () => false);
      primary.send({ type: 'stats', id });
    });
  }

  /** Lets the requests in flight finish, then closes every channel. Idempotent. */
  close() {
    if (this.#closing) return this.#closing;
    this.#closed = true;
    this.#closing = this.#core.settled().then(async () => {
      const pinned = await Promise.allSettled([...this.#pinned.values()]);
      const channels = [this.#primary, ...pinned.flatMap((p) => (p.status === 'fulfilled' ? [p.value] : []))];
      await Promise.all(channels.map((c) => c.close()));
    });
    return this.#closing;
  }

  /**
   * The channel, or the CONNECTION_LOST fault when it is gone.
   * @param {Channel} channel
   */
  #usable(channel) {
    if (channel.lost) throw fault('CONNECTION_LOST', { url: this.#opts.url, detail: channel.lost });
    return channel;
  }

  /** The primary channel, opened again when it was lost. */
  async #ensurePrimary() {
    if (!this.#primary.lost) return this.#primary;
    if (!this.#reopening) {
      this.#reopening = open(this.#opts.url, this.#opts).then(
        (channel) => {
          this.#reopening = null;
          if (this.#closed) {
            channel.close();
            throw fault('CLOSED');
          }
          this.#primary = channel;
          this.#attach(channel);
          return channel;
        },
        (e) => {
          this.#reopening = null;
          throw e;
        },
      );
    }
    return this.#reopening;
  }

  /**
   * The open channel an execution's requests go to (see #reach).
   * @param {string} executionId
   */
  #route(executionId) {
    const holder = holders.get(executionId);
    if (holder === undefined || holder === this.#primary.daemon) return this.#primary;
    return this.#pinnedNow.get(holder) ?? this.#primary;
  }

  /**
   * Makes sure the daemon that holds `executionId` is reachable: the primary when it is that
   * daemon (or the holder is unknown here), else a channel pinned to it. A pinned channel the
   * balancer could not bring to that daemon means the daemon is gone, and so are its handles.
   * @param {string} executionId
   */
  async #reach(executionId) {
    const holder = holders.get(executionId);
    const primary = await this.#ensurePrimary();
    if (holder === undefined || holder === primary.daemon) return;
    let pinned = this.#pinned.get(holder);
    if (!pinned) {
      pinned = open(pinnedUrl(this.#opts.url, holder), this.#opts).then((channel) => {
        if (channel.daemon !== holder) {
          channel.close();
          throw fault('HANDLES_CLOSED', { id: executionId });
        }
        this.#pinnedNow.set(holder, channel);
        this.#attach(channel);
        return channel;
      });
      this.#pinned.set(holder, pinned);
      // A failed open is not kept: the next request to that daemon tries again.
      pinned.catch(() => this.#pinned.delete(holder));
    }
    try {
      await pinned;
    } catch (e) {
      if (e instanceof ExecutorError && e.code === 'HANDLES_CLOSED') holders.delete(executionId);
      throw e;
    }
  }

  /** @param {Channel} channel */
  #attach(channel) {
    channel.listen(
      (c, data) => this.#receive(c, data),
      (c, detail) => this.#gone(c, detail),
    );
  }

  /**
   * @param {Channel} channel
   * @param {unknown} data
   */
  #receive(channel, data) {
    const received = unframe(data);
    if (typeof received === 'string') return; // nothing can be answered to it; the daemon never sends one
    const { msg, payload } = received;
    const id = Number(msg.id);
    const core = this.#core;
    switch (msg.type) {
      case 'toolCall': {
        const call = { id, callId: msg.callId, provider: msg.provider, tool: msg.tool, args: payload ?? Buffer.alloc(0) };
        this.#via.set(call, channel);
        return core.onToolCall(call);
      }
      case 'fetch': {
        // A retained execution's fetch names the id of the execute that granted it: this client
        // never reuses such an id while the execution is retained (Channel#request with
        // core.holds), so the core finds the grant's outbound policy by it.
        const call = { id, callId: msg.callId, method: msg.method, url: msg.url, headers: msg.headers, body: msg.hasBody ? payload : undefined, redirect: msg.redirect ?? 'follow' };
        this.#via.set(call, channel);
        return core.onFetch(call);
      }
      case 'handlesClosed':
        // `reason` as the daemon's pool named it (HandlesClosedReason: docs/protocol.md), `cpu`
        // included; a reason this client does not know still reaches onHandlesClosed.
        holders.delete(msg.executionId);
        return core.onDone(completion({ kind: 'handlesClosed', executionId: msg.executionId, reason: msg.reason }));
      case 'log':
        if (channel.pending.get(id)?.kind !== 'run') return;
        return core.onDone(completion({ kind: 'log', id, level: msg.level, message: msg.message }));
      case 'done': {
        if (channel.pending.get(id)?.kind !== 'run') return;
        channel.pending.delete(id);
        this.#runChannels.delete(id);
        if (msg.grant) remember(msg.grant.executionId, channel.daemon);
        const outcome = { result: msg.hasResult ? payload : undefined, error: msg.error, logs: msg.logs, stats: msg.stats, grant: msg.grant };
        return core.onDone(completion({ kind: 'done', id, outcome }));
      }
      case 'invoked': {
        const pending = channel.pending.get(id);
        if (pending?.kind !== 'invoke') return;
        channel.pending.delete(id);
        const response = { status: msg.status, statusText: msg.statusText, headers: msg.headers, body: msg.hasBody ? payload : undefined };
        return core.onDone(completion({ kind: 'invoked', invocation: pending.token, response }));
      }
      case 'ack':
      case 'stats': {
        const pending = channel.pending.get(id);
        if (!pending || (pending.kind !== 'close' && pending.kind !== 'stats')) return;
        channel.pending.delete(id);
        if (pending.kind === 'close') {
          holders.delete(pending.executionId);
          return pending.resolve(undefined);
        }
        const { workers, idle, running, queued, retained, connections } = msg;
        return pending.resolve({ workers, idle, running, queued, retained, connections });
      }
      case 'failed':
      case 'error': {
        const pending = channel.pending.get(id);
        if (!pending) return;
        channel.pending.delete(id);
        const f = { code: String(msg.code), message: String(msg.message) };
        if (pending.kind === 'run') {
          this.#runChannels.delete(id);
          return core.onDone(completion({ kind: 'failed', id, fault: f }));
        }
        if (f.code === 'HANDLES_CLOSED' && pending.kind !== 'stats') holders.delete(pending.executionId);
        if (pending.kind === 'invoke') return core.onDone(completion({ kind: 'invokeFailed', invocation: pending.token, fault: f }));
        return pending.reject(new ExecutorError(f.code, f.message, typeof msg.retryable === 'boolean' ? msg.retryable : undefined));
      }
      default:
        return;
    }
  }

  /**
   * A channel is gone: what was waiting on it rejects with CONNECTION_LOST (retryable). The
   * next request opens the primary again; retained executions stay with their daemon, reachable
   * from a new channel, so none is published as closed.
   * @param {Channel} channel
   * @param {string} detail
   */
  #gone(channel, detail) {
    const lost = () => fault('CONNECTION_LOST', { url: this.#opts.url, detail });
    for (const [id, pending] of channel.pending) {
      channel.pending.delete(id);
      if (pending.kind === 'run') {
        this.#runChannels.delete(id);
        this.#core.onDone(completion({ kind: 'failed', id, fault: lost() }));
      }
      else if (pending.kind === 'invoke') this.#core.onDone(completion({ kind: 'invokeFailed', invocation: pending.token, fault: lost() }));
      else pending.reject(lost());
    }
    if (channel === this.#primary) this.#core.forgetRetained();
    for (const [daemon, pinned] of this.#pinnedNow) {
      if (pinned === channel) {
        this.#pinnedNow.delete(daemon);
        this.#pinned.delete(daemon);
      }
    }
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
