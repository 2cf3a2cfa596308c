#!/usr/bin/env node
// @ts-check
'use strict';
// The package's command line: `codemode-executor serve` runs the daemon (docs/protocol.md) in
// this process, prints one line when it listens, logs to stderr, and drains on SIGTERM or
// SIGINT, then exits 0. `codemode-executor testbed` replays a host's own cases through both
// executors (lib/testbed/cli.mjs, docs/testbed.md). `codemode-executor mcp` serves MCP servers
// to an MCP client as one sandboxed `code` tool (lib/mcp/cli.js, docs/mcp.md).

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { serve } = require('../lib/serve');
const { ExecutorError } = require('../lib/errors');
const { limits } = require('../lib/native');
const { fieldOf } = require('../lib/validate/fields');
const { TESTBED_USAGE } = require('../lib/testbed/usage');
const { mcpUsage } = require('../lib/mcp/usage');
const { warnIfUnsupportedNode } = require('../lib/node-support');

warnIfUnsupportedNode();

/** The usage text; the defaults are crates/protocol's and crates/daemon's (`limits`, through the addon). */
function usage() {
  const { defaults, serveDefaults: serve } = limits();
  return `Usage: codemode-executor serve [options]

Runs the executor daemon: a pool of worker processes behind one WebSocket port.

Options:
  --host ADDRESS               address to listen on (default 127.0.0.1). Any address other
                               than loopback needs --token-file; put TLS in front with a proxy
                               (docs/deployment.md: HAProxy terminates it)
  --port N                     port to listen on; 0 picks a free one (default ${serve.port})
  --token-file PATH            file holding a shared secret (16+ characters, e.g.
                               openssl rand -hex 32) every client must present
  --tenants PATH               file holding the tenants (docs/tenants.md), a JSON object
                               { "acme": { "token": "...", "maxRunning": 2, "maxQueued": 100,
                               "cpuPerMinute": 60000 }, ... }: a client presents its tenant's
                               token (16+ characters, one per tenant), and its runs use only
                               that tenant's workers, within its bounds. Not with --token-file
  --approval-key-file PATH     file holding the key approval tokens are signed with (its
                               bytes, ${limits().approval.keyMinBytes}+; one trailing newline is dropped, e.g.
                               openssl rand -hex 32 > PATH); give every daemon behind one
                               balancer the same file so any resumes a paused run. Keep it
                               secret. Default: a random key of this process (its tokens die
                               with it)
  --allow-origin ORIGIN        a web origin whose pages may connect (repeatable); an upgrade
                               carrying any other Origin header is refused (default: none)
  --allow-host NAME            a name clients may reach the daemon by besides its address
                               (repeatable; for a proxy or DNS name in front)
  --outbound MODE              the most network a caller's run may get, and what one that
                               names none gets: null (fetch closed), routed (the caller's
                               own policy), public (native, to public addresses only) or
                               native (everything this machine reaches) (default public)
  --workers N                  worker processes (default: the machine's parallelism)
  --memory-limit MIB           memory limit of a run: the default and the most a request may
                               ask for (default ${defaults.memoryLimit})
  --timeout MS                 time bound of a run: the default and the most a request may ask
                               for (default ${defaults.timeout})
  --cpu-limit MS               CPU a run's program may spend (its thread; waiting for tools,
                               fetches and timers costs none): the default and the most a
                               request may ask for (default: none, only --timeout holds)
  --tool-call-limit N          tool calls a run may make: the default and the most a request
                               may ask for (default: none)
  --fetch-limit N              fetches a run (and each invocation of its handles) may make:
                               the default and the most a request may ask for (default: none)
  --approval-timeout MS        the most one decision of a callback-mode run may take (its
                               worker stays held while it waits): the default and the most a
                               request's approval.timeout may ask for (default ${serve.approvalTimeout})
  --queue-bound N              executions that may wait for a worker, and invocations for a
                               retained execution (default ${defaults.queueBound})
  --handles-idle-timeout MS    how long a retained execution lives unused (default ${defaults.handlesIdleTimeout})
  --max-in-flight N            requests in flight per connection (default ${serve.maxInFlight})
  --max-connections N          connections open at once (default ${serve.maxConnections})
  --max-connections-per-address N
                               connections open at once from one address (default ${serve.maxConnectionsPerAddress})
  --hello-timeout MS           how long a new connection may take to say hello (default ${serve.helloTimeout})
  --idle-timeout MS            close a connection with nothing in flight after this long;
                               0: never (default ${serve.idleTimeout})
  --max-message-bytes N        the largest message a client may send (default ${serve.maxMessageBytes})
  --quiet                      log nothing but errors to stderr
  -h, --help                   show this text
  -v, --version                print the version

${TESTBED_USAGE}
${mcpUsage()}`;
}

/** Flag -> the serve() option it sets, for the integer flags. */
const INTEGER_FLAGS = {
  port: 'port',
  workers: 'workers',
  'memory-limit': 'memoryLimit',
  timeout: 'timeout',
  'cpu-limit': 'cpuLimit',
  'tool-call-limit': 'toolCallLimit',
  'fetch-limit': 'fetchLimit',
  'approval-timeout': 'approvalTimeout',
  'queue-bound': 'queueBound',
  'handles-idle-timeout': 'handlesIdleTimeout',
  'max-in-flight': 'maxInFlight',
  'max-connections': 'maxConnections',
  'max-connections-per-address': 'maxConnectionsPerAddress',
  'hello-timeout': 'helloTimeout',
  'idle-timeout': 'idleTimeout',
  'max-message-bytes': 'maxMessageBytes',
};

