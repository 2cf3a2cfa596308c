// CPU between invocations (docs/bounds.md, "CPU between runs"): a retained execution whose timers
// keep a core busy while nobody invokes it ends with reason `cpu`; light timers do not, and the
// CPU an invocation spends counts against its own time bound, not against this one.
import { describe, expect, it } from 'vitest';
import { executor, rejection, sleep, until } from './helpers.mjs';

const dec = new TextDecoder();
const req = (url = 'https://app.internal/') => ({ method: 'GET', url, headers: [], body: null });
const text = (response) => (response.body === null ? '' : dec.decode(response.body));

/** A timer that burns 50 ms of CPU on every tick, ticking as often as it can. */
const SPINNER = `async () => {
  setInterval(() => { const t = Date.now(); while (Date.now() - t < 50) {} }, 0)
  return () => new Response('spinning')
}`;

/** A timer every 100 ms that does next to nothing. */
const LIGHT = `async () => {
  let ticks = 0
  setInterval(() => { ticks += 1 }, 100)
  return () => new Response(String(ticks))
}`;

function recorded(options) {
  const closes = [];
  const ex = executor({ ...options, onHandlesClosed: (event) => closes.push(event) });
  return { ex, closes };
}

async function grant(ex, code, extra = {}) {
  const outcome = await ex.execute({ code, retainHandles: true, ...extra });
  expect(outcome.error).toBeUndefined();
  expect(typeof outcome.executionId).toBe('string');
  return outcome.executionId;
}

describe('CPU between invocations', () => {
  it('a timer that keeps a core busy ends its execution with reason cpu; a light timer lives on', async () => {
    const { ex, closes } = recorded({ workers: 3 });
    const spinning = await grant(ex, SPINNER);
    const calm = await grant(ex, LIGHT);
    const pids = ex.workerPids();
    const started = Date.now();
    // The bound is 1,000 ms of CPU per 10 s window, sampled at least once a second: a core-bound
    // timer passes it within a few seconds even on a loaded machine.
    expect(await until(() => closes.length > 0, 20_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(closes).toEqual([{ executionId: spinning, reason: 'cpu' }]);
    const failure = await rejection(ex.invokeHandle(spinning, 'fetch', req()));
    expect(failure.code).toBe('HANDLES_CLOSED');

    // The light timer outlives a whole window and more, ticking all along.
    await sleep(Math.max(0, 12_000 - (Date.now() - started)));
    expect(closes).toHaveLength(1);
    const ticks = Number(text(await ex.invokeHandle(calm, 'fetch', req())));
    expect(ticks).toBeGreaterThan(50);
    expect(closes).toHaveLength(1);

    // The spinner's worker obeyed the close (its JS was terminated, the isolate disposed): it is
    // not replaced, and runs the next program.
    expect((await ex.execute({ code: 'async () => "after"' })).result).toBe('after');
    expect(ex.workerPids()).toEqual(pids);
    await ex.closeHandles(calm);
  }, 40_000);

  it('CPU spent inside invocations does not count; each invocation still gets its fresh time bound', async () => {
    const { ex, closes } = recorded({ workers: 2 });
    const id = await grant(
      ex,
      `async () => ({ fetch: (request) => {
        const spin = new URL(request.url).searchParams.get('spin')
        if (spin === 'forever') for (;;) {}
        const t = Date.now(); while (Date.now() - t < Number(spin)) {}
        return new Response('worked ' + spin)
      } })`,
      { timeout: 1_000 },
    );
    // 8 × 400 ms of CPU in a few seconds: far past the between-invocations budget, all of it
    // inside invocations, each under (and within) its own 1,000 ms bound.
    for (let i = 0; i < 8; i++) {
      expect(text(await ex.invokeHandle(id, 'fetch', req('https://x/?spin=400')))).toBe('worked 400');
    }
    await sleep(1_500);
    expect(closes).toEqual([]);
    const started = Date.now();
    const failure = await rejection(ex.invokeHandle(id, 'fetch', req('https://x/?spin=forever')));
    expect(failure.code).toBe('TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(closes).toEqual([{ executionId: id, reason: 'timeout' }]);
  }, 40_000);
});
