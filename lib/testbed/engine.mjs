// The differential testbed's engine: replays cases through the real DynamicWorkerExecutor in a
// local workerd and through CodemodeExecutor over the native executors a runner gives, and
// judges each pair of outcomes. Two runners share it: the project's own (`npm run testbed`,
// testbed/run.mjs) and the package's CLI (`codemode-executor testbed`, cli.mjs; docs/testbed.md).
//
// workerd, esbuild and @cloudflare/codemode are the host project's, never this package's: they
// are resolved from the directory a runner names (`hostTools`), and the reference only ever
// loads inside workerd. In Node this module loads CodemodeExecutor (ours) and nothing else.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildConnectors, buildProviders, echoFetch, wireCase } from './answers.mjs';
import { encodeOutcome } from './codec.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { CodemodeExecutor } = createRequire(import.meta.url)('../../index.js');

/** What the host project must install for the testbed to run, in the order the hint names them. */
export const HOST_TOOLS = ['workerd', 'esbuild', '@cloudflare/codemode'];

/** The host project lacks some of HOST_TOOLS: `missing` names them, the message says what to run. */
export class MissingTools extends Error {
  constructor(missing, from) {
    super(`the testbed needs ${missing.join(', ')} in the host project (${from}), and ${missing.length === 1 ? 'it is' : 'they are'} not installed there. Install ${missing.length === 1 ? 'it' : 'them'}:\n  npm install -D ${missing.join(' ')}`);
    this.name = 'MissingTools';
    this.missing = missing;
  }
}

/** The directory of package `name` as Node would find it from `from` (walking up node_modules). */
function packageDir(name, from) {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', ...name.split('/'));
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) return null;
  }
}

/**
 * The host project's workerd binary, esbuild, and installed @cloudflare/codemode (optional when
 * the runner fetches the reference by version: `referenceRequired: false`). Throws MissingTools.
 */
export function hostTools(from, { referenceRequired = true } = {}) {
  const dirs = Object.fromEntries(HOST_TOOLS.map((name) => [name, packageDir(name, from)]));
  const missing = HOST_TOOLS.filter((name) => !dirs[name] && (name !== '@cloudflare/codemode' || referenceRequired));
  if (missing.length) throw new MissingTools(missing, path.resolve(from));
  const load = (name) => createRequire(path.join(dirs[name], 'package.json'))(dirs[name]);
  const codemodeDir = dirs['@cloudflare/codemode'];
  return {
    esbuild: load('esbuild'),
    workerdBin: load('workerd').default,
    installed: codemodeDir ? { dir: codemodeDir, version: JSON.parse(readFileSync(path.join(codemodeDir, 'package.json'), 'utf8')).version } : null,
    nodeModules: path.join(path.resolve(from), 'node_modules'),
  };
}