/** Flag -> the serve() option it sets, for every flag that sets one. */
const OPTION_FLAGS = { ...INTEGER_FLAGS, host: 'host', 'allow-origin': 'allowOrigins', 'allow-host': 'allowHosts', 'token-file': 'token', tenants: 'tenants', 'approval-key-file': 'approvalKey', outbound: 'outbound' };

/** @param {string} message */
function usageError(message) {
  process.stderr.write(`codemode-executor: ${message}\n\n${usage()}`);
  process.exit(2);
}

/** @param {string} line */
function log(line) {
  process.stderr.write(`${new Date().toISOString()} ${line}\n`);
}

async function main() {
  if (process.argv[2] === 'mcp') {
    const code = await require('../lib/mcp/cli').main(process.argv.slice(3));
    if (code !== 0) process.exit(code);
    return;
  }
  if (process.argv[2] === 'testbed') {
    const { main: testbed } = await import('../lib/testbed/cli.mjs');
    process.exitCode = await testbed(process.argv.slice(3));
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      strict: true,
      options: {
        host: { type: 'string' },
        'token-file': { type: 'string' },
        tenants: { type: 'string' },
        'approval-key-file': { type: 'string' },
        'allow-origin': { type: 'string', multiple: true },
        'allow-host': { type: 'string', multiple: true },
        outbound: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        ...Object.fromEntries(Object.keys(INTEGER_FLAGS).map((flag) => [flag, { type: /** @type {const} */ ('string') }])),
      },
    });
  } catch (e) {
    return usageError(e instanceof Error ? e.message : String(e));
  }
  const { values, positionals } = parsed;
  if (values.help) return void process.stdout.write(usage());
  if (values.version) return void process.stdout.write(`${require('../package.json').version}\n`);
  if (positionals.length !== 1 || positionals[0] !== 'serve') {
    return usageError(positionals.length === 0 ? 'a command is required' : `unknown command ${JSON.stringify(positionals.join(' '))}`);
  }
  /** @type {Record<string, unknown>} */
  const options = {};
  for (const [flag, key] of Object.entries(INTEGER_FLAGS)) {
    const given = /** @type {Record<string, unknown>} */ (values)[flag];
    if (given === undefined) continue;
    if (typeof given !== 'string' || !/^\d{1,10}$/.test(given)) return usageError(`--${flag} takes a non-negative integer, got ${JSON.stringify(given)}`);
    options[key] = Number(given);
  }
  if (values.host !== undefined) options.host = values.host;
  if (values['allow-origin'] !== undefined) options.allowOrigins = values['allow-origin'];
  if (values['allow-host'] !== undefined) options.allowHosts = values['allow-host'];
  if (values.outbound !== undefined) options.outbound = values.outbound === 'null' ? null : values.outbound;
  if (values['token-file'] !== undefined) {
    const file = values['token-file'];
    let token;
    try {
      token = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      return usageError(`--token-file ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (token === '') return usageError(`--token-file ${file} is empty; put the shared secret in it`);
    options.token = token;
  }
  if (values.tenants !== undefined) {
    const file = values.tenants;
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      return usageError(`--tenants ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      options.tenants = JSON.parse(text);
    } catch (e) {
      // Where, never what: the parser's message quotes the text around the error, which may be
      // a token.
      const at = /position (\d+)/.exec(e instanceof Error ? e.message : '');
      const where = at ? ` at line ${text.slice(0, Number(at[1])).split('\n').length}` : '';
      return usageError(`--tenants ${file} is not valid JSON${where}; write an object { "name": { "token": "...", "maxRunning"?, "maxQueued"?, "cpuPerMinute"? } }`);
    }
  }
  if (values['approval-key-file'] !== undefined) {
    const file = values['approval-key-file'];
    let key;
    try {
      key = fs.readFileSync(file);
    } catch (e) {
      return usageError(`--approval-key-file ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    // The file's bytes, less one trailing newline (what `openssl rand -hex 32 > key` leaves).
    const end = key.at(-1) === 0x0a ? (key.at(-2) === 0x0d ? key.length - 2 : key.length - 1) : key.length;
    key = key.subarray(0, end);
    const min = limits().approval.keyMinBytes;
    if (key.length < min) {
      return usageError(`--approval-key-file ${file} holds ${key.length} bytes; an approval key needs at least ${min} (e.g. openssl rand -hex 32 > ${file})`);
    }
    options.approvalKey = key;
  }
  const quiet = values.quiet === true;
  options.log = (/** @type {string} */ line) => {
    if (!quiet) log(line);
  };
  let server;
  try {
    server = await serve(options);
  } catch (e) {
    if (e instanceof ExecutorError && e.code === 'INVALID_OPTION') {
      const field = fieldOf(e);
      // A tenant's entry is a field of --tenants: tenants["acme"].token.
      const option = typeof field === 'string' && field.startsWith('tenants') ? 'tenants' : field;
      const flag = Object.entries(OPTION_FLAGS).find(([, key]) => key === option)?.[0];
      return usageError(flag ? `--${flag}: ${e.message}` : e.message);
    }
    if (e instanceof ExecutorError && e.code === 'TOKEN_REQUIRED') return usageError(e.message);
    process.stderr.write(`codemode-executor: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
  process.stdout.write(`codemode-executor listening on ${server.url}\n`);
  let stopping = false;
  /** @param {string} signal */
  const stop = (signal) => {
    if (stopping) {
      log(`${signal} again: exiting without waiting for the drain`);
      process.exit(1);
    }
    stopping = true;
    log(`${signal}: draining`);
    server.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main();
