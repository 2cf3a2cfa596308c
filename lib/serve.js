// @ts-check
'use strict';
// serve(): the daemon in this process. The server (crates/daemon, through the addon's
// NativeServer) owns the sockets and the pool; this module validates the options, answers the
// server's onConnection questions with the host's hook, routes its log lines, and keeps Node
// alive while it serves.

const fs = require('node:fs');
const path = require('node:path');
const { loadNative } = require('./native');
const { fault, fromNative } = require('./errors');
const { serveOptions } = require('./validate/remote');

/**
 * @typedef {import('../native').NativeServer} NativeServer
 * @typedef {import('../native').NativeServerEvent} NativeServerEvent
 * @typedef {import('../index').ConnectionInfo} ConnectionInfo
 */

const DRAIN_GRACE_MS = 2000;
const noop = () => {};

/**
 * The name a hook's answer gives a connection (`undefined`: the daemon's default).
 * @param {unknown} answer
 * @returns {string | undefined}
 */
function nameOf(answer) {
  if (typeof answer === 'string' && answer !== '') return answer;
  if (answer !== null && typeof answer === 'object' && typeof (/** @type {{ name?: unknown }} */ (answer).name) === 'string') {
    return /** @type {{ name: string }} */ (answer).name;
  }
  return undefined;
}

/**
 * Starts a daemon: binds, starts the workers, and resolves once it accepts connections.
 * @param {import('../index').ServeOptions} [options]
 * @returns {Promise<import('../index').Server>}
 */
async function serve(options) {
  const { binding, dir } = loadNative();
  const opts = serveOptions(options, path.join(dir, 'codemode-worker'));
  if (!fs.existsSync(opts.pool.workerPath)) throw fault('WORKER_NOT_FOUND', { path: opts.pool.workerPath });
  const { onConnection, log } = opts;
  /** @type {() => void} */
  let drained = noop;
  const done = new Promise((resolve) => {
    drained = () => resolve(undefined);
  });
  /** @type {NativeServer} */
  let server;
  /** @param {NativeServerEvent} event */
  const onEvent = (event) => {
    if (event.kind === 'log') {
      if (log) log(event.message);
    } else if (event.kind === 'connection') {
      const info = event.connection;
      /** @type {ConnectionInfo} */
      const given = { id: info.id, remoteAddress: info.remoteAddress, remotePort: info.remotePort, path: info.path, headers: info.headers };
      Promise.resolve()
        .then(() => /** @type {NonNullable<typeof onConnection>} */ (onConnection)(given))
        .then(
          (answer) => server.admit(info.token, nameOf(answer) ?? null, null),
          (e) => server.admit(info.token, null, e instanceof Error ? e.message : String(e)),
        );
    } else if (event.kind === 'drained') {
      drained();
    }
  };
  try {
    server = new binding.NativeServer(
      {
        host: opts.host,
        port: opts.port,
        token: opts.token,
        tenantTokens: opts.tenantTokens,
        pool: opts.pool,
        maxInFlight: opts.maxInFlight,
        hook: Boolean(onConnection),
        allowOrigins: opts.allowOrigins,
        allowHosts: opts.allowHosts,
        outbound: opts.outbound,
        ...opts.bounds,
        ...opts.budgets,
      },
      onEvent,
    );
  } catch (e) {
    throw fromNative(e);
  }
  // The server's callbacks are weak; a serving daemon keeps Node alive until it has drained.
  const keepAlive = setInterval(noop, 1 << 30);
  const host = server.host();
  const port = server.port();
  /** @type {Promise<void> | null} */
  let closing = null;
  return {
    url: `ws://${host.includes(':') ? `[${host}]` : host}:${port}`,
    host,
    port,
    daemon: server.daemonId(),
    stats: () => server.stats(),
    workerPids: () => server.workerPids(),
    close() {
      if (!closing) {
        server.drain(DRAIN_GRACE_MS);
        closing = done.then(() => clearInterval(keepAlive));
      }
      return closing;
    },
  };
}

module.exports = { serve };
