'use strict';
// Side-by-side: this executor, isolated-vm (fresh isolate per run) and node:vm (fresh context per
// run) on the same programs, in one run on one machine. Reports p50/p99 latency, throughput with
// the whole pool busy, and one tool-call round trip; prints ratios; writes docs/benchmarks.md.
//
// Usage: npm run bench [-- --quick]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const vm = require('node:vm');
const { IsolateExecutor } = require('..');

const QUICK = process.argv.includes('--quick');
const N_LAT = QUICK ? 300 : 2000;
const THROUGHPUT_MS = QUICK ? 1500 : 5000;
const N_CALLS = QUICK ? 1000 : 5000;
const WORKERS = Math.max(2, os.availableParallelism());
const PROGRAM = 'async () => 1';

const now = () => process.hrtime.bigint();
const toMs = (ns) => Number(ns) / 1e6;
const toUs = (ns) => Number(ns) / 1e3;

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: pct(s, 50), p99: pct(s, 99), n: s.length };
}

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

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
  return stats(samples);
}

// Back to back: the next run starts the moment the previous one resolves.
async function backToBack(runOnce) {
  const samples = [];
  for (let i = 0; i < N_LAT; i++) {
    const t0 = now();
    await runOnce();
    samples.push(toMs(now() - t0));
  }
  return stats(samples);
}

