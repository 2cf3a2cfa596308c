// Approvals tried as an attacker would (docs/approvals.md, docs/threat-model.md): a program that
// computes while a person decides, a token that carries looser bounds than the executor that
// resumes it, a denial a program must be able to tell apart. Real workers, in process.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executor, sleep } from './helpers.mjs';
import { connected, served, startDaemon } from './daemon-helpers.mjs';
import { tool } from 'ai';
import { z } from 'zod';
import { createRequire } from 'node:module';

const { codeModeTool } = createRequire(import.meta.url)('../index.js');

const KEY = randomBytes(32);

const billing = (dispatched = []) => ({
  providers: [{ name: 'billing', tools: ['list', 'refund'], approve: ['refund'] }],
  dispatch: ({ tool, args }) => {
    dispatched.push(tool);
    return tool === 'list' ? [1] : `refunded ${args[0]}`;
  },
  dispatched,
});

/**
 * Runs `request` with billing's tools on `ex`, the person deciding `approved` after `waitMs`
 * (within `approvalTimeout` where given): the outcome, and the tools dispatched.
 */
async function whileDeciding(ex, request, { waitMs, approved, approvalTimeout }) {
  const b = billing();
  const approval = { mode: 'callback', ...(approvalTimeout && { timeout: approvalTimeout }), decide: () => sleep(waitMs).then(() => ({ approved })) };
  const out = await ex.execute({ ...request, providers: b.providers, dispatch: b.dispatch, approval });
  return { out, dispatched: b.dispatched };
}

describe('a time bound that rests while a person decides', () => {
  const ex = executor({ workers: 1 });

  it('runs again when a timer computes during the wait: the run ends at its timeout', async () => {
    const { out, dispatched } = await whileDeciding(
      ex,
      { code: 'async () => { const r = billing.refund(1); setTimeout(() => { for (;;) {} }, 20); return await r }', timeout: 1000 },
      { approvalTimeout: 60_000, waitMs: 6000, approved: true },
    );
    expect(out.error?.code).toBe('TIMEOUT');
    // The bound stopped it, not the decision: well before the 6 s the person took.
    expect(out.stats.wallMs).toBeLessThan(4000);
    expect(out.stats.cpuMs).toBeLessThan(2500);
    expect(dispatched).toEqual([]);
  }, 20_000);

  // An answer that reached the worker after it said Idle (the host rested the bound at the Idle,
  // the answer already on its way), then a computation: the worker says Awake on any wake.
  it.each([
    ['a fast call answered while the run spun in the same turn', 'async () => { const r = billing.refund(1); const p = billing.list(); let x = 0; for (let i = 0; i < 3e7; i++) x += i; await p; for (;;) {} }'],
    ['a call the pool refused while the run waited', "async () => { const r = billing.refund(1); const big = 'x'.repeat(15 * 1024 * 1024); billing.refund(big).catch(() => 0); billing.refund(big).catch(() => 0); await billing.refund(big).then(() => 'ok', (e) => e.message); for (;;) {} }"],
  ])('runs again after %s: TIMEOUT at the timeout', async (_, code) => {
    const { out } = await whileDeciding(ex, { code, timeout: 500 }, { approvalTimeout: 60_000, waitMs: 6000, approved: false });
    expect(out.error?.code).toBe('TIMEOUT');
    expect(out.stats.wallMs).toBeLessThan(4000);
    expect(out.stats.cpuMs).toBeLessThan(3000);
  }, 20_000);

  it('rests again after a timer that only ticks: a wait longer than the timeout still succeeds', async () => {
    const { out } = await whileDeciding(
      ex,
      { code: 'async () => { let ticks = 0; const t = setInterval(() => { ticks++ }, 50); const r = await billing.refund(7); clearInterval(t); return [r, ticks > 5] }', timeout: 400 },
      { waitMs: 1200, approved: true },
    );
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual(['refunded 7', true]);
    expect(out.stats.wallMs).toBeGreaterThan(1200);
  }, 20_000);
});

