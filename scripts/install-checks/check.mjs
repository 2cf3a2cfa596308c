// Install check: ESM import of both packages, and the migration guide's lines verbatim.
import assert from 'node:assert/strict';
import { CodemodeExecutor, connect } from '@supolka/cloudflare-codemode-executor'
import { IsolateExecutor } from '@supolka/codemode-executor'
import root, { ExecutorError, failureCatalog, serve, register } from '@supolka/codemode-executor';
import facade, * as facadeNamed from '@supolka/cloudflare-codemode-executor';
import { IsolateExecutor as FacadeIsolateExecutor, ExecutorError as FacadeExecutorError } from '@supolka/cloudflare-codemode-executor';

assert.equal(typeof connect, 'function');
assert.equal(FacadeIsolateExecutor, IsolateExecutor, 'IsolateExecutor is importable from the facade, the same class');
assert.equal(FacadeExecutorError, ExecutorError);
assert.equal(facade, root);
for (const f of [failureCatalog, serve, register]) assert.equal(typeof f, 'function');
// Every function the root package exports is a named export of the facade's ESM entry too.
for (const [name, value] of Object.entries(root)) {
  if (typeof value === 'function') assert.equal(facadeNamed[name], value, `@supolka/cloudflare-codemode-executor exports ${name} by name`);
}

const native = new IsolateExecutor({ outbound: null })
const executor = new CodemodeExecutor(native)
try {
  const out = await executor.execute(
    `import { total } from './invoices.js'

async () => total(await billing.invoices('ada'))`,
    [{ name: 'billing', fns: { invoices: async (account) => [{ id: 'i1', account }] } }],
    {
      modules: { './invoices.js': 'export const total = (rows) => rows.length' },
      timeout: 5_000,
      outbound: null,
    },
  );
  assert.deepEqual(out, { result: 1, logs: [] });
  // outbound: null closes the network, as globalOutbound's default does on Workers.
  const blocked = await executor.execute(
    'async () => { try { await fetch("http://127.0.0.1:9/"); return "reached" } catch (e) { return "blocked" } }',
    [],
  );
  assert.deepEqual(blocked, { result: 'blocked', logs: [] });
  const failed = await executor.execute('async () => { throw new Error("boom") }', []);
  assert.equal(failed.error, 'boom');
} finally {
  await native.close();
}
