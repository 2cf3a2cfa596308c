'use strict';
// Where an execute's time goes: the executor's `hops` option (lib/hops.js) on the smallest
// program, idle (runs GAP_MS apart, the way agent traffic arrives) and back to back; p50 and p99
// of each step's share (from the step before it to it), and of the whole execute, whose last
// share is the caller's own (`resumed`: from the outcome built to the awaiting code running).
// Run alone by `npm run bench:trace` (prints the tables); bench.js puts the same tables in
// docs/benchmarks.md.
//
// Usage: npm run bench:trace [-- --quick]

const os = require('node:os');
const { IsolateExecutor } = require('..');
const { STEPS } = require('../lib/hops');
const { now, pause, stats, withHalves } = require('./measure');

const PROGRAM = 'async () => 1';
const GAP_MS = 5;

/** The caller's share, after the last step the executor records. */
const RESUMED = ['resumed', "the caller's `await` went on (the promise's reaction ran)"];

/**
 * Runs `n` executes `gapMs` apart (0: back to back) and returns p50/p99 per step and of the
 * whole execute, in microseconds.
 * @param {IsolateExecutor} ex
 * @param {number} n
 * @param {number} gapMs
 */
async function sample(ex, n, gapMs) {
  /** @type {Record<string, number[]>} */
  const shares = {};
  const totals = [];
  for (let i = 0; i < n; i++) {
    if (gapMs) await pause(gapMs);
    const t0 = now();
    const out = await ex.execute({ code: PROGRAM });
    const total = Number(now() - t0) / 1e3;
    if (out.result !== 1) throw new Error(`bad outcome ${JSON.stringify(out)}`);
    let prev = 0;
    for (const { hop, ms } of out.stats.hops.slice(1)) {
      (shares[hop] ??= []).push(ms * 1000 - prev);
      prev = ms * 1000;
    }
    (shares.resumed ??= []).push(total - prev);
    totals.push(total);
  }
  const steps = [...STEPS.slice(1), RESUMED].map(([hop, what]) => ({ hop, what, ...stats(shares[hop] ?? []) }));
  return { steps, total: withHalves(totals) };
}

/** Idle and back-to-back traces on an executor of `workers` workers. */
async function run({ quick = false, workers = Math.max(2, os.availableParallelism()) } = {}) {
  const n = quick ? 300 : 2000;
  const ex = new IsolateExecutor({ workers, hops: true });
  try {
    for (let i = 0; i < Math.min(200, n / 4); i++) await ex.execute({ code: PROGRAM });
    const idle = await sample(ex, n, GAP_MS);
    const backToBack = await sample(ex, n, 0);
    return { n, workers, gapMs: GAP_MS, program: PROGRAM, idle, backToBack };
  } finally {
    await ex.close();
  }
}

const us = (v) => (typeof v === 'number' ? v.toFixed(1) : 'n/a');

/** The markdown table of a trace: each step's share, idle and back to back. */
function table(t) {
  const rows = t.idle.steps.map((s, i) => {
    const b = t.backToBack.steps[i];
    return `| \`${s.hop}\` | ${s.what} | ${us(s.p50)} | ${us(s.p99)} | ${us(b.p50)} | ${us(b.p99)} |`;
  });
  return [
    '| step | ends when | idle p50 µs | idle p99 µs | back-to-back p50 µs | back-to-back p99 µs |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    `| **execute** | from \`entry\` to the caller's \`await\` going on | **${us(t.idle.total.p50)}** | ${us(t.idle.total.p99)} | **${us(t.backToBack.total.p50)}** | ${us(t.backToBack.total.p99)} |`,
  ].join('\n');
}

module.exports = { run, table };

if (require.main === module) {
  run({ quick: process.argv.includes('--quick') }).then(
    (t) => {
      console.log(`\`${t.program}\`, ${t.n} executes each way, ${t.workers} workers; idle: ${t.gapMs} ms apart\n`);
      console.log(table(t));
    },
    (e) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
