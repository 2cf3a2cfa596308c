'use strict';
// Memory outside the meter: what programs that allocate where neither the heap limit nor the
// buffer meter sees (ICU objects behind Intl, the parser's zones, the regexp backtracking
// stack) make a worker's resident memory reach, against its memoryLimit. Each scenario runs in
// a fresh single-worker executor, so the worker's VmHWM (peak resident set over its life,
// /proc/<pid>/status) is that program's peak; VmData is its private writable memory at the
// end, what the worker's ceiling (RLIMIT_DATA) counts. Linux only. docs/bounds.md and
// docs/deployment.md quote it.
//
// Usage: node bench/outside-meter.js [memoryLimit MiB, default 64] [scenario names...]

const { IsolateExecutor } = require('..');
const { rssMiB } = require('./measure');

/** The worker's VmData (private writable mappings, what RLIMIT_DATA counts) in MiB. */
function vmPeakMiB(pid) {
  const status = require('node:fs').readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmData:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN) / 1024;
}

/** `count` locale tags, as many distinct as the list gives. */
const LOCALES = `const locales = ['en','de','fr','es','it','pt','nl','sv','da','nb','fi','pl','cs','sk','hu','ro','bg','el','ru','uk','tr','ar','he','fa','hi','bn','ta','te','th','vi','id','ms','ja','ko','zh','zh-Hant','sr','hr','sl','lt','lv','et','ca','eu','gl','is','ga','cy','af','sw']
  .flatMap((l) => ['', '-US', '-GB', '-IN', '-CA'].map((r) => l + r))`;

/**
 * A program that keeps alive what `body` (lines run with `i` from 0 to `count` - 1) pushes on
 * `keep`, with the locale tags and then `setup` before the loop, and returns how many it kept.
 */
function keeping(count, body, setup = '') {
  return `async () => {
    ${LOCALES}${setup}
    const keep = []
    for (let i = 0; i < ${count}; i++) {
      ${body.join('\n      ')}
    }
    return keep.length
  }`;
}

const SCENARIOS = {
  // Distinct formatters kept alive: each owns an ICU SimpleDateFormat (calendar, time zone,
  // pattern generator data) in native memory; the heap holds a small wrapper.
  'intl-datetimeformat-20k': keeping(
    20000,
    ["keep.push(new Intl.DateTimeFormat(locales[i % locales.length], { timeZone: zones[i % zones.length], dateStyle: ['full', 'long', 'medium', 'short'][i % 4], timeStyle: ['full', 'long', 'medium', 'short'][(i >> 2) % 4] }))"],
    "\n    const zones = Intl.supportedValuesOf('timeZone')",
  ),
  'intl-collator-20k': keeping(20000, ["keep.push(new Intl.Collator(locales[i % locales.length], { sensitivity: ['base', 'accent', 'case', 'variant'][i % 4], numeric: i % 2 === 0, caseFirst: ['upper', 'lower', 'false'][i % 3] }))"]),
  'intl-mixed-40k': keeping(10000, [
    'const l = locales[i % locales.length]',
    "keep.push(new Intl.NumberFormat(l, { style: 'currency', currency: ['EUR', 'USD', 'JPY', 'INR'][i % 4] }))",
    "keep.push(new Intl.PluralRules(l, { type: i % 2 ? 'ordinal' : 'cardinal' }))",
    "keep.push(new Intl.RelativeTimeFormat(l, { numeric: i % 2 ? 'auto' : 'always' }))",
    "keep.push(new Intl.Segmenter(l, { granularity: ['grapheme', 'word', 'sentence'][i % 3] }))",
  ]),
  // Each Segments object copies the string it segments into ICU (UTF-16) and clones a break
  // iterator: 1 MiB of text held 200 times is ~400 MiB native for one string on the heap.
  'intl-segmenter-200x1MiB': `async () => {
    const text = 'lorem ipsum dolor sit amet, '.repeat(37450)
    const seg = new Intl.Segmenter('en', { granularity: 'word' })
    const keep = []
    for (let i = 0; i < 200; i++) keep.push(seg.segment(text))
    return keep.length
  }`,
  // One huge segmentation, iterated: the segment objects are heap, the ICU side is one copy.
  'intl-segmenter-iterate-8MiB': `async () => {
    const text = 'lorem ipsum dolor sit amet, '.repeat(300000)
    let n = 0
    for (const s of new Intl.Segmenter('en', { granularity: 'word' }).segment(text)) if (s.isWordLike) n++
    return n
  }`,
  // The parser's zones: a module map of large generated sources (8 x 2 MiB).
  'parse-modules-8x2MiB': {
    code: `async () => { let n = 0; for (let i = 0; i < 8; i++) n += (await import('./m' + i + '.js')).n; return n }`,
    modules: Object.fromEntries(
      Array.from({ length: 8 }, (_, m) => [
        `./m${m}.js`,
        Array.from({ length: 12000 }, (_, i) => `function f${i}(a, b) { const x = [a, b, ${i}, { k: "v${i}" }]; return x.length + (a ? b : ${i}) }`).join('\n') +
          `\nexport const n = f1(1, 2)\n`,
      ]),
    ),
  },
  // new Function of one big generated source (16 MiB), compiled eagerly by calling it.
  'eval-16MiB': `async () => {
    const parts = []
    for (let i = 0; i < 160000; i++) parts.push('function g' + i + '(a) { return [a, ' + i + ', { k: "v' + i + '" }] }')
    parts.push('return g1(1).length')
    return new Function(parts.join('\\n'))()
  }`,
  // Deep backtracking: irregexp's backtrack stack lives outside the heap (V8 caps it).
  'regexp-backtrack-8M': `async () => {
    const s = 'ab'.repeat(4000000)
    return /^(?:a|b)*c/.test(s)
  }`,
};

