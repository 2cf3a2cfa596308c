// `codemode-executor testbed --cases PATH [--reference VERSION] [--json]`: a host's own cases
// through both executors (docs/testbed.md). Resolves workerd, esbuild and @cloudflare/codemode
// from the current directory (the host project), replays the cases through the engine, prints
// the differences. Exit codes: 0 every case identical or accepted, 1 a case differs without
// accepting it (or the reference did not answer), 2 a usage error, an invalid case module, or a
// tool missing from the host project.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect, parseArgs } from 'node:util';
import { wireCase } from './answers.mjs';
import { decode } from './codec.mjs';
import { MissingTools, carrier, hostTools, referenceDir, replay, startReference } from './engine.mjs';

const require = createRequire(import.meta.url);
const { TESTBED_USAGE } = require('./usage.js');

const CASE_KEYS = ['id', 'code', 'providers', 'connectors', 'modules', 'timeout', 'globalOutbound', 'construct', 'accept', 'referenceSkip', 'description'];

class Usage extends Error {}

/** The case list `file` exports, checked against the case model; throws Usage naming the fault. */
async function loadCases(file) {
  let mod;
  try {
    mod = await import(pathToFileURL(path.resolve(file)).href);
  } catch (e) {
    throw new Usage(`--cases ${file} cannot be loaded: ${e?.message ?? e}`);
  }
  const { cases } = mod;
  if (!Array.isArray(cases) || cases.length === 0) throw new Usage(`--cases ${file} must export \`cases\`, a non-empty array`);
  const ids = new Set();
  for (const [i, c] of cases.entries()) {
    const at = `case ${typeof c?.id === 'string' ? JSON.stringify(c.id) : i}`;
    const fault = (why) => new Usage(`${file}: ${at}: ${why} (docs/testbed.md)`);
    if (c === null || typeof c !== 'object') throw fault('is not an object');
    const unknown = Object.keys(c).filter((k) => !CASE_KEYS.includes(k));
    if (unknown.length) throw fault(`unknown ${unknown.length === 1 ? 'key' : 'keys'} ${unknown.join(', ')}; a case has ${CASE_KEYS.join(', ')}`);
    if (typeof c.id !== 'string' || c.id === '') throw fault('needs an `id` (a non-empty string)');
    if (ids.has(c.id)) throw fault('repeats an id');
    ids.add(c.id);
    if (typeof c.code !== 'string') throw fault('needs `code` (a string)');
    for (const key of ['accept', 'referenceSkip', 'description']) {
      if (c[key] !== undefined && (typeof c[key] !== 'string' || c[key] === '')) throw fault(`\`${key}\` takes a non-empty string`);
    }
    if (c.timeout !== undefined && !(Number.isInteger(c.timeout) && c.timeout > 0)) throw fault('`timeout` takes a positive integer (ms)');
    if (c.globalOutbound !== undefined && c.globalOutbound !== null && c.globalOutbound !== 'echo') throw fault("`globalOutbound` is 'echo' or null");
    if (c.construct !== undefined && typeof c.construct !== 'boolean') throw fault('`construct` is a boolean');
    if (c.modules !== undefined && (c.modules === null || typeof c.modules !== 'object' || Object.values(c.modules).some((s) => typeof s !== 'string'))) throw fault('`modules` maps names to source strings');
    if (c.providers !== undefined) {
      if (!Array.isArray(c.providers)) throw fault('`providers` is an array');
      for (const p of c.providers) {
        if (p === null || typeof p !== 'object' || typeof p.name !== 'string') throw fault('each provider needs a `name`');
        if (p.fns === null || typeof p.fns !== 'object') throw fault(`provider ${p.name} needs \`fns\`: tool name -> answer`);
        if (p.prelude !== undefined && typeof p.prelude !== 'string') throw fault(`provider ${p.name}: \`prelude\` is a string`);
      }
    }
    if (c.connectors !== undefined) {
      if (!Array.isArray(c.connectors)) throw fault('`connectors` is an array');
      for (const k of c.connectors) {
        if (k === null || typeof k !== 'object' || typeof k.name !== 'string') throw fault('each connector needs a `name`');
        if (k.tools === null || typeof k.tools !== 'object') throw fault(`connector ${k.name} needs \`tools\`: method -> answer`);
      }
    }
    try {
      wireCase(c);
    } catch (e) {
      throw new Usage(`${file}: ${e.message}`);
    }
  }
  return cases;
}

