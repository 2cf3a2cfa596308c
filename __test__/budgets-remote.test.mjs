// The budgets (cpuLimit, toolCallLimit, fetchLimit) away from IsolateExecutor: sent by
// connect() and held by a real daemon, capped by the daemon's ceilings (serve() options and CLI
// flags), and taken by the dialect (CodemodeExecutor). Every fetch here is answered by a routed
// policy in this process: nothing reaches a network.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { executor, rejection } from './helpers.mjs';
import { BIN, connected, raw, served, startDaemon } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const BUSY = 'async () => { for (;;) {} }';
/** Six tool calls, each caught: what was answered and what was refused. */
const SIX_CALLS = `async () => {
  const got = [];
  for (let i = 0; i < 6; i++) {
    try { got.push(await t.n(i)) } catch (e) { got.push('refused: ' + e.message) }
  }
  return got;
}`;
/** Three fetches of a loopback URL (answered by the routed policy), each caught. */
const THREE_FETCHES = `async () => {
  const got = [];
  for (let i = 0; i < 3; i++) {
    try { got.push(await (await fetch('http://127.0.0.1/' + i)).text()) } catch (e) { got.push('refused: ' + e.message) }
  }
  return got;
}`;
const tools = { providers: [{ name: 't', tools: ['n'] }], dispatch: ({ args }) => args[0] };

/** A routed outbound policy that answers every fetch itself, recording the URLs. */
function routed() {
  const seen = [];
  const policy = async (req) => {
    seen.push(req.url);
    return { status: 200, statusText: 'OK', headers: [], body: new TextEncoder().encode(`ok ${seen.length}`) };
  };
  return { seen, policy };
}

describe('budgets over connect()', () => {
  it('a busy loop under cpuLimit 50 ends with CPU_LIMIT; the stats carry cpuBudgetMs and fetches', async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url);
    const started = Date.now();
    const out = await remote.execute({ code: BUSY, cpuLimit: 50, timeout: 20_000 });
    expect(out.error?.code).toBe('CPU_LIMIT');
    expect(out.error?.message).toContain('CPU budget of 50 ms');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(out.stats.cpuBudgetMs).toBeGreaterThanOrEqual(50);
    expect(out.stats.fetches).toBe(0);
    // Without a budget (and no ceiling), stats still carry the fields.
    const plain = await remote.execute({ code: 'async () => 1' });
    expect(plain.result).toBe(1);
    expect(plain.stats.cpuBudgetMs).toBe(0);
    expect(plain.stats.fetches).toBe(0);
  });

  it('toolCallLimit 5 refuses the sixth call inside the sandbox, where the program catches it', async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url);
    const out = await remote.execute({ code: SIX_CALLS, toolCallLimit: 5, ...tools });
    expect(out.error).toBeUndefined();
    expect(out.result.slice(0, 5)).toEqual([0, 1, 2, 3, 4]);
    expect(out.result[5]).toMatch(/^refused: This call to t\.n was not made: the run has made its 5 tool calls/);
    expect(out.stats.toolCalls).toBe(5);
  });

  it('fetchLimit 2 refuses the third fetch of a routed run; the policy saw two; stats count them', async () => {
    const server = await served({ workers: 1 });
    const { seen, policy } = routed();
    const remote = await connected(server.url, { outbound: policy });
    const out = await remote.execute({ code: THREE_FETCHES, fetchLimit: 2 });
    expect(out.error).toBeUndefined();
    expect(out.result.slice(0, 2)).toEqual(['ok 1', 'ok 2']);
    expect(out.result[2]).toMatch(/^refused: This fetch of http:\/\/127\.0\.0\.1\/2 was not made: the run has made its 2 fetches/);
    expect(seen).toEqual(['http://127.0.0.1/0', 'http://127.0.0.1/1']);
    expect(out.stats.fetches).toBe(2);
  });

  it("connect()'s budgets are each request's default; a request's own wins; undefined inherits", async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url, { cpuLimit: 50, toolCallLimit: 0 });
    expect((await remote.execute({ code: BUSY, timeout: 20_000 })).error?.code).toBe('CPU_LIMIT');
    expect((await remote.execute({ code: BUSY, timeout: 20_000, cpuLimit: undefined })).error?.code).toBe('CPU_LIMIT');
    const none = await remote.execute({ code: SIX_CALLS, ...tools, toolCallLimit: undefined });
    expect(none.result.every((r) => String(r).startsWith('refused: '))).toBe(true);
    const one = await remote.execute({ code: SIX_CALLS, ...tools, toolCallLimit: 1 });
    expect(one.result[0]).toBe(0);
    expect(one.result[1]).toMatch(/^refused: /);
    const unset = await connected(server.url, { cpuLimit: undefined, toolCallLimit: undefined, fetchLimit: undefined });
    expect((await unset.execute({ code: SIX_CALLS, ...tools })).result).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('refuses a budget outside its range: connect() with INVALID_OPTION, a request with INVALID_REQUEST', async () => {
    const server = await served({ workers: 1 });
    const bad = await rejection(connected(server.url, { cpuLimit: 0 }));
    expect(bad.code).toBe('INVALID_OPTION');
    expect(bad.message).toContain('cpuLimit');
    expect(bad.message).toContain('an integer from 1 to 2147483647');
    const remote = await connected(server.url);
    const request = await rejection(remote.execute({ code: 'async () => 1', fetchLimit: 1_000_001 }));
    expect(request.code).toBe('INVALID_REQUEST');
    expect(request.message).toContain('fetchLimit');
  });
});

