// @ts-check
'use strict';
// `codemode-executor mcp`: the MCP gateway as a command. Reads an `mcpServers` config, starts an
// IsolateExecutor with the flags' bounds (the network closed unless a flag opens it), and serves
// the gateway over stdio (the default) or Streamable HTTP (`--http PORT`). docs/mcp.md.

const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const crypto = require('node:crypto');
const { parseArgs } = require('node:util');
const { readConfig, parseServers } = require('./config');
const { McpGateway } = require('./gateway');
const { ExecutorError, render } = require('../errors');
const { mcpUsage, MCP_DEFAULTS } = require('./usage');
const { limits } = require('../native');


/** Flag -> gateway or executor option, for the integer flags. */
const INTEGERS = {
  http: 'port', workers: 'workers', timeout: 'timeout', 'memory-limit': 'memoryLimit', 'cpu-limit': 'cpuLimit',
  'tool-call-limit': 'toolCallLimit', 'call-timeout': 'callTimeout', 'approval-timeout': 'approvalTimeout',
  'max-connections': 'maxConnections', 'max-connections-per-address': 'maxConnectionsPerAddress',
};
/** The integer flags whose range and default are the daemon's (crates/daemon/src/options.rs, `limits()`). */
const DAEMON_BOUNDS = new Set(['maxConnections', 'maxConnectionsPerAddress']);
/** The flags that only --http uses. */
const HTTP_FLAGS = ['host', 'token-file', 'allow-origin', 'max-connections', 'max-connections-per-address'];

/** Sessions one HTTP gateway holds at once; one more is refused (503). */
const MAX_SESSIONS = 64;
/** A session without a request for this long is closed. */
const SESSION_IDLE_MS = 30 * 60_000;
/** The largest request body (bytes). */
const MAX_BODY = 4 * 1024 * 1024;
/** How long a connection may take to send a request head (ms), as the daemon's; then it is closed. */
const HEAD_TIMEOUT_MS = 10_000;
/** The `retry` of a POST stream's priming event: how long a client that lost the stream waits to resume it (ms). */
const RETRY_MS = 1_000;
/** The bytes of events one session keeps for resuming its streams (Last-Event-ID); the oldest go first. */
const EVENT_STORE_BYTES = 256 * 1024;
/** What one kept event costs beyond its JSON, counted against EVENT_STORE_BYTES. */
const EVENT_OVERHEAD = 64;

/** @param {string} host */
function isLoopback(host) {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  return host === '::1' || host === '[::1]';
}

/**
 * The address a client is counted by, as the daemon counts it: an IPv4 address (an IPv4-mapped
 * IPv6 one too), or the /64 of an IPv6 address, which one host usually holds whole.
 * @param {string} address
 */
