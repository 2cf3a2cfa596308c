// Budgets (docs/bounds.md, "Budgets"): `cpuLimit` counts the CPU of the program's thread only
// (awaiting a tool, a fetch or a timer costs none) and ends a run past it with CPU_LIMIT;
// `toolCallLimit` and `fetchLimit` refuse the call past them inside the sandbox, where the
// program can catch it. An executor's budgets are its requests' defaults; each invocation of a
// retained execution starts all three afresh. Real workers, real isolates.
import { describe, expect, it } from 'vitest';
import { declaredText, executor, rejection, thrown } from './helpers.mjs';

const text = declaredText;
const BUSY = 'async () => { for (;;) {} }';
const dec = new TextDecoder();
const get = (url) => ({ method: 'GET', url, headers: [], body: null });
const ok = (body = 'ok') => ({ status: 200, statusText: '', headers: [], body: new TextEncoder().encode(body) });

/** Asserts `outcome` was stopped by a CPU budget of `ms`: the declared text, at the budget. */
function stoppedByBudget(outcome, ms) {
  expect(outcome.error).toEqual({ code: 'CPU_LIMIT', message: text('CPU_LIMIT', { ms: String(ms) }) });
  expect(outcome.stats.cpuBudgetMs).toBeGreaterThanOrEqual(ms);
}

