import { describe, expect, it } from 'vitest';
import { ExecutorError, IsolateExecutor, executor, rejection, run } from './helpers.mjs';

// One worker, so every bomb and the run after it meet the same process.
const ex = executor({ workers: 1, memoryLimit: 64, timeout: 20_000 });

async function expectHealthy() {
  expect((await run(ex, 'async () => 40 + 2')).result).toBe(42);
}

describe('memory bound', () => {
  const bombs = [
    ['array growth', 'async () => { const a = []; for (;;) a.push({ x: Math.random() }) }'],
    ['string doubling', 'async () => { let s = "x"; for (;;) { s += s; s.charCodeAt(s.length - 1) } }'],
    ['one huge ArrayBuffer', 'async () => new ArrayBuffer(2 ** 31).byteLength'],
    ['many small typed arrays', 'async () => { const keep = []; for (;;) keep.push(new Uint8Array(1 << 16)) }'],
    ['Map growth', 'async () => { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }) }'],
    ['a closure chain', 'async () => { let f = () => 0; for (;;) { const g = f; f = () => g() + 1 } }'],
    // V8 (13.0, and 15.2 still) drops the interrupt check of this loop shape unless Turboshaft
    // loop unrolling is off; without the flag termination is ignored and the worker dies of a
    // fatal OOM.
    ['the optimized push loop', 'async () => { const a = []; while (true) a.push(new Array(1000)) }'],
    ['buffers kept across tool calls', 'async () => { const keep = []; for (;;) { keep.push(new Float64Array(1 << 20)); await t.tick() } }', { providers: [{ name: 't', tools: ['tick'] }], dispatch: () => 0 }],
  ];
  for (const [name, code, extra] of bombs) {
    it(`${name} ends with MEMORY_LIMIT, and the worker lives on`, async () => {
      const before = ex.workerPids();
      const out = await run(ex, code, extra);
      expect(out.error?.code).toBe('MEMORY_LIMIT');
      expect(out.error.message).toContain('64 MiB');
      expect(out.error.message).toContain('Work in smaller pieces');
      await expectHealthy();
      expect(ex.workerPids()).toEqual(before);
    });
  }

  it('counts ArrayBuffer memory against the limit', async () => {
    const out = await run(ex, 'async () => { const keep = []; for (let i = 0; i < 200; i++) keep.push(new ArrayBuffer(1 << 20)); return keep.length }');
    expect(out.error?.code).toBe('MEMORY_LIMIT');
    expect(out.stats.buffersPeakBytes).toBeGreaterThan(32 * 1024 * 1024);
    expect(out.stats.buffersPeakBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
  });

  it('a per-call memoryLimit overrides the executor default', async () => {
    const code = 'async () => { const keep = []; for (let i = 0; i < 48; i++) keep.push(new Uint8Array(1 << 20)); return keep.length }';
    expect((await run(ex, code, { memoryLimit: 32 })).error?.code).toBe('MEMORY_LIMIT');
    expect((await run(ex, code, { memoryLimit: 128 })).result).toBe(48);
  });

  it('deep recursion is an ordinary RangeError', async () => {
    const out = await run(ex, 'async () => { const f = (n) => f(n + 1) + 1; return f(0) }');
    expect(out.error).toEqual({ code: 'PROGRAM_ERROR', message: 'RangeError: Maximum call stack size exceeded' });
  });

  it('leaves the host and the other workers untouched', async () => {
    const pair = new IsolateExecutor({ workers: 2, memoryLimit: 64 });
    try {
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const bomb = pair.execute({ code: 'async () => { const a = []; for (;;) a.push({ x: Math.random() }) }' });
      // While the bomb fills one worker, the other keeps answering.
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await pair.execute({ code: `async () => ${i}` })).result);
      const out = await bomb;
      clearInterval(timer);
      expect(out.error.code).toBe('MEMORY_LIMIT');
      expect(answers).toEqual([0, 1, 2, 3, 4]);
      expect(ticks).toBeGreaterThan(3);
      expect(process.memoryUsage().rss).toBeLessThan(1024 * 1024 * 1024);
    } finally {
      await pair.close();
    }
  });
});