function clientKey(address) {
  if (!net.isIPv6(address)) return address;
  const bare = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1];
  const [head, tail] = bare.split('::');
  /** @param {string | undefined} part */
  const groups = (part) => (part ? part.split(':').flatMap((g) => {
    if (!g.includes('.')) return [g];
    const [a, b, c, d] = g.split('.').map(Number);
    return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  }) : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${all.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/**
 * Why `value` is not an origin as a browser sends it in `Origin` (scheme://host[:port]), or null.
 * @param {string} value
 */
function originError(value) {
  let origin = 'null';
  try {
    origin = new URL(value).origin;
  } catch {}
  if (origin === value && origin !== 'null') return null;
  const hint = origin === 'null' ? '' : `; did you mean ${JSON.stringify(origin)}?`;
  return `--allow-origin takes an origin as a browser sends it (scheme://host[:port], no path), got ${JSON.stringify(value)}${hint}`;
}

/**
 * The events of one session's SSE streams, kept so that a client that lost a stream resumes it
 * with Last-Event-ID: the MCP SDK's `EventStore`, whose transport then sends each POST stream's
 * priming event and replays what the client missed. Bounded to `bytes` (each event's JSON and
 * EVENT_OVERHEAD), the oldest dropped first; an id from before a dropped event cannot resume (the
 * client would miss answers silently). Event ids are `SEQUENCE.STREAM`.
 * @implements {EventStoreShape}
 */
class BoundedEventStore {
  /** @param {number} bytes */
  constructor(bytes) {
    this.bytes = bytes;
    this.used = 0;
    /** The last sequence number given. */
    this.last = 0;
    /** The highest sequence number dropped (0: none). */
    this.dropped = 0;
    /** @type {Map<number, { stream: string, json: string | null, size: number }>} in sequence order */
    this.events = new Map();
  }

  /**
   * @param {string} stream
   * @param {object} message
   */
  async storeEvent(stream, message) {
    const seq = ++this.last;
    // The priming event (`{}`) is kept as an id only: there is nothing in it to replay.
    const json = Object.keys(message).length === 0 ? null : JSON.stringify(message);
    const size = EVENT_OVERHEAD + (json === null ? 0 : Buffer.byteLength(json));
    this.events.set(seq, { stream, json, size });
    this.used += size;
    for (const [s, e] of this.events) {
      if (this.used <= this.bytes) break;
      this.events.delete(s);
      this.used -= e.size;
      this.dropped = s;
    }
    return `${seq}.${stream}`;
  }

  /**
   * Why a stream cannot resume after `id`, or null when it can.
   * @param {string} id
   */
  refusal(id) {
    const seq = Number(/^(\d+)\./.exec(id)?.[1] ?? NaN);
    if (!(seq >= 1 && seq <= this.last)) return `Last-Event-ID ${JSON.stringify(id)} is not an event of this session. Open a new stream without Last-Event-ID`;
    if (seq < this.dropped) {
      return `Last-Event-ID ${JSON.stringify(id)} cannot be resumed: the events after it were dropped (a session keeps its last ${this.bytes} bytes of events). Open a new stream without Last-Event-ID; answers sent since are lost`;
    }
    return null;
  }

  /** @param {string} id */
  async getStreamIdForEventId(id) {
    return this.refusal(id) === null ? id.slice(id.indexOf('.') + 1) : undefined;
  }

  /**
   * @param {string} id
   * @param {{ send: (id: string, message: any) => Promise<void> }} sink
   */
  async replayEventsAfter(id, { send }) {
    if (this.refusal(id) !== null) throw new Error(/** @type {string} */ (this.refusal(id)));
    const after = Number(id.slice(0, id.indexOf('.')));
    const stream = id.slice(id.indexOf('.') + 1);
    for (const [seq, e] of this.events) {
      if (seq > after && e.stream === stream && e.json !== null) await send(`${seq}.${stream}`, JSON.parse(e.json));
    }
    return stream;
  }
}
/** @typedef {import('@modelcontextprotocol/sdk/server/streamableHttp.js').EventStore} EventStoreShape */

/**
 * @param {string[]} argv
 * @returns {Promise<number>} the exit code (the process lives on while serving)
 */
async function main(argv) {
  /** @param {string} message */
  const usageError = (message) => {
    process.stderr.write(`codemode-executor mcp: ${message}\n\n${mcpUsage()}`);
    return 2;
  };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        config: { type: 'string' },
        host: { type: 'string' },
        'token-file': { type: 'string' },
        'allow-origin': { type: 'string', multiple: true },
        outbound: { type: 'string' },
        approve: { type: 'string', multiple: true },
        catalog: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        ...Object.fromEntries(Object.keys(INTEGERS).map((f) => [f, { type: /** @type {const} */ ('string') }])),
      },
    });
  } catch (e) {
    return usageError(e instanceof Error ? e.message : String(e));
  }
  const values = /** @type {Record<string, any>} */ (parsed.values);
  if (values.help) {
    process.stdout.write(mcpUsage());
    return 0;
  }
  if (values.config === undefined) return usageError('--config FILE is required');
  /** @type {Record<string, number>} */
  const n = {};
  for (const [flag, key] of Object.entries(INTEGERS)) {
    if (values[flag] === undefined) continue;
    if (!/^\d{1,10}$/.test(values[flag])) return usageError(`--${flag} takes a non-negative integer, got ${JSON.stringify(values[flag])}`);
    n[key] = Number(values[flag]);
    if (DAEMON_BOUNDS.has(key)) {
      const [min, max] = limits().serveOptions[key];
      if (n[key] < min || n[key] > max) return usageError(`--${flag} takes an integer from ${min} to ${max}, got ${values[flag]}`);
    }
  }
  const outbound = values.outbound ?? 'null';
  if (!['null', 'public', 'native'].includes(outbound)) return usageError(`--outbound takes null, public or native, got ${JSON.stringify(outbound)}`);
  const httpMode = n.port !== undefined;
  if (!httpMode && HTTP_FLAGS.some((f) => values[f] !== undefined)) {
    return usageError(`${HTTP_FLAGS.slice(0, -1).map((f) => `--${f}`).join(', ')} and --${HTTP_FLAGS[HTTP_FLAGS.length - 1]} go with --http`);
  }
  for (const origin of values['allow-origin'] ?? []) {
    const why = originError(origin);
    if (why) return usageError(why);
  }
  const host = values.host ?? '127.0.0.1';
  /** @type {string | null} */
  let token = null;
  if (values['token-file'] !== undefined) {
    try {
      token = fs.readFileSync(values['token-file'], 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      return usageError(`--token-file ${values['token-file']} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (token.length < 16) return usageError(`--token-file ${values['token-file']} holds ${token.length} characters; a token needs at least 16 (e.g. openssl rand -hex 32)`);
  }
  if (httpMode && !token && !isLoopback(host)) return usageError(render('TOKEN_REQUIRED', { address: host }));
  // On loopback too: any local process or user could otherwise run programs against every
  // upstream and its credentials. Without --token-file, a random one, printed with the URL.
  const generated = httpMode && !token;
  if (generated) token = crypto.randomBytes(24).toString('base64url');

  /** @type {import('../../index').IsolateExecutor} */
  let executor;
  /** @type {McpGateway} */
  let gateway;
  try {
    const config = readConfig(values.config);
    parseServers(config);
    const { IsolateExecutor } = require('../../index');
    executor = new IsolateExecutor({
      workers: n.workers ?? MCP_DEFAULTS.workers,
      timeout: n.timeout ?? MCP_DEFAULTS.timeout,
      memoryLimit: n.memoryLimit,
      cpuLimit: n.cpuLimit,
      toolCallLimit: n.toolCallLimit ?? MCP_DEFAULTS.toolCallLimit,
      outbound: outbound === 'null' ? null : /** @type {'public' | 'native'} */ (outbound),
    });
    try {
      gateway = new McpGateway({
        servers: config,
        executor,
        catalog: values.catalog,
        approve: values.approve,
        callTimeout: n.callTimeout,
        approvalTimeout: n.approvalTimeout,
        network: outbound !== 'null',
      });
    } catch (e) {
      await executor.close();
      throw e;
    }
  } catch (e) {
    if (e instanceof ExecutorError) return usageError(e.message);
    throw e;
  }
  await gateway.start();
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await gateway.close();
    await executor.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  if (!httpMode) {
    const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
    const mcp = gateway.createServer();
    // The client gone, the gateway stops (after the gateway's own bookkeeping of it).
    const forget = mcp.server.onclose;
    mcp.server.onclose = () => {
      forget?.();
      void stop();
    };
    await mcp.connect(new StdioServerTransport());
    process.stdin.on('end', () => void stop());
    return 0;
  }
  const url = await serveHttp(gateway, {
    host,
    port: n.port,
    token: /** @type {string} */ (token),
    origins: values['allow-origin'] ?? [],
    maxConnections: n.maxConnections,
    maxConnectionsPerAddress: n.maxConnectionsPerAddress,
  });
  process.stdout.write(`codemode-executor mcp listening on ${url}${generated ? ` (send "Authorization: Bearer ${token}"; --token-file sets your own)` : ''}\n`);
  return 0;
}

/**
 * Serves the gateway over Streamable HTTP at /mcp, one MCP server per session. Connections are
 * capped in all and per address (the daemon's bounds, `limits().serveDefaults` unless given): one
 * past a cap is answered 503 at its first request, with the reason, and closed.
 * @param {McpGateway} gateway
 * @param {{ host: string, port: number, token: string, origins: string[], maxConnections?: number, maxConnectionsPerAddress?: number }} options
 * @returns {Promise<string>} the URL
 */
async function serveHttp(gateway, { host, port, token, origins, maxConnections, maxConnectionsPerAddress }) {
  const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
  const { serveDefaults } = limits();
  const capAll = maxConnections ?? serveDefaults.maxConnections;
  const capPerAddress = maxConnectionsPerAddress ?? serveDefaults.maxConnectionsPerAddress;
  /** @type {Map<string, { transport: any, timer: NodeJS.Timeout, events: BoundedEventStore }>} */
  const sessions = new Map();
  /** The Host names of this server (on loopback), and the origins whose requests it takes. */
  let hosts = new Set();
  let allowed = new Set(origins);
  /** What a refused Origin is told. */
  let originsText = 'the origins given with --allow-origin';
  const expected = crypto.createHash('sha256').update(`Bearer ${token}`).digest();
  const loopback = isLoopback(host);

  /**
   * @param {http.ServerResponse} res
   * @param {number} status
   * @param {string} message
   * @param {Record<string, string>} [headers]
   */
  const refuse = (res, status, message, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
  };
  /** @param {string} id */
  const touch = (id) => {
    const s = sessions.get(id);
    if (!s) return;
    clearTimeout(s.timer);
    s.timer = setTimeout(() => void s.transport.close(), SESSION_IDLE_MS);
    s.timer.unref();
  };

  // Connections: counted from accept to close; one that sends no request within HEAD_TIMEOUT_MS
  // is closed (Node's headersTimeout bounds a head begun, not one never begun). One past a cap is
  // not counted; it waits for its request (as long at most), which is answered 503 with the
  // reason. At most `capAll` wait so; past that a refused connection is closed at once, unanswered.
  let open = 0;
  let waiting = 0;
  /** @type {Map<string, number>} */
  const perAddress = new Map();
  /** @type {WeakMap<net.Socket, string>} */
  const refusals = new WeakMap();
  /** @type {WeakMap<net.Socket, NodeJS.Timeout>} the connections yet to send a request */
  const silent = new WeakMap();
  /** @param {net.Socket} socket */
  const admit = (socket) => {
    const timer = setTimeout(() => socket.destroy(), HEAD_TIMEOUT_MS).unref();
    silent.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
    const address = clientKey(socket.remoteAddress ?? '');
    const from = perAddress.get(address) ?? 0;
    const why = from >= capPerAddress
      ? `${from} connections from ${address} are open, the most the gateway takes from one address (--max-connections-per-address)`
      : open >= capAll ? `${open} connections are open, the most the gateway takes (--max-connections)` : null;
    if (why !== null) {
      if (waiting >= capAll) return void socket.destroy();
      waiting++;
      refusals.set(socket, `${why}. Close idle connections or reuse one.`);
      socket.once('close', () => void waiting--);
      return;
    }
    open++;
    perAddress.set(address, from + 1);
    socket.once('close', () => {
      open--;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  };

  const server = http.createServer({ headersTimeout: HEAD_TIMEOUT_MS, connectionsCheckingInterval: 1_000 }, async (req, res) => {
    try {
      clearTimeout(silent.get(req.socket));
      const refused = refusals.get(req.socket);
      if (refused !== undefined) return refuse(res, 503, refused, { connection: 'close' });
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return refuse(res, 404, 'Not found: the MCP endpoint is /mcp');
      // DNS rebinding: on loopback the Host must name this server (off loopback clients reach it
      // by names of their own, and the token guards it); a browser page must be of this server's
      // own origin or an allowed one.
      if (loopback && !hosts.has(String(req.headers.host ?? '').toLowerCase())) {
        return refuse(res, 403, `Host ${JSON.stringify(req.headers.host ?? '')} is not this server's (${[...hosts].join(' or ')}): a request through another name is refused (DNS rebinding)`);
      }
      if (req.headers.origin !== undefined && !allowed.has(req.headers.origin)) {
        return refuse(res, 403, `Origin ${JSON.stringify(req.headers.origin)} is not allowed: the gateway takes requests from ${originsText}`);
      }
      const given = crypto.createHash('sha256').update(String(req.headers.authorization ?? '')).digest();
      if (!crypto.timingSafeEqual(given, expected)) return refuse(res, 401, 'Unauthorized: send "Authorization: Bearer TOKEN" with the token of --token-file (or the one printed at start)');
      /** @type {unknown} */
      let body;
      if (req.method === 'POST') {
        const chunks = [];
        let size = 0;
        for await (const chunk of req) {
          size += chunk.length;
          if (size > MAX_BODY) return refuse(res, 413, `Request body past ${MAX_BODY} bytes`);
          chunks.push(chunk);
        }
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          return refuse(res, 400, 'Parse error: the body is not JSON');
        }
      }
      const id = req.headers['mcp-session-id'];
      const session = typeof id === 'string' ? sessions.get(id) : undefined;
      if (typeof id === 'string' && session) {
        touch(id);
        const last = req.headers['last-event-id'];
        const why = req.method === 'GET' && typeof last === 'string' ? session.events.refusal(last) : null;
        if (why !== null) return refuse(res, 400, why);
        return await session.transport.handleRequest(req, res, body);
      }
      if (id !== undefined) return refuse(res, 404, 'Session not found: start a new one with initialize');
      if (req.method !== 'POST' || !isInitializeRequest(body)) return refuse(res, 400, 'Bad request: no session; send initialize first');
      if (sessions.size >= MAX_SESSIONS) return refuse(res, 503, `Too many sessions (${MAX_SESSIONS}); close one (DELETE /mcp) and try again`);
      const events = new BoundedEventStore(EVENT_STORE_BYTES);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        // Resumability (the SDK's): each POST stream opens with a priming event (an id, this
        // retry, empty data) for clients of protocol 2025-11-25 on, and a GET with Last-Event-ID
        // replays what followed it.
        eventStore: events,
        retryInterval: RETRY_MS,
        onsessioninitialized: (/** @type {string} */ sid) => {
          sessions.set(sid, { transport, timer: setTimeout(() => {}, 0), events });
          touch(sid);
        },
      });
      transport.onclose = () => {
        const sid = transport.sessionId;
        if (sid) {
          clearTimeout(sessions.get(sid)?.timer);
          sessions.delete(sid);
        }
      };
      const mcp = gateway.createServer();
      await mcp.connect(transport);
      await transport.handleRequest(req, res, body);
      // Refused before a session began (a wrong Accept or Content-Type): nothing may stay.
      if (transport.sessionId === undefined) await mcp.close();
    } catch (e) {
      if (!res.headersSent) refuse(res, 500, `Internal error: ${e instanceof Error ? e.message : String(e)}`);
      else res.end();
    }
  });
  server.on('connection', admit);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(undefined));
  });
  const address = /** @type {net.AddressInfo} */ (server.address());
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  // Its own names: the address it listens on, and on 127.0.0.1 or ::1 `localhost` too (the name
  // that reaches them). Not the other loopback family's address: the gateway does not listen
  // there, so a page from there is another server's.
  const names = [`${shown}:${address.port}`];
  if (loopback && (host === 'localhost' || ['127.0.0.1', '::1'].includes(address.address))) names.push(`localhost:${address.port}`);
  hosts = new Set(names);
  // A page of this server's own origin may call it (the conformance suite's DNS rebinding
  // scenario sends it); every other origin needs --allow-origin. An address of every interface
  // (0.0.0.0, ::) is no origin a page has.
  const own = ['0.0.0.0', '::'].includes(address.address) ? [] : names.map((h) => `http://${h}`);
  allowed = new Set([...own, ...origins]);
  if (own.length > 0) originsText = `its own origin (${own.join(' or ')}) and those given with --allow-origin`;
  return `http://${shown}:${address.port}/mcp`;
}

module.exports = { main, serveHttp };