describe('cpuLimit', () => {
  const ex = executor({ workers: 1 });

  it('a program awaiting a 2 s tool under cpuLimit 50 completes: waiting costs no CPU', async () => {
    const out = await ex.execute({
      code: 'async () => { const v = await t.slow(); return v + 1 }',
      providers: [{ name: 't', tools: ['slow'] }],
      dispatch: () => new Promise((resolve) => setTimeout(() => resolve(41), 2000)),
      cpuLimit: 50,
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toBe(42);
    expect(out.stats.wallMs).toBeGreaterThanOrEqual(2000);
    expect(out.stats.cpuBudgetMs).toBeGreaterThan(0);
    expect(out.stats.cpuBudgetMs).toBeLessThan(50);
  });

  it('a busy loop under cpuLimit 50 and timeout 10000 ends with the CPU text, not the timeout; the next run is unaffected', async () => {
    const out = await ex.execute({ code: BUSY, cpuLimit: 50, timeout: 10_000 });
    stoppedByBudget(out, 50);
    expect(out.stats.wallMs).toBeLessThan(10_000);
    const pid = out.stats.workerPid;
    // The same worker: a run without a budget computes on, and one under the same budget that
    // needs little of it returns.
    // (300 ms of wall time busy: more than 50 ms of CPU unless the machine is starved.)
    const long = await ex.execute({ code: 'async () => { const end = performance.now() + 300; while (performance.now() < end); return "done" }' });
    expect(long.error).toBeUndefined();
    expect(long.result).toBe('done');
    expect(long.stats.workerPid).toBe(pid);
    expect(long.stats.cpuBudgetMs).toBe(0);
    const modest = await ex.execute({ code: 'async () => { let x = 0; for (let i = 0; i < 1e5; i++) x += i; return x }', cpuLimit: 50 });
    expect(modest.result).toBe(4999950000);
    expect(modest.stats.workerPid).toBe(pid);
  });

  it('counts a microtask loop and a timer loop, and not the time a timer waits', async () => {
    stoppedByBudget(await ex.execute({ code: 'async () => { for (;;) await null }', cpuLimit: 50 }), 50);
    const timers = `async () => {
      await new Promise(() => {
        const tick = () => { const end = performance.now() + 5; while (performance.now() < end); setTimeout(tick, 0) }
        tick()
      })
    }`;
    stoppedByBudget(await ex.execute({ code: timers, cpuLimit: 50 }), 50);
    const waits = await ex.execute({ code: 'async () => { await new Promise((r) => setTimeout(r, 300)); return "waited" }', cpuLimit: 50 });
    expect(waits.result).toBe('waited');
    expect(waits.stats.cpuBudgetMs).toBeLessThan(50);
  });

  it("does not count the worker's poll for a tool's answer: 1,000 answers that take 1 ms each", async () => {
    // The worker polls up to 200 µs for an answer before it sleeps (limits::ANSWER_POLL_US):
    // counted, the polls alone would be 200 ms of this run's budget (each answer comes after
    // the poll gave up). The run's own work is about 30-40 µs a call here.
    const out = await ex.execute({
      code: 'async () => { let n = 0; for (let i = 0; i < 1000; i++) n = await t.next(n); return n }',
      providers: [{ name: 't', tools: ['next'] }],
      dispatch: ({ args }) => new Promise((r) => setTimeout(() => r(args[0] + 1), 1)),
      cpuLimit: 10_000,
      timeout: 60_000,
    });
    expect(out.result).toBe(1000);
    expect(out.stats.cpuBudgetMs).toBeLessThan(120);
    expect(out.stats.cpuMs).toBeLessThan(130);
  });

  it('is the default of the executor\'s requests; a request\'s own wins, undefined inherits', async () => {
    const budgeted = executor({ workers: 1, cpuLimit: 50 });
    stoppedByBudget(await budgeted.execute({ code: BUSY }), 50);
    stoppedByBudget(await budgeted.execute({ code: BUSY, cpuLimit: undefined }), 50);
    stoppedByBudget(await budgeted.execute({ code: BUSY, cpuLimit: 80 }), 80);
    const more = await budgeted.execute({ code: 'async () => { const end = performance.now() + 120; while (performance.now() < end); return 1 }', cpuLimit: 5000 });
    expect(more.result).toBe(1);
  });

  it('counts each ending in the metrics under CPU_LIMIT', async () => {
    const metered = executor({ workers: 1 });
    stoppedByBudget(await metered.execute({ code: BUSY, cpuLimit: 20 }), 20);
    expect(metered.metrics('prometheus')).toMatch(/^codemode_executions_total\{code="CPU_LIMIT"\} 1$/m);
  });
});

describe('toolCallLimit and fetchLimit', () => {
  const ex = executor({ workers: 1 });

  it('toolCallLimit 5 refuses the sixth call inside the sandbox; the program catches it', async () => {
    const seen = [];
    const out = await ex.execute({
      code: `async () => {
        const got = []
        for (let i = 0; i < 6; i++) {
          try { got.push(await t.echo(i)) } catch (e) { got.push(e.message) }
        }
        return got
      }`,
      providers: [{ name: 't', tools: ['echo'] }],
      dispatch: ({ args }) => { seen.push(args[0]); return args[0]; },
      toolCallLimit: 5,
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([0, 1, 2, 3, 4, text('TOOL_CALL_LIMIT', { provider: 't', tool: 'echo', limit: '5' })]);
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(out.stats.toolCalls).toBe(5);
  });

  it('toolCallLimit 0 refuses every call; uncaught, the run fails with the text', async () => {
    const out = await ex.execute({
      code: 'async () => t.echo(1)',
      providers: [{ name: 't', tools: ['echo'] }],
      dispatch: () => { throw new Error('never reached'); },
      toolCallLimit: 0,
    });
    expect(out.error.message).toContain(text('TOOL_CALL_LIMIT', { provider: 't', tool: 'echo', limit: '0' }));
  });

  it('fetchLimit refuses the fetch past it with a routed policy, nothing sent', async () => {
    const routed = [];
    const out = await ex.execute({
      code: `async () => {
        const got = []
        for (const p of ['a', 'b', 'c']) {
          try { got.push(await (await fetch('https://api.example.test/' + p)).text()) } catch (e) { got.push(e.message) }
        }
        return got
      }`,
      outbound: (request) => { routed.push(request.url); return ok(request.url.slice(-1)); },
      fetchLimit: 2,
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual(['a', 'b', text('FETCH_LIMIT', { url: 'https://api.example.test/c', limit: '2' })]);
    expect(routed).toEqual(['https://api.example.test/a', 'https://api.example.test/b']);
    expect(out.stats.fetches).toBe(2);
  });

  it('fetchLimit counts the fetches that leave the sandbox: a blocked network spends none', async () => {
    const out = await ex.execute({
      code: `async () => {
        const got = []
        for (let i = 0; i < 2; i++) { try { await fetch('https://x.test/') } catch (e) { got.push(e.message) } }
        return got
      }`,
      outbound: null,
      fetchLimit: 1,
    });
    expect(out.result).toHaveLength(2);
    for (const message of out.result) expect(message).toMatch(/^fetch is closed in this sandbox/);
    expect(out.stats.fetches).toBe(0);
  });
});

describe('retained executions', () => {
  it('each invocation starts its budgets afresh; one past its CPU budget ends the execution (reason cpu)', async () => {
    const closes = [];
    const ex = executor({ workers: 1, onHandlesClosed: (event) => closes.push(event) });
    const routed = [];
    const granted = await ex.execute({
      code: `async () => {
        const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
        spin(30)
        return async (request) => {
          const url = new URL(request.url)
          spin(Number(url.searchParams.get('spin')))
          const got = []
          for (let i = 0; i < Number(url.searchParams.get('fetches')); i++) {
            try { got.push(await (await fetch('https://api.example.test/' + i)).text()) } catch (e) { got.push(e.message) }
          }
          return new Response(JSON.stringify(got))
        }
      }`,
      retainHandles: true,
      outbound: (request) => { routed.push(request.url); return ok('f'); },
      cpuLimit: 50,
      fetchLimit: 1,
    });
    expect(granted.error).toBeUndefined();
    const id = granted.executionId;
    // Three invocations of 30 ms each: 90 ms in all, past one budget of 50 but within each.
    for (let i = 0; i < 3; i++) {
      const answer = await ex.invokeHandle(id, 'fetch', get('https://h.test/?spin=30&fetches=1'));
      expect(JSON.parse(dec.decode(answer.body))).toEqual(['f']);
    }
    expect(routed).toHaveLength(3);
    const second = await ex.invokeHandle(id, 'fetch', get('https://h.test/?spin=0&fetches=2'));
    expect(JSON.parse(dec.decode(second.body))).toEqual(['f', text('FETCH_LIMIT', { url: 'https://api.example.test/1', limit: '1' })]);
    const failure = await rejection(ex.invokeHandle(id, 'fetch', get('https://h.test/?spin=100000&fetches=0')));
    expect([failure.code, failure.message]).toEqual(['CPU_LIMIT', text('CPU_LIMIT', { ms: '50' })]);
    expect(closes).toEqual([{ executionId: id, reason: 'cpu' }]);
    expect((await rejection(ex.invokeHandle(id, 'fetch', get('https://h.test/')))).code).toBe('HANDLES_CLOSED');
  });
});

describe('validation', () => {
  const ex = executor({ workers: 1 });

  it('refuses a budget outside its range, naming it', async () => {
    for (const [field, value] of [['cpuLimit', 0], ['cpuLimit', 1.5], ['cpuLimit', 2 ** 31], ['toolCallLimit', -1], ['fetchLimit', '3'], ['fetchLimit', 1_000_001]]) {
      const failure = await rejection(ex.execute({ code: 'async () => 1', [field]: value }));
      expect(failure.code, `${field}=${value}`).toBe('INVALID_REQUEST');
      expect(failure.message).toContain(field);
      const option = thrown(() => executor({ workers: 1, [field]: value }));
      expect(option.code, `${field}=${value}`).toBe('INVALID_OPTION');
      expect(option.message).toContain(field);
    }
  });
});
