'use strict';
// What TypeScript costs, and that plain JavaScript pays nothing for it: execute p50/p99 of one
// program as plain JavaScript and with type annotations, interleaved in the same run (so a busy
// machine slows both alike), plus the worker's CPU time per run (outcome.stats.cpuMs).
//   node bench/typescript.js [samples per variant, default 2000]
//
// Measured here (2 shared cores, load average ~6.5 from other builds; two runs of 2000 each):
// wall p50 1.178 / 1.441 ms plain JavaScript vs 1.224 / 1.472 ms TypeScript; worker CPU p50
// 0.160 / 0.186 ms vs 0.191 / 0.218 ms. TypeScript costs ~0.03 ms of worker CPU (the failed
// JavaScript parse, the TypeScript parse, the blanking, the second JavaScript parse); plain
// JavaScript takes the path it took before (one parse; a '@' in the code adds one TypeScript
// parse to look for decorators).

const { IsolateExecutor } = require('..');
const { stats } = require('./measure');

const JS = `async () => {
  const rows = [{ id: 1, price: 3 }, { id: 2, price: 4 }]
  const total = rows.reduce((sum, r) => sum + r.price, 0)
  return { n: rows.length, total }
}`;
const TS = `async (): Promise<{ n: number; total: number }> => {
  interface Row { id: number; price: number }
  const rows: Row[] = [{ id: 1, price: 3 }, { id: 2, price: 4 }]
  const total = rows.reduce<number>((sum: number, r: Row) => sum + r.price, 0)
  return { n: rows.length, total } satisfies { n: number; total: number }
}`;

const now = () => process.hrtime.bigint();
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const n = Number(process.argv[2] ?? 2000);
  const ex = new IsolateExecutor({ workers: 1 });
  try {
    const variants = { javascript: JS, typescript: TS };
    for (const code of Object.values(variants)) {
      const out = await ex.execute({ code });
      if (out.error || out.result.total !== 7) throw new Error(`unexpected outcome: ${JSON.stringify(out)}`);
    }
    const wall = { javascript: [], typescript: [] };
    const cpu = { javascript: [], typescript: [] };
    for (let i = 0; i < 200; i++) for (const code of Object.values(variants)) await ex.execute({ code });
    for (let i = 0; i < n; i++) {
      // Alternate which goes first, so neither always follows the other.
      const order = i % 2 === 0 ? ['javascript', 'typescript'] : ['typescript', 'javascript'];
      for (const name of order) {
        await pause(1);
        const t0 = now();
        const out = await ex.execute({ code: variants[name] });
        wall[name].push(Number(now() - t0) / 1e6);
        cpu[name].push(out.stats.cpuMs);
      }
    }
    const fmt = (x) => x.toFixed(3);
    console.log(`execute, ${n} samples per variant, interleaved, 1 worker`);
    console.log('variant      wall p50  wall p99  worker cpu p50 (ms)');
    for (const name of Object.keys(variants)) {
      const w = stats(wall[name]);
      const c = stats(cpu[name]);
      console.log(`${name.padEnd(12)} ${fmt(w.p50).padStart(8)}  ${fmt(w.p99).padStart(8)}  ${fmt(c.p50).padStart(8)}`);
    }
  } finally {
    await ex.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