describe('buffers cannot grow', () => {
  it('refuses resizable ArrayBuffers with the declared text', async () => {
    const out = await run(ex, 'async () => new ArrayBuffer(8, { maxByteLength: 1 << 30 })');
    expect(out.error.code).toBe('PROGRAM_ERROR');
    expect(out.error.message).toContain('Resizable ArrayBuffers are not available');
  });

  it('has no resize, no SharedArrayBuffer, no WebAssembly; ordinary buffers still work', async () => {
    const out = await run(ex, `async () => [
      typeof new ArrayBuffer(4).resize, new ArrayBuffer(4).resizable, typeof SharedArrayBuffer,
      typeof WebAssembly, new ArrayBuffer(8) instanceof ArrayBuffer, new Uint8Array(new ArrayBuffer(3)).length,
      new ArrayBuffer(8).constructor === ArrayBuffer, typeof Atomics.add]`);
    expect(out.result).toEqual(['undefined', false, 'undefined', 'undefined', true, 3, true, 'function']);
  });

  it("a host's resizable buffer cannot transfer past its length; other transfers work and are metered", async () => {
    const out = await ex.execute({
      code: `async () => {
        const rab = await t.rab();
        const grown = (() => { try { rab.transfer(16 << 20); return 'grown' } catch (e) { return e.constructor.name + ': ' + e.message } })();
        const fixed = (() => { try { rab.transferToFixedLength(1 << 20); return 'grown' } catch (e) { return e.constructor.name } })();
        const valueOf = (() => { let n = 0; try { rab.transfer({ valueOf: () => (n++ ? 16 << 20 : 4) }); return 'once: ' + n } catch (e) { return e.message } })();
        const ordinary = new ArrayBuffer(8).transfer(1 << 20).byteLength;
        return [grown, fixed, valueOf, ordinary];
      }`,
      memoryLimit: 8,
      providers: [{ name: 't', tools: ['rab'] }],
      dispatch: () => new ArrayBuffer(8, { maxByteLength: 2 ** 30 }),
    });
    expect(out.error).toBeUndefined();
    const [grown, fixed, readOnce, ordinary] = out.result;
    expect(grown).toMatch(/^TypeError: Resizable ArrayBuffers are not available/);
    expect(fixed).toBe('TypeError');
    // The length is read once: a valueOf cannot pass the check small and reach V8 large.
    expect(readOnce).toBe('once: 1');
    expect(ordinary).toBe(1 << 20);
    // 16 MiB past an 8 MiB limit never became memory of this run.
    expect(out.stats.buffersPeakBytes).toBeLessThan(8 * 1024 * 1024);
  });
});

