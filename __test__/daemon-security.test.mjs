// The daemon as an attacker meets it: a port that anyone on the network, and any web page in a
// browser on the same machine, can reach. Each test drives a real daemon on 127.0.0.1 (the CLI
// or serve() in this process); no traffic leaves loopback.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ExecutorError, WebSocket, connected, httpGet, raw, served, startDaemon } from './daemon-helpers.mjs';

const rejection = (promise) => promise.then(
  (v) => { throw new Error(`expected a rejection, got ${JSON.stringify(v)}`); },
  (e) => e,
);

/** One raw HTTP exchange on loopback: the bytes the daemon answered until it closed (or `ms`). */
function exchange(port, request, ms = 5_000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, ms);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (d) => (data += d.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      if (data) resolve(data);
      else reject(e);
    });
  });
}

/** An upgrade request head with `extra` header lines. */
const upgrade = (port, extra = [], host = `127.0.0.1:${port}`) =>
  [
    'GET / HTTP/1.1',
    ...(host === null ? [] : [`Host: ${host}`]),
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Protocol: codemode-executor',
    ...extra,
    '',
    '',
  ].join('\r\n');

const statusOf = (answer) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);

function tokenFile(secret) {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-sec-'));
  writeFileSync(join(dir, 'token'), `${secret}\n`);
  return join(dir, 'token');
}

describe('a daemon off loopback needs a token', () => {
  it('the CLI refuses --host 0.0.0.0 without --token-file, naming the flag, and exits 2', () => {
    const run = spawnSync(process.execPath, [BIN, 'serve', '--host', '0.0.0.0', '--port', '0', '--workers', '1'], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status).toBe(2);
    expect(run.stdout).not.toContain('listening');
    expect(run.stderr).toContain('--token-file');
  });

  it('serve() refuses a non-loopback address without a token, and a token too short to be a secret', async () => {
    const bare = await rejection(served({ host: '0.0.0.0' }));
    expect(bare).toBeInstanceOf(ExecutorError);
    expect(bare.code).toBe('TOKEN_REQUIRED');
    expect(bare.message).toContain('--token-file');
    const short = await rejection(served({ host: '127.0.0.1', token: 'change-me' }));
    expect(short.code).toBe('INVALID_OPTION');
    expect(short.message).toContain('token');
  });
});

describe('browsers and DNS rebinding', () => {
  it('refuses an upgrade that carries an Origin it was not told to allow, and one whose Host is not its address', async () => {
    const server = await served({ workers: 1, allowOrigins: ['https://app.example'] });
    const { port } = server;
    // A page on another origin (a browser always sends Origin on a WebSocket upgrade).
    expect(statusOf(await exchange(port, upgrade(port, ['Origin: http://evil.example'])))).toBe(403);
    expect(statusOf(await exchange(port, upgrade(port, ['Origin: null'])))).toBe(403);
    // DNS rebinding: evil.example resolved to 127.0.0.1, the browser names evil.example.
    expect(statusOf(await exchange(port, upgrade(port, [], `evil.example:${port}`)))).toBe(403);
    expect(statusOf(await exchange(port, upgrade(port, ['Origin: https://app.example'], `evil.example:${port}`)))).toBe(403);
    expect(statusOf(await exchange(port, upgrade(port, [], null)))).toBe(403);
    // Allowed: no Origin (connect(), ws), the allowed origin, and the bound address or localhost.
    expect(statusOf(await exchange(port, upgrade(port), 1_000))).toBe(101);
    expect(statusOf(await exchange(port, upgrade(port, ['Origin: https://app.example']), 1_000))).toBe(101);
    expect(statusOf(await exchange(port, upgrade(port, [], `localhost:${port}`), 1_000))).toBe(101);
    const remote = await connected(server.url);
    expect((await remote.execute({ code: 'async () => 1' })).result).toBe(1);
    // The plain routes answer whatever the Host (health checks by name stay simple).
    expect((await httpGet(port, '/healthz')).status).toBe(200);
  });
});

describe('the daemon bounds what a caller may ask for', () => {
  it('refuses a memoryLimit or timeout above its own, naming the ceiling', async () => {
    const server = await served({ workers: 1, memoryLimit: 64, timeout: 2_000 });
    const remote = await connected(server.url);
    const memory = await rejection(remote.execute({ code: 'async () => 1', memoryLimit: 2_048 }));
    expect(memory.code).toBe('INVALID_OPTION');
    expect(memory.message).toContain('64');
    const time = await rejection(remote.execute({ code: 'async () => 1', timeout: 2_147_483_647 }));
    expect(time.code).toBe('INVALID_OPTION');
    expect(time.message).toContain('2000');
    expect((await remote.execute({ code: 'async () => 2', memoryLimit: 32, timeout: 1_000 })).result).toBe(2);
  });
});

