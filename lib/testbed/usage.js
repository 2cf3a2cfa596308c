'use strict';
// The `codemode-executor testbed` part of the CLI's usage text (bin/codemode-executor.js prints
// it in --help, lib/testbed/cli.mjs with a usage error).

const TESTBED_USAGE = `Usage: codemode-executor testbed --cases PATH [--reference VERSION] [--json]

Replays your own cases through the real DynamicWorkerExecutor in workerd and through
CodemodeExecutor (over IsolateExecutor with outbound: null), and prints the differences.
Exits 1 when a case differs and does not accept that difference. Needs workerd, esbuild and
@cloudflare/codemode in the project it runs from. The case model: docs/testbed.md.

Options:
  --cases PATH                 module exporting \`cases\` (required)
  --reference VERSION          the @cloudflare/codemode release to compare with (default: the
                               installed one; another is fetched once into
                               node_modules/.cache/codemode-executor-testbed)
  --json                       print the report as JSON on stdout
`;

module.exports = { TESTBED_USAGE };
