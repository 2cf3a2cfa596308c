// Several daemons behind a real load balancer (docs/deployment.md): HAProxy from the Debian
// package, with the checked-in deploy/haproxy.cfg, in front of three daemons started through the
// CLI, everything on 127.0.0.1. Bounded in count and time; stops everything it started.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutorError, WebSocket, connect, httpGet, startDaemon } from './daemon-helpers.mjs';
import { sleep, until } from './helpers.mjs';
import { freePort } from '../lib/testbed/engine.mjs';

const CONFIG = fileURLToPath(new URL('../deploy/haproxy.cfg', import.meta.url));
const dec = new TextDecoder();
const req = (url) => ({ method: 'GET', url, headers: [], body: null });

function haproxyBinary() {
  for (const bin of ['haproxy', '/usr/sbin/haproxy']) {
    if (spawnSync(bin, ['-v']).status === 0) return bin;
  }
  throw new Error('HAProxy is not installed: `apt-get install -y haproxy` (.ci/run does it)');
}


let daemons = [];
let lb;
let lbUrl;
let lbStderr = '';

beforeAll(async () => {
  daemons = await Promise.all([0, 1, 2].map(() => startDaemon(['--workers', '1'])));
  const port = await freePort();
  const env = { ...process.env, LB_BIND: `127.0.0.1:${port}` };
  daemons.forEach((d, i) => { env[`DAEMON_${i + 1}`] = `127.0.0.1:${d.port}`; });
  const bin = haproxyBinary();
  const check = spawnSync(bin, ['-c', '-f', CONFIG], { env, encoding: 'utf8' });
  expect(check.status, check.stderr + check.stdout).toBe(0);
  lb = spawn(bin, ['-db', '-f', CONFIG], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  lb.stderr.on('data', (d) => (lbStderr += d));
  lbUrl = `ws://127.0.0.1:${port}`;
  // Up once it answers and has seen every daemon pass its health check (rise 2 x 250 ms).
  const up = await until(async () => (await httpGet(port, '/healthz').catch(() => ({ status: 0 }))).status === 200, 10_000);
  expect(up, lbStderr).toBe(true);
  await sleep(800);
}, 60_000);

afterAll(() => {
  lb?.kill('SIGKILL');
});

/** A caller: its own connection through the balancer. */
const caller = () => connect(lbUrl, { websocket: WebSocket });

/** A caller whose connection the balancer sent to daemon `id` (round robin: a few tries). */
async function callerOn(id) {
  const spare = [];
  try {
    for (let i = 0; i < 12; i++) {
      const c = await caller();
      if (c.daemon === id) return c;
      spare.push(c);
    }
    throw new Error(`no connection reached daemon ${id} in 12 tries`);
  } finally {
    await Promise.all(spare.map((c) => c.close()));
  }
}

/**
 * Runs `count` executions on `executor`, retrying a retryable failure (at most 5 tries each);
 * returns what happened to each.
 */
async function work(executor, count, code = 'async () => 1') {
  const results = [];
  for (let i = 0; i < count; i++) {
    const failures = [];
    let outcome;
    for (let attempt = 0; attempt < 5 && !outcome; attempt++) {
      try {
        outcome = await executor.execute({ code, timeout: 5000 });
      } catch (e) {
        failures.push(e);
        if (!(e instanceof ExecutorError) || !e.retryable) break;
        await sleep(50);
      }
    }
    results.push({ outcome, failures, daemon: executor.daemon });
  }
  return results;
}

describe('the checked-in balancer configurations', () => {
  it('deploy/kubernetes.yaml embeds a configuration HAProxy accepts', () => {
    const yaml = readFileSync(fileURLToPath(new URL('../deploy/kubernetes.yaml', import.meta.url)), 'utf8');
    const block = /haproxy\.cfg: \|\n((?: {4}.*\n|\n)+)/.exec(yaml);
    expect(block).not.toBe(null);
    const cfg = block[1].replace(/^ {4}/gm, '');
    expect(cfg).toContain('stick store-response res.hdr(x-codemode-daemon)');
    const dir = mkdtempSync(join(tmpdir(), 'codemode-haproxy-'));
    writeFileSync(join(dir, 'haproxy.cfg'), cfg);
    const check = spawnSync(haproxyBinary(), ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
    expect(check.status, check.stderr + check.stdout).toBe(0);
  });
});

describe('three daemons behind HAProxy', () => {
  it('spreads 300 executions from 20 concurrent callers over all three', async () => {
    const callers = await Promise.all(Array.from({ length: 20 }, caller));
    const results = (await Promise.all(callers.map((c) => work(c, 15)))).flat();
    await Promise.all(callers.map((c) => c.close()));
    expect(results).toHaveLength(300);
    expect(results.every((r) => r.outcome?.result === 1)).toBe(true);
    const perDaemon = {};
    for (const r of results) perDaemon[r.daemon] = (perDaemon[r.daemon] ?? 0) + 1;
    const ids = await Promise.all(daemons.map(async (d) => (await httpGet(d.port, '/healthz')).body.daemon));
    expect(Object.keys(perDaemon).sort()).toEqual([...ids].sort());
    for (const id of ids) expect(perDaemon[id]).toBeGreaterThan(0);
    console.log(`executions per daemon: ${ids.map((id) => perDaemon[id]).join(' / ')}`);
  }, 60_000);

  it('reaches a handle’s daemon from fresh connections: 20 invocations keep its state', async () => {
    const granter = await caller();
    const outcome = await granter.execute({
      code: 'async () => { let served = 0; return { fetch: async () => Response.json({ served: ++served }) } }',
      retainHandles: true,
    });
    expect(outcome.executionId).toBeTruthy();
    const holder = granter.daemon;
    const served = [];
    let elsewhere = 0;
    for (let i = 0; i < 20; i++) {
      const fresh = await caller();
      if (fresh.daemon !== holder) elsewhere++;
      const response = await fresh.invokeHandle(outcome.executionId, 'fetch', req('https://app.internal/'));
      served.push(JSON.parse(dec.decode(response.body)).served);
      await fresh.close();
    }
    expect(served).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Most fresh connections landed on another daemon, so the pinned route was exercised.
    expect(elsewhere).toBeGreaterThan(0);
    console.log(`handle: 20 invocations from fresh connections, ${elsewhere} of them first reached another daemon`);
    const other = await caller();
    await other.closeHandles(outcome.executionId);
    await other.close();
    await granter.close();
  }, 60_000);

  it('survives a daemon SIGKILLed mid-load: no caller hangs, failures are typed and retryable, the rest completes', async () => {
    // A handle on the daemon about to die: find a caller that landed there.
    const victim = daemons[1];
    const victimId = (await httpGet(victim.port, '/healthz')).body.daemon;
    const holderConn = await callerOn(victimId);
    const granted = await holderConn.execute({ code: 'async () => ({ fetch: async () => new Response("alive") })', retainHandles: true });
    const callers = await Promise.all(Array.from({ length: 20 }, caller));
    const started = Date.now();
    const load = Promise.all(callers.map((c) => work(c, 15, 'async () => { await new Promise((r) => setTimeout(r, 20)); return 1 }')));
    await sleep(300);
    victim.child.kill('SIGKILL');
    const results = (await load).flat();
    const elapsed = Date.now() - started;
    const failures = results.flatMap((r) => r.failures);
    expect(results).toHaveLength(300);
    for (const f of failures) {
      expect(f).toBeInstanceOf(ExecutorError);
      expect(f.retryable, `${f.code}: ${f.message}`).toBe(true);
    }
    expect(results.filter((r) => r.outcome?.result === 1)).toHaveLength(300);
    expect(failures.length).toBeGreaterThan(0);
    const codes = {};
    for (const f of failures) codes[f.code] = (codes[f.code] ?? 0) + 1;
    console.log(`kill mid-load: 300 executions completed in ${elapsed} ms; ${failures.length} retryable failures ${JSON.stringify(codes)}`);
    // The handle lived on the dead daemon: it answers HANDLES_CLOSED, from a fresh connection too.
    const fresh = await caller();
    const closed = await fresh.invokeHandle(granted.executionId, 'fetch', req('https://app.internal/')).catch((e) => e);
    expect(closed).toBeInstanceOf(ExecutorError);
    expect(closed.code).toBe('HANDLES_CLOSED');
    // New executions go to the survivors.
    const after = await work(fresh, 6);
    expect(after.every((r) => r.outcome?.result === 1 && r.daemon !== victimId)).toBe(true);
    await Promise.all([...callers, fresh, holderConn].map((c) => c.close().catch(() => {})));
  }, 90_000);

  it('sends no new connection to a daemon that drains on SIGTERM', async () => {
    const draining = daemons[2];
    const drainingId = (await httpGet(draining.port, '/healthz')).body.daemon;
    // Keep it busy so its drain lasts: a run of 3 s on a connection that reached it.
    const busy = await callerOn(drainingId);
    const long = busy.execute({ code: 'async () => { await new Promise((r) => setTimeout(r, 3000)); return "drained" }' });
    await sleep(100);
    draining.child.kill('SIGTERM');
    await sleep(100);
    const landed = [];
    for (let i = 0; i < 12; i++) {
      const c = await caller();
      landed.push(c.daemon);
      await c.close();
    }
    expect(landed).not.toContain(drainingId);
    expect((await long).result).toBe('drained');
    expect(await draining.exited).toEqual({ code: 0, signal: null });
    await busy.close().catch(() => {});
  }, 60_000);
});
