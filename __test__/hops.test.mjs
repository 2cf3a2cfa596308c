// The executor's `hops` option: every outcome says where its time went, step by step, on the
// monotonic clock the host, the pool and the worker share (lib/hops.js, docs/benchmarks.md).
import { describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
import { executor } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { STEPS } = require('../lib/hops.js');
const ALL = STEPS.map(([name]) => name);

/** @param {{ hop: string, ms: number }[]} hops */
const names = (hops) => hops.map((h) => h.hop);

describe('hops', () => {
  it('lists every step of a run, in order, within the time execute took', async () => {
    const ex = executor({ workers: 1, hops: true });
    await ex.execute({ code: 'async () => 0' });
    const t0 = process.hrtime.bigint();
    const out = await ex.execute({ code: 'async () => { await null; return 41 + 1 }' });
    const elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
    expect(out.result).toBe(42);
    expect(names(out.stats.hops)).toEqual(ALL);
    expect(out.stats.hops[0]).toEqual({ hop: 'entry', ms: 0 });
    const at = Object.fromEntries(out.stats.hops.map((h) => [h.hop, h.ms]));
    // One clock for all three parties: each step comes after the one it waits for. Host and
    // worker run in parallel, so `written` and `submitted` (the host's write call returning)
    // may come after the worker has read the frame.
    const chain = ['entry', 'validated', 'encoded', 'workerRead', 'isolateReady', 'parsed', 'evaluated', 'settled', 'answered', 'answerRead', 'reported', 'delivered', 'decoded'];
    for (let i = 1; i < chain.length; i++) expect(at[chain[i]], `${chain[i]} after ${chain[i - 1]}`).toBeGreaterThanOrEqual(at[chain[i - 1]]);
    expect(at.written).toBeGreaterThanOrEqual(at.encoded);
    expect(at.submitted).toBeGreaterThanOrEqual(at.written);
    expect(at.answerRead).toBeGreaterThanOrEqual(at.written);
    expect(at.decoded).toBeLessThanOrEqual(elapsed);
  });

  it('leaves out the steps a run did not reach', async () => {
    const ex = executor({ workers: 1, hops: true });
    const out = await ex.execute({ code: 'async () => {' });
    expect(out.error?.code).toBe('SYNTAX_ERROR');
    expect(names(out.stats.hops)).toEqual(ALL.filter((n) => !['parsed', 'evaluated', 'settled'].includes(n)));
  });

  it('is off by default: no hops, and the worker records none', async () => {
    const ex = executor({ workers: 1 });
    const out = await ex.execute({ code: 'async () => 1' });
    expect(out.stats).not.toHaveProperty('hops');
    expect(Object.keys(out.stats).sort()).toEqual(['buffersPeakBytes', 'cpuBudgetMs', 'cpuMs', 'fetches', 'heapPeakBytes', 'toolCalls', 'wallMs', 'workerPid']);
  });

  it('refuses anything but a boolean', () => {
    expect(() => executor({ hops: 'yes' })).toThrow(expect.objectContaining({ code: 'INVALID_OPTION', message: expect.stringContaining('hops') }));
  });
});
