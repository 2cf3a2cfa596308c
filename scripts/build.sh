#!/usr/bin/env bash
# Builds the worker binary and the addon (release), and puts the worker next to the addon, where
# a platform package ships it and where index.js looks for it. native.d.ts declares the addon's
# exports for the type check of lib/ (scripts/test.sh); --no-const-enum writes its string enums as
# unions of string literals, which plain JS can pass.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
# The worker is built twice: the first build writes the runtime's V8 startup snapshot
# (--write-snapshot leaves a file that still fits these sources untouched), the second embeds it
# (crates/worker/build.rs), so a worker starts without building it. While the file exists the
# first build embeds it too, so a rebuild that changed nothing compiles nothing.
snapshot="$PWD/target/codemode-snapshot.bin"
if [ -f "$snapshot" ]; then
  CODEMODE_SNAPSHOT="$snapshot" cargo build --release --locked -p codemode-worker
else
  cargo build --release --locked -p codemode-worker
fi
target/release/codemode-worker --write-snapshot "$snapshot"
CODEMODE_SNAPSHOT="$snapshot" cargo build --release --locked -p codemode-worker
npx napi build --platform --release --no-js --no-const-enum --dts native.d.ts --output-dir .
cp target/release/codemode-worker ./codemode-worker
