// @ts-check
'use strict';
// `codemode-executor mcp`: the MCP gateway as a command. Reads an `mcpServers` config, starts an
// IsolateExecutor with the flags' bounds (the network closed unless a flag opens it), and serves
// the gateway over stdio (the default) or Streamable HTTP (`--http PORT`, http.js). docs/mcp.md.

const fs = require('node:fs');
const crypto = require('node:crypto');
const { parseArgs } = require('node:util');
const { readConfig, parseServers } = require('./config');
const { McpGateway } = require('./gateway');
const { ExecutorError, render } = require('../errors');
const { mcpUsage, MCP_DEFAULTS } = require('./usage');
const { limits } = require('../native');
const { serveHttp, isLoopback } = require('./http');

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
        tenant: { type: 'string' },
        typecheck: { type: 'boolean' },
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
        tenant: values.tenant,
        typecheck: values.typecheck === true,
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

module.exports = { main };
