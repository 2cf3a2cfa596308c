#!/usr/bin/env bash
# npm run bench: installs the peers (isolated-vm, built from source against this Node's headers
# when no prebuilt binary can be downloaded) into bench/node_modules, then runs bench/bench.js.
# A peer that cannot be installed is reported as missing in the results, not silently dropped.
set -uo pipefail
cd "$(dirname "$0")"
if [ ! -d node_modules/isolated-vm ]; then
  [ -f package.json ] || echo '{ "name": "codemode-executor-bench", "private": true }' > package.json
  nodedir=""
  for d in /usr /usr/local "$(dirname "$(dirname "$(command -v node)")")"; do
    if [ -f "$d/include/node/node_api.h" ]; then nodedir="$d"; break; fi
  done
  # isolated-vm 5.x is the newest line that supports Node 20.
  npm_config_nodedir="$nodedir" npm_config_build_from_source=true \
    npm install --no-save --no-audit --no-fund isolated-vm@5.0.4 > isolated-vm-install.log 2>&1 \
    || echo "isolated-vm could not be installed; see bench/isolated-vm-install.log"
fi
# The native TypeScript preview, measured beside the compiler the type check uses
# (bench/typecheck-native.mjs); a preview that cannot be installed is reported, not dropped.
# Its own folder: an install beside isolated-vm's would prune that unsaved one.
if [ ! -d native-preview/node_modules/@typescript/native-preview ]; then
  mkdir -p native-preview
  [ -f native-preview/package.json ] || echo '{ "name": "codemode-executor-bench-native-preview", "private": true }' > native-preview/package.json
  (cd native-preview && npm install --no-save --no-audit --no-fund @typescript/native-preview@7.0.0-dev.20260707.2 > ../native-preview-install.log 2>&1) \
    || echo "@typescript/native-preview could not be installed; see bench/native-preview-install.log"
fi
exec node --no-node-snapshot bench.js "$@"
