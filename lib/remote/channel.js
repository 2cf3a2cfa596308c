// @ts-check
'use strict';
// One WebSocket to one daemon (docs/protocol.md): open() connects, says hello and resolves
// with a Channel once the daemon has welcomed it; the Channel numbers its requests, keeps what
// waits for an answer, sends, and reports its messages (checked: lib/remote/messages.js), its
// loss, and a message that broke the protocol. lib/connect.js's RemoteExecutor owns the
// channels and decides what each message means.

const { ExecutorError, fault } = require('../errors');
const { loadNative } = require('../native');
const { frame } = require('./framing');
const { decode } = require('./messages');

/**
 * @typedef {import('../validate/remote').ValidConnect} ValidConnect
 * @typedef {import('./messages').DaemonMessage} DaemonMessage
 * @typedef {import('./messages').Welcome} Welcome
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
 * What a channel reports to its owner: a message that passed its checks, or its end (`error`
 * makes the rejection of each request that was waiting on it).
 * @typedef {object} Listener
 * @property {(channel: Channel, msg: DaemonMessage, payload: Buffer | undefined) => void} message
 * @property {(channel: Channel, error: () => ExecutorError) => void} gone
 */

const SUBPROTOCOL = 'codemode-executor';
const TOKEN_SUBPROTOCOL = 'codemode-executor.token.';
const OPEN = 1;
const MAX_ID = 0xffff_ffff;
/** The WebSocket close code for a peer that broke the protocol (RFC 6455). */
const CLOSE_PROTOCOL_ERROR = 1002;

/** The protocol version this client speaks (the daemon crate's `PROTOCOL`, through the addon). */
function protocolVersion() {
  return loadNative().binding.executorProtocol();
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

/**
 * The PROTOCOL_ERROR for a message from the daemon at `url` that broke the protocol.
 * @param {string} url
 * @param {string} problem
 */
function brokenBy(url, problem) {
  return fault('PROTOCOL_ERROR', { detail: `the daemon at ${url} sent ${problem}` });
}

/** One WebSocket to one daemon, welcomed. */
class Channel {
  /** @type {Map<number, Pending>} wire id -> request waiting for its answer */
  pending = new Map();
  /** @type {string | null} why the socket is gone, once it is */
  lost = null;
  /** @type {Listener | undefined} */
  #listener;
  #socket;
  #url;
  #nextId = 1;
  /** @type {() => void} */
  #onClosed = () => {};

  /**
   * @param {Socket} socket
   * @param {Welcome} welcome
   * @param {string} url the daemon's URL, as connect() was given it (for errors)
   */
  constructor(socket, welcome, url) {
    this.#socket = socket;
    this.#url = url;
    this.daemon = welcome.daemon;
    this.name = welcome.name;
    this.limits = welcome.limits;
  }

  /**
   * Delivers this channel's messages and its end. A message that breaks the protocol ends the
   * channel: each request waiting on it rejects with PROTOCOL_ERROR naming what was wrong, and
   * the socket closes (1002), so nothing waits for an answer that cannot be read.
   * @param {Listener} listener
   */
  listen(listener) {
    this.#listener = listener;
    this.#socket.addEventListener('message', (event) => {
      if (this.lost) return;
      const decoded = decode(event.data);
      if ('msg' in decoded) return listener.message(this, decoded.msg, decoded.payload);
      this.broken(decoded.id === undefined ? decoded.problem : `${decoded.problem} (request ${decoded.id})`);
    });
    this.#socket.addEventListener('close', (event) => {
      if (this.lost) return this.#onClosed();
      const detail = closeDetail(event, 'the connection dropped');
      this.lost = detail;
      listener.gone(this, () => fault('CONNECTION_LOST', { url: this.#url, detail }));
      this.#onClosed();
    });
  }
  /**
   * Ends the channel for a message that broke the protocol (`problem`: what it sent): each
   * request waiting on it rejects with PROTOCOL_ERROR naming it, and the socket closes (1002).
   * For what decoding finds, and for a well-formed message that answers a request of another
   * kind (its listener's finding).
   * @param {string} problem
   */
  broken(problem) {
    if (this.lost) return;
    this.lost = `it broke the protocol: it sent ${problem}`;
    this.#listener?.gone(this, () => brokenBy(this.#url, problem));
    this.#close(CLOSE_PROTOCOL_ERROR, 'protocol error');
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
      this.#close(1000, 'closed by the client');
    });
  }

  /**
   * @param {number} code
   * @param {string} reason
   */
  #close(code, reason) {
    try {
      this.#socket.close(code, reason);
    } catch {
      // already closing
    }
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
      const decoded = decode(event.data);
      if (!('msg' in decoded)) return fail(brokenBy(opts.url, decoded.problem));
      const { msg } = decoded;
      if (msg.type === 'welcome') {
        settled = true;
        clearTimeout(timer);
        resolve(new Channel(socket, msg, opts.url));
      } else if (msg.type === 'refused' || msg.type === 'error') {
        refusal = new ExecutorError(msg.code, msg.message);
      } else {
        fail(brokenBy(opts.url, `${JSON.stringify(msg.type === 'unknown' ? msg.name : msg.type)} before its welcome`));
      }
    });
    socket.addEventListener('close', (event) => {
      if (refusal) return fail(refusal);
      fail(unreachable(closeDetail(event, errorDetail || 'the connection closed during the handshake')));
    });
  });
}

module.exports = { Channel, open, pinnedUrl, protocolVersion, tokenProtocol };