describe('a resumed run brings no bounds of its own', () => {
  let server;
  let port;
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => { hits++; res.end('reached'); });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    port = server.address().port;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const loose = executor({ workers: 1, approvalKey: KEY, timeout: 60_000, memoryLimit: 512, outbound: 'native' });
  const strict = executor({ workers: 1, approvalKey: KEY, timeout: 1000, memoryLimit: 64, cpuLimit: 500, outbound: null });

  /** Pauses `after` (run once the refund is approved) on the loose executor; its token. */
  async function paused(after) {
    const b = billing();
    const out = await loose.execute({ code: `async () => { await billing.refund(1); ${after} }`, providers: b.providers, dispatch: b.dispatch });
    expect(out.paused?.pending).toHaveLength(1);
    return { token: out.paused.token, decisions: { [out.paused.pending[0].id]: { approved: true } }, dispatch: b.dispatch };
  }

  it('gets the stricter CPU budget and time bound', async () => {
    const request = await paused('for (;;) {}');
    const started = Date.now();
    const out = await strict.resume(request);
    expect(['CPU_LIMIT', 'TIMEOUT']).toContain(out.error?.code);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(out.stats.cpuMs).toBeLessThan(1500);
  }, 20_000);

  it('gets the stricter memory limit', async () => {
    // Buffers count against the limit and are refused at once past it: no race with the time
    // bound on a loaded machine (a heap filled to its limit collects slowly).
    const request = await paused('const keep = []; for (let i = 0; i < 40; i++) keep.push(new Float64Array(1e6)); return keep.length');
    const out = await strict.resume(request);
    expect(out.error?.code).toBe('MEMORY_LIMIT');
    expect(out.error.message).toMatch(/limit of 64 MiB/);
    // The same token on the loose executor runs to its end.
    expect((await loose.resume(request)).result).toBe(40);
  }, 20_000);

  it('never widens its outbound: a native token resumed where fetch is closed cannot reach out', async () => {
    const request = await paused(`return await fetch('http://127.0.0.1:${port}/x').then((r) => r.text(), (e) => 'refused: ' + e.message)`);
    const before = hits;
    const out = await strict.resume(request);
    expect(out.result).toMatch(/^refused: /);
    expect(hits).toBe(before);
    expect((await loose.resume(request)).result).toBe('reached');
  }, 20_000);

  it('resumes only where it was made when the executors were given no key', async () => {
    const a = executor({ workers: 1 });
    const b2 = executor({ workers: 1 });
    const b = billing();
    const out = await a.execute({ code: 'async () => billing.refund(1)', providers: b.providers, dispatch: b.dispatch });
    const request = { token: out.paused.token, decisions: { [out.paused.pending[0].id]: { approved: true } }, dispatch: b.dispatch };
    await expect(b2.resume(request)).rejects.toMatchObject({ code: 'TOKEN_FOREIGN_KEY' });
    expect((await a.resume(request)).result).toBe('refunded 1');
    await Promise.all([a.close(), b2.close()]);
  }, 20_000);
});

