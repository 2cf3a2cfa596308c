// Cancel and live logs (docs/operations.md; ExecuteRequest.signal, .onLog, InvokeOptions.signal),
// in process and over connect(): an abort before start, while queued, mid-loop, during a parked
// tool call and during a handle invocation, each leaving the pool healthy (the next run succeeds
// on the same worker processes, nothing left running or queued); onLog's order, timing and bounds.
import { describe, expect, it } from 'vitest';
import { executor, rejection, sleep, until } from './helpers.mjs';
import { connected, served } from './daemon-helpers.mjs';

const LOG_ENTRIES = 1000;

const carriers = [
  [
    'in process',
    async () => {
      const ex = executor({ workers: 1, timeout: 20_000 });
      return { ex, pids: () => ex.workerPids(), counts: async () => ex.stats() };
    },
  ],
  [
    'over connect()',
    async () => {
      const server = await served({ workers: 1, timeout: 20_000 });
      const ex = await connected(server.url);
      return { ex, pids: () => server.workerPids(), counts: async () => server.stats() };
    },
  ],
];

/** The pool after an abort: nothing running or queued, the same workers, and a run succeeds. */
async function expectHealthy({ ex, pids, counts }, before) {
  const out = await ex.execute({ code: 'async () => 40 + 2' });
  expect(out.result).toBe(42);
  expect(pids()).toEqual(before);
  expect(await until(async () => {
    const c = await counts();
    return c.running === 0 && c.queued === 0 && c.workers === 1;
  })).toBe(true);
}

function expectAborted(e, reason) {
  expect(e.name).toBe('ExecutorError');
  expect(e.code).toBe('ABORTED');
  expect(e.retryable).toBe(false);
  expect(e.cause).toBe(reason);
}

/** A promise and the function that settles it. */
function gate() {
  let open;
  const promise = new Promise((resolve) => (open = resolve));
  return { promise, open };
}

