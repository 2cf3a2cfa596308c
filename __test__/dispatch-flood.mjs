// A program that floods its host with tool calls, each carrying an 8 MiB array, against a
// dispatch that takes its time: run as a child process by dispatch-bounds.test.mjs, with a small
// heap, so a host that held every call's arguments dies of heap exhaustion without taking the
// test runner with it. Prints one JSON line: what the program saw, and a second run's result
// (the host is still healthy).
//
// Usage: node --max-old-space-size=N dispatch-flood.mjs inprocess|connect
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { IsolateExecutor, serve, connect } = require('../index.js');

const mode = process.argv[2];
const CALLS = 100;

let executor;
let server;
if (mode === 'connect') {
  server = await serve({ port: 0, workers: 1, timeout: 60_000, memoryLimit: 512 });
  executor = await connect(server.url, { websocket: require("ws") });
} else {
  executor = new IsolateExecutor({ workers: 1 });
}

let dispatched = 0;
let held = 0;
let heldPeak = 0;
const dispatch = async ({ args }) => {
  dispatched++;
  held++;
  heldPeak = Math.max(heldPeak, held);
  // Slow: the arguments stay referenced until the answer.
  await new Promise((r) => setTimeout(r, 4000));
  held--;
  return args[0].length;
};

const code = `async () => {
  // 8 MiB: eight strings of 1 MiB (serialized as fast as memcpy, so the calls arrive quickly).
  const big = Array.from({ length: 8 }, (_, i) => String(i).repeat(1 << 20));
  const settled = await Promise.all(Array.from({ length: ${CALLS} }, () =>
    kv.put(big).then((n) => ({ ok: n }), (e) => ({ error: e instanceof Error ? e.message : String(e) }))));
  return {
    ok: settled.filter((s) => 'ok' in s).length,
    errors: [...new Set(settled.filter((s) => 'error' in s).map((s) => s.error))],
    rejected: settled.filter((s) => 'error' in s).length,
  };
}`;

const out = await executor.execute({ code, providers: [{ name: 'kv', tools: ['put'] }], dispatch, memoryLimit: 512, timeout: 60_000 });
const after = await executor.execute({ code: 'async () => 6 * 7' });
console.log(JSON.stringify({ error: out.error, result: out.result, dispatched, heldPeak, after: after.result }));
await executor.close();
if (server) await server.close();
