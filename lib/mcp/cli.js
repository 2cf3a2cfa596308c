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


/** Flag -> gateway or executor option, for the integer flags. */
const INTEGERS = {
  http: 'port', workers: 'workers', timeout: 'timeout', 'memory-limit': 'memoryLimit', 'cpu-limit': 'cpuLimit',
  'tool-call-limit': 'toolCallLimit', 'call-timeout': 'callTimeout', 'approval-timeout': 'approvalTimeout',
};

/** Sessions one HTTP gateway holds at once; one more is refused (503). */
const MAX_SESSIONS = 64;
/** A session without a request for this long is closed. */
const SESSION_IDLE_MS = 30 * 60_000;
/** The largest request body (bytes). */
const MAX_BODY = 4 * 1024 * 1024;

/** @param {string} host */
function isLoopback(host) {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  return host === '::1' || host === '[::1]';
}

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
  }
  const outbound = values.outbound ?? 'null';
  if (!['null', 'public', 'native'].includes(outbound)) return usageError(`--outbound takes null, public or native, got ${JSON.stringify(outbound)}`);
  const httpMode = n.port !== undefined;
  if (!httpMode && (values.host !== undefined || values['token-file'] !== undefined || values['allow-origin'] !== undefined)) {
    return usageError('--host, --token-file and --allow-origin go with --http');
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
    const server = gateway.createServer();
    server.onclose = () => void stop();
    await server.connect(new StdioServerTransport());
    process.stdin.on('end', () => void stop());
    return 0;
  }
  const url = await serveHttp(gateway, { host, port: n.port, token: /** @type {string} */ (token), origins: values['allow-origin'] ?? [] });
  process.stdout.write(`codemode-executor mcp listening on ${url}${generated ? ` (send "Authorization: Bearer ${token}"; --token-file sets your own)` : ''}\n`);
  return 0;
}

/**
 * Serves the gateway over Streamable HTTP at /mcp, one MCP server per session.
 * @param {McpGateway} gateway
 * @param {{ host: string, port: number, token: string, origins: string[] }} options
 * @returns {Promise<string>} the URL
 */
async function serveHttp(gateway, { host, port, token, origins }) {
  const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
  /** @type {Map<string, { transport: any, timer: NodeJS.Timeout }>} */
  const sessions = new Map();
  /** @type {Set<string>} */
  let hosts = new Set();
  const expected = crypto.createHash('sha256').update(`Bearer ${token}`).digest();
  const loopback = isLoopback(host);

  /**
   * @param {http.ServerResponse} res
   * @param {number} status
   * @param {string} message
   */
  const refuse = (res, status, message) => {
    res.writeHead(status, { 'content-type': 'application/json' });
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

  const server = http.createServer(async (req, res) => {
    try {
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return refuse(res, 404, 'Not found: the MCP endpoint is /mcp');
      // DNS rebinding: on loopback the Host must name this server (off loopback clients reach it
      // by names of their own, and the token guards it); a browser page must be an allowed origin.
      if (loopback && !hosts.has(String(req.headers.host ?? '').toLowerCase())) return refuse(res, 403, `Host ${JSON.stringify(req.headers.host ?? '')} is not this server's`);
      if (req.headers.origin !== undefined && !origins.includes(req.headers.origin)) return refuse(res, 403, `Origin ${JSON.stringify(req.headers.origin)} is not allowed (--allow-origin)`);
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
      if (typeof id === 'string' && sessions.has(id)) {
        touch(id);
        return await sessions.get(id)?.transport.handleRequest(req, res, body);
      }
      if (id !== undefined) return refuse(res, 404, 'Session not found: start a new one with initialize');
      if (req.method !== 'POST' || !isInitializeRequest(body)) return refuse(res, 400, 'Bad request: no session; send initialize first');
      if (sessions.size >= MAX_SESSIONS) return refuse(res, 503, `Too many sessions (${MAX_SESSIONS}); close one (DELETE /mcp) and try again`);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (/** @type {string} */ sid) => {
          sessions.set(sid, { transport, timer: setTimeout(() => {}, 0) });
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
      const session = gateway.createServer();
      await session.connect(transport);
      await transport.handleRequest(req, res, body);
      // Refused before a session began (a wrong Accept or Content-Type): nothing may stay.
      if (transport.sessionId === undefined) await session.close();
    } catch (e) {
      if (!res.headersSent) refuse(res, 500, `Internal error: ${e instanceof Error ? e.message : String(e)}`);
      else res.end();
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(undefined));
  });
  const address = /** @type {net.AddressInfo} */ (server.address());
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  hosts = new Set([`${shown}:${address.port}`]);
  if (loopback) for (const h of ['127.0.0.1', 'localhost', '[::1]']) hosts.add(`${h}:${address.port}`);
  return `http://${shown}:${address.port}/mcp`;
}

module.exports = { main, serveHttp };
