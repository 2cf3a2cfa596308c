#!/usr/bin/env bash
# Builds the worker binary and the addon (release), and puts the worker next to the addon, where
# a platform package ships it and where index.js looks for it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
cargo build --release --locked -p codemode-worker
npx napi build --platform --release --no-js --dts native.d.ts --output-dir .
cp target/release/codemode-worker ./codemode-worker