describe.each(carriers)('abort (%s)', (_name, make) => {
  /** A carrier whose worker has run once, and that worker's pid (expectHealthy's `before`). */
  const warmed = async () => {
    const c = await make();
    await c.ex.execute({ code: 'async () => 1' });
    return { c, before: c.pids() };
  };

  it('an already aborted signal rejects at once; nothing is submitted', async () => {
    const { c, before } = await warmed();
    const reason = new Error('the user left');
    const signal = AbortSignal.abort(reason);
    let called = false;
    const e = await rejection(
      c.ex.execute({ code: 'async () => { await t.go(); return 1 }', providers: [{ name: 't', tools: ['go'] }], dispatch: () => (called = true), signal }),
    );
    expectAborted(e, reason);
    expect(called).toBe(false);
    await expectHealthy(c, before);
  });

  it('aborted while queued: the run leaves the queue and never starts', async () => {
    const { c, before } = await warmed();
    const hold = gate();
    const entered = gate();
    const seen = [];
    const dispatch = ({ tool }) => {
      seen.push(tool);
      if (tool === 'first') {
        entered.open();
        return hold.promise;
      }
      return 'second ran';
    };
    const providers = [{ name: 't', tools: ['first', 'second'] }];
    const first = c.ex.execute({ code: 'async () => t.first()', providers, dispatch });
    await entered.promise;
    const ac = new AbortController();
    const second = c.ex.execute({ code: 'async () => t.second()', providers, dispatch, signal: ac.signal });
    expect(await until(async () => (await c.counts()).queued === 1)).toBe(true);
    ac.abort('not needed');
    expectAborted(await rejection(second), 'not needed');
    expect(await until(async () => (await c.counts()).queued === 0)).toBe(true);
    hold.open('first done');
    expect((await first).result).toBe('first done');
    await sleep(50);
    expect(seen).toEqual(['first']);
    await expectHealthy(c, before);
  });

  it('aborted mid-loop: the isolate is terminated and the worker reused', async () => {
    const { c, before } = await warmed();
    const ac = new AbortController();
    const started = Date.now();
    const run = c.ex.execute({ code: 'async () => { for (;;) {} }', signal: ac.signal });
    expect(await until(async () => (await c.counts()).running === 1)).toBe(true);
    await sleep(50);
    const reason = new Error('stop');
    ac.abort(reason);
    expectAborted(await rejection(run), reason);
    expect(Date.now() - started).toBeLessThan(5_000);
    await expectHealthy(c, before);
  });

  it('aborted during a parked tool call', async () => {
    const { c, before } = await warmed();
    const ac = new AbortController();
    const called = gate();
    const run = c.ex.execute({
      code: 'async () => { await t.wait(); return "answered" }',
      providers: [{ name: 't', tools: ['wait'] }],
      dispatch: () => {
        called.open();
        return new Promise(() => {}); // never answers
      },
      signal: ac.signal,
    });
    await called.promise;
    ac.abort();
    const e = await rejection(run);
    expectAborted(e, ac.signal.reason);
    expect(e.cause.name).toBe('AbortError');
    await expectHealthy(c, before);
  });

  it('aborted during a handle invocation: it rejects, and the execution ends as at its bound', async () => {
    const { c, before } = await warmed();
    const granted = await c.ex.execute({ code: 'async () => (request) => { for (;;) {} }', retainHandles: true });
    expect(granted.executionId).toBeTruthy();
    const ac = new AbortController();
    const request = { method: 'GET', url: 'https://app.internal/', headers: [], body: null };
    const invocation = c.ex.invokeHandle(granted.executionId, 'fetch', request, { signal: ac.signal });
    await sleep(100);
    const reason = new Error('cancelled');
    ac.abort(reason);
    expectAborted(await rejection(invocation), reason);
    // The execution ended with the isolate it ran in: further invocations are refused.
    expect(await until(async () => (await c.counts()).retained === 0)).toBe(true);
    const again = await rejection(c.ex.invokeHandle(granted.executionId, 'fetch', request));
    expect(again.code).toBe('HANDLES_CLOSED');
    // Already aborted: rejects at once.
    expectAborted(await rejection(c.ex.invokeHandle(granted.executionId, 'fetch', request, { signal: AbortSignal.abort(reason) })), reason);
    await expectHealthy(c, before);
  });

  it('an abort after the run ended changes nothing', async () => {
    const c = await make();
    const ac = new AbortController();
    const out = await c.ex.execute({ code: 'async () => 7', signal: ac.signal });
    ac.abort();
    expect(out.result).toBe(7);
    expect((await c.ex.execute({ code: 'async () => 8' })).result).toBe(8);
  });

  it('a signal or options that are not one are INVALID_REQUEST', async () => {
    const c = await make();
    for (const signal of [null, 1, {}, { aborted: false }]) {
      const e = await rejection(c.ex.execute({ code: 'async () => 1', signal }));
      expect(e.code).toBe('INVALID_REQUEST');
      expect(e.message).toContain('signal');
    }
    const e = await rejection(c.ex.execute({ code: 'async () => 1', onLog: 'yes' }));
    expect(e.code).toBe('INVALID_REQUEST');
    expect(e.message).toContain('onLog');
    const request = { method: 'GET', url: 'https://app.internal/', headers: [], body: null };
    const bad = await rejection(c.ex.invokeHandle('x', 'fetch', request, { signal: 'now' }));
    expect(bad.code).toBe('INVALID_REQUEST');
    expect(bad.message).toContain('options.signal');
  });
});