async function throughput(runOnce, concurrency) {
  let done = 0;
  const t0 = now();
  // A clock check, not a timer: node:vm's runs settle in microtasks and would starve a timer.
  const end = t0 + BigInt(THROUGHPUT_MS) * 1_000_000n;
  const lane = async () => {
    while (now() < end) {
      await runOnce();
      done++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return done / (toMs(now() - t0) / 1000);
}

// Tool-call round trip: the program awaits N sequential calls; the host timestamps arrivals,
// so consecutive arrivals are exactly one sandbox -> host -> sandbox round trip.
function roundTrips(arrivals) {
  const d = [];
  for (let i = 1; i < arrivals.length; i++) d.push(toUs(arrivals[i] - arrivals[i - 1]));
  return stats(d);
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

const fmt = (v, d = 3) => (v === undefined ? 'n/a' : v.toFixed(d));

// How far past its time bound a synchronous loop runs before the outcome reaches the host.
async function overshoot() {
  const BOUND = 50;
  const ex = new IsolateExecutor({ workers: 1, timeout: BOUND });
  await ex.execute({ code: 'async () => { for (;;) {} }' }); // warm-up: the worker's first start
  const samples = [];
  for (let i = 0; i < (QUICK ? 10 : 40); i++) {
    const t0 = now();
    const out = await ex.execute({ code: 'async () => { for (;;) {} }' });
    if (out.error?.code !== 'TIMEOUT') throw new Error(`expected TIMEOUT, got ${JSON.stringify(out.error)}`);
    samples.push(toMs(now() - t0) - BOUND);
    await pause(10);
  }
  await ex.close();
  return { bound: BOUND, ...stats(samples) };
}

async function main() {
  const order = ['codemode', 'ivm', 'nodevm'].filter((k) => peers[k]);
  const results = {};
  for (const key of order) {
    const p = peers[key];
    await p.setup();
    const lat = await latency(() => p.runOnce());
    const seq = await backToBack(() => p.runOnce());
    // The pool is kept busy with 4 executions in flight per worker; single-threaded peers get
    // the same concurrency (isolated-vm runs isolates on its own threads).
    const tput = await throughput(() => p.runOnce(), WORKERS * 4);
    const call = await p.toolCall();
    await p.teardown();
    results[key] = { lat, seq, tput, call };
    console.log(`${p.label}: execute p50 ${fmt(lat.p50)} ms, p99 ${fmt(lat.p99)} ms, back-to-back p50 ${fmt(seq.p50)} ms, ${tput.toFixed(0)} exec/s, tool call p50 ${fmt(call.p50, 1)} us`);
  }
  // Isolate preparation, measured inside the worker binary: an isolate and context alone (before
  // the runtime), with the runtime installed by running its bootstrap, and from the snapshot.
  const prep = JSON.parse(require('node:child_process').execFileSync(path.join(__dirname, '..', 'codemode-worker'), ['--bench-prepare', QUICK ? '50' : '300'], { encoding: 'utf8' }));
  console.log(`isolate preparation p50: bare ${prep.bareIsolateAndContextMs} ms, runtime by bootstrap ${prep.runtimeByBootstrapMs} ms, runtime from snapshot ${prep.runtimeFromSnapshotMs} ms, dispose ${prep.disposeMs} ms`);
  const over = await overshoot();
  console.log(`time bound overshoot (sync loop, ${over.bound} ms bound): p50 ${fmt(over.p50, 2)} ms, p99 ${fmt(over.p99, 2)} ms`);
  const c = results.codemode;
  const ratio = (a, b) => (b ? `${(a / b).toFixed(2)}x` : 'n/a');
  const rows = order.map((k) => {
    const r = results[k];
    return `| ${peers[k].label} | ${fmt(r.lat.p50)} | ${fmt(r.lat.p99)} | ${fmt(r.seq.p50)} | ${r.tput.toFixed(0)} | ${fmt(r.call.p50, 1)} | ${fmt(r.call.p99, 1)} | ${ratio(r.lat.p50, c.lat.p50)} | ${ratio(c.tput, r.tput)} | ${ratio(r.call.p50, c.call.p50)} |`;
  });
  const doc = `# Benchmarks

Generated by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores
(${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}. All peers ran in the same process, one after
another, on the same machine; compare ratios, not absolute numbers, across machines.

- **execute**: \`${PROGRAM}\` end to end, one at a time, ${GAP_MS} ms apart (${N_LAT} runs after
  warm-up), i.e. against an idle executor. Every peer
  gets a fresh isolate or context per run: this executor in a worker process (prepared while
  idle), isolated-vm with \`new Isolate\` + context + compile + call, node:vm with
  \`createContext\` + \`runInContext\` (node:vm shares the host's heap and process; it is a
  baseline, not an isolation peer).
- **back-to-back**: the same, each run starting the moment the previous resolved (no idle gap).
- **exec/s**: ${WORKERS * 4} executions kept in flight for ${THROUGHPUT_MS / 1000} s (this executor: ${WORKERS} workers).
- **tool call**: one sandbox -> host -> sandbox round trip, from a program awaiting
  ${N_CALLS} sequential calls (host-side arrival deltas).
- Ratios: latency and tool call as *peer / this executor* (above 1 means this executor is faster),
  throughput as *this executor / peer*.
${peers.ivmMissing ? `\nisolated-vm was not measured: ${peers.ivmMissing}\n` : ''}
| executor | execute p50 ms | execute p99 ms | back-to-back p50 ms | exec/s | tool call p50 us | tool call p99 us | execute speed-up | throughput ratio | tool-call speed-up |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}

## Isolate preparation

Measured inside the worker (\`codemode-worker --bench-prepare\`, p50 of ${prep.runs}): what a fresh
isolate costs before the runtime existed, with the runtime installed by running its bootstrap,
and with the runtime deserialized from the worker's startup snapshot (what ships). The worker
prepares the next isolate while idle, so this cost is off an idle executor's critical path; it
bounds throughput under load.

| isolate + context, no runtime | runtime by bootstrap | runtime from snapshot | dispose |
| --- | --- | --- | --- |
| ${prep.bareIsolateAndContextMs} ms | ${prep.runtimeByBootstrapMs} ms | ${prep.runtimeFromSnapshotMs} ms | ${prep.disposeMs} ms |

## Time bound overshoot

A \`for (;;) {}\` under a ${over.bound} ms \`timeout\`, ${over.n} runs: the outcome reached the host
${fmt(over.p50, 2)} ms (p50) and ${fmt(over.p99, 2)} ms (p99) after the bound passed (host clock, from
\`execute\` to the resolved outcome, minus the bound).

Targets (issue 2): execute p50 <= 0.3 ms, tool call p50 <= 25 us, >= 3,000 executions/s on 2 cores.
`;
  fs.writeFileSync(path.join(__dirname, '..', 'docs', 'benchmarks.md'), doc);
  console.log('\n' + rows.join('\n'));
  console.log('\nwrote docs/benchmarks.md');
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
