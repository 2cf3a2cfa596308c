import { describe, expect, it } from 'vitest';
import { IsolateExecutor, executor, run, until } from './helpers.mjs';

const ex = executor({ workers: 1, timeout: 300 });

// Timing assertions are generous on purpose: they prove the bound holds, not how tightly
// (bench/ measures the overshoot).
describe('time bound', () => {
  const loops = [
    ['for(;;){}', 'async () => { for (;;) {} }'],
    ['a busy loop inside finally', 'async () => { try { throw 1 } finally { for (;;) {} } }'],
    ['a microtask loop', 'async () => { const f = () => Promise.resolve().then(f); f(); await new Promise(() => {}) }'],
    ['a regex bomb', 'async () => /(a+)+b/.test("a".repeat(40) + "c")'],
    ['a loop that catches everything', 'async () => { for (;;) { try { for (;;) {} } catch {} } }'],
    ['time parked in a tool call', 'async () => t.wait()'],
  ];
  for (const [name, code] of loops) {
    it(`stops ${name} at the bound, and the host stays responsive`, async () => {
      const pids = ex.workerPids();
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const t0 = Date.now();
      const out = await run(ex, code, { providers: [{ name: 't', tools: ['wait'] }], dispatch: () => new Promise(() => {}) });
      const elapsed = Date.now() - t0;
      clearInterval(timer);
      expect(out.error?.code).toBe('TIMEOUT');
      expect(out.error.message).toContain('time bound of 300 ms');
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(5_000);
      expect(ticks).toBeGreaterThan(5);
      // Terminated, not killed: the same worker answers the next run.
      expect(ex.workerPids()).toEqual(pids);
      expect((await run(ex, 'async () => 1')).result).toBe(1);
    });
  }

  it('keeps the logs written before the bound', async () => {
    const out = await run(ex, 'async () => { console.log("started"); await t.wait() }', { providers: [{ name: 't', tools: ['wait'] }], dispatch: () => new Promise(() => {}) });
    expect(out.error.code).toBe('TIMEOUT');
    expect(out.logs).toEqual([{ level: 'log', message: 'started' }]);
  });

  it('a per-call timeout overrides the default', async () => {
    const t0 = Date.now();
    const out = await run(ex, 'async () => { for (;;) {} }', { timeout: 50 });
    expect(out.error.message).toContain('time bound of 50 ms');
    expect(Date.now() - t0).toBeLessThan(290);
  });

  it('kills and replaces a worker that cannot confirm the cancel', async () => {
    const own = new IsolateExecutor({ workers: 1, timeout: 500 });
    try {
      const [pid] = own.workerPids();
      // Stop the worker once it has surely taken the run (its tool call arrived), not earlier:
      // a worker stopped before its handshake never takes the run at all.
      const out = await own.execute({
        code: 'async () => { await host.started(); for (;;) {} }',
        providers: [{ name: 'host', tools: ['started'] }],
        dispatch: () => {
          process.kill(pid, 'SIGSTOP'); // a wedged worker: it can neither terminate nor answer
          return null;
        },
      });
      expect(out.error?.code).toBe('TIMEOUT');
      const replaced = await until(() => own.workerPids().length === 1 && own.workerPids()[0] !== pid);
      expect(replaced).toBe(true);
      expect((await own.execute({ code: 'async () => 7' })).result).toBe(7);
    } finally {
      await own.close();
    }
  });
});

