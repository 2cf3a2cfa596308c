// npm run soak: mixed executions on a 2-worker pool, with a worker SIGKILLed every 1,000 runs,
// checking that nothing grows or leaks. Reports the host's RSS, open descriptors and threads,
// the workers' RSS and descriptors, and the host's child processes at start, after warm-up and
// at the end; fails on growth over 10% after warm-up, or on any leaked process or descriptor.
//
// The short soak in `npm test` (1,000 runs) is too short for the allocator and the JIT to settle:
// it judges descriptors, threads and processes exactly, and memory only past an absolute floor
// (`--floor-mib 24`: a leak of 24 KiB or more a run). `npm run soak` (10,000 runs) judges the
// 10% trend with no floor.
//
// Usage: node --expose-gc scripts/soak.mjs [--runs 10000] [--floor-mib 0]
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import v8 from 'node:v8';

const require = createRequire(import.meta.url);
const { IsolateExecutor } = require('../index.js');

const arg = process.argv.indexOf('--runs');
const RUNS = arg > 0 ? Number(process.argv[arg + 1]) : 10_000;
if (!Number.isInteger(RUNS) || RUNS < 100) throw new Error('--runs takes an integer of at least 100');
const floorArg = process.argv.indexOf('--floor-mib');
const FLOOR_MIB = floorArg > 0 ? Number(process.argv[floorArg + 1]) : 0;
if (!(FLOOR_MIB >= 0)) throw new Error('--floor-mib takes a number of MiB, 0 or more');
const KILL_EVERY = Math.min(1000, Math.floor(RUNS / 4));
const WARM_UP = Math.floor(RUNS / 5);
const IN_FLIGHT = 4;
const GROWTH = 0.1;
const SAMPLES = 50;
const SAMPLE_EVERY = Math.max(1, Math.floor((RUNS - WARM_UP) / SAMPLES));

/** The mix: [weight, name, request, check(outcome)]. */
const MIX = [
  [40, 'plain', { code: 'async () => ({ n: 1, s: "x".repeat(100) })' }, (o) => o.result?.n === 1],
  [20, 'tool calls', {
    code: 'async () => { let n = 0; for (let i = 0; i < 5; i++) n += await t.inc(i); return n }',
    providers: [{ name: 't', tools: ['inc'] }],
    dispatch: ({ args }) => args[0] + 1,
  }, (o) => o.result === 15],
  [10, 'throws', { code: 'async () => { throw new RangeError("soak") }' }, (o) => o.error?.code === 'PROGRAM_ERROR'],
  [3, 'timeout', { code: 'async () => { for (;;) {} }', timeout: 30 }, (o) => o.error?.code === 'TIMEOUT'],
  [3, 'memory bomb', { code: 'async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)) }', memoryLimit: 16 }, (o) => o.error?.code === 'MEMORY_LIMIT'],
  [10, 'blocked fetch', { code: 'async () => { try { await fetch("https://example.invalid/") } catch (e) { return e.message } }', outbound: null }, (o) => typeof o.result === 'string' && o.result.length > 0],
  [6, 'large result', { code: 'async () => "y".repeat(1 << 20)' }, (o) => o.result?.length === 1 << 20],
];
const TOTAL = MIX.reduce((n, [w]) => n + w, 0);

/** The mix entry for run `i` (deterministic, spread evenly). */
function pick(i) {
  let x = (i * 7919) % TOTAL;
  for (const entry of MIX) {
    if (x < entry[0]) return entry;
    x -= entry[0];
  }
  return MIX[0];
}

const status = (pid) => readFileSync(`/proc/${pid}/status`, 'utf8');
const field = (text, name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;

/** Child processes of this process that are still there (zombies included). */
function children() {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The host's descriptors by what they point at, for a leak report. */
function fdTargets() {
  return readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).replace(/\d+/g, 'N');
    } catch {
      return 'gone';
    }
  });
}

/**
 * How much `series` grows across its span by its least-squares line, relative to the line's
 * start (0.1 = 10%).
 * @param {number[]} series
 */
function trend(series) {
  const n = series.length;
  const mx = (n - 1) / 2;
  const my = series.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  series.forEach((y, x) => {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  });
  const slope = sxx ? sxy / sxx : 0;
  const first = my - slope * mx;
  return first > 0 ? (slope * (n - 1)) / first : 0;
}

