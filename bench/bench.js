'use strict';
// Side-by-side: this executor, isolated-vm (fresh isolate per run) and node:vm (fresh context per
// run) on the same programs, in one run on one machine: p50/p99 latency, throughput with the
// whole pool busy and one tool-call round trip; then this executor's own figures against their
// targets: the throughput ceiling its per-run cost allows, isolate preparation (inside the
// worker), code at JIT speed (cpu.js, beside isolated-vm and plain Node), memory at rest
// (memory.js), the overshoot of the time bound and of the CPU budget, and what approvals cost
// (approvals.js: resume against a fresh execute, the token's size). Writes docs/benchmarks.md (report.js).
//
// Usage: npm run bench [-- --quick]

const { execFileSync } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const vm = require('node:vm');
const { IsolateExecutor } = require('..');
const { now, pause, stats, withHalves, median, mean, cpuMs } = require('./measure');
const cpu = require('./cpu');
const memory = require('./memory');
const approvals = require('./approvals');
const trace = require('./trace');
const daemon = require('./daemon');
const guard = require('./guard');
const { writeReport, fmt } = require('./report');

const QUICK = process.argv.includes('--quick');
const N_LAT = QUICK ? 300 : 2000;
const THROUGHPUT_MS = QUICK ? 1500 : 5000;
const N_CALLS = QUICK ? 1000 : 5000;
const WORKERS = Math.max(2, os.availableParallelism());
const CORES = os.availableParallelism();
const PROGRAM = 'async () => 1';
// The throughput ceiling: rounds of (pool saturated for CEILING_MS, then --bench-prepare).
const CEILING_ROUNDS = QUICK ? 1 : 3;
const CEILING_MS = QUICK ? 1500 : 3000;
const PREPARE_RUNS = QUICK ? 50 : 300;

const toMs = (ns) => Number(ns) / 1e6;
const toUs = (ns) => Number(ns) / 1e3;


// Latency of one execute against an idle executor: runs are spaced by GAP_MS, the way sporadic
// agent traffic arrives (this executor prepares the next isolate in that gap; the in-process
// peers create theirs inside the measured call, as they must).
const GAP_MS = 5;
async function latency(runOnce) {
  for (let i = 0; i < Math.min(200, N_LAT / 4); i++) await runOnce();
  const samples = [];
  for (let i = 0; i < N_LAT; i++) {
    await pause(GAP_MS);
    const t0 = now();
    await runOnce();
    samples.push(toMs(now() - t0));
  }
  return withHalves(samples);
}

// Back to back: the next run starts the moment the previous one resolves.
async function backToBack(runOnce) {
  const samples = [];
  for (let i = 0; i < N_LAT; i++) {
    const t0 = now();
    await runOnce();
    samples.push(toMs(now() - t0));
  }
  return withHalves(samples);
}

/**
 * Executions per second with `concurrency` in flight for `ms`, and the rates of the window's two
 * halves (guard.js's noise), each counting the executions that ended within it.
 */
