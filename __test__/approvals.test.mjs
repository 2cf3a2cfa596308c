// Approvals (docs/approvals.md), in process with real workers: a call of a tool marked
// `approve` pauses the run (interrupt mode) with a signed token, and `resume` replays the
// program in a fresh isolate, answering every call the token holds from it, each pending call by
// its decision; or `decide` is awaited while the run waits (callback mode). Every outcome lists
// its calls.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { declaredText, executor, rejection, sleep, thrown, until } from './helpers.mjs';

const text = declaredText;

const KEY = randomBytes(32);

/** A billing provider whose refund needs approval, and a dispatch that counts its calls. */
function billing() {
  const dispatched = [];
  return {
    providers: [
      { name: 'billing', tools: ['list', 'refund'], approve: ['refund'] },
      { name: 'note', tools: ['record'] },
    ],
    dispatch: ({ provider, tool, args }) => {
      dispatched.push(`${provider}.${tool}(${JSON.stringify(args)})`);
      if (tool === 'list') return [101, 102];
      if (tool === 'record') return 'recorded';
      return `refunded ${args[0]}`;
    },
    dispatched,
  };
}

/** Approves (or denies) every pending call of `paused`. */
const decideAll = (paused, decision) => Object.fromEntries(paused.pending.map((c) => [c.id, decision]));

const REFUNDS = `async () => {
  const orders = await billing.list()
  const results = await Promise.all(orders.map(async (o) => {
    try { return await billing.refund(o) } catch (e) { return e.message }
  }))
  return results
}`;