describe('connections are bounded', () => {
  it('caps connections per address, closes a socket that never says hello, and keeps /healthz answering', async () => {
    const server = await served({ workers: 1, maxConnectionsPerAddress: 4, helloTimeout: 300, maxConnections: 64 });
    const { port } = server;
    const open = [];
    for (let i = 0; i < 4; i++) open.push(await raw(server.url));
    expect(statusOf(await exchange(port, upgrade(port)))).toBe(503);
    // Silent sockets: no head at all, and upgraded ones that never say hello.
    const silent = [];
    for (let i = 0; i < 200; i++) silent.push(net.connect(port, '127.0.0.1').on('error', () => {}));
    expect((await httpGet(port, '/healthz')).status).toBe(200);
    for (const c of open) c.socket.close();
    await new Promise((r) => setTimeout(r, 200));
    const mute = await raw(server.url, { hello: false });
    const closed = await mute.whenClosed(5_000);
    expect(closed.code).toBe(4008);
    expect((await httpGet(port, '/healthz')).status).toBe(200);
    for (const s of silent) s.destroy();
  });

  it('closes a greeted connection that stays idle past idleTimeout', async () => {
    const server = await served({ workers: 1, idleTimeout: 400 });
    const client = await raw(server.url);
    const started = Date.now();
    expect((await client.whenClosed(5_000)).code).toBe(1001);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('closes a connection whose reader does not keep up instead of holding every frame', async () => {
    const server = await served({ workers: 3, timeout: 20_000 });
    const client = await raw(server.url);
    // The client stops reading: the daemon's writes back up into its socket and its queue.
    client.socket._socket.pause();
    // Each run may have 32 MiB of calls in flight; three at once pass the 80 MiB queue bound.
    const code = `async () => { const big = 'x'.repeat(1 << 20); const calls = []; for (let i = 0; i < 40; i++) calls.push(t.echo(big).catch(() => 0)); await Promise.all(calls); }`;
    for (const id of [1, 2, 3]) {
      client.send({ type: 'execute', id, code, modules: [], providers: [{ name: 't', tools: ['echo'] }], outbound: 'blocked', retainHandles: false });
    }
    const deadline = Date.now() + 15_000;
    while (server.stats().connections > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(server.stats().connections).toBe(0);
    client.socket.terminate();
  });

  it('refuses a message past the (lower) default bound with 1009', async () => {
    const server = await served({ workers: 1 });
    const client = await raw(server.url);
    client.send(Buffer.alloc(24 * 1024 * 1024));
    expect((await client.whenClosed(30_000)).code).toBe(1009);
  });
});

describe('hostile bytes in the head and in messages', () => {
  it('refuses an Authorization with a multibyte character at byte 7 with 4001, and keeps serving', async () => {
    const daemon = await startDaemon(['--token-file', tokenFile('a long enough shared secret'), '--workers', '1']);
    const answer = await exchange(daemon.port, upgrade(daemon.port, ['Authorization: Beareré x']), 3_000);
    expect(statusOf(answer)).toBe(101);
    // The refusal travels as WebSocket frames: the close carries 4001.
    expect(answer).toContain('CONNECTION_REFUSED');
    expect(daemon.stderr()).not.toMatch(/panicked/);
    expect((await httpGet(daemon.port, '/healthz')).status).toBe(200);
  });

  it('writes no raw control characters from a client into its log', async () => {
    const daemon = await startDaemon(['--workers', '1']);
    const client = await raw(daemon.url);
    // JSON escapes: the decoded strings hold a real newline and a real ESC, which serde's
    // error text quotes back.
    client.send(String.raw`{"type":"teleport\n2099-01-01T00:00:00.000Z forged line","x":1}`);
    await client.next((m) => m.type === 'error');
    client.send(String.raw`{"type":"\u001b[31mred\r\n2099-01-01T00:00:00.000Z forged"}`);
    await client.next((m) => m.type === 'error');
    await new Promise((r) => setTimeout(r, 200));
    const lines = daemon.stderr().split('\n');
    expect(lines.some((l) => l.startsWith('2099-01-01'))).toBe(false);
    expect(daemon.stderr()).not.toContain('\u001b');
  });
});

describe('retained executions bound their queued invocations', () => {
  it('answers QUEUE_FULL past the bound instead of queueing without end', async () => {
    const server = await served({ workers: 1, queueBound: 8 });
    const remote = await connected(server.url);
    const outcome = await remote.execute({
      code: 'async () => async () => { await new Promise((r) => setTimeout(r, 2000)); return new Response("ok") }',
      retainHandles: true,
    });
    const [handle] = outcome.handles;
    const request = { method: 'GET', url: 'https://x/', headers: [], body: null };
    const codes = [];
    const calls = [];
    for (let i = 0; i < 40; i++) {
      calls.push(remote.invokeHandle(outcome.executionId, handle, request).then(() => 'ok', (e) => e.code).then((c) => codes.push(c)));
    }
    // One runs, `queueBound` (8) wait, the rest are refused at once: their answers arrive within
    // moments (the waiting ones would take 2 s each), so wait for them all, not only the first.
    const refused = () => codes.filter((c) => c === 'QUEUE_FULL').length;
    const deadline = Date.now() + 10_000;
    while (refused() < 40 - 1 - 8 - 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(refused()).toBeGreaterThanOrEqual(40 - 1 - 8 - 1);
    await remote.closeHandles(outcome.executionId);
    await Promise.all(calls);
  }, 60_000);
});

// Keep the WebSocket import used (the helpers pass it to connect()).
void WebSocket;

describe('the ceilings a client sees', () => {
  it('connect() reports them, and CodemodeExecutor keeps its 60 s default under a lower one', async () => {
    const { CodemodeExecutor } = await import('./daemon-helpers.mjs');
    const server = await served({ workers: 1, timeout: 5_000, memoryLimit: 96 });
    const remote = await connected(server.url);
    expect(remote.ceilings).toEqual({ timeout: 5_000, memoryLimit: 96, outbound: 'public', cpuLimit: null, toolCallLimit: null, fetchLimit: null, approvalTimeout: 300_000 });
    const executor = new CodemodeExecutor(remote);
    expect(await executor.execute('async () => 5', [])).toEqual({ result: 5, logs: [] });
    // A timeout the host chose above the ceiling is the host's mistake: refused, not lowered.
    const strict = new CodemodeExecutor(remote, { timeout: 60_000 });
    const refused = await rejection(strict.execute('async () => 5', []));
    expect(refused.code).toBe('INVALID_OPTION');
    expect(refused.message).toContain('5000');
  });
});

describe('the deployment recipes', () => {
  const read = (p) => readFileSync(fileURLToPath(new URL(`../${p}`, import.meta.url)), 'utf8');
  it('ship no placeholder secret, and every recipe off loopback reads a token file', () => {
    const files = ['deploy/Dockerfile', 'deploy/kubernetes.yaml', 'deploy/codemode-executor.service', 'deploy/haproxy.cfg', 'docs/deployment.md'];
    for (const f of files) expect(read(f), f).not.toMatch(/change-?me|placeholder|your[-_ ]secret|stringData:\s*\n\s*token:/i);
    const entry = /ENTRYPOINT \[(.*)\]/.exec(read('deploy/Dockerfile'))[1];
    expect(entry).toContain('"0.0.0.0"');
    expect(entry).toContain('"--token-file"');
    expect(read('deploy/kubernetes.yaml')).toMatch(/"--token-file", "\/run\/secrets\/codemode\/token"/);
    expect(read('deploy/kubernetes.yaml')).not.toMatch(/^kind: Secret/m);
  });

  it('the CLI refuses a token file that holds a placeholder-length secret', () => {
    const run = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '1', '--token-file', tokenFile('change-me')], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--token-file');
    expect(run.stderr).toContain('16 characters');
  });
});

describe('the daemon’s outbound ceiling', () => {
  /** A loopback server that counts what reaches it. */
  async function counting() {
    const http = await import('node:http');
    const seen = [];
    const server = http.createServer((req, res) => {
      seen.push(req.url);
      res.end('reached');
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    return { seen, url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
  }
  const fetchCode = (url) => `async () => { try { return await (await fetch(${JSON.stringify(url)})).text() } catch (e) { return 'refused: ' + e.message } }`;

  /**
   * A daemon started with `outbound` (its ceiling), a caller connected to it, and a loopback
   * server counting what reaches it; `check` gets the caller, the server, and `fetched(outbound?)`,
   * the outcome of a run that fetches the server (asking `outbound` when given).
   */
  async function withCeiling(outbound, check) {
    const target = await counting();
    try {
      const server = await served(outbound === undefined ? { workers: 1 } : { workers: 1, outbound });
      const remote = await connected(server.url);
      const fetched = (...asked) => remote.execute({ code: fetchCode(target.url), ...(asked.length ? { outbound: asked[0] } : {}) });
      await check({ remote, target, fetched });
    } finally {
      target.close();
    }
  }

  it('is public by default: native is refused naming the ceiling, and an omitted outbound gets public', async () => {
    await withCeiling(undefined, async ({ remote, target, fetched }) => {
      expect(remote.ceilings.outbound).toBe('public');
      const native = await rejection(fetched('native'));
      expect(native.code).toBe('INVALID_OPTION');
      expect(native.message).toContain("ceiling 'public'");
      expect((await fetched()).result).toMatch(/^refused: /);
      expect(target.seen).toEqual([]);
    });
  });

  it('null closes fetch for a caller that names nothing, and refuses routed and public', async () => {
    await withCeiling(null, async ({ target, fetched }) => {
      expect((await fetched()).result).toContain('fetch is closed in this sandbox');
      for (const outbound of ['public', async () => ({ status: 200, statusText: 'OK', headers: [], body: null })]) {
        const refused = await rejection(fetched(outbound));
        expect(refused.code).toBe('INVALID_OPTION');
        expect(refused.message).toContain("ceiling 'blocked'");
      }
      expect(target.seen).toEqual([]);
    });
  });

  it('native lets a caller ask for it (loopback here), and the CLI refuses an unknown ceiling', async () => {
    await withCeiling('native', async ({ target, fetched }) => {
      expect((await fetched('native')).result).toBe('reached');
      // Omitted, a caller still gets what the ceiling gives.
      expect((await fetched()).result).toBe('reached');
      expect(target.seen.length).toBe(2);
    });
    const run = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--outbound', 'everything'], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--outbound');
  });
});

describe('what a review of these bounds found', () => {
  it('a client without the token takes no connection slot from those with it', async () => {
    const secret = 'a long enough shared secret';
    const server = await served({ workers: 1, token: secret, maxConnectionsPerAddress: 2 });
    // Refused clients that never close their side: each lingers in the refusal for a while.
    const refused = [];
    for (let i = 0; i < 6; i++) refused.push(net.connect(server.port, '127.0.0.1').on('error', () => {}));
    for (const s of refused) s.write(upgrade(server.port));
    await new Promise((r) => setTimeout(r, 200));
    const remote = await connected(server.url, { token: secret });
    expect((await remote.execute({ code: 'async () => 3' })).result).toBe(3);
    for (const s of refused) s.destroy();
  });

  it('counts idleness from when the connection stopped holding anything', async () => {
    const server = await served({ workers: 1, idleTimeout: 600 });
    const client = await raw(server.url);
    client.send({ type: 'execute', id: 1, code: 'async () => { await new Promise((r) => setTimeout(r, 1000)); return 1 }', modules: [], providers: [], outbound: 'blocked', retainHandles: false });
    await client.next((m) => m.type === 'done' && m.id === 1);
    const done = Date.now();
    await client.whenClosed(5_000);
    expect(Date.now() - done).toBeGreaterThanOrEqual(400);
  });

  it('forgets a routed fetch its client never answered once the run ends, so the connection can go idle', async () => {
    const server = await served({ workers: 1, idleTimeout: 500 });
    const client = await raw(server.url);
    const code = 'async () => { fetch("https://x.example/").catch(() => 0); await new Promise((r) => setTimeout(r, 100)); return 1 }';
    client.send({ type: 'execute', id: 1, code, modules: [], providers: [], outbound: 'routed', retainHandles: false });
    await client.next((m) => m.type === 'fetch');
    await client.next((m) => m.type === 'done' && m.id === 1);
    expect((await client.whenClosed(5_000)).code).toBe(1001);
  });

  it('echoes a client’s text cut, in its answer and in the log', async () => {
    const lines = [];
    const server = await served({ workers: 1, log: (l) => lines.push(l) });
    const client = await raw(server.url);
    client.send(JSON.stringify({ type: 'x'.repeat(200_000) }));
    const error = await client.next((m) => m.type === 'error');
    expect(error.message.length).toBeLessThan(2_000);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(2_000);
  });
});

describe('a run that floods its host over the daemon', () => {
  it('has its calls past the budget refused at the daemon, not queued for the client', async () => {
    const server = await served({ workers: 1 });
    // A raw client applies no budget of its own and answers nothing: what reaches it is what
    // the daemon let through.
    const client = await raw(server.url);
    const code = `async () => { const big = 'x'.repeat(4 << 20); const s = await Promise.allSettled(Array.from({ length: 20 }, () => t.put(big))); return s.filter((x) => x.status === 'rejected' && /may hold at once/.test(x.reason.message)).length }`;
    client.send({ type: 'execute', id: 1, code, modules: [], providers: [{ name: 't', tools: ['put'] }], outbound: 'blocked', retainHandles: false, timeout: 3_000 });
    await client.next((m) => m.type === 'toolCall');
    await new Promise((r) => setTimeout(r, 1_500));
    const sent = client.received.filter((m) => m.type === 'toolCall').length + 1;
    // 32 MiB of 4 MiB calls: eight, and the one that crosses no bound because none is held.
    expect(sent).toBeLessThanOrEqual(9);
    expect(server.stats().connections).toBe(1);
    client.socket.close();
  });
});