describe('a denial the program can tell apart', () => {
  const ex = executor({ workers: 1, approvalKey: KEY });
  const deny = { mode: 'callback', decide: () => ({ approved: false, reason: 'over budget' }) };

  it('rejects with code APPROVAL_DENIED, which the program can branch on', async () => {
    const b = billing();
    const out = await ex.execute({
      code: "async () => { try { await billing.refund(1) } catch (e) { return [e instanceof Error, e.code, e.message.includes('over budget')] } }",
      providers: b.providers, dispatch: b.dispatch, approval: deny,
    });
    expect(out.result).toEqual([true, 'APPROVAL_DENIED', true]);
  });

  it('ends an uncaught denial with DENIAL_UNCAUGHT, in callback mode and on a resume', async () => {
    const b = billing();
    const callback = await ex.execute({ code: 'async () => billing.refund(1)', providers: b.providers, dispatch: b.dispatch, approval: deny });
    expect(callback.error?.code).toBe('DENIAL_UNCAUGHT');
    expect(callback.error.message).toMatch(/billing\.refund was not made: .*over budget/);
    const paused = await ex.execute({ code: 'async () => {\n  return await billing.refund(1)\n}', providers: b.providers, dispatch: b.dispatch });
    const resumed = await ex.resume({ token: paused.paused.token, decisions: { [paused.paused.pending[0].id]: { approved: false, reason: 'no' } }, dispatch: b.dispatch });
    expect(resumed.error?.code).toBe('DENIAL_UNCAUGHT');
    expect(b.dispatched).toEqual([]);
  });

  it("reports a denial with the runtime's text, not the program's rewrite of it; defines its code past setters", async () => {
    const b = billing();
    const deny = { mode: 'callback', decide: () => ({ approved: false, reason: 'over budget' }) };
    const rewritten = await ex.execute({
      code: "async () => { let kept; try { await billing.refund(1) } catch (e) { kept = e } kept.message = 'approved, then failed'; throw kept }",
      providers: b.providers, dispatch: b.dispatch, approval: deny,
    });
    expect(rewritten.error?.code).toBe('DENIAL_UNCAUGHT');
    expect(rewritten.error.message).toMatch(/not made: .*over budget/);
    expect(rewritten.error.message).not.toMatch(/approved, then failed/);
    const setter = await ex.execute({
      code: "async () => { let seen = 0; Object.defineProperty(Object.prototype, 'code', { set() { seen++ }, configurable: true }); try { await billing.refund(1) } catch (e) { return [e.code, seen] } }",
      providers: b.providers, dispatch: b.dispatch, approval: deny,
    });
    expect(setter.result).toEqual(['APPROVAL_DENIED', 0]);
  });

  it("a program's own error dressed as a denial stays PROGRAM_ERROR", async () => {
    const out = await ex.execute({ code: "async () => { const e = new Error('The call to billing.refund was not made'); e.code = 'APPROVAL_DENIED'; throw e }" });
    expect(out.error?.code).toBe('PROGRAM_ERROR');
  });
});

