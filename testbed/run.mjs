// npm run testbed: the project's differential testbed, over the engine the package's CLI uses
// too (lib/testbed/engine.mjs, docs/testbed.md). Starts workerd with a host worker around the
// real DynamicWorkerExecutor, replays every case through it and through CodemodeExecutor, and
// fails on any difference that the case does not attribute to a row of
// docs/dialect-deviations.md (`deviation`). For the installed release, every case also runs
// through CodemodeExecutor over connect() to a daemon started through the CLI (the executor
// protocol, docs/protocol.md), held to the same reference and the same deviation table.
// Run with: node --import ./lib/register.mjs testbed/run.mjs
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { carrier, hostTools, npm, referenceDir, replay, startReference } from '../lib/testbed/engine.mjs';
import { cases } from './cases.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');
const require = createRequire(import.meta.url);
const { IsolateExecutor, connect } = require('../index.js');
const WebSocket = require('ws');

const tools = hostTools(root);
const installedVersion = tools.installed.version;
const deviationsDoc = readFileSync(path.join(root, 'docs', 'dialect-deviations.md'), 'utf8');
const catalog = path.join(here, 'catalog.mjs');

// A daemon through the CLI, on a free 127.0.0.1 port.
function startDaemon() {
  const child = spawn(process.execPath, [path.join(root, 'bin', 'codemode-executor.js'), 'serve', '--port', '0', '--workers', '2', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`testbed: the daemon did not listen within 30 s: ${err}`)), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (ws:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1] });
      }
    });
    child.on('exit', (code) => reject(new Error(`testbed: the daemon exited (${code}): ${err}`)));
  });
}

// The executors under test: in process, and (for the installed release) over connect().
async function carriers(version) {
  const list = [carrier('IsolateExecutor', new IsolateExecutor({ outbound: null }))]; // the reference's default: blocked
  if (version === installedVersion) {
    const daemon = await startDaemon();
    const remote = await connect(daemon.url, { websocket: WebSocket, outbound: null });
    list.push({ ...carrier('connect()', remote), daemon });
  }
  return list;
}

// A case's `deviation` must name a row of the table; the engine then accepts the difference.
function judged() {
  const failures = [];
  const run = [];
  for (const c of cases) {
    if (c.deviation && !new RegExp(`\\| ${c.deviation} \\|`).test(deviationsDoc)) failures.push(`${c.id}: names ${c.deviation}, which docs/dialect-deviations.md does not list`);
    else run.push(c.deviation ? { ...c, accept: c.deviation } : c);
  }
  return { failures, run };
}

async function runAgainst(version) {
  const under = await carriers(version);
  const { failures, run } = judged();
  const counts = Object.fromEntries(under.map((c) => [c.label, { same: 0, deviation: 0, skipped: 0 }]));
  let reference;
  try {
    reference = await startReference({ tools, refDir: referenceDir(version, { installed: tools.installed, cacheDir: path.join(here, '.reference') }), catalog });
    for (const r of await replay({ cases: run, carriers: under, reference, catalog })) {
      const c = r.case;
      const count = counts[r.carrier];
      const label = r.carrier;
      if (r.status === 'invalid' || r.status === 'unanswered') failures.push(`${c.id}: ${r.status === 'invalid' ? 'not a valid case' : 'the reference did not answer'} (${r.error})`);
      else if (r.status === 'skipped') {
        count.skipped++;
        if (label === under[0].label) console.log(`  skip-reference ${c.id} (${c.deviation}): ${c.referenceSkip}; ours: ${JSON.stringify(r.ours)}`);
        if (r.ours.rejected) failures.push(`${c.id} [${label}]: CodemodeExecutor rejected: ${r.ours.rejected}`);
      } else if (r.status === 'identical') count.same++;
      else if (r.status === 'accepted') count.deviation++;
      else if (r.status === 'stale') failures.push(`${c.id} [${label}]: listed as ${c.deviation} but both executors agree: ${JSON.stringify(r.ours)}`);
      else failures.push(`${c.id} (§${c.section}) [${label}]: outcomes differ\n    reference: ${JSON.stringify(r.reference)}\n    ours:      ${JSON.stringify(r.ours)}`);
    }
  } finally {
    reference?.stop();
    for (const c of under) {
      await c.native.close();
      c.daemon?.child.kill('SIGTERM');
    }
  }
  for (const { label } of under) {
    const n = counts[label];
    console.log(`@cloudflare/codemode ${version} through ${label}: ${cases.length} cases, ${n.same} identical, ${n.deviation} documented deviations, ${n.skipped} not run against the reference`);
  }
  for (const f of failures) console.log(`  FAIL ${f}`);
  return { failures: failures.length, runs: under.length * cases.length };
}

// The versions the declared peer range admits: the installed release, and the newest patch of
// every older minor line inside the range (asked of the registry).
function versionsToTest() {
  const asked = process.argv.indexOf('--reference');
  if (asked > 0) return [process.argv[asked + 1]];
  const range = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).peerDependencies['@cloudflare/codemode'];
  const all = JSON.parse(npm(['view', '@cloudflare/codemode', 'versions', '--json']));
  const num = (v) => v.split('.').map(Number);
  const cmp = (a, b) => { const x = num(a), y = num(b); for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]; return 0; };
  const inRange = (v) => range.split(/\s+/).every((c) => {
    const m = /^(>=|<=|>|<|=)?(\d+\.\d+\.\d+)$/.exec(c);
    if (!m) throw new Error(`testbed: cannot read the peer range "${range}"`);
    const d = cmp(v, m[2]);
    return { '>=': d >= 0, '<=': d <= 0, '>': d > 0, '<': d < 0, '=': d === 0, undefined: d === 0 }[m[1]];
  });
  const line = (v) => num(v).slice(0, 2).join('.');
  const newest = new Map();
  for (const v of all.filter((v) => /^\d+\.\d+\.\d+$/.test(v) && inRange(v))) {
    if (!newest.has(line(v)) || cmp(v, newest.get(line(v))) > 0) newest.set(line(v), v);
  }
  const older = [...newest.values()].filter((v) => line(v) !== line(installedVersion) && cmp(v, installedVersion) < 0);
  return [installedVersion, ...older.sort(cmp)];
}

async function main() {
  let failed = 0;
  let total = 0;
  const versions = versionsToTest();
  for (const version of versions) {
    const { failures, runs } = await runAgainst(version);
    failed += failures;
    total += runs;
  }
  console.log(`testbed: ${total - failed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
