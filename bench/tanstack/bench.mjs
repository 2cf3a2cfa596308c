// npm run bench:tanstack: the latency of one execute_typescript call of @tanstack/ai-code-mode
// (createCodeMode's tool, end to end: TypeScript stripping, createContext, execute, dispose)
// with this executor's driver and with the stock one, @tanstack/ai-isolate-node (isolated-vm
// 6.2.0). The same programs (bench/tanstack/cases.mjs), the same tools, one call at a time;
// both drivers under the same Node 22 (the one isolated-vm 6 needs; setup.mjs), each in its own
// process, rounds alternating between them. Writes the "TanStack code mode" section of
// docs/benchmarks.md (between its markers; bench/report.js keeps it).
//
//   node bench/tanstack/bench.mjs [--runs 300] [--rounds 3] [--no-write]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { dir, ensureStock } from './setup.mjs';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '3' },
    'no-write': { type: 'boolean', default: false },
  },
});
const runs = Number(args.runs);
const rounds = Number(args.rounds);
const CASES = [
  ['return-string', 'a one-line program, no tool call: the per-call cost'],
  ['weather-parallel', 'three tool calls under Promise.all, a log line (the system prompt\'s example)'],
  ['many-calls', '50 sequential tool calls'],
  ['cpu-work', 'counting primes below 20,000: compute, no tool calls'],
];

const { node } = ensureStock();
const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

/** One round of one driver: p50 and p90 per case, in ms. */
function round(driver) {
  const r = spawnSync(node, ['--no-node-snapshot', path.join(dir, 'run.mjs'), '--driver', driver, '--bench', String(runs), '--cases', CASES.map(([c]) => c).join(',')], {
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`${driver} round failed (${r.status} ${r.signal})\n${r.stderr}`);
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.name);
  for (const l of lines) {
    if (!l.last || l.last.success !== true) throw new Error(`${driver} ${l.name} did not succeed: ${JSON.stringify(l.last)}`);
  }
  return new Map(lines.map((l) => [l.name, l]));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** @type {Record<string, Array<Map<string, any>>>} */
const results = { stock: [], ours: [] };
for (let i = 0; i < rounds; i++) {
  for (const driver of i % 2 === 0 ? ['stock', 'ours'] : ['ours', 'stock']) {
    results[driver].push(round(driver));
    process.stderr.write(`round ${i + 1}/${rounds} ${driver} done\n`);
  }
}

const rows = CASES.map(([name, what]) => {
  const stat = (driver, key) => median(results[driver].map((m) => m.get(name)[key]));
  const row = { name, what, oursP50: stat('ours', 'p50'), oursP90: stat('ours', 'p90'), stockP50: stat('stock', 'p50'), stockP90: stat('stock', 'p90') };
  row.ratio = row.stockP50 / row.oursP50;
  return row;
});
const f = (x) => x.toFixed(3);
const cpu = os.cpus()[0]?.model?.replace(/\s+/g, ' ').trim() ?? 'unknown CPU';
const section = `<!-- tanstack:begin (written by bench/tanstack/bench.mjs) -->
## TanStack code mode

\`npm run bench:tanstack\` (\`node bench/tanstack/bench.mjs --runs ${runs} --rounds ${rounds}\`) on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} cores (${cpu}), ${version}.
One call of \`createCodeMode({ driver, tools })\`'s \`execute_typescript\` tool at a time, end to end
(code mode's TypeScript stripping, \`createContext\`, \`execute\`, \`dispose\`), with this executor's
driver (\`@supolka/codemode-executor/tanstack\`, 2 workers) and with \`@tanstack/ai-isolate-node\`
0.1.43 (isolated-vm 6.2.0, in process), the same programs and tools (\`bench/tanstack/cases.mjs\`),
both under the same Node, each in its own process. ${runs} calls per program after 20 of warm-up;
the median over ${rounds} rounds, alternating which driver goes first. Ratio: *stock p50 / this
driver's p50* (above 1: this driver is faster). Both drivers' answers to these programs are the
same (\`__test__/tanstack.test.mjs\`). No target.

| program | this driver p50 ms | p90 ms | ai-isolate-node p50 ms | p90 ms | ratio (p50) |
| --- | --- | --- | --- | --- | --- |
${rows.map((r) => `| \`${r.name}\`: ${r.what} | ${f(r.oursP50)} | ${f(r.oursP90)} | ${f(r.stockP50)} | ${f(r.stockP90)} | ${r.ratio.toFixed(2)}x |`).join('\n')}
<!-- tanstack:end -->
`;

console.log(section);
if (!args['no-write']) {
  const file = path.join(dir, '..', '..', 'docs', 'benchmarks.md');
  const doc = fs.readFileSync(file, 'utf8');
  const begin = doc.indexOf('<!-- tanstack:begin');
  const end = doc.indexOf('<!-- tanstack:end -->');
  const next = begin >= 0 && end > begin
    ? doc.slice(0, begin) + section + doc.slice(end + '<!-- tanstack:end -->\n'.length)
    : doc.trimEnd() + '\n\n' + section;
  fs.writeFileSync(file, next);
  console.error(`wrote ${path.relative(process.cwd(), file)}`);
}