describe("the daemon's budget ceilings", () => {
  it('a request without a budget gets the ceiling; one above it is refused naming the flag', async () => {
    const server = await served({ workers: 1, cpuLimit: 50, toolCallLimit: 2, fetchLimit: 1 });
    const remote = await connected(server.url);
    expect(remote.ceilings).toEqual({ timeout: 30_000, memoryLimit: 128, outbound: 'public', cpuLimit: 50, toolCallLimit: 2, fetchLimit: 1, approvalTimeout: 300_000 });
    // No cpuLimit in the request: the ceiling's 50 ms stops the loop.
    const busy = await remote.execute({ code: BUSY, timeout: 20_000 });
    expect(busy.error?.code).toBe('CPU_LIMIT');
    expect(busy.error?.message).toContain('CPU budget of 50 ms');
    const calls = await remote.execute({ code: SIX_CALLS, ...tools });
    expect(calls.result.slice(0, 2)).toEqual([0, 1]);
    expect(calls.result[2]).toMatch(/made its 2 tool calls/);
    for (const [field, value, flag] of [
      ['cpuLimit', 51, '--cpu-limit'],
      ['toolCallLimit', 3, '--tool-call-limit'],
      ['fetchLimit', 2, '--fetch-limit'],
    ]) {
      const refused = await rejection(remote.execute({ code: 'async () => 1', [field]: value }));
      expect(refused.code, field).toBe('INVALID_OPTION');
      expect(refused.message).toContain(field);
      expect(refused.message).toContain(`(serve ${flag})`);
    }
    // At or below the ceiling, the request's own holds.
    expect((await remote.execute({ code: SIX_CALLS, ...tools, toolCallLimit: 1 })).result[1]).toMatch(/made its 1 tool calls/);
    expect((await remote.execute({ code: 'async () => 3', cpuLimit: 50, fetchLimit: 0 })).result).toBe(3);
  });

  it('without ceilings the welcome says null and a request without budgets has none', async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url);
    expect(remote.ceilings).toMatchObject({ cpuLimit: null, toolCallLimit: null, fetchLimit: null });
    expect((await remote.execute({ code: SIX_CALLS, ...tools })).result).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('the daemon checks the ranges itself: INVALID_REQUEST naming the field', async () => {
    const server = await served({ workers: 1 });
    const client = await raw(server.url);
    for (const [id, field, value] of [[1, 'cpuLimit', 0], [2, 'toolCallLimit', 1_000_001], [3, 'fetchLimit', 1_000_001]]) {
      client.send({ type: 'execute', id, code: 'async () => 1', modules: [], providers: [], retainHandles: false, [field]: value });
      const failed = await client.next((m) => m.id === id);
      expect(failed.type).toBe('failed');
      expect(failed.code).toBe('INVALID_REQUEST');
      expect(failed.message).toContain(field);
    }
    client.socket.close();
  });

  it('serve() refuses a ceiling outside the budget range with INVALID_OPTION', async () => {
    for (const [field, value] of [['cpuLimit', 0], ['toolCallLimit', -1], ['fetchLimit', 1.5]]) {
      const e = await rejection(served({ workers: 1, [field]: value }));
      expect(e.code, field).toBe('INVALID_OPTION');
      expect(e.message).toContain(field);
      expect(e.message).toMatch(/an integer from [01] to /);
    }
  });

  it('the CLI takes --cpu-limit, --tool-call-limit and --fetch-limit, and names a bad one', async () => {
    const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    for (const flag of ['--cpu-limit MS', '--tool-call-limit N', '--fetch-limit N']) expect(help.stdout).toContain(flag);
    const bad = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '1', '--cpu-limit', '0'], { encoding: 'utf8', timeout: 20_000 });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--cpu-limit: ');
    expect(bad.stderr).toContain('cpuLimit');
    const daemon = await startDaemon(['--cpu-limit', '50', '--tool-call-limit', '4', '--fetch-limit', '0']);
    const remote = await connected(daemon.url);
    expect(remote.ceilings).toMatchObject({ cpuLimit: 50, toolCallLimit: 4, fetchLimit: 0 });
    expect((await remote.execute({ code: BUSY, timeout: 20_000 })).error?.code).toBe('CPU_LIMIT');
    const refused = await rejection(remote.execute({ code: 'async () => 1', fetchLimit: 1 }));
    expect(refused.code).toBe('INVALID_OPTION');
    expect(refused.message).toContain('(serve --fetch-limit)');
  });
});

