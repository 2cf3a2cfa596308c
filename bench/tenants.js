'use strict';
// What tenants cost (docs/tenants.md), on one executor of two workers:
//   - a tenant's first run when a worker that ran no code is free (the pool has room), beside a
//     run of a tenant whose worker is warm;
//   - a tenant switch: a run of a new tenant when every worker already ran another tenant's
//     code, so one is retired and its replacement spawned (spawn to ready, then the run);
//   - fair shares: tenant B's quick executes alone, then while tenant A floods the pool with
//     runs of RUN_MS of CPU each, (a) A held to `maxRunning: 1`, (b) A unbounded: round-robin
//     turns alone keep B within one A run.
//
// Usage: node bench/tenants.js [--quick]   prints the figures (bench.js uses run() and table())

const { IsolateExecutor } = require('..');
const { stats } = require('./measure');

const QUICK_CODE = 'async () => 1';
const RUN_MS = 50;
const spin = (ms) => `async () => { const end = Date.now() + ${ms}; while (Date.now() < end) {} return 1 }`;
const now = () => process.hrtime.bigint();
const ms = (t0) => Number(now() - t0) / 1e6;

/** Resolves once the executor's workers are all idle. */
async function ready(ex, workers) {
  const end = Date.now() + 30_000;
  while (ex.stats().idle < workers) {
    if (Date.now() > end) throw new Error('the workers never became ready');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function timed(ex, request) {
  const t0 = now();
  const o = await ex.execute(request);
  if (o.error) throw new Error(`${request.tenant}: ${o.error.message}`);
  return ms(t0);
}

/** First runs on a fresh worker, warm runs, and switches, `n` of each. */
async function switches(n) {
  const fresh = [];
  const warm = [];
  const switched = [];
  for (let i = 0; i < n; i++) {
    const ex = new IsolateExecutor({ workers: 2 });
    try {
      await ready(ex, 2);
      fresh.push(await timed(ex, { code: QUICK_CODE, tenant: 'a' }));
      await ready(ex, 2);
      warm.push(await timed(ex, { code: QUICK_CODE, tenant: 'a' }));
      await timed(ex, { code: QUICK_CODE, tenant: 'b' });
      await ready(ex, 2);
      // Both workers ran code: c's first run retires one and waits for its replacement.
      switched.push(await timed(ex, { code: QUICK_CODE, tenant: 'c' }));
    } finally {
      await ex.close();
    }
  }
  return { fresh: stats(fresh), warm: stats(warm), switched: stats(switched) };
}

/** B's latency alone and under A's flood (A bounded by `aLimits`). */
async function fairness(nB, flood, aLimits) {
  const ex = new IsolateExecutor({ workers: 2, queueBound: flood + 10, tenants: { a: aLimits } });
  try {
    await ready(ex, 2);
    for (let i = 0; i < 5; i++) await timed(ex, { code: QUICK_CODE, tenant: 'b' });
    const alone = [];
    for (let i = 0; i < nB; i++) alone.push(await timed(ex, { code: QUICK_CODE, tenant: 'b' }));
    const stop = new AbortController();
    const runs = Array.from({ length: flood }, () => ex.execute({ code: spin(RUN_MS), tenant: 'a', signal: stop.signal }).catch(() => undefined));
    while (ex.stats().running < 1) await new Promise((r) => setTimeout(r, 1));
    const loaded = [];
    for (let i = 0; i < nB; i++) loaded.push(await timed(ex, { code: QUICK_CODE, tenant: 'b' }));
    const queued = ex.stats().queued;
    stop.abort();
    await Promise.all(runs);
    return { alone: stats(alone), loaded: stats(loaded), queued };
  } finally {
    await ex.close();
  }
}

async function run({ quick = false } = {}) {
  const sw = await switches(quick ? 5 : 20);
  const bounded = await fairness(quick ? 10 : 40, quick ? 100 : 500, { maxRunning: 1 });
  const unbounded = await fairness(quick ? 10 : 40, quick ? 100 : 500, {});
  return { switches: sw, bounded, unbounded };
}

const f = (x) => x.toFixed(2);

/** The report's section body. */
function table(r) {
  const s = r.switches;
  const row = (label, x) => `| ${label} | ${f(x.alone.p50)} / ${f(x.alone.p99)} | ${f(x.loaded.p50)} / ${f(x.loaded.p99)} | ${x.queued} | ${f(x.loaded.p99 - x.alone.p99)} |`;
  return `A tenant's first run, on two workers (ms, p50 / p99):

| run | p50 | p99 |
| --- | --- | --- |
| a warm tenant's run (its worker's isolate prepared) | ${f(s.warm.p50)} | ${f(s.warm.p99)} |
| a new tenant's first run, a worker that ran no code free | ${f(s.fresh.p50)} | ${f(s.fresh.p99)} |
| a new tenant's first run, every worker another tenant's (a switch: retire, spawn to ready, run) | ${f(s.switched.p50)} | ${f(s.switched.p99)} |

The switch costs ${f(s.switched.p50 - s.warm.p50)} ms over a warm run at the median: a worker's spawn
to ready. Fair shares: tenant B's quick executes alone and while tenant A floods the pool with
runs of ${RUN_MS} ms of CPU (ms, p50 / p99; the target: B's p99 within 2x alone plus one A run):

| A's bound | B alone | B while A floods | A's runs waiting | added p99 |
| --- | --- | --- | --- | --- |
${row('maxRunning 1', r.bounded)}
${row('none (turns alone)', r.unbounded)}
`;
}

module.exports = { run, table };

if (require.main === module) {
  run({ quick: process.argv.includes('--quick') }).then((r) => console.log(table(r)));
}
