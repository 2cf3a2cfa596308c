// Install check under every host the package runs on (Node, Bun, Deno: the same file, run by
// each): the README's example, a tool call, a thrown error with its line, a timeout bomb and a
// memory bomb ending in their texts, a retained handle invoked twice, an abort, codeModeTool with
// the AI SDK's tool() and a zod schema, and the TanStack driver's context (check-connect.mjs is
// the connect() half). Prints one line per step and `host checks passed under <host>`; any
// difference throws.
import assert from 'node:assert/strict';
import { IsolateExecutor, codeModeTool } from '@supolka/codemode-executor';
import { createIsolateDriver } from '@supolka/codemode-executor/tanstack';
import { tool } from 'ai';
import { z } from 'zod';

const host = typeof process.versions.bun === 'string' ? `Bun ${process.versions.bun}` : typeof globalThis.Deno !== 'undefined' ? `Deno ${globalThis.Deno.version.deno}` : `Node ${process.version}`;
const step = (what) => console.log(`${host}: ${what}`);

const ex = new IsolateExecutor({ workers: 1, outbound: null });
try {
  step("the README's example: a tool call and a console.log");
  const out = await ex.execute({
    code: `async () => {
  const forecast = await weather.forecast({ city: 'Paris' })
  console.log('asked about', forecast.city)
  return { warm: forecast.celsius > 18, at: new Date(0), seen: new Map([[forecast.city, 2n ** 70n]]) }
}`,
    providers: [{ name: 'weather', tools: ['forecast'] }],
    dispatch: ({ tool, args }) => (tool === 'forecast' ? { city: args[0].city, celsius: 21 } : null),
  });
  assert.equal(out.error, undefined, JSON.stringify(out.error));
  assert.equal(out.result.warm, true);
  assert.equal(out.result.at.getTime(), 0);
  assert.equal(out.result.seen.get('Paris'), 2n ** 70n);
  assert.deepEqual(out.logs, [{ level: 'log', message: 'asked about Paris' }]);

  step('a thrown error, with its line');
  const thrown = await ex.execute({ code: 'async () => {\n  const n = 1\n  throw new TypeError(`bad ${n}`)\n}' });
  assert.deepEqual(thrown.error, { code: 'PROGRAM_ERROR', message: 'TypeError: bad 1 (line 3, column 9)', line: 3, column: 9 });

  step('a timeout bomb');
  const slow = await ex.execute({ code: 'async () => { while (true) {} }', timeout: 300 });
  assert.equal(slow.error?.code, 'TIMEOUT', JSON.stringify(slow.error));
  assert.match(slow.error.message, /300 ms/);

  step('a memory bomb');
  const big = await ex.execute({ code: 'async () => { const a = []; while (true) a.push(new Array(1e5).fill(1)) }', memoryLimit: 64 });
  assert.equal(big.error?.code, 'MEMORY_LIMIT', JSON.stringify(big.error));
  assert.match(big.error.message, /64 MiB/);

  step('a retained handle, invoked twice');
  const granted = await ex.execute({
    code: 'async () => { let hits = 0; return { fetch: async () => Response.json({ hits: ++hits }) } }',
    retainHandles: true,
  });
  assert.equal(granted.error, undefined, JSON.stringify(granted.error));
  const request = { method: 'GET', url: 'https://app.internal/', headers: [], body: null };
  const hits = [];
  for (let i = 0; i < 2; i++) {
    const response = await ex.invokeHandle(granted.executionId, 'fetch', request);
    hits.push(JSON.parse(new TextDecoder().decode(response.body)).hits);
  }
  assert.deepEqual(hits, [1, 2]);
  await ex.closeHandles(granted.executionId);

  step('an abort');
  const ac = new AbortController();
  const parked = ex.execute({ code: 'async () => { await new Promise((r) => setTimeout(r, 60_000)) }', signal: ac.signal });
  setTimeout(() => ac.abort(new Error('the user left')), 100);
  const aborted = await parked.then(() => null, (e) => e);
  assert.equal(aborted?.code, 'ABORTED', String(aborted));
  const after = await ex.execute({ code: 'async () => 42' });
  assert.equal(after.result, 42);

  step("codeModeTool: the AI SDK's tool() with a zod schema, called from a program");
  const add = tool({ description: 'Adds', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) });
  const codemode = codeModeTool({ add }, { executor: ex });
  const answered = await codemode.execute({ code: 'async () => { const r = await tools.add({ a: 2, b: 3 }); console.log("sum", r.sum); return r.sum }' }, { toolCallId: 'c1', messages: [] });
  assert.equal(answered.result, 5, JSON.stringify(answered));
  assert.deepEqual(answered.logs, [{ level: 'log', message: 'sum 5' }]);

  step("the TanStack driver: a context with a binding, as @tanstack/ai-code-mode drives it");
  const driver = createIsolateDriver({ executor: ex });
  const ctx = await driver.createContext({ bindings: { external_echo: { name: 'external_echo', description: 'echo', inputSchema: {}, execute: async (args) => args } } });
  const echoed = await ctx.execute('console.log("x"); return await external_echo({ v: 1 })');
  assert.deepEqual(echoed, { success: true, value: { v: 1 }, logs: ['x'] });
  await ctx.dispose();
} finally {
  await ex.close();
}

console.log(`host checks passed under ${host}`);
