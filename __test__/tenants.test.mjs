// Tenants (docs/tenants.md), with real workers and a real daemon: a worker runs one tenant's
// code between its start and its end (cordons); runs queue per tenant and take turns (fair
// shares) within each tenant's bounds; handles and approval tokens stay with their tenant; the
// daemon names a connection's tenant by its token; metrics carry a bounded tenant label.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, connected, served } from './daemon-helpers.mjs';
import { declaredText, executor, rejection, until } from './helpers.mjs';

/** A program that spends about `ms` of CPU, then answers its worker's pid through stats. */
const spin = (ms) => `async () => { const end = Date.now() + ${ms}; let n = 0; while (Date.now() < end) n++; return n > 0 }`;
const QUICK = 'async () => 1';
const HANDLER = 'async () => ({ fetch: () => new Response("mine") })';
const GET = { method: 'GET', url: 'https://handler.internal/', headers: [], body: null };
const TOKEN_A = 'a'.repeat(32);
const TOKEN_B = 'b'.repeat(32);

/** The p-th percentile of `xs`. */
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

describe('cordons', () => {
  it('over 100 runs alternating two tenants on two workers, no worker serves both', async () => {
    const ex = executor({ workers: 2 });
    const pids = { a: new Set(), b: new Set() };
    for (let i = 0; i < 100; i++) {
      const tenant = i % 2 ? 'b' : 'a';
      const outcome = await ex.execute({ code: QUICK, tenant });
      expect(outcome.error).toBeUndefined();
      pids[tenant].add(outcome.stats.workerPid);
    }
    expect([...pids.a].filter((p) => pids.b.has(p))).toEqual([]);
    // Each kept its own worker: no switch was needed with one worker each.
    expect(pids.a.size).toBe(1);
    expect(pids.b.size).toBe(1);
  });

  it('a third tenant on a pool whose workers are taken retires one and never reuses its pid', async () => {
    const ex = executor({ workers: 2 });
    const seen = new Map();
    for (const tenant of ['a', 'b', 'c', 'a', 'b', 'c']) {
      const { error, stats } = await ex.execute({ code: QUICK, tenant });
      expect(error).toBeUndefined();
      const owner = seen.get(stats.workerPid);
      expect(owner === undefined || owner === tenant, `worker ${stats.workerPid} ran ${owner} then ${tenant}`).toBe(true);
      seen.set(stats.workerPid, tenant);
    }
    const switches = ex.metrics().find((m) => m.name === 'codemode_tenant_switches_total');
    expect(switches.samples[0].value).toBeGreaterThan(0);
    // Replaced, not lost: no restart is counted.
    const restarts = ex.metrics().find((m) => m.name === 'codemode_worker_restarts_total');
    expect(restarts.samples.reduce((n, s) => n + s.value, 0)).toBe(0);
  });

  it('runs that name no tenant are a domain of their own', async () => {
    const ex = executor({ workers: 1 });
    const unnamed = await ex.execute({ code: QUICK });
    const named = await ex.execute({ code: QUICK, tenant: 'a' });
    const again = await ex.execute({ code: QUICK });
    expect(named.stats.workerPid).not.toBe(unnamed.stats.workerPid);
    expect(again.stats.workerPid).not.toBe(named.stats.workerPid);
  });
});

