'use strict';
// Writes docs/benchmarks.md from what bench.js measured: every figure that has a target is shown
// next to it with whether it is met, and the targets are summed up at the top.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ratio: jitRatio } = require('./cpu');
const trace = require('./trace');
const guard = require('./guard');

const TARGETS = {
  prepareMs: 1.0, // preparing an isolate (runtime from the snapshot), p50 inside the worker
  ceilingShare: 0.9, // exec/s with the pool saturated, as a share of the per-run cost's ceiling
  toolCallUs: 40, // tool-call round trip p50, in process
  idleExecuteMs: 0.5, // execute p50 against an idle executor
  idleSpeedup: 3, // isolated-vm's idle execute p50 / this executor's
  backToBackSpeedup: 2, // isolated-vm's back-to-back p50 / this executor's
  daemonRatio: 1.5, // tool-call round trip over connect() / in process
  jitRatio: 1.1, // each CPU-bound workload: this executor's time / plain Node's
  idleRssMB: 30, // idle RSS per worker, in MB (10^6 bytes)
};

/** `v` with `d` decimals, or n/a. */
const fmt = (v, d = 3) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(d) : 'n/a');
const met = (ok) => (ok ? 'yes' : '**no**');
const MiB_PER_MB = 1e6 / 1048576;
/** The lowest and highest of the rounds' medians of a CPU-bound workload. */
const range = (env) => `${fmt(env.roundsMs[0], 1)}–${fmt(env.roundsMs[1], 1)}`;

/** --bench-prepare fields: label, and whether the preparation target applies. */
const PREP_ROWS = [
  ['bareIsolateAndContextMs', 'isolate + context, no runtime (created and dropped)'],
  ['runtimeByBootstrapMs', 'runtime installed by running its bootstrap'],
  ['runtimeFromSnapshotMs', '**preparation as shipped**: runtime from the startup snapshot', true],
  ['snapshotIsolateMs', 'of which: the isolate from the snapshot'],
  ['snapshotContextMs', 'of which: the context from the snapshot'],
  ['disposeMs', 'dispose'],
  ['runtimeFromSnapshotMeanMs', 'preparation as shipped, mean'],
  ['disposeMeanMs', 'dispose, mean'],
  ['prepareAndDisposeCpuMs', 'prepare + dispose, CPU time of the worker thread (mean)'],
];
// Per-process figures of --bench-prepare, not per run; listed after the table.
const PREP_STARTUP = ['initV8Ms', 'buildSnapshotMs'];
const PREP_SKIP = new Set(['runs', 'rounds', 'snapshotEmbedded', ...PREP_STARTUP]);

function prepTable(prep) {
  const rows = [];
  const known = new Set(PREP_ROWS.map(([k]) => k));
  for (const [key, label, targeted] of PREP_ROWS) {
    if (typeof prep[key] !== 'number') continue;
    const target = targeted ? `<= ${TARGETS.prepareMs.toFixed(1)} ms` : '';
    rows.push(`| ${label} | ${fmt(prep[key])} | ${target} | ${targeted ? met(prep[key] <= TARGETS.prepareMs) : ''} |`);
  }
  // Fields the worker reports that this table does not know yet still show up.
  for (const [key, v] of Object.entries(prep)) {
    if (typeof v === 'number' && !known.has(key) && !PREP_SKIP.has(key)) rows.push(`| \`${key}\` | ${fmt(v)} | | |`);
  }
  return rows;
}