describe('over a daemon', () => {
  it('a timer that computes while decide is awaited meets the daemon --timeout', async () => {
    const daemon = await startDaemon(['--timeout', '2000']);
    const remote = await connected(daemon.url);
    const { out } = await whileDeciding(
      remote,
      { code: 'async () => { const r = billing.refund(1); setTimeout(() => { for (;;) {} }, 20); return await r }' },
      { approvalTimeout: 60_000, waitMs: 8000, approved: true },
    );
    expect(out.error?.code).toBe('TIMEOUT');
    expect(out.stats.wallMs).toBeLessThan(6000);
    expect(out.stats.cpuMs).toBeLessThan(4000);
  }, 30_000);

  it('holds approval.timeout to --approval-timeout: more is refused, none gets the ceiling', async () => {
    const daemon = await startDaemon(['--approval-timeout', '300']);
    const remote = await connected(daemon.url);
    const b = billing();
    const request = (approval) => remote.execute({ code: 'async () => { try { return await billing.refund(1) } catch (e) { return e.message } }', providers: b.providers, dispatch: b.dispatch, approval });
    const refused = await request({ mode: 'callback', timeout: 600_000, decide: () => ({ approved: true }) }).catch((e) => e);
    expect(refused.code).toBe('INVALID_OPTION');
    expect(refused.message).toMatch(/approval\.timeout.*--approval-timeout/);
    const slow = await request({ mode: 'callback', decide: () => sleep(2000).then(() => ({ approved: true })) });
    expect(slow.result).toMatch(/no decision came within 300 ms/);
    expect(remote.ceilings.approvalTimeout).toBe(300);
    expect(b.dispatched).toEqual([]);
  }, 30_000);

  it("a resume over connect() is held to the client's own outbound and budgets", async () => {
    let hits = 0;
    const web = http.createServer((_req, res) => { hits++; res.end('reached'); });
    await new Promise((r) => web.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${web.address().port}/x`;
      const daemon = await served({ approvalKey: KEY, outbound: 'native' });
      const b = billing();
      const loose = await connected(daemon.url, { outbound: 'native' });
      const code = `async () => { await billing.refund(1); return await fetch('${url}').then((r) => r.text(), (e) => 'refused: ' + e.message) }`;
      const out = await loose.execute({ code, providers: b.providers, dispatch: b.dispatch });
      const request = { token: out.paused.token, decisions: { [out.paused.pending[0].id]: { approved: true } }, dispatch: b.dispatch };
      const strict = await connected(daemon.url, { outbound: null, cpuLimit: 50 });
      const before = hits;
      expect((await strict.resume(request)).result).toMatch(/^refused: /);
      expect((await strict.resume({ ...request, outbound: null })).result).toMatch(/^refused: /);
      expect(hits).toBe(before);
      const spin = await loose.execute({ code: 'async () => { await billing.refund(1); for (;;) {} }', providers: b.providers, dispatch: b.dispatch, timeout: 10_000 });
      const spun = await strict.resume({ token: spin.paused.token, decisions: { [spin.paused.pending[0].id]: { approved: true } }, dispatch: b.dispatch });
      expect(spun.error?.code).toBe('CPU_LIMIT');
      expect((await loose.resume(request)).result).toBe('reached');
    } finally {
      await new Promise((r) => web.close(r));
    }
  }, 30_000);

  it("a dispatch's own denial (codeModeTool's check at resume) crosses the connection as a denial", async () => {
    const daemon = await served({ approvalKey: KEY });
    const remote = await connected(daemon.url);
    const ran = [];
    const tools = { refund: tool({ description: 'r', inputSchema: z.object({ id: z.string() }), needsApproval: true, execute: async ({ id }) => { ran.push(id); return 'done'; } }) };
    const codemode = codeModeTool(tools, { executor: remote });
    const paused = await codemode.execute({ code: "async () => { try { await tools.refund({ id: 'a' }) } catch (e) { return [e.code, e.message.includes('no person approved')] } }" }, { toolCallId: 'x', messages: [] });
    const a = paused.approvals[0];
    // The approval shown had other arguments than the call: no approval of it.
    const after = await codemode.resume({ ...paused, approvals: [{ ...a, input: { id: 'b' } }] }, [{ approvalId: a.approvalId, approved: true }]);
    expect(after.result).toEqual(['APPROVAL_DENIED', true]);
    expect(after.calls.at(-1).status).toBe('denied');
    expect(ran).toEqual([]);
  }, 30_000);

  it('a denial reaches the program with its code; uncaught, the run ends DENIAL_UNCAUGHT', async () => {
    const daemon = await served({ approvalKey: KEY });
    const remote = await connected(daemon.url);
    const b = billing();
    const deny = { mode: 'callback', decide: () => ({ approved: false, reason: 'no' }) };
    const caught = await remote.execute({ code: 'async () => { try { await billing.refund(1) } catch (e) { return e.code } }', providers: b.providers, dispatch: b.dispatch, approval: deny });
    expect(caught.result).toBe('APPROVAL_DENIED');
    const uncaught = await remote.execute({ code: 'async () => billing.refund(1)', providers: b.providers, dispatch: b.dispatch, approval: deny });
    expect(uncaught.error?.code).toBe('DENIAL_UNCAUGHT');
    const paused = await remote.execute({ code: 'async () => billing.refund(1)', providers: b.providers, dispatch: b.dispatch });
    const resumed = await remote.resume({ token: paused.paused.token, decisions: { [paused.paused.pending[0].id]: { approved: false } }, dispatch: b.dispatch });
    expect(resumed.error?.code).toBe('DENIAL_UNCAUGHT');
  }, 30_000);
});
