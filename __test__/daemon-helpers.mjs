// Starting real daemons for the tests: through the CLI (a child process on a random 127.0.0.1
// port) or through serve() in this process. Every daemon started here is stopped after the file.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

const require = createRequire(import.meta.url);
export const { connect, serve, ExecutorError, CodemodeExecutor } = require('../index.js');
export const WebSocket = require('ws');
export const BIN = fileURLToPath(new URL('../bin/codemode-executor.js', import.meta.url));

const children = new Set();
const servers = new Set();
const connections = new Set();

afterAll(async () => {
  await Promise.all([...connections].map((c) => c.close().catch(() => {})));
  await Promise.all([...servers].map((s) => s.close()));
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/**
 * Runs `codemode-executor serve --port 0 ...args` and resolves once it prints its line.
 * @returns {Promise<{ child: import('node:child_process').ChildProcess, url: string, port: number, stderr: () => string, exited: Promise<{ code: number | null, signal: string | null }> }>}
 */
export function startDaemon(args = [], { timeoutMs = 30_000, replacePort = false } = {}) {
  const base = replacePort ? ['serve', '--workers', '2'] : ['serve', '--port', '0', '--workers', '2'];
  const child = spawn(process.execPath, [BIN, ...base, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
    child.stdout.on('data', (d) => {
      stdout += d;
      const m = /^codemode-executor listening on (ws:\/\/\S+)$/m.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], port: Number(new URL(m[1]).port), stderr: () => stderr, stdout: () => stdout, exited });
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited (${code ?? signal}) before listening; stderr: ${stderr}`));
    });
  });
}

/** serve() in this process, stopped after the file. */
export async function served(options = {}) {
  const server = await serve({ port: 0, workers: 2, ...options });
  servers.add(server);
  return server;
}

/** connect() with the `ws` package (Node 20 has no global WebSocket), closed after the file. */
export async function connected(url, options = {}) {
  const remote = await connect(url, { websocket: WebSocket, ...options });
  connections.add(remote);
  return remote;
}

/**
 * A raw protocol client: sends frames as given and collects what the daemon sends.
 * @param {string} url
 */
export async function raw(url, { protocols = ['codemode-executor'], hello = true } = {}) {
  const socket = new WebSocket(url, protocols);
  socket.binaryType = 'arraybuffer';
  const received = [];
  const waiters = [];
  let closed = null;
  socket.on('message', (data, isBinary) => {
    let msg;
    if (isBinary) {
      const bytes = Buffer.from(data);
      const len = bytes.readUInt32BE(0);
      msg = { ...JSON.parse(bytes.toString('utf8', 4, 4 + len)), payload: bytes.subarray(4 + len) };
    } else msg = JSON.parse(Buffer.from(data).toString('utf8'));
    received.push(msg);
    for (const w of [...waiters]) w();
  });
  socket.on('close', (code, reason) => {
    closed = { code, reason: String(reason) };
    for (const w of [...waiters]) w();
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const client = {
    socket,
    received,
    get closed() {
      return closed;
    },
    send(value) {
      socket.send(typeof value === 'string' || Buffer.isBuffer(value) ? value : JSON.stringify(value));
    },
    /** Resolves with the first received message matching `test` (or rejects after `ms`). */
    next(test, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = received.find(test);
          if (found) {
            received.splice(received.indexOf(found), 1);
            waiters.splice(waiters.indexOf(check), 1);
            clearTimeout(timer);
            resolve(found);
          } else if (closed) {
            waiters.splice(waiters.indexOf(check), 1);
            clearTimeout(timer);
            reject(new Error(`closed (${closed.code} ${closed.reason}) before the message; got ${JSON.stringify(received)}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(check), 1);
          reject(new Error(`no such message within ${ms} ms; got ${JSON.stringify(received)}`));
        }, ms);
        waiters.push(check);
        check();
      });
    },
    /** Resolves with the close code and reason. */
    whenClosed(ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (closed) {
            waiters.splice(waiters.indexOf(check), 1);
            clearTimeout(timer);
            resolve(closed);
          }
        };
        const timer = setTimeout(() => reject(new Error(`not closed within ${ms} ms`)), ms);
        waiters.push(check);
        check();
      });
    },
  };
  if (hello) {
    client.send({ type: 'hello', protocol: 2 });
    await client.next((m) => m.type === 'welcome');
  }
  return client;
}

/** GET `path` on the daemon's port: status and parsed body. */
export async function httpGet(port, path) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  const text = await response.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body, headers: response.headers };
}
