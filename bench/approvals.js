'use strict';
// What approvals cost (docs/approvals.md, "Cost"): a program that makes N tool calls and then one
// that needs approval, run three ways on one executor, interleaved sample by sample (so a busy
// machine slows all three alike), each run GAP_MS after the previous:
//   - fresh: `execute` without approvals, every call dispatched (the baseline);
//   - to the pause: `execute` with approvals, the N calls dispatched, the run paused at the last
//     one and its token sealed;
//   - resume: `resume` of that token with the last call approved: the program runs again in a
//     fresh isolate, the N calls answered from the token (not dispatched), the last dispatched.
// The same dispatch answers every call with about 100 bytes of JSON. Also the token's size.
//
// Usage: node bench/approvals.js [--quick]   prints the figures (bench.js uses run())

const { IsolateExecutor } = require('..');
const { stats } = require('./measure');

const CALLS = [0, 20, 100];
const GAP_MS = 5;
const KEY = 'bench approval key, 32 bytes or more';
// An answer whose JSON is 100 bytes.
const answer = (i) => {
  const base = { id: i, name: `item-${i}`, note: '' };
  return { ...base, note: 'x'.repeat(100 - JSON.stringify(base).length) };
};
const program = (n) => `async () => {
  const seen = []
  for (let i = 0; i < ${n}; i++) seen.push((await t.get(i)).id)
  return { seen: seen.length, done: await t.act(seen.length) }
}`;
const providers = (approve) => [{ name: 't', tools: ['get', 'act'], ...(approve ? { approve: ['act'] } : {}) }];

const now = () => process.hrtime.bigint();
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every figure for a program of `n` calls before the one that needs approval. */
async function one(ex, n, samples) {
  let dispatched = 0;
  const dispatch = ({ tool, args }) => {
    dispatched++;
    return tool === 'get' ? answer(args[0]) : 'done';
  };
  const code = program(n);
  const expect = (o, what) => {
    if (o.error || o.result?.seen !== n || o.result.done !== 'done') throw new Error(`${what}: unexpected outcome ${JSON.stringify(o.error ?? o.result)}`);
    return o;
  };
  const toPause = async () => {
    const o = await ex.execute({ code, providers: providers(true), dispatch, approval: { mode: 'interrupt' } });
    if (o.paused?.pending.length !== 1) throw new Error(`expected a pause, got ${JSON.stringify(o.error ?? o.result)}`);
    return o.paused;
  };
  const paused = await toPause();
  const decisions = { [paused.pending[0].id]: { approved: true } };
  const variants = {
    fresh: async () => expect(await ex.execute({ code, providers: providers(false), dispatch }), 'fresh'),
    toPause,
    resume: async () => {
      const before = dispatched;
      expect(await ex.resume({ token: paused.token, decisions, dispatch }), 'resume');
      // The ledger's calls are answered from the token: only the approved one is dispatched.
      if (dispatched - before !== 1) throw new Error(`resume dispatched ${dispatched - before} calls, expected 1`);
    },
  };
  const names = Object.keys(variants);
  const ms = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < Math.min(100, samples / 4); i++) for (const k of names) await variants[k]();
  for (let i = 0; i < samples; i++) {
    // Rotate which goes first, so none always follows another.
    for (let j = 0; j < names.length; j++) {
      const k = names[(i + j) % names.length];
      await pause(GAP_MS);
      const t0 = now();
      await variants[k]();
      ms[k].push(Number(now() - t0) / 1e6);
    }
  }
  return { calls: n, fresh: stats(ms.fresh), toPause: stats(ms.toPause), resume: stats(ms.resume), tokenChars: paused.token.length };
}

/** The figures for each of CALLS, on a 1-worker executor (a resume is one run, as a fresh execute). */
async function run({ quick = false } = {}) {
  const samples = quick ? 60 : 300;
  const ex = new IsolateExecutor({ workers: 1, approvalKey: KEY });
  try {
    await ex.execute({ code: 'async () => 1' });
    const rows = [];
    for (const n of CALLS) rows.push(await one(ex, n, samples));
    return { samples, gapMs: GAP_MS, answerBytes: JSON.stringify(answer(0)).length, rows };
  } finally {
    await ex.close();
  }
}

/** One line per program size, for the console. */
const lines = (r) =>
  r.rows.map(
    (x) =>
      `approvals, ${x.calls} calls + 1 approved: fresh execute p50 ${x.fresh.p50.toFixed(3)} ms, to the pause p50 ${x.toPause.p50.toFixed(3)} ms, resume p50 ${x.resume.p50.toFixed(3)} ms (p99 ${x.fresh.p99.toFixed(3)} / ${x.toPause.p99.toFixed(3)} / ${x.resume.p99.toFixed(3)}); token ${x.tokenChars} characters`,
  );

module.exports = { run, lines, CALLS };

if (require.main === module) {
  run({ quick: process.argv.includes('--quick') })
    .then((r) => console.log(lines(r).join('\n')))
    .catch((e) => {
      console.error(e);
      process.exitCode = 1;
    });
}
