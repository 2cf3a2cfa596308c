'use strict';
// What retaining saves: one request served by invoking a retained handler, next to the same
// request served by a fresh execute of the same program (setup through a tool call, then the
// answer). Both on one executor, in one run; prints p50/p99 of each and the ratio.
//
// Usage: npm run bench:handles [-- --quick]

const os = require('node:os');
const { IsolateExecutor } = require('..');

const QUICK = process.argv.includes('--quick');
const N = QUICK ? 300 : 2000;
const GAP_MS = 2;

const catalogue = Array.from({ length: 500 }, (_, i) => ({ id: String(i), name: `item ${i}`, price: i % 97 }));
const dispatch = () => catalogue;
const providers = [{ name: 'store', tools: ['listProducts'] }];

// The same work either way: load the catalogue through the host's tool, answer one lookup.
const RETAINED = `async () => {
  const catalogue = await store.listProducts()
  return {
    fetch: (request) => {
      const id = new URL(request.url).searchParams.get('id')
      return Response.json(catalogue.find((item) => item.id === id) ?? null)
    },
  }
}`;
const FRESH = (id) => `async () => {
  const catalogue = await store.listProducts()
  const response = Response.json(catalogue.find((item) => item.id === ${JSON.stringify(id)}) ?? null)
  return new Uint8Array(await response.arrayBuffer())
}`;

const { measure: sample } = require('./measure');

const measure = (once, n = N) => sample(once, n, GAP_MS);

async function main() {
  const executor = new IsolateExecutor({ workers: Math.max(2, os.availableParallelism()) });
  try {
    const granted = await executor.execute({ code: RETAINED, providers, dispatch, retainHandles: true });
    if (!granted.executionId) throw new Error(`no handle granted: ${JSON.stringify(granted.error)}`);
    const request = (i) => ({ method: 'GET', url: `https://catalogue.internal/item?id=${i % 500}`, headers: [], body: null });
    const invoke = await measure((i) => executor.invokeHandle(granted.executionId, 'fetch', request(i)));
    await executor.closeHandles(granted.executionId);
    const fresh = await measure(async (i) => {
      const outcome = await executor.execute({ code: FRESH(String(i % 500)), providers, dispatch });
      if (outcome.error) throw new Error(outcome.error.message);
    });
    const fmt = (v) => v.toFixed(3);
    console.log(`requests: ${N} each, ${GAP_MS} ms apart, ${os.availableParallelism()} cores`);
    console.log(`invokeHandle (retained):        p50 ${fmt(invoke.p50)} ms, p99 ${fmt(invoke.p99)} ms`);
    console.log(`execute (fresh isolate, setup): p50 ${fmt(fresh.p50)} ms, p99 ${fmt(fresh.p99)} ms`);
    console.log(`retaining answers ${(fresh.p50 / invoke.p50).toFixed(1)}x faster at p50, ${(fresh.p99 / invoke.p99).toFixed(1)}x at p99`);
  } finally {
    await executor.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
