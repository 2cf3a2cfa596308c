#!/usr/bin/env node
// Writes npm/<tag>/package.json for a platform package from the linux-x64-gnu one (name, os,
// cpu, libc, the addon's file name, the worker's: `codemode-worker.exe` on Windows), and with
// --optional adds it to the root's optionalDependencies at the root's version. The release
// workflow (.github/workflows/release.yml) runs it for each target it built; in the checkout only
// npm/linux-x64-gnu exists (the one target built and tested here).
//
//   node scripts/platform-package.mjs <tag> [--optional]   (the tag lib/native.js platformTag() gives)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [tag, flag] = process.argv.slice(2);
const m = /^(linux|darwin|win32)-(x64|arm64)(?:-(gnu|musl))?$/.exec(tag ?? '');
if (!m) {
  console.error('usage: node scripts/platform-package.mjs <tag as lib/native.js platformTag() names it: linux-x64-gnu, linux-arm64-gnu, darwin-x64, darwin-arm64, win32-x64> [--optional]');
  process.exit(2);
}
const [, os, cpu, abi] = m;
const rootFile = path.join(checkout, 'package.json');
const root = JSON.parse(fs.readFileSync(rootFile, 'utf8'));
const template = JSON.parse(fs.readFileSync(path.join(checkout, 'npm', 'linux-x64-gnu', 'package.json'), 'utf8'));
const addon = `codemode-executor.${tag}.node`;
const worker = os === 'win32' ? 'codemode-worker.exe' : 'codemode-worker';
const pkg = {
  ...template,
  name: `${root.name}-${tag}`,
  version: root.version,
  description: `The codemode-executor addon and its codemode-worker binary for ${tag}.`,
  os: [os],
  cpu: [cpu],
  main: addon,
  files: [addon, worker, 'README.md'],
};
if (abi === 'gnu' || abi === 'musl') pkg.libc = [abi === 'gnu' ? 'glibc' : 'musl'];
else delete pkg.libc;
const dir = path.join(checkout, 'npm', tag);
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
if (!fs.existsSync(path.join(dir, 'README.md'))) {
  fs.writeFileSync(path.join(dir, 'README.md'), `# ${pkg.name}\n\n${pkg.description}\nInstalled as an optional dependency of \`${root.name}\`; do not depend on it directly.\n`);
}
if (flag === '--optional') {
  root.optionalDependencies = { ...root.optionalDependencies, [pkg.name]: root.version };
  fs.writeFileSync(rootFile, `${JSON.stringify(root, null, 2)}\n`);
}
console.log(`npm/${tag}: ${pkg.name}@${pkg.version}${flag === '--optional' ? ' (in optionalDependencies)' : ''}`);
