'use strict';
// Recovery: the time from a worker's SIGKILL to the pool being back at full size with a
// prepared isolate (the replacement has said Ready), p50/p99 over 50 kills of an idle worker on
// a 2-worker pool. Target: under 100 ms.
//
// Usage: npm run bench:recovery [-- --kills N]

const { IsolateExecutor } = require('..');

const arg = process.argv.indexOf('--kills');
const KILLS = arg > 0 ? Number(process.argv[arg + 1]) : 50;
const WORKERS = 2;

const now = () => process.hrtime.bigint();
const tick = () => new Promise((r) => setImmediate(r));

async function main() {
  const executor = new IsolateExecutor({ workers: WORKERS });
  const samples = [];
  try {
    await executor.execute({ code: 'async () => 1' });
    for (let k = 0; k < KILLS; k++) {
      // Start from a full pool of prepared workers.
      while (executor.stats().idle < WORKERS) await tick();
      await new Promise((r) => setTimeout(r, 20));
      const before = executor.workerPids();
      const victim = before[k % before.length];
      const t0 = now();
      process.kill(victim, 'SIGKILL');
      for (;;) {
        const s = executor.stats();
        const pids = executor.workerPids();
        if (s.workers === WORKERS && s.idle === WORKERS && !pids.includes(victim)) break;
        if (Number(now() - t0) > 10e9) throw new Error('the pool did not recover within 10 s');
        await tick();
      }
      samples.push(Number(now() - t0) / 1e6);
    }
  } finally {
    await executor.close();
  }
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
  console.log(`recovery: ${KILLS} SIGKILLs of an idle worker (pool of ${WORKERS}): back at full size with a prepared isolate in p50 ${at(50).toFixed(1)} ms, p99 ${at(99).toFixed(1)} ms, max ${s[s.length - 1].toFixed(1)} ms (target: under 100 ms)`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