async function throughput(runOnce, concurrency, ms = THROUGHPUT_MS) {
  let done = 0;
  const ended = [0, 0];
  const t0 = now();
  // A clock check, not a timer: node:vm's runs settle in microtasks and would starve a timer.
  const end = t0 + BigInt(ms) * 1_000_000n;
  const half = t0 + BigInt(ms) * 500_000n;
  const lane = async () => {
    while (now() < end) {
      await runOnce();
      done++;
      const at = now();
      if (at < end) ended[at < half ? 0 : 1]++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const secs = ms / 2000;
  return { rate: done / (toMs(now() - t0) / 1000), halves: [ended[0] / secs, ended[1] / secs] };
}

// Tool-call round trip: the program awaits N sequential calls; the host timestamps arrivals,
// so consecutive arrivals are exactly one sandbox -> host -> sandbox round trip.
function roundTrips(arrivals) {
  const d = [];
  for (let i = 1; i < arrivals.length; i++) d.push(toUs(arrivals[i] - arrivals[i - 1]));
  return withHalves(d);
}

const peers = {};

// ---- this executor
peers.codemode = {
  label: 'codemode-executor',
  async setup() {
    this.ex = new IsolateExecutor({ workers: WORKERS });
    await this.ex.execute({ code: PROGRAM });
  },
  runOnce() {
    return this.ex.execute({ code: PROGRAM }).then((o) => {
      if (o.result !== 1) throw new Error(`bad result ${JSON.stringify(o)}`);
    });
  },
  async toolCall() {
    const arrivals = [];
    let recording = false;
    const code = `async () => { let acc = 0; for (let i = 0; i < ${N_CALLS + 200}; i++) { if (i === 200) await t.mark(); acc = await t.inc(acc) } return acc }`;
    const out = await this.ex.execute({
      code,
      providers: [{ name: 't', tools: ['inc', 'mark'] }],
      dispatch: ({ tool, args }) => {
        if (tool === 'mark') return void (recording = true);
        if (recording) arrivals.push(now());
        return args[0] + 1;
      },
      timeout: 120_000,
    });
    if (out.error) throw new Error(out.error.message);
    return roundTrips(arrivals);
  },
  teardown() {
    return this.ex.close();
  },
};

// ---- isolated-vm: a fresh isolate per run, the same program
let ivm = null;
try {
  ivm = require(path.join(__dirname, 'node_modules', 'isolated-vm'));
} catch (e) {
  peers.ivmMissing = e.message.split('\n')[0];
}
if (ivm) {
  peers.ivm = {
    label: `isolated-vm ${require(path.join(__dirname, 'node_modules', 'isolated-vm', 'package.json')).version}`,
    async setup() {},
    async runOnce() {
      const isolate = new ivm.Isolate({ memoryLimit: 128 });
      try {
        const context = await isolate.createContext();
        const script = await isolate.compileScript(PROGRAM);
        const fn = await script.run(context, { reference: true });
        const result = await fn.apply(undefined, [], { result: { promise: true, copy: true } });
        if (result !== 1) throw new Error('bad result');
      } finally {
        isolate.dispose();
      }
    },
    async toolCall() {
      const isolate = new ivm.Isolate({ memoryLimit: 128 });
      const context = await isolate.createContext();
      const arrivals = [];
      let recording = false;
      await context.global.set('mark', new ivm.Reference(() => void (recording = true)));
      await context.global.set(
        'inc',
        new ivm.Reference(async (x) => {
          if (recording) arrivals.push(now());
          return x + 1;
        }),
      );
      const fn = await context.eval(
        `async () => { let acc = 0; for (let i = 0; i < ${N_CALLS + 200}; i++) { if (i === 200) mark.applySync(); acc = await inc.apply(undefined, [acc], { result: { promise: true } }) } return acc }`,
        { reference: true },
      );
      await fn.apply(undefined, [], { result: { promise: true, copy: true } });
      isolate.dispose();
      return roundTrips(arrivals);
    },
    async teardown() {},
  };
}

// ---- node:vm: a fresh context per run (no isolation from the host: a baseline, not a peer)
peers.nodevm = {
  label: 'node:vm',
  async setup() {},
  async runOnce() {
    const context = vm.createContext({});
    const fn = vm.runInContext(PROGRAM, context);
    if ((await fn()) !== 1) throw new Error('bad result');
  },
  async toolCall() {
    const arrivals = [];
    let recording = false;
    const context = vm.createContext({
      mark: () => void (recording = true),
      inc: async (x) => {
        if (recording) arrivals.push(now());
        return x + 1;
      },
    });
    const fn = vm.runInContext(
      `async () => { let acc = 0; for (let i = 0; i < ${N_CALLS + 200}; i++) { if (i === 200) mark(); acc = await inc(acc) } return acc }`,
      context,
    );
    await fn();
    return roundTrips(arrivals);
  },
  async teardown() {},
};

// How far past its bound a synchronous loop runs before the outcome reaches the host: the time
// bound (`timeout`), and the CPU budget (`cpuLimit`), where the CPU the budget counted past it
// (the worker's clock, `stats.cpuBudgetMs`) is measured too.
async function overshoot(kind) {
  const BOUND = 50;
  const ex = new IsolateExecutor(kind === 'cpu' ? { workers: 1, cpuLimit: BOUND } : { workers: 1, timeout: BOUND });
  const expected = kind === 'cpu' ? 'CPU_LIMIT' : 'TIMEOUT';
  await ex.execute({ code: 'async () => { for (;;) {} }' }); // warm-up: the worker's first start
  const samples = [];
  const counted = [];
  for (let i = 0; i < (QUICK ? 10 : 40); i++) {
    const t0 = now();
    const out = await ex.execute({ code: 'async () => { for (;;) {} }' });
    if (out.error?.code !== expected) throw new Error(`expected ${expected}, got ${JSON.stringify(out.error)}`);
    samples.push(toMs(now() - t0) - BOUND);
    counted.push(out.stats.cpuBudgetMs - BOUND);
    await pause(10);
  }
  await ex.close();
  return { bound: BOUND, ...stats(samples), ...(kind === 'cpu' ? { counted: stats(counted) } : {}) };
}

/** `codemode-worker --bench-prepare`: p50s (ms) of preparing and disposing isolates in the worker. */
function benchPrepare(runs) {
  const worker = path.join(__dirname, '..', 'codemode-worker');
  return JSON.parse(execFileSync(worker, ['--bench-prepare', String(runs)], { encoding: 'utf8' }));
}

/**
 * The throughput ceiling: with the pool saturated (WORKERS * 4 in flight), executions per second
 * against cores / (prepare + run + dispose), where prepare and dispose are the worker's own means
 * (--bench-prepare, right after each saturated phase) and run is the worker-side CPU time of the
 * program (the outcomes' `stats.cpuMs`, mean): throughput is bounded by the mean cost, which a
 * tail of slow preparations lifts above the p50. The p50s give a second, higher figure. Medians
 * over CEILING_ROUNDS rounds.
 */
async function ceiling() {
  const ex = new IsolateExecutor({ workers: WORKERS });
  const rates = [];
  const runs = [];
  const prepares = [];
  // CPU per execution the saturated phase actually cost, in the workers and in this process.
  const workerCpu = [];
  const hostCpu = [];
  try {
    await ex.execute({ code: PROGRAM });
    for (let r = 0; r < CEILING_ROUNDS; r++) {
      let done = 0;
      const once = () =>
        ex.execute({ code: PROGRAM }).then((o) => {
          if (o.result !== 1) throw new Error(`bad result ${JSON.stringify(o)}`);
          runs.push(o.stats.cpuMs);
          done++;
        });
      const pids = ex.workerPids();
      const w0 = pids.map(cpuMs);
      const h0 = process.cpuUsage();
      rates.push((await throughput(once, WORKERS * 4, CEILING_MS)).rate);
      const h = process.cpuUsage(h0);
      hostCpu.push((h.user + h.system) / 1000 / done);
      // A worker replaced meanwhile (none should be) leaves this round out.
      if (ex.workerPids().join() === pids.join()) workerCpu.push(pids.reduce((a, p, i) => a + cpuMs(p) - w0[i], 0) / done);
      prepares.push(benchPrepare(PREPARE_RUNS));
    }
  } finally {
    await ex.close();
  }
  // Each numeric field of --bench-prepare, median over the rounds.
  const prep = {};
  for (const [k, v] of Object.entries(prepares[0])) prep[k] = typeof v === 'number' ? median(prepares.map((p) => p[k])) : v;
  prep.runs = PREPARE_RUNS;
  prep.rounds = CEILING_ROUNDS;
  const runMs = mean(runs);
  const perRunMs = prep.runtimeFromSnapshotMeanMs + runMs + prep.disposeMeanMs;
  const result = { cores: CORES, workers: WORKERS, measured: median(rates), runMs, perRunMs, ceiling: (CORES * 1000) / perRunMs };
  result.p50PerRunMs = prep.runtimeFromSnapshotMs + median(runs) + prep.disposeMs;
  result.p50Ceiling = (CORES * 1000) / result.p50PerRunMs;
  result.hostCpuMs = median(hostCpu);
  if (workerCpu.length) {
    result.workerCpuMs = median(workerCpu);
    // The per-run cost as the workers paid it in the saturated phase itself (prepare + run +
    // dispose, CPU time): measured at the same moment as the throughput, on a VM whose speed
    // moves from one moment to the next.
    result.paidCeiling = (CORES * 1000) / result.workerCpuMs;
  }
  // CPU time of prepare + dispose, where the worker reports it: the same bound by CPU alone.
  if (typeof prep.prepareAndDisposeCpuMs === 'number') {
    result.cpuPerRunMs = prep.prepareAndDisposeCpuMs + runMs;
    result.cpuCeiling = (CORES * 1000) / result.cpuPerRunMs;
  }
  return { prep, ceiling: result };
}

async function main() {
  const t0 = Date.now();
  const order = ['codemode', 'ivm', 'nodevm'].filter((k) => peers[k]);
  const results = {};
  for (const key of order) {
    const p = peers[key];
    await p.setup();
    const lat = await latency(() => p.runOnce());
    const seq = await backToBack(() => p.runOnce());
    // The pool is kept busy with 4 executions in flight per worker; single-threaded peers get
    // the same concurrency (isolated-vm runs isolates on its own threads).
    const { rate: tput, halves: tputHalves } = await throughput(() => p.runOnce(), WORKERS * 4);
    const call = await p.toolCall();
    await p.teardown();
    results[key] = { label: p.label, lat, seq, tput, tputHalves, call };
    console.log(`${p.label}: execute p50 ${fmt(lat.p50)} ms, p99 ${fmt(lat.p99)} ms, back-to-back p50 ${fmt(seq.p50)} ms, ${tput.toFixed(0)} exec/s, tool call p50 ${fmt(call.p50, 1)} us`);
  }

  const { prep, ceiling: ceil } = await ceiling();
  console.log(`isolate preparation p50: ${JSON.stringify(prep)}`);
  console.log(`throughput: ${ceil.measured.toFixed(0)} exec/s, ceiling ${ceil.ceiling.toFixed(0)} exec/s (${CORES} cores / (${prep.runtimeFromSnapshotMeanMs} + ${ceil.runMs.toFixed(3)} + ${prep.disposeMeanMs} ms, means)), ${((100 * ceil.measured) / ceil.ceiling).toFixed(0)}%; by the p50s ${ceil.p50Ceiling.toFixed(0)} exec/s, ${((100 * ceil.measured) / ceil.p50Ceiling).toFixed(0)}%; by the workers' CPU per execution ${ceil.paidCeiling ? ceil.paidCeiling.toFixed(0) : 'n/a'} exec/s, ${ceil.paidCeiling ? ((100 * ceil.measured) / ceil.paidCeiling).toFixed(0) : 'n/a'}%; CPU per execution: workers ${fmt(ceil.workerCpuMs)} ms, host ${fmt(ceil.hostCpuMs)} ms`);

  const cpuEx = new IsolateExecutor({ workers: 1 });
  let jit;
  try {
    jit = await cpu.run({ executor: cpuEx, ivm, quick: QUICK });
  } finally {
    await cpuEx.close();
  }
  for (const w of jit.workloads) console.log(`cpu ${w.key}: this executor ${fmt(w.codemode.ms, 2)} ms, Node ${fmt(w.node.ms, 2)} ms (${cpu.ratio(w.codemode, w.node).toFixed(2)}x)${w.ivm ? `, isolated-vm ${fmt(w.ivm.ms, 2)} ms` : ''}`);

  const mem = memory.run();
  for (const m of mem) console.log(`memory, ${m.workers} workers: worker idle RSS ${fmt(m.workerRssMedian, 1)} MiB, host RSS ${fmt(m.host, 1)} MiB`);

  const over = await overshoot('time');
  console.log(`time bound overshoot (sync loop, ${over.bound} ms bound): p50 ${fmt(over.p50, 2)} ms, p99 ${fmt(over.p99, 2)} ms`);
  const cpuOver = await overshoot('cpu');
  console.log(`CPU budget overshoot (sync loop, ${cpuOver.bound} ms budget): host p50 ${fmt(cpuOver.p50, 2)} ms, p99 ${fmt(cpuOver.p99, 2)} ms; counted CPU p50 ${fmt(cpuOver.counted.p50, 2)} ms, p99 ${fmt(cpuOver.counted.p99, 2)} ms`);

  const appr = await approvals.run({ quick: QUICK });
  for (const line of approvals.lines(appr)) console.log(line);

  const hops = await trace.run({ quick: QUICK, workers: WORKERS });
  console.log(`where an execute's time goes (idle, p50 µs): ${hops.idle.steps.map((x) => `${x.hop} ${fmt(x.p50, 1)}`).join(', ')}`);

  // A daemon that cannot be measured leaves its rows unmeasured, not the whole report.
  const remote = await daemon.run().catch((e) => ({ error: e instanceof Error ? e.message : String(e) }));
  if (remote.error) console.log(`tool call over connect(): not measured: ${remote.error}`);
  else console.log(`tool call over connect(): p50 ${fmt(remote.overConnect.toolCall.p50, 0)} µs, in process ${fmt(remote.inProcess.toolCall.p50, 0)} µs (${fmt(remote.overConnect.toolCall.p50 / remote.inProcess.toolCall.p50, 2)}x)`);

  // The same execute and tool call under Bun and Deno beside this Node (bench/hosts.mjs).
  const hostsBench = await import('./hosts.mjs');
  const hosts = await hostsBench.run().catch((e) => [{ host: 'hosts', error: e instanceof Error ? e.message : String(e) }]);
  const hostsTable = hostsBench.table(hosts);
  console.log(hostsTable);

  // Tenants: a switch's cost and fair shares under a flood (bench/tenants.js).
  const tenants = require('./tenants');
  const tenantsTable = await tenants
    .run({ quick: QUICK })
    .then(tenants.table)
    .catch((e) => `Not measured: ${e instanceof Error ? e.message : String(e)}`);
  console.log(tenantsTable);

  // Type-check before run: cold and warm checks against 36 tools (bench/typecheck.js).
  const typecheckBench = require('./typecheck');
  const typecheckTable = await typecheckBench
    .run({ quick: QUICK })
    .then(typecheckBench.table)
    .catch((e) => `Not measured: ${e instanceof Error ? e.message : String(e)}`);
  console.log(typecheckTable);
  const nativeBench = await import('./typecheck-native.mjs');
  const nativeTable = nativeBench.table(await nativeBench.run({ quick: QUICK }).catch((e) => ({ error: e instanceof Error ? e.message : String(e) })));
  console.log(nativeTable);

  const c = results.codemode;
  const figures = {
    executeIdleMs: guard.figure('execute p50, idle', c.lat.p50, c.lat.halves, 'ms'),
    executeBackToBackMs: guard.figure('execute p50, back to back', c.seq.p50, c.seq.halves, 'ms'),
    execPerSec: guard.figure('exec/s, pool busy', c.tput, c.tputHalves, 'exec/s', 'higher'),
    toolCallUs: guard.figure('tool call p50, in process', c.call.p50, c.call.halves, 'µs'),
    traceIdleUs: guard.figure('execute p50, idle, hops on (bench/trace.js)', hops.idle.total.p50, hops.idle.total.halves, 'µs'),
  };
  if (!remote.error) figures.daemonToolCallUs = guard.figure('tool call p50, over connect()', remote.overConnect.toolCall.p50, remote.overConnect.toolCall.halves, 'µs');
  const moved = guard.compare(guard.committed(guard.committedDoc()), figures);
  for (const m of moved) console.log(`guard: ${m.label}: ${fmt(m.value, 3)} ${m.unit} (committed ${m.before === null ? 'none' : fmt(m.before, 3)}, noise ${fmt(m.noise, 3)}): ${m.verdict.replace(/\*/g, '')}`);

  const file = writeReport({
    settings: { quick: QUICK, program: PROGRAM, gapMs: GAP_MS, nLat: N_LAT, inFlight: WORKERS * 4, throughputMs: THROUGHPUT_MS, ceilingMs: CEILING_MS, nCalls: N_CALLS, workers: WORKERS, cores: CORES },
    order,
    results,
    ivmMissing: peers.ivmMissing,
    prep,
    ceiling: ceil,
    jit,
    memory: mem,
    overshoot: over,
    cpuOvershoot: cpuOver,
    approvals: appr,
    hops,
    remote,
    hostsTable,
    tenantsTable,
    typecheckTable,
    nativeTable,
    figures,
    moved,
  });
  console.log(`\nwrote ${path.relative(path.join(__dirname, '..'), file)} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
