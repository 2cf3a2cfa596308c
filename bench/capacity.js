'use strict';
// Capacity figures for docs/deployment.md: executions per second per core with the pool busy,
// idle RSS per worker, and a worker's RSS after runs that fill their heap to a given share of
// memoryLimit. Linux only (reads /proc).
//
// Usage: npm run bench:capacity

const os = require('node:os');
const { IsolateExecutor } = require('..');
const { median, rssMiB } = require('./measure');

const CORES = os.availableParallelism();
const SECONDS = 5;

async function throughput(executor, inFlight, code) {
  let done = 0;
  const end = Date.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (Date.now() < end) {
        await executor.execute({ code });
        done++;
      }
    }),
  );
  return done / SECONDS;
}

async function main() {
  const workers = CORES;
  const executor = new IsolateExecutor({ workers });
  try {
    await executor.execute({ code: 'async () => 1' });
    await new Promise((r) => setTimeout(r, 500));
    const idle = executor.workerPids().map((p) => rssMiB(p));
    const small = await throughput(executor, workers * 4, 'async () => 1');
    const json = await throughput(executor, workers * 4, 'async () => { const rows = Array.from({ length: 2000 }, (_, i) => ({ i, s: "row " + i })); return JSON.stringify(rows).length }');
    const rows = [];
    for (const limit of [64, 128, 256]) {
      const fill = Math.floor(limit * 0.6);
      // ~1 MiB a step: 131,072 elements of 8 bytes.
      const code = `async () => { const keep = []; for (let i = 0; i < ${fill}; i++) keep.push(new Array(131072).fill(i)); return keep.length }`;
      const peaks = [];
      for (let i = 0; i < 3; i++) {
        const outcome = await executor.execute({ code, memoryLimit: limit });
        if (outcome.error) throw new Error(`${limit} MiB run failed: ${outcome.error.message}`);
        peaks.push(outcome.stats.heapPeakBytes / 1048576);
      }
      const pids = executor.workerPids();
      // Limits rise, so each worker's lifetime peak is this limit's peak.
      rows.push({ limit, heapPeak: median(peaks), peak: Math.max(...pids.map((p) => rssMiB(p, 'VmHWM'))), after: Math.max(...pids.map((p) => rssMiB(p))) });
    }
    console.log(`capacity: ${CORES} cores, ${workers} workers, Node ${process.version}`);
    console.log(`| figure | value |`);
    console.log(`| --- | --- |`);
    console.log(`| exec/s, \`async () => 1\`, pool busy | ${small.toFixed(0)} (${(small / CORES).toFixed(0)} per core) |`);
    console.log(`| exec/s, build and serialize 2,000 rows, pool busy | ${json.toFixed(0)} (${(json / CORES).toFixed(0)} per core) |`);
    console.log(`| idle RSS per worker (a prepared isolate) | ${median(idle).toFixed(1)} MiB |`);
    for (const r of rows) {
      console.log(`| worker peak RSS, runs filling 60% of memoryLimit ${r.limit} MiB (heap peak ${r.heapPeak.toFixed(0)} MiB); RSS after | ${r.peak.toFixed(1)} MiB; ${r.after.toFixed(1)} MiB |`);
    }
  } finally {
    await executor.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