describe.each(carriers)('live logs (%s)', (_name, make) => {
  it('each entry arrives as it is written, in order, before the outcome, which still has them all', async () => {
    const c = await make();
    const live = [];
    let seenAtCall = null;
    const out = await c.ex.execute({
      code: `async () => {
        for (let i = 0; i < 20; i++) console[['log', 'info', 'warn', 'error', 'debug'][i % 5]]('entry ' + i);
        await t.mark();
        console.log('after', { x: 1 });
        return 1 }`,
      providers: [{ name: 't', tools: ['mark'] }],
      // The run is parked here: what was written before has already reached the host.
      dispatch: async () => {
        await until(() => live.length === 20, 5_000);
        seenAtCall = live.length;
        return null;
      },
      onLog: (entry) => live.push(entry),
    });
    expect(seenAtCall).toBe(20);
    expect(live).toEqual(out.logs);
    expect(live.length).toBe(21);
    expect(live[3]).toEqual({ level: 'error', message: 'entry 3' });
    expect(live[20]).toEqual({ level: 'log', message: 'after { x: 1 }' });
  });

  it('holds to the bounds of the outcome logs: the entry count, the cut of a long entry, the notice', async () => {
    const c = await make();
    const live = [];
    const out = await c.ex.execute({
      code: `async () => {
        console.log('x'.repeat(100 * 1024));
        for (let i = 0; i < ${LOG_ENTRIES + 200}; i++) console.log(i);
        return 1 }`,
      onLog: (entry) => live.push(entry),
    });
    expect(out.logs.length).toBe(LOG_ENTRIES + 1);
    expect(live).toEqual(out.logs);
    expect(live[0].message.length).toBeLessThan(100 * 1024);
    expect(live[0].message).toMatch(/more bytes cut\]$/);
    expect(live.at(-1).level).toBe('warn');
    expect(live.at(-1).message).toContain('201');
  });

  it('a throwing onLog does not affect the run', async () => {
    const c = await make();
    const errors = [];
    const onError = (e) => errors.push(e);
    process.on('uncaughtException', onError);
    try {
      const out = await c.ex.execute({
        code: 'async () => { console.log("a"); return 2 }',
        onLog: () => {
          throw new Error('host bug');
        },
      });
      expect(out.result).toBe(2);
      expect(out.logs).toEqual([{ level: 'log', message: 'a' }]);
      await until(() => errors.length > 0, 2_000);
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(errors.map((e) => e.message)).toEqual(['host bug']);
  });
});

describe('live logs cost nothing when not asked for', () => {
  it('a run without onLog reads no more from its worker than a run did before live logs existed', async () => {
    const ex = executor({ workers: 1 });
    const code = 'async () => { for (let i = 0; i < 50; i++) console.log("line " + i); return 1 }';
    const bytesIn = () => ex.metrics().find((m) => m.name === 'codemode_worker_bytes_total').samples.find((s) => s.labels.direction === 'in').value;
    await ex.execute({ code });
    const a = bytesIn();
    await ex.execute({ code });
    const plain = bytesIn() - a;
    const b = bytesIn();
    await ex.execute({ code, onLog: () => {} });
    const live = bytesIn() - b;
    // With live logs each entry crosses twice (as it is written, and in the outcome).
    expect(live).toBeGreaterThan(plain + 50 * 'line 0'.length);
    const c = bytesIn();
    await ex.execute({ code });
    // The same frames as before (only the stats' varints may differ by a few bytes).
    expect(Math.abs(bytesIn() - c - plain)).toBeLessThan(16);
  });
});

describe('CodemodeExecutor', () => {
  it('forwards the signal of ExtendedExecuteOptions', async () => {
    const { CodemodeExecutor } = await import('../index.js');
    const native = executor({ workers: 1 });
    const before = native.workerPids();
    const cm = new CodemodeExecutor(native);
    const reason = new Error('gone');
    expectAborted(await rejection(cm.execute('async () => 1', [], { signal: AbortSignal.abort(reason) })), reason);
    const ac = new AbortController();
    const running = cm.execute('async () => { for (;;) {} }', [], { signal: ac.signal });
    expect(await until(() => native.stats().running === 1)).toBe(true);
    ac.abort(reason);
    expectAborted(await rejection(running), reason);
    expect((await cm.execute('async () => 5', [])).result).toBe(5);
    expect(native.workerPids()).toEqual(before);
  });
});
