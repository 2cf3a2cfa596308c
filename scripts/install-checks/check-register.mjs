// Install check, run as `node --import @supolka/codemode-executor/register check-register.mjs`:
// @cloudflare/codemode's /ai entry loads on Node, and its code tool runs over CodemodeExecutor.
import assert from 'node:assert/strict';
import { createCodeTool } from '@cloudflare/codemode/ai';
import { tool } from 'ai';
import { z } from 'zod';
import { CodemodeExecutor, IsolateExecutor } from '@supolka/cloudflare-codemode-executor';

const native = new IsolateExecutor({ workers: 1, outbound: null });
try {
  const tools = {
    add: tool({
      description: 'Adds two numbers',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      execute: async ({ a, b }) => ({ sum: a + b }),
    }),
  };
  const codeTool = createCodeTool({ tools, executor: new CodemodeExecutor(native) });
  assert.equal(typeof codeTool.execute, 'function');
  const out = await codeTool.execute(
    { code: 'async () => { const r = await codemode.add({ a: 2, b: 3 }); console.log("got", r.sum); return r.sum }' },
    { toolCallId: 'call-1', messages: [] },
  );
  assert.equal(out.result, 5, JSON.stringify(out));
  assert.deepEqual(out.logs, ['got 5']);
} finally {
  await native.close();
}