describe('fair shares', () => {
  it.each([
    ['held to maxRunning 1', { maxRunning: 1, maxQueued: 1000 }],
    ['unbounded (turns alone)', {}],
  ])("a flooding tenant %s moves another's latency by at most one of its runs", async (_, bounds) => {
    const RUN_MS = 50;
    const ex = executor({ workers: 2, queueBound: 1000, tenants: { a: bounds } });
    // B alone, warm.
    for (let i = 0; i < 5; i++) await ex.execute({ code: QUICK, tenant: 'b' });
    const alone = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await ex.execute({ code: QUICK, tenant: 'b' });
      alone.push(performance.now() - t);
    }
    // A floods: 500 runs of 50 ms of CPU each, one at a time.
    const stop = new AbortController();
    const flood = Array.from({ length: 500 }, () => ex.execute({ code: spin(RUN_MS), tenant: 'a', signal: stop.signal }).catch((e) => e));
    await until(() => ex.stats().running >= 1);
    const loaded = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      const outcome = await ex.execute({ code: QUICK, tenant: 'b' });
      loaded.push(performance.now() - t);
      expect(outcome.error).toBeUndefined();
    }
    expect(ex.stats().queued).toBeGreaterThan(300);
    stop.abort();
    const ended = await Promise.all(flood);
    expect(ended.filter((e) => e?.code === 'ABORTED').length).toBeGreaterThan(300);
    const bound = 2 * percentile(alone, 99) + RUN_MS;
    expect(percentile(loaded, 99), `alone ${alone.map(Math.round)}, loaded ${loaded.map(Math.round)}`).toBeLessThanOrEqual(bound);
  });

  it("a tenant past its maxQueued gets QUEUE_FULL naming its bound while another is served", async () => {
    const ex = executor({ workers: 2, tenants: { a: { maxRunning: 1, maxQueued: 3 } } });
    const stop = new AbortController();
    const held = [];
    for (let i = 0; i < 4; i++) held.push(ex.execute({ code: spin(2000), tenant: 'a', signal: stop.signal }).catch((e) => e));
    const refused = await rejection(ex.execute({ code: QUICK, tenant: 'a' }));
    expect(refused.code).toBe('QUEUE_FULL');
    expect(refused.retryable).toBe(true);
    expect(refused.message).toBe(declaredText('QUEUE_FULL', { bound: '3', what: 'executions of tenant "a"', whom: 'a worker', advice: ", or raise the tenant's `maxQueued`" }));
    const b = await ex.execute({ code: QUICK, tenant: 'b' });
    expect(b.error).toBeUndefined();
    stop.abort();
    await Promise.all(held);
  });

  it('a tenant past its cpuPerMinute is refused with when to retry; another is not', async () => {
    const ex = executor({ workers: 2, tenants: { a: { cpuPerMinute: 100 } } });
    // Runs until the minute's share is spent: the run after it is refused, not one before.
    let spent = 0;
    let refused;
    for (let i = 0; i < 20 && !refused; i++) {
      const outcome = await ex.execute({ code: spin(60), tenant: 'a' }).catch((e) => e);
      if (outcome.code) refused = outcome;
      else spent += outcome.stats.cpuMs;
    }
    expect(spent).toBeGreaterThanOrEqual(100);
    expect(spent).toBeLessThan(100 + 200);
    expect(refused.code).toBe('TENANT_CPU_LIMIT');
    expect(refused.retryable).toBe(true);
    expect(refused.message).toMatch(/^Tenant "a" has spent \d+ ms of CPU in the last minute, its share of 100 ms a minute \(`cpuPerMinute`\), so this execution did not start\. Retry in \d+ ms/);
    const retry = Number(/Retry in (\d+) ms/.exec(refused.message)[1]);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(60_000);
    expect((await ex.execute({ code: QUICK, tenant: 'b' })).error).toBeUndefined();
  });

  it('defaultTenant bounds a tenant not listed', async () => {
    const ex = executor({ workers: 1, defaultTenant: { maxRunning: 1, maxQueued: 0 } });
    const stop = new AbortController();
    const running = ex.execute({ code: spin(2000), tenant: 'zzz', signal: stop.signal }).catch((e) => e);
    await until(() => ex.stats().running === 1);
    const refused = await rejection(ex.execute({ code: QUICK, tenant: 'zzz' }));
    expect(refused.code).toBe('QUEUE_FULL');
    expect(refused.message).toContain('0 executions of tenant "zzz"');
    stop.abort();
    await running;
  });
});

describe('retained executions', () => {
  it("count toward maxRunning: a tenant cannot hold every worker with handles", async () => {
    const ex = executor({ workers: 2, tenants: { a: { maxRunning: 1 } } });
    const first = await ex.execute({ code: HANDLER, retainHandles: true, tenant: 'a' });
    expect(first.handles).toEqual(['fetch']);
    const stop = new AbortController();
    const second = ex.execute({ code: HANDLER, retainHandles: true, tenant: 'a', signal: stop.signal }).catch((e) => e);
    // The second waits for the first's worker; b is served meanwhile.
    const b = await ex.execute({ code: QUICK, tenant: 'b' });
    expect(b.error).toBeUndefined();
    expect(ex.stats()).toMatchObject({ retained: 1, queued: 1 });
    await ex.closeHandles(first.executionId, { tenant: 'a' });
    const granted = await second;
    expect(granted.handles).toEqual(['fetch']);
    await ex.closeHandles(granted.executionId, { tenant: 'a' });
  });
});

