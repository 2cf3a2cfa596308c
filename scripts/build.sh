#!/usr/bin/env bash
# Builds the worker binary and the addon (release), and puts the worker next to the addon, where
# a platform package ships it and where index.js looks for it. native.d.ts declares the addon's
# exports for the type check of lib/ (scripts/test.sh); --no-const-enum writes its string enums as
# unions of string literals, which plain JS can pass.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
cargo build --release --locked -p codemode-worker
npx napi build --platform --release --no-js --no-const-enum --dts native.d.ts --output-dir .
cp target/release/codemode-worker ./codemode-worker
