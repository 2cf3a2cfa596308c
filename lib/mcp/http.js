// @ts-check
'use strict';
// `codemode-executor mcp --http`: the gateway over Streamable HTTP at /mcp, one MCP SDK
// `StreamableHTTPServerTransport` and `McpServer` per session. The transport checks Host and
// Origin (its DNS rebinding protection), reads bodies within their bound, and refuses what is
// not MCP; before it, the gateway caps connections (connections.js) and sessions, and requires the
// bearer token (bearer.js). docs/mcp.md, "HTTP: connections, origins, resuming".

const http = require('node:http');
const net = require('node:net');
const crypto = require('node:crypto');
const { limits } = require('../native');
const { ConnectionCaps, HEAD_TIMEOUT_MS } = require('./connections');
const { requireBearer, sharedTokenVerifier } = require('./bearer');
const { BoundedEventStore } = require('./event-store');

/** @typedef {import('./gateway').McpGateway} McpGateway */

/** Sessions one HTTP gateway holds at once; one more is refused (503). */
const MAX_SESSIONS = 64;
/** A session without a request for this long is closed. */
const SESSION_IDLE_MS = 30 * 60_000;
/** The largest request body (bytes). */
const MAX_BODY = 4 * 1024 * 1024;
/** The `retry` of a POST stream's priming event: how long a client that lost the stream waits to resume it (ms). */
const RETRY_MS = 1_000;
/** The bytes of events one session keeps for resuming its streams (Last-Event-ID); the oldest go first. */
const EVENT_STORE_BYTES = 256 * 1024;

/**
 * Whether `host` is a loopback address (or `localhost`): --http listens there without a token of
 * the user's (TOKEN_REQUIRED otherwise), and checks the Host of each request.
 * @param {string} host
 */
function isLoopback(host) {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  return host === '::1' || host === '[::1]';
}

/**
 * The SDK transport's DNS rebinding protection for a gateway listening at `listening` (given as
 * `host`), and what a refused Origin may be told.
 * - Host, on loopback only: the address it listens on with its port, and on 127.0.0.1 or ::1
 *   `localhost` with it (the name that reaches them). Not the other loopback family's address:
 *   the gateway does not listen there. Off loopback clients reach it by names of their own, and
 *   the token guards it: no Host is checked.
 * - Origin: a page of this server's own origin (the conformance suite's DNS rebinding scenario
 *   sends it) and those of --allow-origin; an address of every interface (0.0.0.0, ::) is no
 *   origin a page has.
 * @param {{ address: string, family: string, port: number }} listening
 * @param {string} host
 * @param {string[]} origins --allow-origin's
 */
function rebindingProtection({ address, family, port }, host, origins) {
  const loopback = isLoopback(host);
  const shown = family === 'IPv6' ? `[${address}]` : address;
  const names = [`${shown}:${port}`];
  if (loopback && (host === 'localhost' || ['127.0.0.1', '::1'].includes(address))) names.push(`localhost:${port}`);
  const own = ['0.0.0.0', '::'].includes(address) ? [] : names.map((h) => `http://${h}`);
  const allowed = [...own, ...origins];
  return {
    url: `http://${shown}:${port}/mcp`,
    transport: {
      enableDnsRebindingProtection: true,
      allowedHosts: loopback ? names : undefined,
      // The SDK checks an Origin only against a non-empty list. With none allowed the list holds
      // '' alone, which no Origin equals (an empty Origin, which no browser sends, it lets by).
      allowedOrigins: allowed.length > 0 ? allowed : [''],
    },
  };
}

/**
 * @param {http.ServerResponse} res
 * @param {number} status
 * @param {string} message
 * @param {Record<string, string>} [headers]
 */
function refuse(res, status, message, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
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
  // Loaded here, not with the command: stdio never needs it.
  const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { serveDefaults } = limits();
  const connections = new ConnectionCaps({
    capAll: maxConnections ?? serveDefaults.maxConnections,
    capPerAddress: maxConnectionsPerAddress ?? serveDefaults.maxConnectionsPerAddress,
  });
  const bearer = requireBearer({ verifier: sharedTokenVerifier(token) });
  /** @type {Map<string, { transport: import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport, timer: NodeJS.Timeout, events: BoundedEventStore }>} */
  const sessions = new Map();
  /** Set once listening (no request comes before). @type {ReturnType<typeof rebindingProtection>['transport'] | null} */
  let protection = null;

  /** @param {string} id */
  const touch = (id) => {
    const s = sessions.get(id);
    if (!s) return;
    clearTimeout(s.timer);
    s.timer = setTimeout(() => void s.transport.close(), SESSION_IDLE_MS);
    s.timer.unref();
  };

  /**
   * A request that passed the token: to its session's transport, or to a new session's.
   * @param {import('./bearer').Request} req
   * @param {http.ServerResponse} res
   */
  const route = async (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (id !== undefined) {
      const session = typeof id === 'string' ? sessions.get(id) : undefined;
      if (!session) return refuse(res, 404, 'Session not found: start a new one with initialize');
      touch(/** @type {string} */ (id));
      const last = req.headers['last-event-id'];
      const why = req.method === 'GET' && typeof last === 'string' ? session.events.refusal(last) : null;
      if (why !== null) return refuse(res, 400, why);
      return session.transport.handleRequest(req, res);
    }
    // No session: a new one, which the SDK begins on an initialize and refuses on anything else.
    if (sessions.size >= MAX_SESSIONS) return refuse(res, 503, `Too many sessions (${MAX_SESSIONS}); close one (DELETE /mcp) and try again`);
    const events = new BoundedEventStore(EVENT_STORE_BYTES);
    const transport = new StreamableHTTPServerTransport({
      ...protection,
      sessionIdGenerator: () => crypto.randomUUID(),
      maxRequestBodySize: MAX_BODY,
      // Resumability (the SDK's): each POST stream opens with a priming event (an id, this
      // retry, empty data) for clients of protocol 2025-11-25 on, and a GET with Last-Event-ID
      // replays what followed it.
      eventStore: events,
      retryInterval: RETRY_MS,
      onsessioninitialized: (sid) => {
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
    await transport.handleRequest(req, res);
    // Refused before a session began (not an initialize, a wrong Host, Origin, Accept or
    // Content-Type): nothing may stay.
    if (transport.sessionId === undefined) await mcp.close();
  };

  const server = http.createServer({ headersTimeout: HEAD_TIMEOUT_MS, connectionsCheckingInterval: 1_000 }, async (req, res) => {
    try {
      const refused = connections.requested(req.socket);
      if (refused !== undefined) return refuse(res, 503, refused, { connection: 'close' });
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return refuse(res, 404, 'Not found: the MCP endpoint is /mcp');
      await bearer(req, res, () => route(req, res));
    } catch (e) {
      if (!res.headersSent) refuse(res, 500, `Internal error: ${e instanceof Error ? e.message : String(e)}`);
      else res.end();
    }
  });
  server.on('connection', (socket) => connections.admit(socket));
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(undefined));
  });
  const listening = rebindingProtection(/** @type {net.AddressInfo} */ (server.address()), host, origins);
  protection = listening.transport;
  return listening.url;
}

module.exports = { serveHttp, isLoopback, rebindingProtection };