describe('ownership', () => {
  it("a tenant invoking or closing another's handles gets HANDLES_CLOSED, as for an id never granted", async () => {
    const ex = executor({ workers: 2 });
    const grant = await ex.execute({ code: HANDLER, retainHandles: true, tenant: 'a' });
    expect(grant.handles).toEqual(['fetch']);
    const never = await rejection(ex.invokeHandle('00000000-0000-4000-8000-000000000000', 'fetch', GET, { tenant: 'b' }));
    for (const attempt of [
      ex.invokeHandle(grant.executionId, 'fetch', GET, { tenant: 'b' }),
      ex.invokeHandle(grant.executionId, 'fetch', GET),
      ex.closeHandles(grant.executionId, { tenant: 'b' }),
    ]) {
      const e = await rejection(attempt);
      expect(e.code).toBe('HANDLES_CLOSED');
      expect(e.message).toBe(declaredText('HANDLES_CLOSED', { id: grant.executionId }));
      expect(e.message.replace(grant.executionId, 'ID')).toBe(never.message.replace('00000000-0000-4000-8000-000000000000', 'ID'));
    }
    const mine = await ex.invokeHandle(grant.executionId, 'fetch', GET, { tenant: 'a' });
    expect(Buffer.from(mine.body).toString()).toBe('mine');
    await ex.closeHandles(grant.executionId, { tenant: 'a' });
  });

  it("a tenant's approval token is refused to another as one of another key", async () => {
    const ex = executor({ workers: 2 });
    const providers = [{ name: 'billing', tools: ['refund'], approve: true }];
    const dispatch = () => 'refunded';
    const paused = await ex.execute({ code: 'async () => billing.refund(7)', providers, dispatch, tenant: 'a' });
    const { token, pending } = paused.paused;
    const decisions = { [pending[0].id]: { approved: true } };
    for (const tenant of ['b', undefined]) {
      const e = await rejection(ex.resume({ token, decisions, dispatch, tenant }));
      expect(e.code).toBe('TOKEN_FOREIGN_KEY');
    }
    const done = await ex.resume({ token, decisions, dispatch, tenant: 'a' });
    expect(done.result).toBe('refunded');
  });
});

describe('options', () => {
  it('refuses a bad tenant name or bound, naming the field', async () => {
    const ex = executor({ workers: 1 });
    for (const [tenant, problem] of [['a b', "' ' is not one of"], ['', 'got 0 characters'], ['x'.repeat(65), 'got 65 characters'], [7, 'got number 7']]) {
      const e = await rejection(ex.execute({ code: QUICK, tenant }));
      expect(e.code).toBe('INVALID_REQUEST');
      expect(e.message).toContain('`tenant`');
      expect(e.message).toContain(problem);
    }
    expect(() => executor({ tenants: { 'a/b': {} } })).toThrow(/`tenants\["a\/b"\]`/);
    expect(() => executor({ tenants: { a: { maxRunning: 0 } } })).toThrow(/`tenants\["a"\]\.maxRunning`: got number 0/);
    expect(() => executor({ tenants: { a: { weight: 2 } } })).toThrow(/weight/);
    expect(() => executor({ defaultTenant: { cpuPerMinute: -1 } })).toThrow(/`defaultTenant\.cpuPerMinute`/);
    const e = await rejection(ex.invokeHandle('x', 'fetch', GET, { tenant: '(none)' }));
    expect(e.message).toContain('`options.tenant`');
  });
});

describe('live logs', () => {
  it("carry the run's tenant when it named one", async () => {
    const ex = executor({ workers: 1 });
    const seen = [];
    await ex.execute({ code: 'async () => { console.log("a") }', tenant: 'acme', onLog: (e) => seen.push(e) });
    await ex.execute({ code: 'async () => { console.warn("b") }', onLog: (e) => seen.push(e) });
    expect(seen).toEqual([{ level: 'log', message: 'a', tenant: 'acme' }, { level: 'warn', message: 'b' }]);
  });
});

describe('metrics', () => {
  it('count executions, CPU and queue depth by tenant under a bounded label', async () => {
    const ex = executor({ workers: 1, tenants: { acme: {} } });
    await ex.execute({ code: QUICK, tenant: 'acme' });
    await ex.execute({ code: QUICK, tenant: 'other-1' });
    await ex.execute({ code: QUICK, tenant: 'other-2' });
    await ex.execute({ code: QUICK });
    const text = ex.metrics('prometheus');
    expect(text).toContain('codemode_tenant_executions_total{tenant="acme",code="OK"} 1');
    expect(text).toContain('codemode_tenant_executions_total{tenant="(other)",code="OK"} 2');
    expect(text).toContain('codemode_tenant_executions_total{tenant="(none)",code="OK"} 1');
    expect(text).not.toContain('other-1');
    expect(text).toMatch(/codemode_tenant_cpu_seconds_total\{tenant="acme"\} \d/);
    expect(text).toContain('# TYPE codemode_tenant_queue_depth gauge');
  });
});

