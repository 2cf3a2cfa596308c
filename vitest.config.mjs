import { defineConfig } from 'vitest/config';

const EOL_QUIET = '--disable-warning=CODEMODE_NODE_EOL';

export default defineConfig({
  test: {
    include: ['__test__/**/*.test.mjs'],
    // Each file starts real worker processes; two files at a time suit a 2-core machine.
    pool: 'forks',
    maxWorkers: 2,
    // On Node 20 the package warns once per process that the Node is past its end of life
    // (lib/node-support.js): not in the suite's own processes nor in the Nodes they start, whose
    // output it would fill. node-versions.test.mjs checks the warning in children without this.
    execArgv: [EOL_QUIET],
    env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, EOL_QUIET].filter(Boolean).join(' ') },
    // CODEMODE_RECORD_PROGRAMS=FILE: every program the suite runs to a result, recorded
    // (__test__/record-programs.mjs, for scripts/typecheck-suite-programs.mjs).
    setupFiles: process.env.CODEMODE_RECORD_PROGRAMS ? ['__test__/record-programs.mjs'] : [],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
