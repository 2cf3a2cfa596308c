// The daemon (docs/protocol.md): a real daemon started through the CLI on a random 127.0.0.1
// port, reached with connect() (the `ws` package: Node 20 has no global WebSocket) and with a raw
// protocol client for what connect() never sends. serve() in this process where a hook is needed.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BIN, CodemodeExecutor, ExecutorError, WebSocket, connect, connected, httpGet, raw, served, startDaemon } from './daemon-helpers.mjs';
import { rejection, sleep, until } from './helpers.mjs';

const native = createRequire(import.meta.url)('../lib/native.js').loadNative().binding;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const dec = new TextDecoder();
const req = (url = 'https://app.internal/') => ({ method: 'GET', url, headers: [], body: null });

describe('the CLI', () => {
  it('prints its usage for --help, and exits 2 with the reason for a bad flag or command', () => {
    const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('codemode-executor serve [options]');
    expect(help.stdout).toContain('--token-file PATH');
    // The defaults it states are the executor's (crates/protocol `limits`, through the addon).
    const { defaults } = native.limits();
    expect(help.stdout).toMatch(new RegExp(`--timeout MS[^-]*\\(default ${defaults.timeout}\\)`));
    expect(help.stdout).toMatch(new RegExp(`--memory-limit MIB[^-]*\\(default ${defaults.memoryLimit}\\)`));
    expect(help.stdout).toMatch(new RegExp(`--queue-bound N[^]*?\\(default ${defaults.queueBound}\\)`));
    expect(help.stdout).toContain(`--handles-idle-timeout MS    how long a retained execution lives unused (default ${defaults.handlesIdleTimeout})`);
    // And the daemon's own (crates/daemon `options`): every one of them, by its flag.
    const { serveDefaults } = native.limits();
    const flags = { port: '--port N', maxInFlight: '--max-in-flight N', maxConnections: '--max-connections N', maxConnectionsPerAddress: '--max-connections-per-address N', helloTimeout: '--hello-timeout MS', idleTimeout: '--idle-timeout MS', maxMessageBytes: '--max-message-bytes N', approvalTimeout: '--approval-timeout MS' };
    expect(Object.keys(serveDefaults).sort()).toEqual(Object.keys(flags).sort());
    for (const [key, flag] of Object.entries(flags)) {
      const at = help.stdout.search(new RegExp(`\\n  ${flag}\\s`));
      expect(at, flag).toBeGreaterThan(-1);
      const rest = help.stdout.slice(at + flag.length + 3);
      const next = rest.search(/\n {2}--/);
      expect(rest.slice(0, next), flag).toContain(`(default ${serveDefaults[key]})`);
    }
    // The daemon's options without a default are the budget ceilings: none unless given.
    const ceilings = { cpuLimit: '--cpu-limit MS', toolCallLimit: '--tool-call-limit N', fetchLimit: '--fetch-limit N' };
    const { serveOptions } = native.limits();
    expect(Object.keys(serveOptions).filter((k) => !(k in serveDefaults)).sort()).toEqual(Object.keys(ceilings).sort());
    for (const flag of Object.values(ceilings)) {
      const at = help.stdout.search(new RegExp(`\\n  ${flag}\\s`));
      expect(at, flag).toBeGreaterThan(-1);
      const rest = help.stdout.slice(at + flag.length + 3);
      expect(rest.slice(0, rest.search(/\n {2}--/)), flag).toContain('(default: none');
    }
    const badPort = spawnSync(process.execPath, [BIN, 'serve', '--port', 'eighty'], { encoding: 'utf8' });
    expect(badPort.status).toBe(2);
    expect(badPort.stderr).toContain('--port takes a non-negative integer, got "eighty"');
    const range = spawnSync(process.execPath, [BIN, 'serve', '--port', '70000'], { encoding: 'utf8' });
    expect(range.status).toBe(2);
    expect(range.stderr).toContain('--port: Invalid option `port`');
    const unknown = spawnSync(process.execPath, [BIN, 'serve', '--colour'], { encoding: 'utf8' });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("Unknown option '--colour'");
    const noCommand = spawnSync(process.execPath, [BIN], { encoding: 'utf8' });
    expect(noCommand.status).toBe(2);
    expect(noCommand.stderr).toContain('a command is required');
  });

  it('exits 1 with LISTEN_FAILED when the port is taken', async () => {
    const blocker = createServer();
    await new Promise((r) => blocker.listen(0, '127.0.0.1', r));
    const { port } = blocker.address();
    try {
      const taken = spawnSync(process.execPath, [BIN, 'serve', '--port', String(port), '--workers', '1'], { encoding: 'utf8', timeout: 30_000 });
      expect(taken.status).toBe(1);
      expect(taken.stderr).toContain(`Could not listen on 127.0.0.1:${port}`);
    } finally {
      blocker.close();
    }
  });
});

