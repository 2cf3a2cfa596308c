// @ts-check
'use strict';
// connect(): the client side of the executor protocol (docs/protocol.md). A RemoteExecutor has
// the native executor's methods; its requests travel to a daemon over WebSocket channels, and
// the daemon's tool calls and routed fetches come back over them to run here, in the caller's
// process, through the same executor core as IsolateExecutor's (lib/executor-core.js).
// The wire is lib/remote/: framing.js (the message format), messages.js (each daemon message
// checked), channel.js (one welcomed WebSocket), holders.js (which daemon holds a grant).
//
// Channels: executions go over the primary channel, opened again on the next request after it
// is lost (behind a load balancer that reaches a surviving daemon). An invocation goes to the
// daemon that holds the execution: the primary when it is that daemon, else a channel pinned to
// it through `?daemon=<id>`, the routing key a load balancer sticks on (docs/deployment.md).

const { ExecutorError, fault } = require('./errors');
const { ExecutorCore } = require('./executor-core');
const validate = require('./validate');
const { connectOptions } = require('./validate/remote');
const { checkValueFormat } = require('./clone');
const { open, pinnedUrl } = require('./remote/channel');
/** @typedef {import('./remote/channel').Channel} Channel */
const holders = require('./remote/holders');

/**
 * @typedef {import('../index').ConnectOptions} ConnectOptions
 * @typedef {import('../index').RemoteStats} RemoteStats
 * @typedef {import('../native').HandlesClosedReason} HandlesClosedReason
 * @typedef {import('./validate/remote').ValidConnect} ValidConnect
 * @typedef {import('./remote/messages').DaemonMessage} DaemonMessage
 */

/**
 * Opens a connection to a daemon and resolves once it has welcomed this client.
 * @param {string} url
 * @param {ConnectOptions} [options]
 * @returns {Promise<RemoteExecutor>}
 */
