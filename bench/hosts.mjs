// Execute and tool-call latency under each host the package runs on (`npm run bench:hosts`, and a
// section of `npm run bench`): the same measurement, run by Node (this one), Bun and Deno (from
// the npm registry, scripts/node-build.mjs `runtimeBinary`), each loading this checkout's build.
// Under Bun the values cross through the JavaScript codec (lib/value-codec.js), under Bun and
// Deno the workers are read on threads (lib/host.js); Node keeps V8's serializer and its loop.
//
//   node bench/hosts.mjs            # the table, every host
//   <host> bench/hosts.mjs --child  # one host's figures, as JSON on the last line
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const EXECUTES = 600;
const GAP_MS = 5;
const CALLS = 100;
const ROUNDS = 7;

/** @param {number[]} xs @param {number} q */
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One host's figures: execute p50/p99 (µs, an idle executor, 5 ms apart) and a tool call's round trip (µs). */
async function measure() {
  const { IsolateExecutor } = require(path.join(here, '..', 'index.js'));
  const ex = new IsolateExecutor({ workers: 2 });
  try {
    for (let i = 0; i < 50; i++) await ex.execute({ code: 'async () => 1' });
    const lat = [];
    for (let i = 0; i < EXECUTES; i++) {
      await sleep(GAP_MS);
      const t = performance.now();
      await ex.execute({ code: 'async () => 1' });
      lat.push((performance.now() - t) * 1000);
    }
    const perCall = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t = performance.now();
      const out = await ex.execute({
        code: `async () => { let s = 0; for (let i = 0; i < ${CALLS}; i++) s += await t.one(i); return s }`,
        providers: [{ name: 't', tools: ['one'] }],
        dispatch: ({ args }) => args[0],
      });
      if (out.error) throw new Error(out.error.message);
      perCall.push(((performance.now() - t) * 1000) / CALLS);
    }
    return { execute: { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) }, toolCall: { p50: quantile(perCall, 0.5) } };
  } finally {
    await ex.close();
  }
}

/** @returns {string} */
function hostName() {
  if (typeof process.versions.bun === 'string') return `Bun ${process.versions.bun}`;
  const deno = /** @type {{ Deno?: { version: { deno: string } } }} */ (globalThis).Deno;
  if (deno) return `Deno ${deno.version.deno}`;
  return `Node ${process.version}`;
}

/**
 * Every host's figures: this Node's measured here, Bun's and Deno's by their binaries.
 * @returns {Promise<Array<{ host: string, execute?: { p50: number, p99: number }, toolCall?: { p50: number }, error?: string }>>}
 */
export async function run() {
  const rows = [{ host: hostName(), ...(await measure()) }];
  const { runtimeBinary } = await import('../scripts/node-build.mjs');
  for (const name of ['bun', 'deno']) {
    try {
      const bin = runtimeBinary(name);
      const argv = name === 'deno' ? ['run', '-A', fileURLToPath(import.meta.url), '--child'] : [fileURLToPath(import.meta.url), '--child'];
      const r = spawnSync(bin, argv, { encoding: 'utf8', timeout: 300_000, env: { ...process.env, NO_COLOR: '1' } });
      const last = (r.stdout ?? '').trim().split('\n').pop() ?? '';
      if (r.status !== 0) throw new Error(`${name} exited ${r.status ?? r.signal}: ${(r.stderr ?? '').trim().split('\n').slice(-3).join(' ')}`);
      rows.push(JSON.parse(last));
    } catch (e) {
      rows.push({ host: name, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return rows;
}

/** The table of `rows`, Node's figures the base of the ratios. */
export function table(rows) {
  const node = rows[0];
  const fmt = (x) => (typeof x === 'number' ? x.toFixed(0) : 'n/a');
  const x = (v, base) => (typeof v === 'number' && typeof base === 'number' ? `${(v / base).toFixed(2)}x` : 'n/a');
  const lines = ['| host | execute p50 µs | execute p99 µs | tool call p50 µs | execute vs Node | tool call vs Node |', '| --- | --- | --- | --- | --- | --- |'];
  for (const r of rows) {
    if (r.error) lines.push(`| ${r.host} | not measured: ${r.error} | | | | |`);
    else lines.push(`| ${r.host} | ${fmt(r.execute.p50)} | ${fmt(r.execute.p99)} | ${fmt(r.toolCall.p50)} | ${x(r.execute.p50, node.execute?.p50)} | ${x(r.toolCall.p50, node.toolCall?.p50)} |`);
  }
  return lines.join('\n');
}

if (process.argv.includes('--child')) {
  const figures = await measure();
  console.log(JSON.stringify({ host: hostName(), ...figures }));
  process.exit(0);
} else if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(`hosts bench: ${EXECUTES} executes ${GAP_MS} ms apart (2 workers), tool call = one run's wall time / ${CALLS} sequential calls, median of ${ROUNDS}`);
  console.log(table(await run()));
}