async function one(name, memoryLimit) {
  const spec = SCENARIOS[name];
  const request = typeof spec === 'string' ? { code: spec } : spec;
  const executor = new IsolateExecutor({ workers: 1, memoryLimit, timeout: 60_000 });
  try {
    await executor.execute({ code: 'async () => 1' });
    const [pid] = executor.workerPids();
    const before = rssMiB(pid, 'VmHWM');
    let outcome;
    try {
      outcome = await executor.execute({ ...request, memoryLimit });
    } catch (e) {
      outcome = { error: { code: e.code ?? 'THROWN', message: e.message } };
    }
    const alive = executor.workerPids().includes(pid);
    const hwm = alive ? rssMiB(pid, 'VmHWM') : NaN;
    const peak = alive ? vmPeakMiB(pid) : NaN;
    return {
      name,
      outcome: outcome.error ? outcome.error.code : 'ok',
      message: outcome.error?.message ?? '',
      heap: (outcome.stats?.heapPeakBytes ?? NaN) / 1048576,
      before,
      hwm,
      peak,
      alive,
    };
  } finally {
    await executor.close();
  }
}

async function main() {
  const args = process.argv.slice(2);
  const memoryLimit = /^\d+$/.test(args[0] ?? '') ? Number(args.shift()) : 64;
  const names = args.length ? args : Object.keys(SCENARIOS);
  for (const n of names) if (!SCENARIOS[n]) throw new Error(`unknown scenario ${n}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  // crates/pool process.rs `memory_ceiling`: WORKER_BASE_MIB + 3 x memoryLimit.
  const ceiling = 256 + 3 * memoryLimit;
  console.log(`memory outside the meter: memoryLimit ${memoryLimit} MiB, memory ceiling (RLIMIT_DATA) ${ceiling} MiB, Node ${process.version}`);
  console.log('| program | outcome | heap peak (MiB) | worker RSS peak, VmHWM (MiB) | RSS peak / memoryLimit | private data at the end, VmData (MiB) |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  const notes = [];
  for (const name of names) {
    const r = await one(name, memoryLimit);
    if (r.message) notes.push(`${r.name}: ${r.message.slice(0, 300)}`);
    const f = (x) => (Number.isFinite(x) ? x.toFixed(0) : 'worker gone');
    console.log(`| ${r.name} | ${r.outcome} | ${f(r.heap)} | ${f(r.hwm)} (idle ${f(r.before)}) | ${Number.isFinite(r.hwm) ? (r.hwm / memoryLimit).toFixed(1) + 'x' : '-'} | ${f(r.peak)} |`);
  }
  for (const n of notes) console.log(n);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
