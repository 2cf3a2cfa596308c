// Install check: connect() to the installed CLI's daemon (`codemode-executor serve`, its URL in
// argv), natively and through the dialect, from every host: Bun's and Deno's own WebSocket, and
// Node's (22 and newer); Node 20 has no global WebSocket: it passes `ws`'s.
import assert from 'node:assert/strict';
import { CodemodeExecutor, connect } from '@supolka/cloudflare-codemode-executor';

const url = process.argv[2];
const options = typeof globalThis.WebSocket === 'function' ? {} : { websocket: (await import('ws')).WebSocket };
const remote = await connect(url, { ...options, outbound: null });
try {
  const out = await remote.execute({
    code: 'async () => (await kv.get("k")) + 1',
    providers: [{ name: 'kv', tools: ['get'] }],
    dispatch: ({ args }) => (args[0] === 'k' ? 41 : 0),
  });
  assert.equal(out.result, 42, JSON.stringify(out));
  const dialect = await new CodemodeExecutor(remote).execute('async () => { console.log("hi"); return [1, 2] }', []);
  assert.deepEqual(dialect, { result: [1, 2], logs: ['hi'] });
  const stats = await remote.stats();
  assert.equal(stats.workers, 1);
} finally {
  await remote.close();
}