/** An outcome as a reader sees it: what execute() resolved to, or that it rejected. */
function show(side) {
  if (side.rejected !== undefined) return `execute() rejected: ${side.rejected}`;
  const { keys, ...values } = side.outcome;
  const out = {};
  for (const k of keys) {
    try {
      out[k] = decode(values[k]);
    } catch {
      out[k] = `<${values[k].$}>`;
    }
  }
  return inspect(out, { depth: 8, breakLength: Infinity, colors: false });
}

function report(records, version, file) {
  const lines = [`testbed: @cloudflare/codemode ${version} (DynamicWorkerExecutor in workerd) vs CodemodeExecutor (IsolateExecutor, outbound: null), ${records.length} cases from ${file}`];
  const pair = (r) => [`      reference: ${show(r.reference)}`, `      ours:      ${show(r.ours)}`];
  for (const r of records) {
    const id = r.case.id;
    if (r.status === 'identical') lines.push(`  identical   ${id}`);
    else if (r.status === 'stale') lines.push(`  identical   ${id} (it accepts a difference that did not occur: ${r.case.accept})`);
    else if (r.status === 'accepted') lines.push(`  accepted    ${id}: ${r.case.accept}`, ...pair(r));
    else if (r.status === 'differs') lines.push(`  DIFFERS     ${id}`, ...pair(r));
    else if (r.status === 'skipped') lines.push(`  skipped     ${id}: ${r.case.referenceSkip}`, `      ours:      ${show(r.ours)}`);
    else lines.push(`  FAILED      ${id}: ${r.error}`);
  }
  return lines.join('\n');
}

function summarize(records) {
  const n = (s) => records.filter((r) => s.includes(r.status)).length;
  return { cases: records.length, identical: n(['identical', 'stale']), accepted: n(['accepted']), differ: n(['differs']), skipped: n(['skipped']), failed: n(['unanswered', 'invalid']) };
}

/** Runs the command with `argv` (after `testbed`); resolves to the exit code. */
export async function main(argv) {
  const fail = (e) => {
    process.stderr.write(`codemode-executor testbed: ${e.message}\n${e instanceof Usage ? `\n${TESTBED_USAGE}` : ''}`);
    return 2;
  };
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { cases: { type: 'string' }, reference: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (e) {
    return fail(new Usage(e.message));
  }
  if (values.help) {
    process.stdout.write(TESTBED_USAGE);
    return 0;
  }
  if (!values.cases) return fail(new Usage('--cases PATH is required'));
  if (values.reference !== undefined && !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(values.reference)) return fail(new Usage(`--reference takes a release version such as 0.5.6, got ${JSON.stringify(values.reference)}`));
  let tools;
  try {
    tools = hostTools(process.cwd(), { referenceRequired: values.reference === undefined });
  } catch (e) {
    if (e instanceof MissingTools) return fail(e);
    throw e;
  }
  let cases;
  try {
    cases = await loadCases(values.cases);
  } catch (e) {
    if (e instanceof Usage) return fail(e);
    throw e;
  }
  const version = values.reference ?? tools.installed.version;
  const cacheDir = path.join(tools.nodeModules, '.cache', 'codemode-executor-testbed');
  const { IsolateExecutor } = require('../../index.js');
  const native = new IsolateExecutor({ outbound: null }); // the reference's default: blocked
  let reference;
  let records;
  try {
    reference = await startReference({ tools, refDir: referenceDir(version, { installed: tools.installed, cacheDir }) });
    records = await replay({ cases, carriers: [carrier('CodemodeExecutor', native)], reference });
  } catch (e) {
    // The registry, esbuild or workerd failed: no comparison happened.
    process.stderr.write(`codemode-executor testbed: ${String(e?.message ?? e).replace(/^testbed: /, '')}\n`);
    return 1;
  } finally {
    reference?.stop();
    await native.close();
  }
  const summary = summarize(records);
  if (values.json) {
    const cases = records.map((r) => ({ id: r.case.id, status: r.status, ...(r.case.accept ? { accept: r.case.accept } : {}), ...(r.error ? { error: r.error } : {}), ...(r.reference ? { reference: r.reference } : {}), ...(r.ours ? { ours: r.ours } : {}) }));
    process.stdout.write(`${JSON.stringify({ reference: version, summary, cases }, null, 2)}\n`);
  } else {
    process.stdout.write(`${report(records, version, values.cases)}\n`);
    process.stdout.write(`testbed: ${summary.cases} cases, ${summary.identical} identical, ${summary.accepted} accepted, ${summary.differ} differ${summary.skipped ? `, ${summary.skipped} skipped` : ''}${summary.failed ? `, ${summary.failed} failed` : ''}\n`);
  }
  return summary.differ || summary.failed ? 1 : 0;
}