describe('interrupt mode', () => {
  const ex = executor({ workers: 2, approvalKey: KEY });

  it('pauses with the calls of the same turn pending together; approve and deny (caught) on resume', async () => {
    const b = billing();
    const paused = await ex.execute({ code: REFUNDS, providers: b.providers, dispatch: b.dispatch });
    expect(paused.error).toBeUndefined();
    expect(paused.result).toBeUndefined();
    expect(paused.paused.pending.map(({ provider, tool, args }) => ({ provider, tool, args }))).toEqual([
      { provider: 'billing', tool: 'refund', args: [101] },
      { provider: 'billing', tool: 'refund', args: [102] },
    ]);
    expect(paused.calls.map((c) => c.status)).toEqual(['ok', 'pending', 'pending']);
    expect(b.dispatched).toEqual(['billing.list([])']);
    const [first, second] = paused.paused.pending;
    const done = await ex.resume({ token: paused.paused.token, dispatch: b.dispatch, decisions: { [first.id]: { approved: true }, [second.id]: { approved: false, reason: 'over the limit' } } });
    expect(done.error).toBeUndefined();
    expect(done.paused).toBeUndefined();
    expect(done.result).toEqual(['refunded 101', text('APPROVAL_DENIED', { provider: 'billing', tool: 'refund', reason: 'over the limit' })]);
    // The ledger's list was answered from the token; only the approved refund was dispatched.
    expect(b.dispatched).toEqual(['billing.list([])', 'billing.refund([101])']);
    expect(done.calls.map((c) => `${c.tool}:${c.status}`)).toEqual(['list:replayed', 'refund:ok', 'refund:denied']);
  });

  it('pauses again at a later call after a resume', async () => {
    const b = billing();
    const code = `async () => {
      const a = await billing.refund(1)
      const n = await note.record(a)
      const c = await billing.refund(2)
      return [a, n, c]
    }`;
    const one = await ex.execute({ code, providers: b.providers, dispatch: b.dispatch });
    expect(one.paused.pending.map((c) => c.args)).toEqual([[1]]);
    const two = await ex.resume({ token: one.paused.token, dispatch: b.dispatch, decisions: decideAll(one.paused, { approved: true }) });
    expect(two.paused.pending.map((c) => c.args)).toEqual([[2]]);
    expect(two.calls.map((c) => c.status)).toEqual(['ok', 'ok', 'pending']);
    const three = await ex.resume({ token: two.paused.token, dispatch: b.dispatch, decisions: decideAll(two.paused, { approved: true }) });
    expect(three.result).toEqual(['refunded 1', 'recorded', 'refunded 2']);
    expect(three.calls.map((c) => c.status)).toEqual(['replayed', 'replayed', 'ok']);
    expect(b.dispatched).toEqual(['billing.refund([1])', 'note.record(["refunded 1"])', 'billing.refund([2])']);
  });

  it('resumes after close() on a new executor with the same key, and after the worker was killed', async () => {
    const b = billing();
    const first = executor({ workers: 1, approvalKey: KEY });
    const paused = await first.execute({ code: REFUNDS, providers: b.providers, dispatch: b.dispatch });
    const [pid] = first.workerPids();
    process.kill(pid, 'SIGKILL');
    await first.close();
    const second = executor({ workers: 1, approvalKey: KEY });
    const done = await second.resume({ token: paused.paused.token, dispatch: b.dispatch, decisions: decideAll(paused.paused, { approved: true }) });
    expect(done.result).toEqual(['refunded 101', 'refunded 102']);
    expect(b.dispatched.filter((d) => d.startsWith('billing.list'))).toHaveLength(1);
    // On the executor whose worker was killed under it, too.
    const third = executor({ workers: 1, approvalKey: KEY });
    const again = await third.execute({ code: REFUNDS, providers: b.providers, dispatch: b.dispatch });
    process.kill(third.workerPids()[0], 'SIGKILL');
    expect(await until(() => third.workerPids().length === 1 && !third.workerPids().includes(pid), 10_000)).toBe(true);
    const resumed = await third.resume({ token: again.paused.token, dispatch: b.dispatch, decisions: decideAll(again.paused, { approved: true }) });
    expect(resumed.result).toEqual(['refunded 101', 'refunded 102']);
  });

  it('replays Math.random, Date.now(), crypto.randomUUID() and the path they chose exactly', async () => {
    const b = billing();
    const code = `async () => {
      const seen = [Math.random(), Date.now(), crypto.randomUUID(), performance.now(), new Date().toISOString()]
      await note.record(seen)
      const order = Math.random() < 0.5 ? 1 : 2
      await billing.refund(order)
      return { seen, order, after: Math.random() }
    }`;
    const paused = await ex.execute({ code, providers: b.providers, dispatch: b.dispatch });
    const recorded = JSON.parse(b.dispatched[0].slice('note.record('.length, -1))[0];
    const order = paused.paused.pending[0].args[0];
    const done = await ex.resume({ token: paused.paused.token, dispatch: b.dispatch, decisions: decideAll(paused.paused, { approved: true }) });
    expect(done.error).toBeUndefined();
    expect(done.result.seen).toEqual(recorded);
    expect(done.result.order).toBe(order);
    expect(typeof done.result.after).toBe('number');
    // The clock started at the first run's wall time.
    expect(Math.abs(recorded[1] - Date.now())).toBeLessThan(60_000);
  });

  it('answers the ledger\'s fetches from the token too; a routed run needs its policy again', async () => {
    const b = billing();
    const fetched = [];
    const outbound = (request) => {
      fetched.push(request.url);
      return { status: 200, statusText: 'OK', headers: [], body: new TextEncoder().encode('price 7') };
    };
    const code = `async () => {
      const price = await (await fetch('https://shop.example.test/price')).text()
      const r = await billing.refund(price)
      return [price, r]
    }`;
    const paused = await ex.execute({ code, providers: b.providers, dispatch: b.dispatch, outbound });
    expect(paused.paused.pending[0].args).toEqual(['price 7']);
    const decisions = decideAll(paused.paused, { approved: true });
    const noPolicy = await rejection(ex.resume({ token: paused.paused.token, dispatch: b.dispatch, decisions }));
    expect([noPolicy.code, noPolicy.message.includes('outbound')]).toEqual(['INVALID_REQUEST', true]);
    const done = await ex.resume({ token: paused.paused.token, dispatch: b.dispatch, decisions, outbound });
    expect(done.result).toEqual(['price 7', 'refunded price 7']);
    expect(fetched).toEqual(['https://shop.example.test/price']);
    expect(done.stats.fetches).toBe(1);
  });

  it('refuses a replay that asks for another call than its ledger holds', async () => {
    const b = billing();
    // The first run: the slow tool loses the race to the timer; on replay its answer comes at
    // once from the ledger and wins, so the program asks for another refund.
    const code = `async () => {
      const slow = note.record('slow')
      const winner = await Promise.race([slow, new Promise((r) => setTimeout(() => r('timer'), 20))])
      await slow
      await billing.refund(winner)
      return winner
    }`;
    const dispatch = (call) => (call.tool === 'record' ? sleep(200).then(() => 'tool') : b.dispatch(call));
    const paused = await ex.execute({ code, providers: b.providers, dispatch });
    expect(paused.paused.pending[0].args).toEqual(['timer']);
    const done = await ex.resume({ token: paused.paused.token, dispatch, decisions: decideAll(paused.paused, { approved: true }) });
    expect(done.error).toEqual({ code: 'REPLAY_DIVERGED', message: text('REPLAY_DIVERGED', { got: 'a call of billing.refund with other arguments', expected: 'a call of billing.refund' }) });
  });

  it('reports a replay that ends before it reaches the pending call', async () => {
    const b = billing();
    // Two tools race: the fast one wins the first run; on replay both answers come at once, in
    // the order the program made the calls, and the other wins.
    const code = `async () => {
      const slow = note.record('slow'), fast = billing.list()
      const winner = await Promise.race([slow.then(() => 'slow'), fast.then(() => 'fast')])
      if (winner === 'slow') return 'no refund'
      return await billing.refund(1)
    }`;
    const dispatch = (call) => (call.tool === 'record' ? sleep(150).then(() => 'recorded') : b.dispatch(call));
    const paused = await ex.execute({ code, providers: b.providers, dispatch });
    expect(paused.paused.pending).toHaveLength(1);
    const done = await ex.resume({ token: paused.paused.token, dispatch, decisions: decideAll(paused.paused, { approved: true }) });
    expect(done.result).toBeUndefined();
    expect(done.error).toEqual({ code: 'REPLAY_DIVERGED', message: text('REPLAY_DIVERGED', { got: "the program's end", expected: 'a call of billing.refund' }) });
    expect(b.dispatched.filter((d) => d.startsWith('billing.refund'))).toEqual([]);
  });

  it('keeps no more than a token may hold: past the bound the run goes on, and cannot pause', async () => {
    const big = 'x'.repeat(1024 * 1024);
    const providers = [{ name: 'big', tools: ['get', 'refund'], approve: ['refund'] }];
    const dispatch = ({ tool }) => (tool === 'get' ? big : 'refunded');
    const many = 'async () => { let n = 0; for (let i = 0; i < 10; i++) n += (await big.get()).length; return n }';
    expect((await ex.execute({ code: many, providers, dispatch })).result).toBe(10 * 1024 * 1024);
    const then = 'async () => { for (let i = 0; i < 10; i++) await big.get(); return big.refund() }';
    const out = await ex.execute({ code: then, providers, dispatch });
    expect(out.paused).toBeUndefined();
    expect(out.error.code).toBe('APPROVAL_LEDGER_TOO_LARGE');
  });

  it('refuses a tampered token, one of another key, an expired one and decisions that do not match', async () => {
    const b = billing();
    const paused = await ex.execute({ code: REFUNDS, providers: b.providers, dispatch: b.dispatch, approval: { mode: 'interrupt', expiresIn: 300 } });
    const { token } = paused.paused;
    const decisions = decideAll(paused.paused, { approved: true });
    const parts = token.split('.');
    const body = parts[2];
    const flipped = body.slice(0, 10) + (body[10] === 'A' ? 'B' : 'A') + body.slice(11);
    for (const bad of [[parts[0], parts[1], flipped, parts[3]].join('.'), token.slice(0, -4), 'not a token']) {
      const e = await rejection(ex.resume({ token: bad, dispatch: b.dispatch, decisions }));
      expect(e.code).toBe('TOKEN_TAMPERED');
    }
    const foreign = executor({ workers: 1, approvalKey: randomBytes(32) });
    expect((await rejection(foreign.resume({ token, dispatch: b.dispatch, decisions }))).code).toBe('TOKEN_FOREIGN_KEY');
    // An executor without a key has this process's random one: another key too.
    const keyless = executor({ workers: 1 });
    expect((await rejection(keyless.resume({ token, dispatch: b.dispatch, decisions }))).code).toBe('TOKEN_FOREIGN_KEY');
    const missing = await rejection(ex.resume({ token, dispatch: b.dispatch, decisions: { [paused.paused.pending[0].id]: { approved: true } } }));
    expect(missing.code).toBe('DECISIONS_INVALID');
    expect((await rejection(ex.resume({ token, dispatch: b.dispatch, decisions: { ...decisions, 99: { approved: true } } }))).code).toBe('DECISIONS_INVALID');
    expect((await rejection(ex.resume({ token, dispatch: b.dispatch, decisions: { [paused.paused.pending[0].id]: { approved: 'yes' } } }))).code).toBe('INVALID_REQUEST');
    await sleep(350);
    const expired = await rejection(ex.resume({ token, dispatch: b.dispatch, decisions }));
    expect(expired.code).toBe('TOKEN_EXPIRED');
    expect(b.dispatched).toEqual(['billing.list([])']);
  });
});