describe('budgets in the dialect (CodemodeExecutor)', () => {
  const native = executor({ workers: 1 });
  const burn = (ms) => `async () => { const end = performance.now() + ${ms}; while (performance.now() < end) {} return 'spent' }`;

  it('a run past the constructor cpuLimit ends as a timeout does, with the CPU_LIMIT text', async () => {
    const cm = new CodemodeExecutor(native, { cpuLimit: 50 });
    const out = await cm.execute('async () => { console.log("before"); for (;;) {} }', []);
    expect(out.result).toBeUndefined();
    expect(out.error).toMatch(/^The program used up its CPU budget of 50 ms and was stopped\./);
    expect(out.logs).toEqual(['before']);
    // undefined per call inherits the constructor's.
    expect((await cm.execute(BUSY, [], { cpuLimit: undefined })).error).toContain('CPU budget of 50 ms');
  });

  it('a per-call cpuLimit wins over the constructor one', async () => {
    const cm = new CodemodeExecutor(native, { cpuLimit: 50 });
    expect(await cm.execute(burn(150), [], { cpuLimit: 10_000 })).toEqual({ result: 'spent', logs: [] });
    const loose = new CodemodeExecutor(native, { cpuLimit: 10_000 });
    expect((await loose.execute(BUSY, [], { cpuLimit: 50 })).error).toContain('CPU budget of 50 ms');
  });

  it('toolCallLimit: the call past it rejects inside the sandbox, per call winning', async () => {
    const fns = { n: (i) => i };
    const code = 'async () => { const got = []; for (let i = 0; i < 3; i++) { try { got.push(await codemode.n(i)) } catch (e) { got.push("refused: " + e.message) } } return got }';
    const cm = new CodemodeExecutor(native, { toolCallLimit: 2 });
    const out = await cm.execute(code, [{ name: 'codemode', fns }]);
    expect(out.result.slice(0, 2)).toEqual([0, 1]);
    expect(out.result[2]).toMatch(/^refused: This call to .* was not made: the run has made its 2 tool calls/);
    const per = await cm.execute(code, [{ name: 'codemode', fns }], { toolCallLimit: 3 });
    expect(per.result).toEqual([0, 1, 2]);
  });

  it('fetchLimit: the fetch past it rejects inside the sandbox, and the Fetcher never sees it', async () => {
    const seen = [];
    const globalOutbound = {
      async fetch(request) {
        seen.push(request.url);
        return new Response(`ok ${seen.length}`);
      },
    };
    const cm = new CodemodeExecutor(native, { globalOutbound, fetchLimit: 1 });
    const out = await cm.execute(THREE_FETCHES, []);
    expect(out.result[0]).toBe('ok 1');
    expect(out.result[1]).toMatch(/^refused: This fetch of http:\/\/127\.0\.0\.1\/1 was not made: the run has made its 1 fetches/);
    expect(seen).toEqual(['http://127.0.0.1/0']);
    expect((await cm.execute(THREE_FETCHES, [], { fetchLimit: 3 })).result).toEqual(['ok 2', 'ok 3', 'ok 4']);
  });

  it('refuses a constructor budget outside its range with INVALID_OPTION naming it', () => {
    for (const [field, value] of [['cpuLimit', 0], ['toolCallLimit', 'x'], ['fetchLimit', -1]]) {
      let e;
      try {
        new CodemodeExecutor(native, { [field]: value });
      } catch (err) {
        e = err;
      }
      expect(e?.code, field).toBe('INVALID_OPTION');
      expect(e.message).toContain(field);
      expect(e.message).toMatch(/an integer from [01] to /);
    }
  });

  it('over connect(), a daemon ceiling reaches the dialect too', async () => {
    const server = await served({ workers: 1, cpuLimit: 50 });
    const cm = new CodemodeExecutor(await connected(server.url), { timeout: 20_000 });
    expect((await cm.execute(BUSY, [])).error).toContain('CPU budget of 50 ms');
    const above = await rejection(cm.execute('async () => 1', [], { cpuLimit: 51 }));
    expect(above.code).toBe('INVALID_OPTION');
  });
});
