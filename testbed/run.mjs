// npm run testbed: the differential testbed. Starts workerd (--experimental, 127.0.0.1) with a
// host worker around the real DynamicWorkerExecutor, replays every case through it and through
// CodemodeExecutor, and fails on any difference that the case does not attribute to a row of
// docs/dialect-deviations.md. For the installed release, every case also runs through
// CodemodeExecutor over connect() to a daemon started through the CLI (the executor protocol,
// docs/protocol.md), held to the same reference and the same deviation table.
// Run with: node --import ./lib/register.mjs testbed/run.mjs
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildConnectors, buildProviders, echoFetch } from './catalog.mjs';
import { encodeOutcome } from './codec.mjs';
import { cases } from './cases.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');
const require = createRequire(import.meta.url);
const { CodemodeExecutor, IsolateExecutor, connect } = require('../index.js');
const WebSocket = require('ws');
const esbuild = require('esbuild');

const installedDir = path.join(root, 'node_modules', '@cloudflare', 'codemode');
const installedVersion = JSON.parse(readFileSync(path.join(installedDir, 'package.json'), 'utf8')).version;
const deviationsDoc = readFileSync(path.join(root, 'docs', 'dialect-deviations.md'), 'utf8');

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// The reference package directory for `version`: the installed one, or a copy fetched from the
// registry into testbed/.reference/<version> (kept between runs).
// Registry calls retry: a transient failure must not read as a difference between executors.
function npm(args) {
  let last;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return execFileSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
    } catch (e) {
      last = e;
    }
  }
  throw new Error(`testbed: npm ${args.join(' ')} failed three times: ${last?.stderr || last?.message}`);
}

function referenceDir(version) {
  if (version === installedVersion) return installedDir;
  const prefix = path.join(here, '.reference', version);
  const dir = path.join(prefix, 'node_modules', '@cloudflare', 'codemode');
  if (!existsSync(path.join(dir, 'package.json'))) {
    npm(['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps', `@cloudflare/codemode@${version}`]);
  }
  return dir;
}

async function startWorkerd(dir, packageDir) {
  await esbuild.build({
    alias: { '@cloudflare/codemode': path.join(packageDir, 'dist', 'index.js') },
    nodePaths: [path.dirname(path.dirname(packageDir)), path.join(root, 'node_modules')],
    entryPoints: [path.join(here, 'host.mjs')],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['cloudflare:workers', 'node:*'],
    outfile: path.join(dir, 'host.js'),
    logLevel: 'error',
  });
  const port = await freePort();
  writeFileSync(path.join(dir, 'config.capnp'), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "host", worker = .host) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "host") ],
);
const host :Workerd.Worker = (
  modules = [ (name = "host.js", esModule = embed "host.js") ],
  compatibilityDate = "2025-06-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [ (name = "LOADER", workerLoader = (id = "testbed")), (name = "SELF", service = "host") ],
);
`);
  const bin = path.join(path.dirname(require.resolve('workerd/package.json')), 'bin', 'workerd');
  const child = spawn(bin, ['serve', path.join(dir, 'config.capnp'), '--experimental'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`workerd exited: ${stderr}`);
    try {
      await fetch(url, { method: 'POST', body: JSON.stringify({ code: 'async () => 1' }) });
      return { child, url, stderr: () => stderr };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill('SIGKILL');
  throw new Error(`workerd did not start on ${url}: ${stderr}`);
}

async function reference(url, c) {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(c), signal: AbortSignal.timeout(30_000) });
  return res.json();
}

// The reference takes modules, timeout and globalOutbound in its constructor (host.mjs); ours
// takes them per call, or, for a `construct` case, in its constructor too.
async function ours(native, executor, c) {
  const options = {};
  if (c.connectors) options.connectors = buildConnectors(c);
  const given = {};
  if (c.modules) given.modules = c.modules;
  if (c.timeout !== undefined) given.timeout = c.timeout;
  if (c.globalOutbound === 'echo') given.globalOutbound = { fetch: echoFetch };
  try {
    if (c.construct) executor = new CodemodeExecutor(native, given);
    else Object.assign(options, given);
    return { outcome: encodeOutcome(await executor.execute(c.code, buildProviders(c), options)) };
  } catch (e) {
    return { rejected: String(e?.message ?? e) };
  }
}

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
  const list = [{ label: 'IsolateExecutor', native: new IsolateExecutor({ outbound: null }) }]; // the reference's default: blocked
  if (version === installedVersion) {
    const daemon = await startDaemon();
    const remote = await connect(daemon.url, { websocket: WebSocket, outbound: null });
    list.push({ label: 'connect()', native: remote, daemon });
  }
  for (const c of list) c.executor = new CodemodeExecutor(c.native);
  return list;
}

async function runAgainst(version) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'codemode-testbed-'));
  const under = await carriers(version);
  let workerd;
  const failures = [];
  const counts = Object.fromEntries(under.map((c) => [c.label, { same: 0, deviation: 0, skipped: 0 }]));
  const quiet = console.warn;
  try {
    workerd = await startWorkerd(dir, referenceDir(version));
    console.warn = () => {}; // the legacy-record case warns, by design
    for (const c of cases) {
      if (c.deviation && !new RegExp(`\\| ${c.deviation} \\|`).test(deviationsDoc)) {
        failures.push(`${c.id}: names ${c.deviation}, which docs/dialect-deviations.md does not list`);
        continue;
      }
      let ref;
      if (!c.referenceSkip) {
        try {
          ref = await reference(workerd.url, c);
        } catch (e) {
          failures.push(`${c.id}: the reference did not answer (${e.message}); workerd said: ${workerd.stderr().slice(-2000)}`);
          continue;
        }
      }
      for (const { label, native, executor } of under) {
        const count = counts[label];
        const mine = await ours(native, executor, c);
        if (c.referenceSkip) {
          count.skipped++;
          if (label === under[0].label) console.log(`  skip-reference ${c.id} (${c.deviation}): ${c.referenceSkip}; ours: ${JSON.stringify(mine)}`);
          if (mine.rejected) failures.push(`${c.id} [${label}]: CodemodeExecutor rejected: ${mine.rejected}`);
          continue;
        }
        const same = JSON.stringify(ref) === JSON.stringify(mine);
        if (same && !c.deviation) count.same++;
        else if (!same && c.deviation) count.deviation++;
        else if (same) failures.push(`${c.id} [${label}]: listed as ${c.deviation} but both executors agree: ${JSON.stringify(mine)}`);
        else failures.push(`${c.id} (§${c.section}) [${label}]: outcomes differ\n    reference: ${JSON.stringify(ref)}\n    ours:      ${JSON.stringify(mine)}`);
      }
    }
  } finally {
    console.warn = quiet;
    workerd?.child.kill('SIGKILL');
    for (const c of under) {
      await c.native.close();
      c.daemon?.child.kill('SIGTERM');
    }
    rmSync(dir, { recursive: true, force: true });
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