describe('callback mode', () => {
  const ex = executor({ workers: 1 });

  it('awaits decide while the run waits; its time does not count against the timeout', async () => {
    const b = billing();
    const asked = [];
    const out = await ex.execute({
      code: REFUNDS,
      providers: b.providers,
      dispatch: b.dispatch,
      timeout: 300,
      approval: {
        mode: 'callback',
        decide: async (call) => {
          asked.push(call);
          await sleep(400);
          return call.args[0] === 101 ? { approved: true } : { approved: false, reason: 'not this one' };
        },
      },
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual(['refunded 101', text('APPROVAL_DENIED', { provider: 'billing', tool: 'refund', reason: 'not this one' })]);
    expect(asked).toEqual([{ provider: 'billing', tool: 'refund', args: [101] }, { provider: 'billing', tool: 'refund', args: [102] }]);
    expect(out.stats.wallMs).toBeGreaterThan(300);
    expect(out.calls.map((c) => c.status)).toEqual(['ok', 'ok', 'denied']);
  });

  it('rests the time bound only while the run waits: a program that computes meanwhile times out', async () => {
    const b = billing();
    let asked = 0;
    const out = await ex.execute({
      code: 'async () => { billing.refund(1).catch(() => {}); for (;;) {} }',
      providers: b.providers,
      dispatch: b.dispatch,
      timeout: 300,
      approval: { mode: 'callback', timeout: 10_000, decide: async () => { asked++; await sleep(3000); return { approved: true }; } },
    });
    expect(asked).toBe(1);
    expect(out.error.code).toBe('TIMEOUT');
    expect(out.stats.wallMs).toBeLessThan(2500);
  });

  it('holds the arguments of calls awaiting decide to the bytes a run may have in flight', async () => {
    const b = billing();
    const out = await ex.execute({
      code: `async () => {
        const arg = 'x'.repeat(1024 * 1024)
        const r = await Promise.all(Array.from({ length: 40 }, () => billing.refund(arg).then(() => 'ok', (e) => e.message.slice(0, 30))))
        return r
      }`,
      providers: b.providers,
      dispatch: b.dispatch,
      approval: { mode: 'callback', decide: () => sleep(500).then(() => ({ approved: false, reason: 'no' })) },
    });
    const refused = out.result.filter((m) => m === text('TOOL_BYTES_IN_FLIGHT', { provider: 'billing', tool: 'refund', size: '0', held: '0', limit: '0' }).slice(0, 30));
    expect(refused.length).toBeGreaterThan(0);
    expect(out.calls.filter((c) => c.status === 'error').length).toBe(refused.length);
  });

  it('denies a call whose decide throws, answers wrongly, or outlasts approval.timeout', async () => {
    const b = billing();
    const run = (decide, timeout) => ex.execute({ code: REFUNDS, providers: b.providers, dispatch: b.dispatch, approval: { mode: 'callback', decide, timeout } });
    const threw = await run(() => { throw new Error('the approver is away'); });
    expect(threw.result[0]).toBe(text('APPROVAL_DENIED', { provider: 'billing', tool: 'refund', reason: 'the approver is away' }));
    const wrong = await run(() => 'yes');
    expect(wrong.result[0]).toMatch(/^The call to billing\.refund was not made: .*decide\(\)/);
    const slow = await run(() => sleep(1000).then(() => ({ approved: true })), 50);
    expect(slow.result[0]).toBe(text('APPROVAL_DENIED', { provider: 'billing', tool: 'refund', reason: 'no decision came within 50 ms' }));
    expect(b.dispatched.filter((d) => d.startsWith('billing.refund'))).toEqual([]);
  });
});

describe('the audit trail and the request', () => {
  const ex = executor({ workers: 1 });

  it('lists every run\'s calls in order, with their status', async () => {
    const out = await ex.execute({
      code: 'async () => { await t.a(); try { await t.b() } catch {} ; return 1 }',
      providers: [{ name: 't', tools: ['a', 'b'] }],
      dispatch: ({ tool }) => { if (tool === 'b') throw new Error('no'); return 1; },
    });
    expect(out.calls.map(({ provider, tool, status }) => ({ provider, tool, status }))).toEqual([
      { provider: 't', tool: 'a', status: 'ok' },
      { provider: 't', tool: 'b', status: 'error' },
    ]);
    for (const c of out.calls) expect(c.ms).toBeGreaterThanOrEqual(0);
    expect((await ex.execute({ code: 'async () => 1' })).calls).toEqual([]);
  });

  it('keeps the first 1,000 calls, as the logs keep their first entries; stats count them all', async () => {
    const out = await ex.execute({
      code: 'async () => { for (let i = 0; i < 1005; i++) await t.a(i); return 1 }',
      providers: [{ name: 't', tools: ['a'] }],
      dispatch: () => 1,
    });
    expect(out.result).toBe(1);
    expect(out.calls).toHaveLength(1000);
    expect(out.stats.toolCalls).toBe(1005);
  });

  it('refuses approvals it cannot honour', async () => {
    const b = billing();
    const approvals = [
      [{ code: REFUNDS, providers: [{ name: 'billing', tools: ['list'] }], dispatch: b.dispatch, approval: { mode: 'interrupt' } }, 'approval'],
      [{ code: REFUNDS, providers: b.providers, dispatch: b.dispatch, retainHandles: true }, 'retainHandles'],
      [{ code: REFUNDS, providers: [{ name: 'billing', tools: ['list'], approve: ['refund'] }], dispatch: b.dispatch }, 'providers[0].approve'],
      [{ code: REFUNDS, providers: b.providers, dispatch: b.dispatch, approval: { mode: 'callback' } }, 'approval.decide'],
      [{ code: REFUNDS, providers: b.providers, dispatch: b.dispatch, approval: { mode: 'later' } }, 'approval.mode'],
      [{ code: REFUNDS, providers: b.providers, dispatch: b.dispatch, approval: { mode: 'interrupt', expiresIn: 0 } }, 'approval.expiresIn'],
    ];
    for (const [request, field] of approvals) {
      const e = await rejection(ex.execute(request));
      expect(e.code, field).toBe('INVALID_REQUEST');
      expect(e.message, field).toContain(field);
    }
    const short = thrown(() => executor({ workers: 1, approvalKey: 'short' }));
    expect(short.code).toBe('INVALID_OPTION');
    expect(short.message).toContain('approvalKey');
    expect((await rejection(ex.resume({ token: 'x', decisions: {} }))).code).toBe('INVALID_REQUEST');
  });
});