/** npm, retried: a transient registry failure must not read as a difference between executors. */
export function npm(args) {
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

/**
 * The reference package directory for `version`: the installed one, or a copy fetched from the
 * registry into `<cacheDir>/<version>` (kept between runs).
 */
export function referenceDir(version, { installed, cacheDir }) {
  if (installed && version === installed.version) return installed.dir;
  const prefix = path.join(cacheDir, version);
  const dir = path.join(prefix, 'node_modules', '@cloudflare', 'codemode');
  if (!existsSync(path.join(dir, 'package.json'))) {
    try {
      npm(['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps', `@cloudflare/codemode@${version}`]);
    } catch (e) {
      rmSync(prefix, { recursive: true, force: true }); // no half-installed copy for the next run to trust
      throw e;
    }
  }
  return dir;
}

/** A free TCP port on 127.0.0.1 (the reference's workerd listens there). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * workerd (--experimental, 127.0.0.1, a free port) serving host.mjs bundled around the reference
 * in `refDir`, with `catalog` (a module path, or none) as its catalog. Call stop() when done.
 */
export async function startReference({ tools, refDir, catalog }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'codemode-testbed-'));
  const stop = (child) => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  let child;
  try {
    await tools.esbuild.build({
      alias: { '@cloudflare/codemode': path.join(refDir, 'dist', 'index.js'), 'codemode-testbed:catalog': catalog ?? path.join(here, 'no-catalog.mjs') },
      nodePaths: [path.dirname(path.dirname(refDir)), tools.nodeModules],
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
    child = spawn(tools.workerdBin, ['serve', path.join(dir, 'config.capnp'), '--experimental'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const url = `http://127.0.0.1:${port}/`;
    for (let i = 0; i < 200; i++) {
      if (child.exitCode !== null) throw new Error(`workerd exited: ${stderr}`);
      try {
        await fetch(url, { method: 'POST', body: JSON.stringify({ code: 'async () => 1' }) });
        const started = child;
        return { url, stderr: () => stderr, stop: () => stop(started) };
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    throw new Error(`workerd did not start on ${url}: ${stderr}`);
  } catch (e) {
    stop(child);
    throw e;
  }
}

/** The reference's outcome for a wired case: `{ outcome }` or `{ rejected }`. */
async function askReference(reference, wired) {
  const res = await fetch(reference.url, { method: 'POST', body: JSON.stringify(wired), signal: AbortSignal.timeout(30_000) });
  return res.json();
}

/** A plain base class for data connectors in Node (workerd's is RpcTarget). */
class LocalTarget {}

/**
 * Ours, for a wired case. The reference takes modules, timeout and globalOutbound in its
 * constructor (host.mjs); ours takes them per call, or, for a `construct` case, in its
 * constructor too.
 */
async function askOurs(carrier, wired, catalog) {
  const options = {};
  if (wired.connectors) options.connectors = buildConnectors(wired, catalog, LocalTarget);
  const given = {};
  if (wired.modules) given.modules = wired.modules;
  if (wired.timeout !== undefined) given.timeout = wired.timeout;
  if (wired.globalOutbound === 'echo') given.globalOutbound = { fetch: echoFetch };
  try {
    let executor = carrier.executor;
    if (wired.construct) executor = new CodemodeExecutor(carrier.native, given);
    else Object.assign(options, given);
    return { outcome: encodeOutcome(await executor.execute(wired.code, buildProviders(wired, catalog), options)) };
  } catch (e) {
    return { rejected: String(e?.message ?? e) };
  }
}

/** An executor under test: CodemodeExecutor over `native`, named `label` in reports. */
export function carrier(label, native) {
  return { label, native, executor: new CodemodeExecutor(native) };
}

/**
 * Every case through the reference and through each carrier. Returns one record per case and
 * carrier: `{ case, carrier, status, reference?, ours? }`, where status is
 *   'identical'  the outcomes match and the case accepts no difference
 *   'accepted'   they differ and the case accepts a difference (`accept`)
 *   'stale'      the case accepts a difference but the outcomes match
 *   'differs'    they differ and the case accepts no difference
 *   'skipped'    the case is not run against the reference (`referenceSkip`)
 *   'invalid'    the case is not data (`error` says why)
 *   'unanswered' the reference did not answer (`error` says why)
 * `catalog` is the path of the catalog module the cases' `from` and bare connectors draw on.
 */
export async function replay({ cases, carriers, reference, catalog }) {
  const fns = catalog ? await import(pathToFileURL(catalog).href) : {};
  const records = [];
  // Our adapter forwards console.info/debug and warns about the legacy form (docs/dialect-
  // deviations.md D14, §1.2) to this process's console; a replay's output is the report only.
  const saved = { warn: console.warn, info: console.info, debug: console.debug };
  console.warn = console.info = console.debug = () => {};
  try {
    for (const c of cases) {
      let wired;
      try {
        wired = wireCase(c);
      } catch (e) {
        records.push({ case: c, carrier: null, status: 'invalid', error: e.message });
        continue;
      }
      let ref;
      if (!c.referenceSkip) {
        try {
          ref = await askReference(reference, wired);
        } catch (e) {
          records.push({ case: c, carrier: null, status: 'unanswered', error: `${e.message}; workerd said: ${reference.stderr().slice(-2000)}` });
          continue;
        }
      }
      for (const k of carriers) {
        const mine = await askOurs(k, wired, fns);
        if (c.referenceSkip) {
          records.push({ case: c, carrier: k.label, status: 'skipped', ours: mine });
          continue;
        }
        const same = JSON.stringify(ref) === JSON.stringify(mine);
        const status = same ? (c.accept ? 'stale' : 'identical') : c.accept ? 'accepted' : 'differs';
        records.push({ case: c, carrier: k.label, status, reference: ref, ours: mine });
      }
    }
  } finally {
    Object.assign(console, saved);
  }
  return records;
}