describe('the daemon', () => {
  const tenants = { a: { token: TOKEN_A, maxRunning: 1 }, b: { token: TOKEN_B } };

  it("a connection acts for its token's tenant: its runs, handles and tokens, and TENANT_MISMATCH", async () => {
    const server = await served({ tenants });
    const a = await connected(server.url, { token: TOKEN_A });
    const b = await connected(server.url, { token: TOKEN_B });
    const mine = await a.execute({ code: QUICK });
    const theirs = await b.execute({ code: QUICK });
    expect(mine.stats.workerPid).not.toBe(theirs.stats.workerPid);
    expect((await a.execute({ code: QUICK, tenant: 'a' })).error).toBeUndefined();
    const mismatch = await rejection(a.execute({ code: QUICK, tenant: 'b' }));
    expect(mismatch.code).toBe('TENANT_MISMATCH');
    expect(mismatch.message).toBe(declaredText('TENANT_MISMATCH', { named: 'b' }));
    const grant = await a.execute({ code: HANDLER, retainHandles: true });
    expect(grant.handles).toEqual(['fetch']);
    expect((await rejection(b.invokeHandle(grant.executionId, 'fetch', GET))).code).toBe('HANDLES_CLOSED');
    expect((await rejection(b.closeHandles(grant.executionId))).code).toBe('HANDLES_CLOSED');
    expect(Buffer.from((await a.invokeHandle(grant.executionId, 'fetch', GET)).body).toString()).toBe('mine');
    await a.closeHandles(grant.executionId);
  });

  it("refuses a connection without a tenant's token", async () => {
    const server = await served({ tenants });
    const e = await rejection(connected(server.url, { token: 'c'.repeat(32) }));
    expect(e.code).toBe('CONNECTION_REFUSED');
    const none = await rejection(connected(server.url));
    expect(none.code).toBe('CONNECTION_REFUSED');
  });

  it('refuses at start a tenants table with a short or shared token, or with a token', async () => {
    const short = await rejection(served({ tenants: { a: { token: 'short' } } }));
    expect(short.code).toBe('INVALID_OPTION');
    expect(short.message).toContain('`tenants["a"].token`');
    expect(short.message).toContain('its token has 5 characters');
    const shared = await rejection(served({ tenants: { a: { token: TOKEN_A }, b: { token: TOKEN_A } } }));
    expect(shared.message).toMatch(/`tenants\["[ab]"\]\.token`: its token is also tenant "[ab]"'s/);
    const both = await rejection(served({ token: TOKEN_A, tenants: { b: { token: TOKEN_B } } }));
    expect(both.message).toContain('`tenants`: given together with a token');
  });

  it('serve --tenants FILE: the CLI reads the table, and refuses a bad one before listening', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenants-'));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ a: { token: TOKEN_A }, b: { token: TOKEN_A } }));
    const refused = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '1', '--tenants', bad], { encoding: 'utf8', timeout: 20_000 });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("its token is also tenant");
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{ a: 1 ');
    const garbled = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--tenants', notJson], { encoding: 'utf8', timeout: 20_000 });
    expect(garbled.status).toBe(2);
    expect(garbled.stderr).toContain('is not valid JSON at line 1');
    // Never the token, whatever shape the file gives it.
    const secret = '5f0c1e2d3c4b5a69788796a5b4c3d2e1';
    for (const [name, text] of [
      ['entry.json', JSON.stringify({ acme: secret })],
      ['number.json', '{ "acme": { "token": 50123456789012345678 } }'],
      ['quoted.json', `{ "acme": { "token": '${secret}' } }`],
    ]) {
      const file = join(dir, name);
      writeFileSync(file, text);
      const leaked = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '1', '--tenants', file], { encoding: 'utf8', timeout: 20_000 });
      expect(leaked.status, name).not.toBe(0);
      expect(leaked.stderr, name).not.toContain(secret.slice(0, 8));
      expect(leaked.stderr, name).not.toContain('5012345678');
    }
    const both = join(dir, 'token');
    writeFileSync(both, TOKEN_B);
    writeFileSync(bad, JSON.stringify({ a: { token: TOKEN_A } }));
    const together = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '1', '--tenants', bad, '--token-file', both], { encoding: 'utf8', timeout: 20_000 });
    expect(together.status).not.toBe(0);
    expect(together.stderr).toContain('given together with a token');
  });

  it("metrics over the daemon carry the tenant label, each tenant's rows to its own token only", async () => {
    const server = await served({ tenants });
    const a = await connected(server.url, { token: TOKEN_A });
    const b = await connected(server.url, { token: TOKEN_B });
    await a.execute({ code: QUICK });
    await b.execute({ code: QUICK });
    const metrics = async (token) => (await fetch(`http://127.0.0.1:${server.port}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} })).text();
    const asA = await metrics(TOKEN_A);
    expect(asA).toContain('codemode_tenant_executions_total{tenant="a",code="OK"} 1');
    expect(asA).not.toContain('tenant="b"');
    const anonymous = await metrics();
    expect(anonymous).toContain('codemode_executions_total{code="OK"} 2');
    expect(anonymous).not.toMatch(/tenant="/);
  });
});
