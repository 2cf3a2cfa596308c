// Install check (scripts/test-install.mjs runs it in an empty project): CommonJS require of both
// packages from node_modules, the binaries from the platform package, an execute with a tool.
'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');

/** @param {string} file */
function inside(file) {
  assert.ok(!path.relative(__dirname, file).startsWith('..'), `${file} resolves outside the project ${__dirname}: the checkout is within reach`);
  return file;
}

const rootEntry = inside(require.resolve('@supolka/codemode-executor'));
inside(require.resolve('@supolka/cloudflare-codemode-executor'));
const root = require('@supolka/codemode-executor');
const facade = require('@supolka/cloudflare-codemode-executor');
for (const name of ['IsolateExecutor', 'CodemodeExecutor', 'ExecutorError', 'connect', 'serve', 'failureCatalog', 'register']) {
  assert.equal(typeof root[name], 'function', `@supolka/codemode-executor exports ${name}`);
  assert.equal(facade[name], root[name], `@supolka/cloudflare-codemode-executor re-exports ${name} as the same object`);
}

// The entries that load other packages: the MCP gateway (its SDK is a dependency, installed
// with the package) and the TanStack driver's subpath (in "files" and the exports map).
for (const name of ['createMcpGateway', 'codeModeTool', 'bundleModules']) {
  assert.equal(typeof root[name], 'function', `@supolka/codemode-executor exports ${name}`);
}
inside(require.resolve('@modelcontextprotocol/sdk/server/index.js', { paths: [path.dirname(rootEntry)] }));
assert.equal(typeof require('@supolka/codemode-executor/tanstack').createIsolateDriver, 'function', 'the /tanstack entry exports createIsolateDriver');

// The addon and the worker come from the installed platform package.
const { loadNative } = require(path.join(path.dirname(rootEntry), 'lib', 'native.js'));
const { dir, tag } = loadNative();
assert.equal(inside(dir), path.join(__dirname, 'node_modules', '@supolka', `codemode-executor-${tag}`));
assert.ok(root.failureCatalog().some((e) => e.code === 'WORKER_NOT_FOUND'), 'the failure catalog comes from the addon');

(async () => {
  const ex = new root.IsolateExecutor({ workers: 1, outbound: null });
  try {
    const out = await ex.execute({
      code: 'async () => { const r = await math.add(2, 3); console.log("sum", r); return { r, at: new Date(0), big: 2n ** 64n, bytes: new Uint8Array([1, 2]) } }',
      providers: [{ name: 'math', tools: ['add'] }],
      dispatch: ({ provider, tool, args }) => {
        assert.deepEqual([provider, tool], ['math', 'add']);
        return args[0] + args[1];
      },
    });
    assert.equal(out.error, undefined, JSON.stringify(out.error));
    assert.deepEqual(out.result, { r: 5, at: new Date(0), big: 2n ** 64n, bytes: new Uint8Array([1, 2]) });
    assert.deepEqual(out.logs, [{ level: 'log', message: 'sum 5' }]);
    assert.equal(out.stats.toolCalls, 1);
    await assert.rejects(ex.execute({ code: 42 }), (e) => e instanceof root.ExecutorError && e.code === 'INVALID_REQUEST');
    await assert.rejects(root.createMcpGateway({ servers: {}, executor: ex }), (e) => e instanceof root.ExecutorError && e.code === 'MCP_CONFIG_INVALID');
  } finally {
    await ex.close();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
