'use strict';
// Memory at rest: each worker's RSS with a prepared isolate and nothing to do, and the host
// process's RSS, with the pool at 2, 8 and 32 workers. Each pool size is measured in a fresh
// `node` process (so what earlier benches left in the host's heap does not count): it starts an
// IsolateExecutor, runs as many concurrent executions as there are workers (every worker starts
// and runs once), waits until every worker is idle again with its next isolate prepared, lets
// the pool settle, then reads /proc/<pid>/status (VmRSS) of the host and of each worker
// (IsolateExecutor#workerPids). PSS (/proc/<pid>/smaps_rollup) is reported beside the RSS
// total, because the workers share the pages of their binary and RSS counts those in every one.
//
// Usage: node bench/memory.js [sizes...]   prints the table (bench.js uses run())
//        node bench/memory.js --child N    internal: measures one pool size, JSON out

const { execFileSync } = require('node:child_process');
const { median, rssMiB, pssMiB } = require('./measure');

const SIZES = [2, 8, 32];
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function child(workers) {
  const { IsolateExecutor } = require('..');
  const hostBefore = rssMiB(process.pid);
  const executor = new IsolateExecutor({ workers });
  try {
    const outcomes = await Promise.all(Array.from({ length: workers }, () => executor.execute({ code: 'async () => 1' })));
    if (outcomes.some((o) => o.result !== 1)) throw new Error('a warm-up run failed');
    const deadline = Date.now() + 60_000;
    for (;;) {
      const s = executor.stats();
      if (s.workers === workers && s.idle === workers) break;
      if (Date.now() > deadline) throw new Error(`pool not ready: ${JSON.stringify(s)}`);
      await pause(20);
    }
    await pause(500);
    const pids = executor.workerPids();
    if (pids.length !== workers) throw new Error(`${pids.length} worker pids for ${workers} workers`);
    const rss = pids.map((p) => rssMiB(p));
    const host = rssMiB(process.pid);
    const pss = pssMiB(process.pid) + pids.reduce((a, p) => a + pssMiB(p), 0);
    return {
      workers,
      workerRssMedian: median(rss),
      workerRssMax: Math.max(...rss),
      hostBefore,
      host,
      totalRss: host + rss.reduce((a, b) => a + b, 0),
      totalPss: pss,
    };
  } finally {
    await executor.close();
  }
}

/** One fresh `node` process per pool size; returns one row per size. */
function run(sizes = SIZES) {
  return sizes.map((n) =>
    JSON.parse(execFileSync(process.execPath, [__filename, '--child', String(n)], { encoding: 'utf8', timeout: 180_000 })),
  );
}

if (require.main === module) {
  if (process.argv[2] === '--child') {
    child(Number(process.argv[3])).then(
      (row) => process.stdout.write(JSON.stringify(row)),
      (e) => {
        console.error(e);
        process.exitCode = 1;
      },
    );
  } else {
    const sizes = process.argv.slice(2).map(Number);
    for (const r of run(sizes.length ? sizes : SIZES)) {
      console.log(
        `${r.workers} workers: worker idle RSS median ${r.workerRssMedian.toFixed(1)} MiB (max ${r.workerRssMax.toFixed(1)}), host RSS ${r.host.toFixed(1)} MiB (${r.hostBefore.toFixed(1)} before the pool), total RSS ${r.totalRss.toFixed(0)} MiB, total PSS ${r.totalPss.toFixed(0)} MiB`,
      );
    }
  }
}

module.exports = { run, SIZES };