async function connect(url, options) {
  const opts = connectOptions(url, options);
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
          const { code, modules, timeout, memoryLimit, outbound, outboundNamed, retainHandles, liveLogs, cpuLimit, toolCallLimit, fetchLimit, tenant } = request;
          // A callback run that named no decision bound gets the daemon's when it is lower
          // (`--approval-timeout`), here as there: this side's decide is held to the same.
          const ceiling = primary.limits.approvalTimeout;
          if (request.approval?.mode === 'callback' && !request.approvalTimeoutNamed && typeof ceiling === 'number' && ceiling < (request.approval.timeout ?? Infinity)) {
            request.approval.timeout = ceiling;
          }
          const { providers, approval } = approvalFields(request);
          // Named by neither the request nor connect(), outbound is left out: the daemon's
          // ceiling applies (public unless its operator chose otherwise). So is a budget: the
          // daemon's ceiling applies, or none.
          primary.send({ type: 'execute', id, code, modules, providers, timeout, memoryLimit, cpuLimit, toolCallLimit, fetchLimit, outbound: outboundNamed ? outbound : undefined, retainHandles, liveLogs: liveLogs || undefined, approval, tenant });
          this.#runChannels.set(id, primary);
          return id;
        },
        abort: (id) => {
          const channel = this.#runChannels.get(id);
          if (channel?.pending.get(id)?.kind === 'run') channel.send({ type: 'abort', id });
        },
        invokeHandle: (executionId, handle, req, token, tenant) => {
          const channel = this.#usable(this.#route(executionId));
          const id = channel.request({ kind: 'invoke', token, executionId }, () => false);
          channel.send({ type: 'invoke', id, executionId, handle, method: req.method, url: req.url, headers: req.headers, hasBody: Boolean(req.body), tenant }, req.body);
          return () => {
            if (channel.pending.get(id)?.kind === 'invoke') channel.send({ type: 'abort', id });
          };
        },
        closeHandles: (executionId, tenant) =>
          new Promise((resolve, reject) => {
            const channel = this.#usable(this.#route(executionId));
            const id = channel.request({ kind: 'close', executionId, resolve, reject }, () => false);
            channel.send({ type: 'closeHandles', id, executionId, tenant });
          }),
        resolveToolCall: (call, value) => answer(call, { type: 'toolResult', id: call.id, callId: call.callId, ok: true }, value),
        rejectToolCall: (call, message) => answer(call, { type: 'toolResult', id: call.id, callId: call.callId, ok: false, message }),
        denyToolCall: (call, message) => answer(call, { type: 'toolResult', id: call.id, callId: call.callId, ok: false, message, denied: true }),
        resolveFetch: (call, r) =>
          answer(call, { type: 'fetchResult', id: call.id, callId: call.callId, ok: true, status: r.status, statusText: r.statusText, headers: r.headers, hasBody: Boolean(r.body) }, r.body),
        rejectFetch: (call, message) => answer(call, { type: 'fetchResult', id: call.id, callId: call.callId, ok: false, message }),
        resume: (request) => {
          const primary = this.#usable(this.#primary);
          const id = primary.request({ kind: 'run' }, (n) => this.#core.holds(n));
          const decisions = request.decisions.map((d) => ({ id: d.id, approved: d.approved, reason: d.reason }));
          // This client's own outbound (when named) and budgets narrow the token's, as an
          // in-process resume's executor does; the daemon's ceilings hold after them.
          const { cpuLimit, toolCallLimit, fetchLimit } = this.#opts.budgets;
          const outbound = request.outboundNamed ? request.outbound : undefined;
          primary.send({ type: 'resume', id, token: request.token, decisions, routes: request.route !== undefined || undefined, liveLogs: request.liveLogs || undefined, outbound, cpuLimit, toolCallLimit, fetchLimit, tenant: request.tenant });
          this.#runChannels.set(id, primary);
          return id;
        },
        // The run's channel, while it is in flight there: a decision for a run that ended (or
        // whose channel is gone) has nobody to go to.
        decide: (id, callId, approved, reason) => {
          const channel = this.#runChannels.get(id);
          if (channel?.pending.get(id)?.kind === 'run') channel.send({ type: 'decision', id, callId, approved, reason });
        },
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
   * The most time (ms), memory (MiB), network, CPU (ms), tool calls and fetches a request may
   * ask of this daemon (its `--timeout`, `--memory-limit`, `--outbound`, `--cpu-limit`,
   * `--tool-call-limit`, `--fetch-limit`), as its welcome said: a request above one is refused
   * `INVALID_OPTION`. A budget ceiling is `null` when the daemon sets none; `approvalTimeout`
   * (`--approval-timeout`) is `null` from a daemon too old to say it.
   * @returns {import('../index').RemoteCeilings}
   */
  get ceilings() {
    const { timeout, memoryLimit, outbound, cpuLimit, toolCallLimit, fetchLimit, approvalTimeout } = this.#primary.limits;
    return { timeout, memoryLimit, outbound, cpuLimit, toolCallLimit, fetchLimit, approvalTimeout: typeof approvalTimeout === 'number' ? approvalTimeout : null };
  }

  /**
   * @param {import('../index').ExecuteRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  async execute(request) {
    if (this.#closed) throw fault('CLOSED');
    const checked = validate.request(request, this.#opts.outbound, this.#opts.budgets);
    await this.#ensurePrimary();
    return this.#core.execute(checked);
  }

  /**
   * Resumes a run paused for approval, on this daemon or any other with the same approval key
   * (docs/approvals.md), as `IsolateExecutor.resume`.
   * @param {import('../index').ResumeRequest} request
   * @returns {Promise<import('../index').Outcome>}
   */
  async resume(request) {
    if (this.#closed) throw fault('CLOSED');
    const checked = validate.resume(request, this.#opts.outbound);
    await this.#ensurePrimary();
    return this.#core.resume(checked);
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
    const { signal, tenant } = validate.invokeOptions(options);
    if (this.#closed) throw fault('CLOSED');
    await this.#reach(executionId);
    return this.#core.invokeHandle(executionId, name, wire, signal, tenant);
  }

  /**
   * @param {string} executionId
   * @param {import('../index').CloseHandlesOptions} [options]
   * @returns {Promise<void>}
   */
  async closeHandles(executionId, options) {
    executionId = validate.executionId(executionId);
    const { tenant } = validate.closeOptions(options);
    if (this.#closed) throw fault('CLOSED');
    await this.#reach(executionId);
    return this.#core.closeHandles(executionId, tenant);
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
    const holder = holders.holderOf(executionId);
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
    const holder = holders.holderOf(executionId);
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
      if (e instanceof ExecutorError && e.code === 'HANDLES_CLOSED') holders.forget(executionId);
      throw e;
    }
  }

  /** @param {Channel} channel */
  #attach(channel) {
    channel.listen({
      message: (c, msg, payload) => this.#receive(c, msg, payload),
      gone: (c, error) => this.#gone(c, error),
    });
  }

  /**
   * A message from the daemon, its fields checked (lib/remote/messages.js): its types are the
   * addon's (native.d.ts), so each completion below is built as the addon's, with no cast. An
   * answer to a request no longer waiting (it crossed an abort) is dropped.
   * @param {Channel} channel
   * @param {DaemonMessage} msg
   * @param {Buffer | undefined} payload
   */
  #receive(channel, msg, payload) {
    const core = this.#core;
    switch (msg.type) {
      case 'toolCall': {
        const { id } = msg;
        const call = { id, callId: msg.callId, provider: msg.provider, tool: msg.tool, args: payload ?? Buffer.alloc(0) };
        this.#via.set(call, channel);
        return core.onToolCall(call);
      }
      case 'fetch': {
        // A retained execution's fetch names the id of the execute that granted it: this client
        // never reuses such an id while the execution is retained (Channel#request with
        // core.holds), so the core finds the grant's outbound policy by it.
        const { id } = msg;
        const call = { id, callId: msg.callId, method: msg.method, url: msg.url, headers: msg.headers, body: msg.hasBody ? payload : undefined, redirect: msg.redirect ?? 'follow' };
        this.#via.set(call, channel);
        return core.onFetch(call);
      }
      case 'approve': {
        // A call of a callback-mode run for its `decide` (the core answers with `decision`).
        const { id } = msg;
        if (channel.pending.get(id)?.kind !== 'run') return;
        const call = { id, callId: msg.callId, provider: msg.provider, tool: msg.tool, args: payload ?? Buffer.alloc(0) };
        return core.onDone({ kind: 'approve', call });
      }
      case 'handlesClosed':
        // `reason` as the daemon's pool named it (HandlesClosedReason: docs/protocol.md), `cpu`
        // included; a reason this client does not know still reaches onHandlesClosed, as
        // named (the one field passed on without its values checked).
        holders.forget(msg.executionId);
        return core.onDone({ kind: 'handlesClosed', executionId: msg.executionId, reason: /** @type {HandlesClosedReason} */ (msg.reason) });
      case 'log': {
        const { id } = msg;
        if (channel.pending.get(id)?.kind !== 'run') return;
        return core.onDone({ kind: 'log', id, level: msg.level, message: msg.message });
      }
      case 'done': {
        const { id } = msg;
        if (channel.pending.get(id)?.kind !== 'run') return;
        // Checked while the run still waits on the channel, which rejects it when broken.
        const paused = msg.paused && pausedOf(msg.paused, payload);
        if (paused === null) return channel.broken(`a \`done\` whose paused calls' argsBytes do not add up to its payload (request ${id})`);
        channel.pending.delete(id);
        this.#runChannels.delete(id);
        if (msg.grant) holders.remember(msg.grant.executionId, channel.daemon);
        const outcome = { result: msg.hasResult ? payload : undefined, error: msg.error, logs: msg.logs, stats: msg.stats, grant: msg.grant, calls: msg.calls, paused };
        return core.onDone({ kind: 'done', id, outcome });
      }
      case 'invoked': {
        const { id } = msg;
        const pending = channel.pending.get(id);
        if (pending?.kind !== 'invoke') return;
        channel.pending.delete(id);
        const response = { status: msg.status, statusText: msg.statusText, headers: msg.headers, body: msg.hasBody ? payload : undefined };
        return core.onDone({ kind: 'invoked', invocation: pending.token, response });
      }
      case 'ack':
      case 'stats': {
        const { id } = msg;
        const pending = channel.pending.get(id);
        if (!pending || (pending.kind !== 'close' && pending.kind !== 'stats')) return;
        // A close is answered with an ack, stats() with stats: any other pairing is a broken
        // daemon, and what waits on it must not wait for an answer that will not come.
        if ((pending.kind === 'stats') !== (msg.type === 'stats')) {
          return channel.broken(`${msg.type === 'ack' ? 'an' : 'a'} \`${msg.type}\` answering a ${pending.kind === 'stats' ? 'stats' : 'closeHandles'} request (request ${id})`);
        }
        channel.pending.delete(id);
        if (pending.kind === 'close') {
          holders.forget(pending.executionId);
          return pending.resolve(undefined);
        }
        if (msg.type !== 'stats') return; // (ruled out above; narrows the type)
        const { workers, idle, running, queued, retained, connections, engine } = msg;
        const stats = { workers, idle, running, queued, retained, connections };
        // The daemon's engine, once a worker has said (its shape checked with the message's).
        return pending.resolve(engine ? { ...stats, engine: { v8: engine.v8, sandbox: engine.sandbox } } : stats);
      }
      case 'failed':
      case 'error': {
        const { id } = msg;
        if (id === undefined) return;
        const pending = channel.pending.get(id);
        if (!pending) return;
        channel.pending.delete(id);
        const f = { code: msg.code, message: msg.message };
        if (pending.kind === 'run') {
          this.#runChannels.delete(id);
          return core.onDone({ kind: 'failed', id, fault: f });
        }
        if (f.code === 'HANDLES_CLOSED' && pending.kind !== 'stats') holders.forget(pending.executionId);
        if (pending.kind === 'invoke') return core.onDone({ kind: 'invokeFailed', invocation: pending.token, fault: f });
        return pending.reject(new ExecutorError(f.code, f.message, msg.type === 'failed' ? msg.retryable : undefined));
      }
      default:
        return;
    }
  }

  /**
   * A channel is gone: what was waiting on it rejects with `lost()`, CONNECTION_LOST
   * (retryable) when the socket closed, PROTOCOL_ERROR when the daemon broke the protocol. The
   * next request opens the primary again; retained executions stay with their daemon, reachable
   * from a new channel, so none is published as closed.
   * @param {Channel} channel
   * @param {() => ExecutorError} lost
   */
  #gone(channel, lost) {
    for (const [id, pending] of channel.pending) {
      channel.pending.delete(id);
      if (pending.kind === 'run') {
        this.#runChannels.delete(id);
        this.#core.onDone({ kind: 'failed', id, fault: lost() });
      }
      else if (pending.kind === 'invoke') this.#core.onDone({ kind: 'invokeFailed', invocation: pending.token, fault: lost() });
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
 * The request's providers as `execute` sends them, each with the tools that need approval
 * (`approve`: `true` for all of them), and its `approval` without `decide` (which stays here).
 * @param {import('./validate').ValidRequest} request
 */
function approvalFields(request) {
  const approval = request.approval;
  const marked = new Map(approval?.approve ?? []);
  const providers = request.providers.map((p) => {
    const tools = marked.get(p.name);
    return { name: p.name, tools: p.tools ?? null, approve: tools === undefined ? undefined : (tools ?? true) };
  });
  if (!approval) return { providers, approval: undefined };
  const wire = approval.mode === 'interrupt' ? { mode: approval.mode, expiresIn: approval.expiresIn } : { mode: approval.mode, timeout: approval.timeout };
  return { providers, approval: wire };
}

/**
 * A `done`'s `paused` with each pending call's arguments cut from the payload (each
 * `argsBytes` long, one after another), or null when they do not add up to it.
 * @param {import('./remote/messages').PausedMsg} paused
 * @param {Buffer | undefined} payload
 */
function pausedOf(paused, payload) {
  const bytes = payload ?? Buffer.alloc(0);
  let at = 0;
  const pending = paused.pending.map((c) => {
    const args = bytes.subarray(at, at + c.argsBytes);
    at += c.argsBytes;
    return { id: c.id, provider: c.provider, tool: c.tool, args };
  });
  return at === bytes.length ? { token: paused.token, pending } : null;
}

module.exports = { connect, RemoteExecutor };