describe('output bounds', () => {
  it('keeps the first 1000 log entries and says how many were dropped', async () => {
    const out = await run(ex, 'async () => { for (let i = 0; i < 5000; i++) console.log("line", i); return 1 }');
    expect(out.result).toBe(1);
    expect(out.logs).toHaveLength(1001);
    expect(out.logs[999].message).toBe('line 999');
    expect(out.logs[1000].level).toBe('warn');
    expect(out.logs[1000].message).toContain('4000 more console entries were dropped');
  });

  it('cuts one huge log entry with a visible marker', async () => {
    const out = await run(ex, 'async () => { console.log("y".repeat(100000)) }');
    expect(out.logs[0].message.length).toBeLessThan(70 * 1024);
    expect(out.logs[0].message).toMatch(/\[\d+ more bytes cut\]$/);
  });

  it('bounds total log bytes', async () => {
    const out = await run(ex, 'async () => { for (let i = 0; i < 100; i++) console.log("z".repeat(60000)) }');
    const bytes = out.logs.reduce((n, l) => n + l.message.length, 0);
    expect(bytes).toBeLessThan(1.2 * 1024 * 1024);
    expect(out.logs.at(-1).message).toContain('more console entries were dropped');
  });

  it('refuses a result over the bound with RESULT_TOO_LARGE', async () => {
    const out = await run(ex, 'async () => "x".repeat(20 * 1024 * 1024)', { memoryLimit: 256 });
    expect(out.error.code).toBe('RESULT_TOO_LARGE');
    expect(out.error.message).toContain('Return less');
  });

  it('bounds tool-call payloads both ways', async () => {
    const out = await run(ex, `async () => {
      const m = [];
      try { await t.put(new Uint8Array(17 * 1024 * 1024)) } catch (e) { m.push(e.message) }
      try { await t.get() } catch (e) { m.push(e.message) }
      return m }`, {
      memoryLimit: 256,
      providers: [{ name: 't', tools: ['put', 'get'] }],
      dispatch: ({ tool }) => (tool === 'get' ? new Uint8Array(17 * 1024 * 1024) : 'stored'),
    });
    expect(out.result[0]).toMatch(/^The arguments of t\.put came to \d+ bytes, more than the 16777216 bytes/);
    expect(out.result[1]).toMatch(/^The answer of t\.get came to \d+ bytes, more than the 16777216 bytes/);
  });
});

describe('queue bound', () => {
  it('rejects at once with QUEUE_FULL (retryable) when every worker is busy and the queue is full', async () => {
    const own = new IsolateExecutor({ workers: 1, queueBound: 1 });
    try {
      let release;
      const gate = new Promise((r) => (release = r));
      const busy = own.execute({ code: 'async () => t.wait()', providers: [{ name: 't', tools: ['wait'] }], dispatch: () => gate });
      const queued = own.execute({ code: 'async () => "queued"' });
      const err = await rejection(own.execute({ code: 'async () => "refused"' }));
      expect(err).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('QUEUE_FULL');
      expect(err.retryable).toBe(true);
      expect(err.message).toContain('1 executions are already waiting');
      release('done');
      expect((await busy).result).toBe('done');
      expect((await queued).result).toBe('queued');
    } finally {
      await own.close();
    }
  });
});

describe('accounting', () => {
  it('reports wall ms, CPU ms, heap peak and tool calls per run', async () => {
    const out = await run(ex, 'async () => { let x = 0; for (let i = 0; i < 2e6; i++) x += i; await t.a(); await t.a(); return x }', {
      providers: [{ name: 't', tools: ['a'] }],
      dispatch: () => new Promise((r) => setTimeout(r, 30)),
    });
    expect(out.stats.toolCalls).toBe(2);
    expect(out.stats.wallMs).toBeGreaterThanOrEqual(60);
    expect(out.stats.cpuMs).toBeGreaterThan(0);
    expect(out.stats.cpuMs).toBeLessThan(out.stats.wallMs);
    expect(out.stats.heapPeakBytes).toBeGreaterThan(100_000);
  });
});

describe('calls in flight', () => {
  it('the call past the bound rejects inside the sandbox; the worker is not taken for a hostile one', async () => {
    const before = ex.workerPids();
    const out = await run(
      ex,
      `async () => {
        const settled = await Promise.allSettled(Array.from({ length: 10_001 }, (_, i) => t.echo(i)));
        const rejected = settled.filter((s) => s.status === 'rejected');
        return { fulfilled: settled.length - rejected.length, rejected: rejected.map((s) => s.reason.message) };
      }`,
      { providers: [{ name: 't', tools: ['echo'] }], dispatch: ({ args }) => args[0] },
    );
    expect(out.error).toBeUndefined();
    expect(out.result.fulfilled).toBe(10_000);
    expect(out.result.rejected).toEqual([expect.stringContaining('more than the 10000 tool calls and fetches a run may have in flight')]);
    expect(ex.workerPids()).toEqual(before);
    await expectHealthy();
  });
});
