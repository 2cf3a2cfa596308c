#!/usr/bin/env bash
# Builds the worker binary and the addon (release), and puts the worker next to the addon, where
# a platform package ships it and where index.js looks for it. native.d.ts declares the addon's
# exports for the type check of lib/ (scripts/test.sh); --no-const-enum writes its string enums as
# unions of string literals, which plain JS can pass.
#
#   scripts/build.sh [--target <rust target triple>]
#
# With --target (the release workflow, one build per target on a machine of that target) cargo
# and napi build for that triple, into target/<triple>/release; without it, for this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
target=""
if [ "$#" -gt 0 ]; then
  [ "$1" = --target ] && [ "$#" -eq 2 ] || { echo "usage: scripts/build.sh [--target <triple>]" >&2; exit 2; }
  target="$2"
fi
# Written as a string, not an array: macOS ships bash 3.2, where an empty array trips `set -u`.
target_flag=""
out="target/release"
if [ -n "$target" ]; then
  target_flag="--target $target"
  out="target/$target/release"
fi
exe=""
case "${target:-$(rustc -vV | sed -n 's/^host: //p')}" in *windows*) exe=".exe" ;; esac
# The worker is built twice: the first build writes the runtime's V8 startup snapshot
# (--write-snapshot leaves a file that still fits these sources untouched), the second embeds it
# (crates/worker/build.rs), so a worker starts without building it. While the file exists the
# first build embeds it too, so a rebuild that changed nothing compiles nothing. The worker runs
# here, so the target must be one this machine runs.
snapshot="$PWD/target/codemode-snapshot${target:+-$target}.bin"
if [ -f "$snapshot" ]; then
  CODEMODE_SNAPSHOT="$snapshot" cargo build --release --locked -p codemode-worker $target_flag
else
  cargo build --release --locked -p codemode-worker $target_flag
fi
"$out/codemode-worker$exe" --write-snapshot "$snapshot"
CODEMODE_SNAPSHOT="$snapshot" cargo build --release --locked -p codemode-worker $target_flag
npx napi build --platform --release $target_flag --no-js --no-const-enum --dts native.d.ts --output-dir .
# Copied beside, then renamed over: a worker binary that runs (a test, a pool of another
# process) cannot be overwritten in place ("Text file busy"), but it can be replaced.
cp "$out/codemode-worker$exe" "./codemode-worker$exe.new"
mv -f "./codemode-worker$exe.new" "./codemode-worker$exe"