function writeReport(r) {
  const s = r.settings;
  const c = r.results.codemode;
  const ratio = (a, b) => (b ? `${(a / b).toFixed(2)}x` : 'n/a');
  const toolOk = c.call.p50 <= TARGETS.toolCallUs;
  const peerRows = r.order.map((k) => {
    const x = r.results[k];
    const target = k === 'codemode' ? met(toolOk) : '';
    return `| ${x.label} | ${fmt(x.lat.p50)} | ${fmt(x.lat.p99)} | ${fmt(x.seq.p50)} | ${x.tput.toFixed(0)} | ${fmt(x.call.p50, 1)} | ${target} | ${fmt(x.call.p99, 1)} | ${ratio(x.lat.p50, c.lat.p50)} | ${ratio(c.tput, x.tput)} | ${ratio(x.call.p50, c.call.p50)} |`;
  });

  const ceil = r.ceiling;
  // The target is judged on the per-run cost the workers paid in the saturated phase itself;
  // without a reading of their CPU time (a worker replaced in every round), on --bench-prepare's.
  const paid = ceil.paidCeiling ?? ceil.ceiling;
  const share = ceil.measured / paid;
  const meanShare = ceil.measured / ceil.ceiling;
  const p50Share = ceil.measured / ceil.p50Ceiling;
  const prep = r.prep;
  const prepOk = prep.runtimeFromSnapshotMs <= TARGETS.prepareMs;

  const jit = r.jit;
  const nodeLabel = `Node ${jit.node.version}`;
  const jitRows = jit.workloads.map((w) => {
    const q = jitRatio(w.codemode, w.node);
    return `| ${w.label} | ${fmt(w.codemode.ms, 2)} | ${range(w.codemode)} | ${w.ivm ? fmt(w.ivm.ms, 2) : 'n/a'} | ${fmt(w.node.ms, 2)} | ${range(w.node)} | ${q.toFixed(2)}x | ${met(q <= TARGETS.jitRatio)} | ${w.ivm ? `${jitRatio(w.ivm, w.node).toFixed(2)}x` : 'n/a'} |`;
  });
  const fl = jit.flagNode;
  const flagRows = fl
    ? jit.workloads.map((w) => {
        const cost = jitRatio(w.flagOn, w.flagOff) - 1;
        return `| ${w.label} | ${fmt(w.flagOff.ms, 2)} | ${fmt(w.flagOn.ms, 2)} | ${cost >= 0 ? '+' : ''}${(100 * cost).toFixed(1)}% | ${jitRatio(w.codemode, w.flagOn).toFixed(2)}x |`;
      })
    : [];
  const jitRatios = jit.workloads.map((w) => jitRatio(w.codemode, w.node));
  const worstJit = Math.max(...jitRatios);

  const idleTargetMiB = TARGETS.idleRssMB * MiB_PER_MB;
  const worstIdle = Math.max(...r.memory.map((m) => m.workerRssMax));
  const memRows = r.memory.map(
    (m) =>
      `| ${m.workers} | ${fmt(m.workerRssMedian, 1)} (max ${fmt(m.workerRssMax, 1)}) | ${met(m.workerRssMax <= idleTargetMiB)} | ${fmt(m.host, 1)} (${fmt(m.hostBefore, 1)} before the pool) | ${fmt(m.totalRss, 0)} | ${fmt(m.totalPss, 0)} |`,
  );

  const startup = PREP_STARTUP.filter((k) => typeof prep[k] === 'number')
    .map((k) => `\`${k}\` ${fmt(prep[k])} ms`)
    .join(', ');

  const iv = r.results.ivm;
  const idleSpeedup = iv ? iv.lat.p50 / c.lat.p50 : NaN;
  const seqSpeedup = iv ? iv.seq.p50 / c.seq.p50 : NaN;
  // Without isolated-vm (it could not be installed) the ratios are not measured.
  const vsIvm = (ok) => (iv ? met(ok) : 'n/a');
  const idleOk = c.lat.p50 <= TARGETS.idleExecuteMs && idleSpeedup >= TARGETS.idleSpeedup;
  const remote = r.remote;
  const daemonRatio = remote.error ? NaN : remote.overConnect.toolCall.p50 / remote.inProcess.toolCall.p50;
  const movedRows = r.moved.map(
    (m) => `| ${m.label} | ${m.before === null ? 'none' : fmt(m.before)} | ${fmt(m.value)} | ${m.unit} | ${fmt(m.noise)} | ${m.allowed === undefined ? '' : fmt(m.allowed)} | ${m.verdict} |`,
  );

  const ap = r.approvals;
  const apRows = ap.rows.map(
    (x) =>
      `| ${x.calls} + 1 | ${fmt(x.fresh.p50)} | ${fmt(x.fresh.p99)} | ${fmt(x.toPause.p50)} | ${fmt(x.toPause.p99)} | ${fmt(x.resume.p50)} | ${fmt(x.resume.p99)} | ${ratio(x.resume.p50, x.fresh.p50)} | ${x.tokenChars} |`,
  );

  const doc = `# Benchmarks

Generated by \`npm run bench${s.quick ? ' -- --quick' : ''}\` on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores
(${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}. All peers ran in the same process, one after
another, on the same machine; compare ratios, not absolute numbers, across machines.${s.quick ? '\n*A `--quick` run: fewer samples, for a check only.*' : ''}

## Targets

| target | figure | met |
| --- | --- | --- |
| isolate preparation (runtime from the snapshot, p50 in the worker) <= ${TARGETS.prepareMs.toFixed(1)} ms | ${fmt(prep.runtimeFromSnapshotMs)} ms | ${met(prepOk)} |
| exec/s with the pool saturated >= ${100 * TARGETS.ceilingShare}% of the ceiling the per-run cost allows | ${ceil.measured.toFixed(0)} of ${paid.toFixed(0)} (${(100 * share).toFixed(0)}%) | ${met(share >= TARGETS.ceilingShare)} |
| execute against an idle executor: p50 <= ${TARGETS.idleExecuteMs} ms and >= ${TARGETS.idleSpeedup}x faster than isolated-vm's fresh isolate | ${fmt(c.lat.p50)} ms, ${fmt(idleSpeedup, 2)}x | ${vsIvm(idleOk)} |
| back to back: >= ${TARGETS.backToBackSpeedup}x faster than isolated-vm | ${fmt(c.seq.p50)} ms, ${fmt(seqSpeedup, 2)}x | ${vsIvm(seqSpeedup >= TARGETS.backToBackSpeedup)} |
| tool-call round trip p50 <= ${TARGETS.toolCallUs} us | ${fmt(c.call.p50, 1)} us | ${met(toolOk)} |
| tool-call round trip over \`connect()\` to a local daemon <= ${TARGETS.daemonRatio}x in process | ${remote.error ? `not measured: ${remote.error}` : `${fmt(remote.overConnect.toolCall.p50, 0)} vs ${fmt(remote.inProcess.toolCall.p50, 0)} us, ${fmt(daemonRatio, 2)}x`} | ${remote.error ? 'n/a' : met(daemonRatio <= TARGETS.daemonRatio)} |
| CPU-bound code within ${Math.round(100 * (TARGETS.jitRatio - 1))}% of plain Node, each workload | worst ${worstJit.toFixed(2)}x (${jit.workloads.map((w, i) => `${w.key} ${jitRatios[i].toFixed(2)}x`).join(', ')}) | ${met(worstJit <= TARGETS.jitRatio)} |
| idle RSS per worker <= ${TARGETS.idleRssMB} MB (${idleTargetMiB.toFixed(1)} MiB) | ${fmt(worstIdle, 1)} MiB (largest, at ${r.memory.map((m) => m.workers).join(', ')} workers) | ${met(worstIdle <= idleTargetMiB)} |

## Side by side

- **execute**: \`${s.program}\` end to end, one at a time, ${s.gapMs} ms apart (${s.nLat} runs after
  warm-up), i.e. against an idle executor. Every peer
  gets a fresh isolate or context per run: this executor in a worker process (prepared while
  idle), isolated-vm with \`new Isolate\` + context + compile + call, node:vm with
  \`createContext\` + \`runInContext\` (node:vm shares the host's heap and process; it is a
  baseline, not an isolation peer). No target.
- **back-to-back**: the same, each run starting the moment the previous resolved (no idle gap).
- **exec/s**: ${s.inFlight} executions kept in flight for ${s.throughputMs / 1000} s (this executor: ${s.workers} workers).
- **tool call**: one sandbox -> host -> sandbox round trip, from a program awaiting
  ${s.nCalls} sequential calls (host-side arrival deltas). Target: p50 <= ${TARGETS.toolCallUs} us.
- Ratios: latency and tool call as *peer / this executor* (above 1 means this executor is faster),
  throughput as *this executor / peer*.
${r.ivmMissing ? `\nisolated-vm was not measured: ${r.ivmMissing}\n` : ''}
| executor | execute p50 ms | execute p99 ms | back-to-back p50 ms | exec/s | tool call p50 us | p50 <= ${TARGETS.toolCallUs} us | tool call p99 us | execute speed-up | throughput ratio | tool-call speed-up |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${peerRows.join('\n')}

## Where an execute's time goes

\`npm run bench:trace\` (\`bench/trace.js\`, also run here): the executor's \`hops\` option (lib/hops.js)
on \`${r.hops.program}\`, ${r.hops.n} executes ${r.hops.gapMs} ms apart (idle) and ${r.hops.n} back to back, ${r.hops.workers} workers. Each
row is the time from the step before it to this one, p50 and p99 over the runs; every step is
read from the machine's monotonic clock, which the host, the pool and the worker share. The
steps' p50s do not add up to the execute's p50 exactly (each is a median of its own), and a
share can be below zero: host and worker run in parallel, and the worker may read the frame
before the host's write call has returned (\`workerRead\` before \`written\`; the time the host's
thread then waits for its CPU shows in \`written\`). The option costs a few clock reads per step,
so the total here is a little above the side-by-side figure.

${trace.table(r.hops)}

Cross-thread handoffs per execute, in process: none on the run path. \`execute()\` encodes the
request and writes it to the worker's stdin on the JavaScript thread (crates/pool \`input.rs\`);
the worker's main thread reads it, runs the program and writes the outcome; Node's own loop reads
that from the worker's stdout (src/uv.rs) and the outcome reaches JavaScript one turn of the same
loop later (the addon's threadsafe function: an eventfd written and read on that thread, the
\`delivered\` row). That is two wake-ups across processes: the worker's, sleeping in \`read\` while
idle, and the host's, sleeping in \`epoll_wait\`. A tool call is the same two, and the worker's is
skipped when the answer comes within 200 µs: a run waiting for the host polls before it sleeps
(crates/worker \`process/io.rs\`, \`limits::ANSWER_POLL_US\`; only while the run has calls in
flight, and that CPU is not counted as the program's). With a
\`cpuLimit\` the worker also wakes its cancel thread to time the budget, beside the run, not
before it.

What the trace showed, and what was done. The idle execute took 1.9 ms, p50, where the run
computed for 0.14 ms: the worker's answer woke the host's thread onto the worker's own CPU, and
the scheduler let the worker run on through disposing the spent isolate and preparing the next
one (1.3-1.8 ms) before the host's thread got that CPU, the other one idle. The worker now yields
the CPU right after writing the outcome (0.35-0.39 ms). A tool call's round trip was about 100 µs:
mostly waking a halted virtual CPU on each side (15 µs with both processes pinned to one CPU); the
worker's poll for the answer halves it. The pool no longer sets the worker's memory ceiling when
it is unchanged (six system calls on a root host). What is left: on the host, the validation,
the request's crossing into the addon and its encoding (\`validated\`, \`encoded\`), the turn of
the loop that delivers the outcome and its conversion to JavaScript (\`delivered\`), and the
promise's reaction (\`resumed\`); in the worker, the program's parse (oxc, for the entry contract:
one expression, imports lifted, TypeScript) and V8 compiling and evaluating the module in a fresh
context, whose pages are cold (\`parsed\`, \`evaluated\`). After a longer idle (50 ms) every step
is about 2.5 times slower (1.0 ms in all), the caches and the CPUs' own state gone cold. Back to
back, the run waits in the worker's stdin for the isolate its worker is still preparing
(\`workerRead\`): preparation bounds back-to-back throughput ("Isolate preparation").

## Tool calls over \`connect()\`

${remote.error ? `Not measured in this run: ${remote.error}` : `\`bench/daemon.js\` (also \`npm run bench:daemon\`): a daemon started through the CLI on loopback,
${remote.workers} workers, against an in-process executor of the same size; ${remote.calls} sequential calls per run, the
round trip being the run's \`wallMs\` / ${remote.calls}. Target: over \`connect()\` at most ${TARGETS.daemonRatio}x in process.

| | in process | over \`connect()\` | ratio |
| --- | --- | --- | --- |
| execute p50 ms | ${fmt(remote.inProcess.execute.p50)} | ${fmt(remote.overConnect.execute.p50)} | ${fmt(remote.overConnect.execute.p50 / remote.inProcess.execute.p50, 2)}x |
| tool-call round trip p50 µs | ${fmt(remote.inProcess.toolCall.p50, 0)} | ${fmt(remote.overConnect.toolCall.p50, 0)} | ${fmt(daemonRatio, 2)}x |
`}
A call over \`connect()\` crosses four process boundaries where one in process crosses two: the
worker to the daemon, the daemon to the client and back, the daemon to the worker. Each side
that sleeps while it waits costs a wake-up when the answer comes. What keeps them few: the
daemon's own thread reads the workers' output (crates/daemon \`watch.rs\`; a reader thread per
worker used to hand each frame to it, one more wake-up), it polls for 200 µs after sending a
client a call or taking its answer (\`conn.rs\`), and the worker polls as long for its
answer (\`limits::ANSWER_POLL_US\`; at 50 µs the answer through a daemon came back just too late
as often as not: 135-159 µs against 52 µs in process, two full runs). Measured side by side on
this machine, three full \`bench:daemon\` runs each, minutes apart: 81-104 µs (1.54-2.02x in
process) with the reader threads and the daemon asleep between messages, 63-71 µs (1.13-1.39x)
with both changes. What is left is the client's own wake-up and its JavaScript (the message's
JSON and its checks, the WebSocket frame), and the daemon's JSON.

## Hosts

\`bench/hosts.mjs\` (also \`npm run bench:hosts\`): the same measurement run by this Node, by Bun and by
Deno (each from the npm registry, at the version the README's host table names), loading this
build: an idle executor of 2 workers, executes 5 ms apart, and a tool call's round trip (one
run's wall time over 100 sequential calls, the median of 7 runs). Under Bun the values cross
through the JavaScript codec (\`lib/value-codec.js\`; Bun has no \`v8.Serializer\`); under Bun and
Deno each worker's output is read on a thread of its own and reaches JavaScript through N-API's
threadsafe functions (their loops are not libuv's), one wake-up more per frame than Node's path.

${r.hostsTable}

## Tenants

\`bench/tenants.js\` (also \`node bench/tenants.js\`; [tenants.md](tenants.md)): an executor of two
workers. A new tenant's first run with a worker of no tenant free, beside a warm tenant's run;
a tenant switch (every worker already ran another tenant's code: one is retired and its
replacement spawned before the run); and fair shares, tenant B's quick executes alone and while
tenant A floods the pool, A held to \`maxRunning: 1\` and A unbounded (turns alone).

${r.tenantsTable}

## Type check

\`bench/typecheck.js\` (also \`node bench/typecheck.js\`; [typecheck.md](typecheck.md)): a 49-line
program checked against the three npm MCP servers' 36 tools as the gateway declares them, on the
checker's thread (a warm language service per declaration set); the target is a warm p50 of
30 ms or less.

${r.typecheckTable}

The native TypeScript preview (\`@typescript/native-preview\`, its unstable sync API; a Go process
served the files from memory), on the same check (\`bench/typecheck-native.mjs\`), raw: its
diagnostics unfiltered, every tenth program carrying a planted mistake.

${r.nativeTable}

## Regression guard

This run's headline figures against those the committed docs/benchmarks.md held (\`bench/guard.js\`).
A figure's noise is the spread between the p50s (or rates) of its first and second half in its
run; it has moved when it differs by more than twice the larger noise of the two runs and by more
than 5%. It reports; nothing fails on time.

| figure | committed | this run | unit | noise | allowed | verdict |
| --- | --- | --- | --- | --- | --- | --- |
${movedRows.join('\n')}

${guard.block(r.figures)}

## Throughput ceiling

The pool (${ceil.workers} workers on ${ceil.cores} cores) kept saturated with ${s.inFlight} executions of \`${s.program}\`
in flight for ${s.ceilingMs / 1000} s, against the ceiling the per-run cost allows: cores / (prepare + run +
dispose). The per-run cost is read three ways. The target is judged on the first: the CPU time
the workers spent per execution in the saturated phase itself (\`/proc/<pid>/stat\`; every
execution's prepare, run and dispose, as paid), read at the same moment as the throughput. On
this machine (a VM) speed moves from one moment to the next: the same build's preparation p50
measured between about 1.5 and 2.5 ms across runs, so a cost measured seconds apart can put the
ceiling on either side of the throughput. The other two come from \`codemode-worker
--bench-prepare\` right after each saturated phase: its means (throughput is bounded by the mean
cost, which a tail of slower preparations lifts above the p50), and its p50s (the table under
"Isolate preparation"); run is the program's worker-side CPU time (\`stats.cpuMs\`). Medians of
${prep.rounds} round${prep.rounds > 1 ? 's' : ''}. The host process shares the cores and is in none of them. A worker is handed its next
run with its previous run's \`Done\` (docs/architecture.md, "Worker"), so it does not wait on the
host between runs.

| per-run cost | prepare ms | run ms | dispose ms | per run ms | ceiling exec/s | measured exec/s | share of ceiling | target | met |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| workers' CPU time in the saturated phase |  |  |  | ${fmt(ceil.workerCpuMs)} | ${paid.toFixed(0)} | ${ceil.measured.toFixed(0)} | ${(100 * share).toFixed(0)}% | >= ${100 * TARGETS.ceilingShare}% | ${met(share >= TARGETS.ceilingShare)} |
| \`--bench-prepare\` means | ${fmt(prep.runtimeFromSnapshotMeanMs)} | ${fmt(ceil.runMs)} | ${fmt(prep.disposeMeanMs)} | ${fmt(ceil.perRunMs)} | ${ceil.ceiling.toFixed(0)} | ${ceil.measured.toFixed(0)} | ${(100 * meanShare).toFixed(0)}% |  |  |
| \`--bench-prepare\` p50s | ${fmt(prep.runtimeFromSnapshotMs)} |  | ${fmt(prep.disposeMs)} | ${fmt(ceil.p50PerRunMs)} | ${ceil.p50Ceiling.toFixed(0)} | ${ceil.measured.toFixed(0)} | ${(100 * p50Share).toFixed(0)}% |  |  |
${
  ceil.cpuCeiling
    ? `\nBy CPU time alone (\`prepareAndDisposeCpuMs\` ${fmt(prep.prepareAndDisposeCpuMs)} ms + run): ceiling ${ceil.cpuCeiling.toFixed(0)} exec/s, measured ${(100 * (ceil.measured / ceil.cpuCeiling)).toFixed(0)}% of it.\n`
    : ''
}
What the saturated phase actually cost per execution, in CPU time (\`/proc/<pid>/stat\` of the
workers, \`process.cpuUsage()\` of the host; medians of the rounds): the workers ${fmt(ceil.workerCpuMs)} ms,
the host process ${fmt(ceil.hostCpuMs)} ms. With both on the same cores, they allow ${ceil.workerCpuMs ? ((ceil.cores * 1000) / (ceil.workerCpuMs + ceil.hostCpuMs)).toFixed(0) : 'n/a'} exec/s.

## Isolate preparation

Measured inside the worker (\`codemode-worker --bench-prepare ${prep.runs}\`: p50 of ${prep.runs}, median of ${prep.rounds} run${prep.rounds > 1 ? 's' : ''}): what a fresh
isolate costs before the runtime existed, with the runtime installed by running its bootstrap,
and with the runtime deserialized from the worker's startup snapshot (what ships). The worker
prepares the next isolate while idle, so this cost is off an idle executor's critical path; it
bounds throughput under load.

| step | ms (p50 unless marked) | target | met |
| --- | --- | --- | --- |
${prepTable(prep).join('\n')}
${startup ? `\nOnce per worker process, not per run: ${startup}.\n` : ''}
Why the 1.0 ms target is not met: V8 itself. The first row, an isolate and a context from V8's
own snapshot with nothing of ours in it, costs about what preparation as shipped does, and of
preparation the isolate from the snapshot is two thirds and the context one third. The move from
V8 13.0 (the \`v8\` crate 130: no pointer compression) to V8 15.2 with pointer compression and the
heap sandbox (the crate 152; isolates of one process share one read-only heap) did not move it:
measured side by side in one run on this machine (3 rounds, the engines alternating), preparation
p50 1.31 ms on 13.0 and 1.32 ms on 15.2, an idle execute 2.04 and 2.03 ms, back to back 1.59 and
1.62 ms. The V8 flags tried on 15.2 cost rather than save (\`--bench-prepare 300\`, p50 of the
runtime from the snapshot against 1.30-1.37 ms as shipped): \`--single-threaded-gc\` 1.35 ms,
\`--single-threaded\` 1.36 ms, \`--no-concurrent-marking --no-parallel-scavenge\` 1.37 ms. On V8
13.0 a profile of a saturated worker put 52% of its CPU in \`Isolate::New\` (deserializing the
startup snapshot), 28% in \`Context::New\`, 7% in disposing and 16% in page faults on the fresh
heap pages; the run itself was 2%. Preparing the next isolate on a second thread cannot raise
throughput here (the saturated pool already spends all of both cores).

## Code at JIT speed

Four CPU-bound programs, the same text in each environment: this executor (a fresh isolate in a
worker, V8 ${jit.workerV8}), isolated-vm (a fresh isolate in this process) and plain ${nodeLabel} (V8 ${jit.node.v8}; the main
context of a fresh \`node\` process). Each program builds its input inside the sandbox (a seeded
generator; nothing is transferred), runs the work ${jit.warm} times to warm up, then times ${jit.reps} repetitions
with \`performance.now()\` inside the sandbox: this executor's is the worker's monotonic clock at full
resolution, Node's is Node's, and isolated-vm, which has none, gets a synchronous callback to the
host's clock; the median of 9 empty intervals is subtracted from each sample. Each figure is the
median repetition over ${jit.rounds} round${jit.rounds > 1 ? 's' : ''}, the environments interleaved round by round (every other round
in reverse order); "its rounds" is the range of the rounds' own medians (each round is a fresh
isolate or process, whose tier-up may differ); a ratio is the median of the rounds' ratios, each
pairing measurements taken close together. Target: this executor within ${Math.round(100 * (TARGETS.jitRatio - 1))}% of plain Node on each
workload.

| workload | this executor ms | its rounds | isolated-vm ms | ${nodeLabel} ms | its rounds | this executor / Node | met | isolated-vm / Node |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
${jitRows.join('\n')}

The worker sets the V8 flag \`${jit.flag}\` (it keeps termination reliable).
${
  fl
    ? `${jit.node.knowsFlag ? '' : `${nodeLabel}'s V8 (${jit.node.v8}) has no such flag, so its`}${jit.node.knowsFlag ? 'Its' : ''} cost is measured in plain Node ${fl.version}
(V8 ${fl.v8}, whose default is \`${fl.default}\`), in the same rounds, without and with the flag;
the last column sets this executor beside that closer V8 with the flag on.

| workload | Node ${fl.version} ms | with \`${jit.flag}\` ms | the flag's cost | this executor / Node ${fl.version} with the flag |
| --- | --- | --- | --- | --- |
${flagRows.join('\n')}`
    : `Its cost was not measured: ${nodeLabel}'s V8 (${jit.node.v8}) has no such flag and no newer Node was found (set \`CODEMODE_BENCH_FLAG_NODE\` to one).`
}

The young generation is the other difference from plain Node that allocation-heavy code feels:
\`memoryLimit\` is the isolate's whole heap, so V8 sizes the young generation from it (semi-spaces
of about 1 MB at 128 MiB, against Node's 16 MB). Measured once with \`--max-semi-space-size=8\`
(three alternating pairs, loaded machine): the JSON workload 22-37 ms down to 15-16 ms, the sort
inconclusive (122-196 ms against 141-157 ms), on V8 13.0. It is not adopted: V8's flag is
process-wide and frozen at start, so a run's heap could then pass its \`memoryLimit\` by up to
three semi-spaces (24 MB, three times an 8 MiB limit); the crate 152 exposes the young
generation's size per isolate (\`ResourceConstraints\`), not yet measured here.

## Memory at rest

Each pool size in a fresh \`node\` process: a new \`IsolateExecutor\`, one execution per worker run
concurrently, then every worker idle with its next isolate prepared; RSS from \`/proc/<pid>/status\`
(\`VmRSS\`) of each worker (\`workerPids()\`) and of the host process. The workers share their
binary's pages, which RSS counts in each; the PSS total (\`/proc/<pid>/smaps_rollup\`) splits them.
Target: idle RSS per worker <= ${TARGETS.idleRssMB} MB (${idleTargetMiB.toFixed(1)} MiB).

| workers | idle RSS per worker MiB, median (max) | met | host RSS MiB | total RSS MiB (host + workers) | total PSS MiB |
| --- | --- | --- | --- | --- | --- |
${memRows.join('\n')}

## Time bound overshoot

A \`for (;;) {}\` under a ${r.overshoot.bound} ms \`timeout\`, ${r.overshoot.n} runs: the outcome reached the host
${fmt(r.overshoot.p50, 2)} ms (p50) and ${fmt(r.overshoot.p99, 2)} ms (p99) after the bound passed (host clock, from
\`execute\` to the resolved outcome, minus the bound). No target.

## CPU budget overshoot

The same loop under a ${r.cpuOvershoot.bound} ms \`cpuLimit\` (no time bound reached), ${r.cpuOvershoot.n} runs: the CPU the budget
counted went ${fmt(r.cpuOvershoot.counted.p50, 2)} ms (p50) and ${fmt(r.cpuOvershoot.counted.p99, 2)} ms (p99) past the budget (the worker's thread clock,
\`stats.cpuBudgetMs\`); the outcome reached the host ${fmt(r.cpuOvershoot.p50, 2)} ms (p50) and ${fmt(r.cpuOvershoot.p99, 2)} ms (p99) after
the budget's worth of wall time (host clock, as above; it includes setting up the run, which the
budget does not count). No target.

## Approvals

What a pause and a resume cost (\`bench/approvals.js\`, docs/approvals.md): a program that makes N
tool calls and then one that needs approval, on a 1-worker executor, each way ${ap.samples} times, the three
interleaved sample by sample, ${ap.gapMs} ms apart. Every call is answered by the same dispatch with
${ap.answerBytes} bytes of JSON. **fresh**: \`execute\` without approvals, all N + 1 calls dispatched.
**to the pause**: \`execute\` with approvals: the N calls dispatched, the run stopped at the last
one and its token sealed. **resume**: \`resume\` of that token with the call approved: the program
runs again in a fresh isolate, its N calls answered from the token (not dispatched; the bench
checks that exactly one call reaches dispatch), the approved one dispatched. The token's size is
its length in characters (ASCII: bytes); the row of 20 is a 20-call ledger and the pending call.
No target.

| calls | fresh p50 ms | fresh p99 ms | to the pause p50 ms | to the pause p99 ms | resume p50 ms | resume p99 ms | resume / fresh (p50) | token characters |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
${apRows.join('\n')}
`;
  const file = path.join(__dirname, '..', 'docs', 'benchmarks.md');
  // The TanStack section is bench/tanstack/bench.mjs's (npm run bench:tanstack): kept as it is.
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const kept = /<!-- tanstack:begin[\s\S]*?<!-- tanstack:end -->\n/.exec(old);
  fs.writeFileSync(file, kept ? `${doc.trimEnd()}\n\n${kept[0]}` : doc);
  return file;
}

module.exports = { writeReport, fmt, TARGETS };