function sample(executor) {
  globalThis.gc?.();
  const self = status('self');
  const pids = executor.workerPids();
  const rss = field(self, 'VmRSS') / 1024;
  return {
    hostRssMiB: rss,
    hostHeapUsedMiB: process.memoryUsage().heapUsed / 1048576,
    hostNativeMiB: rss - v8.getHeapStatistics().total_physical_size / 1048576,
    hostFds: fds('self'),
    hostThreads: field(self, 'Threads'),
    workerRssMiB: pids.reduce((n, pid) => n + field(status(pid), 'VmRSS') / 1024, 0),
    workerFds: Math.max(...pids.map(fds)),
    children: children().length,
    workers: pids.length,
  };
}

async function main() {
  const started = Date.now();
  const executor = new IsolateExecutor({ workers: 2, queueBound: 64 });
  const failures = [];
  const counts = Object.fromEntries(MIX.map(([, name]) => [name, 0]));
  let kills = 0;
  let lost = 0;
  await executor.execute({ code: 'async () => 1' });
  const start = sample(executor);
  let warm;
  const series = [];
  let next = 0;
  async function lane() {
    for (;;) {
      const i = next++;
      if (i >= RUNS) return;
      if (i > 0 && i % KILL_EVERY === 0) {
        const [pid] = executor.workerPids();
        if (pid) {
          process.kill(pid, 'SIGKILL');
          kills++;
        }
      }
      if (i === WARM_UP) warm = sample(executor);
      if (i >= WARM_UP && (i - WARM_UP) % SAMPLE_EVERY === 0) series.push(sample(executor));
      const [, name, request, check] = pick(i);
      try {
        const outcome = await executor.execute(request);
        counts[name]++;
        if (!check(outcome)) failures.push(`run ${i} (${name}): unexpected ${JSON.stringify(outcome.error ?? outcome.result)?.slice(0, 200)}`);
      } catch (e) {
        // A run on the worker killed under it is lost, retryably; anything else is a failure.
        if (e?.code === 'WORKER_LOST' && e.retryable) lost++;
        else failures.push(`run ${i} (${name}): ${e?.code ?? ''} ${e?.message ?? e}`);
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  // Let the last replacement settle before the final sample.
  for (let i = 0; i < 200 && executor.stats().idle < 2; i++) await new Promise((r) => setTimeout(r, 10));
  const end = sample(executor);
  const fdsBeforeClose = fdTargets();
  await executor.close();
  const afterClose = { children: children().length, hostFds: fds('self') };

  const rows = Object.keys(start).map((k) => `| ${k} | ${fmt(start[k])} | ${fmt(warm[k])} | ${fmt(end[k])} |`);
  console.log(`soak: ${RUNS} runs (${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(', ')}), ${kills} workers SIGKILLed (${lost} runs lost with them), ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log('| | start | after warm-up | end |');
  console.log('| --- | --- | --- | --- |');
  console.log(rows.join('\n'));
  console.log(`after close(): ${afterClose.children} child processes, ${afterClose.hostFds} host descriptors (start: ${start.hostFds})`);

  series.push(end);
  const trends = [];
  for (const key of ['hostHeapUsedMiB', 'hostNativeMiB', 'hostFds', 'hostThreads', 'workerRssMiB', 'workerFds']) {
    const values = series.map((x) => x[key]);
    const growth = trend(values);
    trends.push(`${key} ${(growth * 100).toFixed(1)}% (${fmt(Math.min(...values))}-${fmt(Math.max(...values))})`);
    const floor = key.endsWith('MiB') ? FLOOR_MIB : 0;
    if (growth > GROWTH && growth * values[0] > floor) failures.push(`${key} grows ${(growth * 100).toFixed(1)}% across the ${values.length} samples after warm-up (more than 10%): ${values.map(fmt).join(' ')}`);
  }
  // Counts must come back exactly: a descriptor or thread per run is a leak whatever the trend.
  for (const key of ['hostFds', 'hostThreads', 'workerFds']) {
    if (end[key] > warm[key]) failures.push(`${key}: ${warm[key]} after warm-up, ${end[key]} at the end`);
  }
  if (end.children !== 2) failures.push(`${end.children} child processes while the pool has 2 workers`);
  if (afterClose.children !== 0) failures.push(`${afterClose.children} child processes left after close()`);
  if (afterClose.hostFds > start.hostFds) failures.push(`host descriptors: ${start.hostFds} at start, ${afterClose.hostFds} after close(); open before close: ${fdsBeforeClose.join(', ')}`);
  if (lost > kills) failures.push(`${lost} runs lost to ${kills} kills: more than one run per killed worker`);
  console.log(`trend after warm-up (least squares over ${series.length} samples; range): ${trends.join(', ')}`);
  for (const f of failures.slice(0, 20)) console.log(`  FAIL ${f}`);
  console.log(failures.length ? `soak: ${failures.length} failures` : 'soak: passed');
  process.exitCode = failures.length ? 1 : 0;
}

function fmt(v) {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