describe('a daemon started through the CLI', () => {
  let daemon;
  beforeAll(async () => {
    daemon = await startDaemon();
  });

  it('prints one listening line for a free 127.0.0.1 port', () => {
    expect(daemon.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(daemon.port).toBeGreaterThan(0);
    expect(daemon.stdout().trim().split('\n')).toEqual([`codemode-executor listening on ${daemon.url}`]);
  });

  it('answers GET /healthz with 200 and the pool stats as JSON, and 404 elsewhere', async () => {
    const health = await httpGet(daemon.port, '/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get('content-type')).toContain('application/json');
    expect(health.body).toMatchObject({ status: 'ok', protocol: 2, workers: 2, running: 0, queued: 0, retained: 0 });
    expect(health.body.daemon).toMatch(UUID);
    expect(typeof health.body.connections).toBe('number');
    expect((await httpGet(daemon.port, '/elsewhere')).status).toBe(404);
  });

  it('runs a program whose tool calls are dispatched in this process', async () => {
    const remote = await connected(daemon.url);
    const calls = [];
    const outcome = await remote.execute({
      code: 'async () => { const a = await store.get({ key: "a" }); const b = await store.get({ key: "b" }); console.log("got", a, b); return { sum: a + b, when: new Date(0), bytes: new Uint8Array([1, 2]) } }',
      providers: [{ name: 'store', tools: ['get'] }],
      dispatch: ({ provider, tool, args }) => {
        calls.push({ provider, tool, args, pid: process.pid });
        return args[0].key === 'a' ? 40 : Promise.resolve(2);
      },
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toEqual({ sum: 42, when: new Date(0), bytes: new Uint8Array([1, 2]) });
    expect(outcome.logs).toEqual([{ level: 'log', message: 'got 40 2' }]);
    expect(outcome.stats.toolCalls).toBe(2);
    expect(calls).toEqual([
      { provider: 'store', tool: 'get', args: [{ key: 'a' }], pid: process.pid },
      { provider: 'store', tool: 'get', args: [{ key: 'b' }], pid: process.pid },
    ]);
    expect(remote.daemon).toMatch(UUID);
    expect(remote.name).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("reads its workers' output on its own thread: 6 MiB arrive whole, and a lost worker's replacement serves on", async () => {
    const remote = await connected(daemon.url);
    // A result that takes many reads of the worker's pipe (64 KiB each) on the daemon's thread.
    const big = await remote.execute({ code: 'async () => "x".repeat(6 * 1024 * 1024) + "end"' });
    expect(big.error).toBeUndefined();
    expect(big.result.length).toBe(6 * 1024 * 1024 + 3);
    expect(big.result.endsWith('end')).toBe(true);
    const { workerPid } = (await remote.execute({ code: 'async () => 1' })).stats;
    process.kill(workerPid, 'SIGKILL');
    for (let i = 0; i < 6; i++) expect((await remote.execute({ code: `async () => ${i}` })).result).toBe(i);
    // No reader thread per worker (crates/pool reader.rs names them `worker-<n>`): the daemon's
    // own thread reads them all (crates/daemon watch.rs).
    const dir = `/proc/${daemon.child.pid}/task`;
    // A thread may end between the listing and the read of its name.
    const name = (t) => {
      try {
        return readFileSync(`${dir}/${t}/comm`, 'utf8').trim();
      } catch {
        return '';
      }
    };
    const threads = readdirSync(dir).map(name);
    expect(threads).toContain('daemon');
    expect(threads.filter((name) => /^worker-\d+$/.test(name))).toEqual([]);
  });

  it('reports program failures, tool rejections and request faults as the in-process executor does', async () => {
    const remote = await connected(daemon.url);
    const failed = await remote.execute({ code: 'async () => { throw new TypeError("nope") }' });
    // The place arrives over the connection too.
    expect(failed.error).toEqual({ code: 'PROGRAM_ERROR', message: 'TypeError: nope (line 1, column 21)', line: 1, column: 21 });
    const caught = await remote.execute({
      code: 'async () => { try { await t.x() } catch (e) { return e.message } }',
      providers: [{ name: 't', tools: ['x'] }],
      dispatch: () => {
        throw new Error('the tool failed');
      },
    });
    expect(caught.result).toBe('the tool failed');
    const invalid = await rejection(remote.execute({ code: 42 }));
    expect(invalid).toBeInstanceOf(ExecutorError);
    expect(invalid.code).toBe('INVALID_REQUEST');
    const syntax = await remote.execute({ code: 'async () => {' });
    expect(syntax.error.code).toBe('SYNTAX_ERROR');
  });

  it('routes a run’s fetch through the outbound function in this process', async () => {
    const remote = await connected(daemon.url);
    const seen = [];
    const outcome = await remote.execute({
      code: 'async () => { const r = await fetch("https://api.internal/v1", { method: "POST", body: "ping" }); return [r.status, await r.text(), r.headers.get("x-from")] }',
      outbound: async (request) => {
        seen.push({ method: request.method, url: request.url, body: dec.decode(request.body) });
        return { status: 201, statusText: 'Created', headers: [['x-from', 'host']], body: new TextEncoder().encode('pong').buffer };
      },
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toEqual([201, 'pong', 'host']);
    expect(seen).toEqual([{ method: 'POST', url: 'https://api.internal/v1', body: 'ping' }]);
    // The request's redirect mode reaches the policy over the connection too.
    const modes = [];
    const manual = await remote.execute({
      code: 'async () => (await fetch("https://api.internal/r", { redirect: "manual" })).status',
      outbound: (request) => {
        modes.push(request.redirect);
        return { status: 302, statusText: 'Found', headers: [['location', 'https://elsewhere/']], body: null };
      },
    });
    expect([manual.result, modes]).toEqual([302, ['manual']]);
  });

  it('fetches natively to public addresses only, and refuses native above its ceiling', async () => {
    const target = http.createServer((_req, res) => res.end('reached'));
    let connections = 0;
    target.on('connection', () => connections++);
    await new Promise((r) => target.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${target.address().port}/`;
      const code = `async () => { try { return await (await fetch('${url}')).text() } catch (e) { return e.message } }`;
      const remote = await connected(daemon.url);
      const refused = await remote.execute({ code });
      expect(refused.result).toContain(`fetch ${url} was refused: 127.0.0.1 is a loopback address, not a public internet address`);
      expect(connections).toBe(0);
      // The daemon's outbound ceiling is public unless its operator says `--outbound native`.
      const native = await rejection(remote.execute({ code, outbound: 'native' }));
      expect(native.code).toBe('INVALID_OPTION');
      expect(connections).toBe(0);
    } finally {
      await new Promise((r) => target.close(r));
    }
  });

  it('keys handles on the daemon: granted on one connection, invoked and closed on another', async () => {
    const closes = [];
    const first = await connected(daemon.url, { onHandlesClosed: (e) => closes.push(e) });
    const outcome = await first.execute({
      code: 'async () => { let served = 0; return { fetch: async (request) => Response.json({ served: ++served, url: request.url }) } }',
      retainHandles: true,
    });
    expect(outcome.executionId).toMatch(UUID);
    expect(outcome.handles).toEqual(['fetch']);
    const second = await connected(daemon.url);
    const a = await first.invokeHandle(outcome.executionId, 'fetch', req('https://x.internal/1'));
    const b = await second.invokeHandle(outcome.executionId, 'fetch', req('https://x.internal/2'));
    expect(JSON.parse(dec.decode(a.body))).toEqual({ served: 1, url: 'https://x.internal/1' });
    expect(JSON.parse(dec.decode(b.body))).toEqual({ served: 2, url: 'https://x.internal/2' });
    expect(b.status).toBe(200);
    expect((await second.stats()).retained).toBeGreaterThanOrEqual(1);
    await second.closeHandles(outcome.executionId);
    // The notice reaches the connection that was granted the handles.
    expect(await until(() => closes.length === 1)).toBe(true);
    expect(closes).toEqual([{ executionId: outcome.executionId, reason: 'closed' }]);
    const gone = await rejection(first.invokeHandle(outcome.executionId, 'fetch', req()));
    expect(gone.code).toBe('HANDLES_CLOSED');
    const again = await rejection(second.closeHandles(outcome.executionId));
    expect(again.code).toBe('HANDLES_CLOSED');
    expect(again.retryable).toBe(false);
  });

  it('a handler’s routed fetch fails with the declared text once the granting connection closed', async () => {
    const first = await connect(daemon.url, { websocket: WebSocket });
    const outcome = await first.execute({
      code: 'async () => ({ fetch: async () => { try { const r = await fetch("https://api.internal/"); return new Response(await r.text()) } catch (e) { return new Response("failed: " + e.message) } } })',
      retainHandles: true,
      outbound: () => ({ status: 200, statusText: 'OK', headers: [], body: new TextEncoder().encode('routed').buffer }),
    });
    const second = await connected(daemon.url);
    const before = await second.invokeHandle(outcome.executionId, 'fetch', req());
    expect(dec.decode(before.body)).toBe('routed');
    await first.close();
    const after = await second.invokeHandle(outcome.executionId, 'fetch', req());
    expect(dec.decode(after.body)).toBe('failed: The host that started this execution has disconnected, so this fetch cannot be answered.');
    await second.closeHandles(outcome.executionId);
  });

  it('ends the runs of a dropped connection and keeps serving', async () => {
    const sockets = [];
    class Recorded extends WebSocket {
      constructor(url, protocols) {
        super(url, protocols);
        sockets.push(this);
      }
    }
    const dropped = await connect(daemon.url, { websocket: Recorded });
    let called;
    const reached = new Promise((r) => (called = r));
    const pending = rejection(
      dropped.execute({
        code: 'async () => { await t.wait(); return "finished" }',
        providers: [{ name: 't', tools: ['wait'] }],
        dispatch: () => {
          called();
          return new Promise(() => {}); // never answers
        },
        timeout: 25_000,
      }),
    );
    await reached;
    const observer = await connected(daemon.url);
    expect((await observer.stats()).running).toBe(1);
    // Drop the TCP connection without a close handshake.
    sockets[0].terminate();
    const error = await pending;
    expect(error).toBeInstanceOf(ExecutorError);
    expect(error.code).toBe('CONNECTION_LOST');
    // The run is stopped on the daemon: nothing stays running for the gone caller.
    expect(await until(async () => (await observer.stats()).running === 0, 10_000)).toBe(true);
    const after = await observer.execute({ code: 'async () => "still serving"' });
    expect(after.result).toBe('still serving');
  });

  it('works under CodemodeExecutor unchanged', async () => {
    const executor = new CodemodeExecutor(await connected(daemon.url));
    const result = await executor.execute('async () => { console.log("hi"); return await codemode.add({ a: 1, b: 2 }) }', [
      { name: 'codemode', fns: { add: async ({ a, b }) => a + b } },
    ]);
    expect(result).toEqual({ result: 3, logs: ['hi'] });
  });

  it('answers protocol abuse with typed errors and keeps the connection and the daemon serving', async () => {
    const client = await raw(daemon.url);
    client.send('this is not json');
    expect(await client.next((m) => m.type === 'error')).toMatchObject({ code: 'PROTOCOL_ERROR' });
    client.send({ type: 'teleport', id: 1 });
    const unknown = await client.next((m) => m.type === 'error');
    expect(unknown.code).toBe('PROTOCOL_ERROR');
    expect(unknown.message).toContain('teleport');
    client.send(Buffer.from([0, 0, 0, 200, 123]));
    expect(await client.next((m) => m.type === 'error')).toMatchObject({ code: 'PROTOCOL_ERROR' });
    client.send({ type: 'execute', id: 'seven' });
    expect(await client.next((m) => m.type === 'error')).toMatchObject({ code: 'PROTOCOL_ERROR' });
    // A duplicate id in flight.
    const slow = { type: 'execute', id: 5, code: 'async () => { await new Promise((r) => setTimeout(r, 300)); return 1 }', modules: [], providers: [], outbound: 'blocked', retainHandles: false };
    client.send(slow);
    client.send(slow);
    const duplicate = await client.next((m) => m.type === 'error');
    expect(duplicate).toMatchObject({ code: 'PROTOCOL_ERROR', id: 5 });
    const done = await client.next((m) => m.type === 'done' && m.id === 5);
    expect(done.hasResult).toBe(true);
    client.send({ type: 'stats', id: 6 });
    expect(await client.next((m) => m.type === 'stats' && m.id === 6)).toMatchObject({ workers: 2 });
    expect(client.closed).toBe(null);
    client.socket.close();
  });

  it('closes with 1009 after a typed error for a message past maxMessageBytes (20 MiB by default)', async () => {
    const client = await raw(daemon.url);
    client.send(Buffer.alloc(64 * 1024 * 1024 + 16));
    const closed = await client.whenClosed(30_000);
    expect(closed.code).toBe(1009);
    const health = await httpGet(daemon.port, '/healthz');
    expect(health.status).toBe(200);
  });

  it('refuses another protocol version with PROTOCOL_MISMATCH and close 4002', async () => {
    const client = await raw(daemon.url, { hello: false });
    client.send({ type: 'hello', protocol: 99 });
    const error = await client.next((m) => m.type === 'error');
    expect(error.code).toBe('PROTOCOL_MISMATCH');
    expect(error.message).toContain('99');
    expect((await client.whenClosed()).code).toBe(4002);
  });
});

describe('the shared token', () => {
  let daemon;
  const secret = 'correct horse battery staple';
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codemode-token-'));
    writeFileSync(join(dir, 'token'), `${secret}\n`);
    daemon = await startDaemon(['--token-file', join(dir, 'token'), '--workers', '1']);
  });

  it('refuses a connection without it or with a wrong one, before any message is read', async () => {
    for (const token of [undefined, 'wrong']) {
      const refused = await rejection(connect(daemon.url, { websocket: WebSocket, token }));
      expect(refused).toBeInstanceOf(ExecutorError);
      expect(refused.code).toBe('CONNECTION_REFUSED');
      expect(refused.retryable).toBe(false);
    }
    const client = await raw(daemon.url, { hello: false });
    expect((await client.whenClosed()).code).toBe(4001);
    expect(client.received[0]).toMatchObject({ type: 'refused', code: 'CONNECTION_REFUSED' });
  });

  it('admits it as a subprotocol, or as a bearer header from an implementation that adds headers', async () => {
    const remote = await connected(daemon.url, { token: secret });
    expect((await remote.execute({ code: 'async () => 7' })).result).toBe(7);
    class WithHeaders extends WebSocket {
      constructor(url, protocols) {
        super(url, protocols, { headers: { authorization: `Bearer ${secret}` } });
      }
    }
    const viaHeader = await connected(daemon.url, { websocket: WithHeaders });
    expect((await viaHeader.execute({ code: 'async () => 8' })).result).toBe(8);
  });
});

describe('a daemon that goes away', () => {
  it('rejects what is in flight with CONNECTION_LOST, retryable; the next call connects again', async () => {
    const daemon = await startDaemon(['--workers', '1']);
    const remote = await connect(daemon.url, { websocket: WebSocket });
    const inFlight = rejection(remote.execute({ code: 'async () => { await new Promise((r) => setTimeout(r, 5000)); return 1 }' }));
    await sleep(200);
    daemon.child.kill('SIGKILL');
    const error = await inFlight;
    expect(error).toBeInstanceOf(ExecutorError);
    expect(error.code).toBe('CONNECTION_LOST');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(daemon.url);
    // The next call opens a new connection: nobody listens, so it is unreachable (retryable).
    const later = await rejection(remote.execute({ code: 'async () => 1' }));
    expect(later.code).toBe('DAEMON_UNREACHABLE');
    expect(later.retryable).toBe(true);
    const unreachable = await rejection(connect(daemon.url, { websocket: WebSocket }));
    expect(unreachable.code).toBe('DAEMON_UNREACHABLE');
    // A daemon back on the same port: the same executor reaches it without the host reconnecting.
    const again = await startDaemon(['--workers', '1', '--port', String(daemon.port)], { replacePort: true });
    expect(again.url).toBe(daemon.url);
    const outcome = await remote.execute({ code: 'async () => "reconnected"' });
    expect(outcome.result).toBe('reconnected');
    expect(remote.daemon).not.toBe(undefined);
    await remote.close();
  });
});

describe('SIGTERM', () => {
  it('drains: running executions finish, retained ones are published closed, new connections are refused, exit 0', async () => {
    const daemon = await startDaemon();
    const closes = [];
    const remote = await connect(daemon.url, { websocket: WebSocket, onHandlesClosed: (e) => closes.push(e) });
    const retained = await remote.execute({ code: 'async () => ({ fetch: async () => new Response("ok") })', retainHandles: true });
    const running = remote.execute({ code: 'async () => { await new Promise((r) => setTimeout(r, 1500)); return "finished in the drain" }' });
    await sleep(200);
    daemon.child.kill('SIGTERM');
    expect(await until(async () => (await httpGet(daemon.port, '/healthz').catch(() => ({ status: 0 }))).status === 503, 1000)).toBe(true);
    const refused = await rejection(connect(daemon.url, { websocket: WebSocket }));
    expect(refused.code).toBe('DAEMON_UNREACHABLE');
    const outcome = await running;
    expect(outcome.result).toBe('finished in the drain');
    expect(await until(() => closes.length === 1, 10_000)).toBe(true);
    expect(closes).toEqual([{ executionId: retained.executionId, reason: 'pool-closed' }]);
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    expect(daemon.stderr()).toContain('SIGTERM: draining');
  });
});

describe('serve() in this process', () => {
  it('names each caller through onConnection, and refuses one with a reason the client receives', async () => {
    const seen = [];
    const logs = [];
    const server = await served({
      log: (line) => logs.push(line),
      onConnection: async (info) => {
        seen.push(info);
        const agent = info.headers.find(([k]) => k === 'x-agent')?.[1];
        if (agent === 'mallory') throw new Error('mallory is not allowed here');
        return { name: `agent ${agent ?? 'unknown'}` };
      },
    });
    expect(server.url).toBe(`ws://127.0.0.1:${server.port}`);
    const as = (agent) =>
      class extends WebSocket {
        constructor(url, protocols) {
          super(url, protocols, { headers: { 'x-agent': agent } });
        }
      };
    const alice = await connected(server.url, { websocket: as('alice') });
    expect(alice.name).toBe('agent alice');
    expect((await alice.execute({ code: 'async () => 1' })).result).toBe(1);
    const refused = await rejection(connect(server.url, { websocket: as('mallory') }));
    expect(refused.code).toBe('CONNECTION_REFUSED');
    expect(refused.message).toContain('mallory is not allowed here');
    expect(seen.map((i) => i.remoteAddress)).toEqual(['127.0.0.1', '127.0.0.1']);
    expect(seen[0].path).toBe('/');
    expect(logs.some((l) => l.includes('agent alice'))).toBe(true);
    expect(logs.some((l) => l.includes('mallory is not allowed here'))).toBe(true);
  });

  it('bounds the requests in flight on one connection with IN_FLIGHT_LIMIT', async () => {
    const server = await served({ maxInFlight: 2, workers: 1 });
    const remote = await connected(server.url);
    const slow = () => remote.execute({ code: 'async () => { await new Promise((r) => setTimeout(r, 300)); return 1 }' });
    const runs = [slow(), slow(), slow()];
    const settled = await Promise.allSettled(runs);
    const limited = settled.filter((s) => s.status === 'rejected');
    expect(limited).toHaveLength(1);
    expect(limited[0].reason.code).toBe('IN_FLIGHT_LIMIT');
    expect(limited[0].reason.retryable).toBe(true);
  });

  it('validates its options and connect()’s with INVALID_OPTION naming the field', async () => {
    const badPort = await rejection(served({ port: 70_000 }));
    expect(badPort.code).toBe('INVALID_OPTION');
    expect(badPort.message).toContain('`port`');
    const outbound = await rejection(served({ outbound: 'everything' }));
    expect(outbound.code).toBe('INVALID_OPTION');
    expect(outbound.message).toContain('`outbound`');
    for (const approvalTimeout of [0, 3_600_001, 'long']) {
      const bad = await rejection(served({ approvalTimeout }));
      expect(bad.code).toBe('INVALID_OPTION');
      expect(bad.message).toContain('`approvalTimeout`');
    }
    // A runtime without a global WebSocket (Node 20; Node 22+ has one, which connect() uses).
    const global = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
    delete globalThis.WebSocket;
    let noSocket;
    try {
      noSocket = await rejection(connect('ws://127.0.0.1:1'));
    } finally {
      if (global) Object.defineProperty(globalThis, 'WebSocket', global);
    }
    expect(noSocket.code).toBe('INVALID_OPTION');
    expect(noSocket.message).toContain('`websocket`: was not given, and this runtime has no global WebSocket');
    const notAClass = await rejection(connect('ws://127.0.0.1:1', { websocket: 'ws' }));
    expect(notAClass.code).toBe('INVALID_OPTION');
    expect(notAClass.message).toContain('`websocket`');
    const badUrl = await rejection(connect('http://127.0.0.1:1', { websocket: WebSocket }));
    expect(badUrl.code).toBe('INVALID_OPTION');
    expect(badUrl.message).toContain('`url`');
  });

  it('stops its workers on close()', async () => {
    const server = await served({ workers: 2 });
    const pids = server.workerPids();
    expect(pids).toHaveLength(2);
    await server.close();
    for (const pid of pids) expect(await until(() => !alive(pid), 5000)).toBe(true);
  });
});

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

