#!/usr/bin/env bash
# Stages what `npm pack` publishes: copies the built addon and the codemode-worker binary (from
# scripts/build.sh, in the repository root) into the platform package npm/<target>/, and checks
# that every package under npm/ carries the root's version and depends on it exactly. `npm run
# build` runs it last; then `npm pack` in the root and in each npm/* folder gives the tarballs
# that would be published. The staged binaries are build output (.gitignore), never committed.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=$(node -p "require('./lib/native').platformTag()")
addon="codemode-executor.${tag}.node"
dir="npm/${tag}"
for f in "$addon" codemode-worker; do
  [ -f "$f" ] || { echo "stage: $f is missing; run scripts/build.sh first" >&2; exit 1; }
done
[ -d "$dir" ] || { echo "stage: no platform package folder $dir for this machine" >&2; exit 1; }
# Beside, then renamed over (a running binary cannot be overwritten in place).
for f in "$addon" codemode-worker; do
  cp "$f" "$dir/$f.new"
  mv -f "$dir/$f.new" "$dir/$f"
done
node - <<'JS'
const fs = require('node:fs');
const path = require('node:path');
const root = require('./package.json');
const problems = [];
for (const name of fs.readdirSync('npm')) {
  const file = path.join('npm', name, 'package.json');
  if (!fs.existsSync(file)) continue;
  const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (pkg.version !== root.version) problems.push(`${file}: version ${pkg.version}, the root is ${root.version}`);
  const dep = pkg.dependencies?.[root.name];
  if (dep !== undefined && dep !== root.version) problems.push(`${file}: depends on ${root.name}@${dep}, not ${root.version}`);
  if (pkg.name.startsWith(`${root.name}-`) && root.optionalDependencies?.[pkg.name] !== root.version) {
    problems.push(`package.json: optionalDependencies lacks ${pkg.name}@${root.version}`);
  }
}
if (problems.length) {
  console.error(`stage: versions disagree:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
JS
echo "stage: $dir has $addon and codemode-worker ($(du -h "$dir/codemode-worker" | cut -f1))"
