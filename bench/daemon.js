'use strict';
// The daemon's cost: execute p50/p99 and the tool-call round trip over connect() on loopback,
// beside the same figures in process, measured in the same run against the same pool size.
// The daemon runs in a child process started through the CLI, as it is deployed.
//
// Usage: npm run bench:daemon [-- --quick]

const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const WebSocket = require('ws');
const { IsolateExecutor, connect } = require('..');

const QUICK = process.argv.includes('--quick');
const N = QUICK ? 300 : 2000;
const CALLS = 50;
const GAP_MS = 2;
const WORKERS = Math.max(2, os.availableParallelism());

const now = () => process.hrtime.bigint();
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
  return { p50: at(50), p99: at(99) };
}

async function measure(once, n = N) {
  for (let i = 0; i < Math.min(200, n / 4); i++) await once(i);
  const samples = [];
  for (let i = 0; i < n; i++) {
    await pause(GAP_MS);
    const t0 = now();
    await once(i);
    samples.push(Number(now() - t0) / 1e6);
  }
  return stats(samples);
}

// Execute: the smallest program. Tool call: one run making CALLS sequential calls, per call.
async function figures(executor) {
  const execute = await measure(() => executor.execute({ code: 'async () => 1' }));
  const providers = [{ name: 't', tools: ['ping'] }];
  const dispatch = () => 1;
  const code = `async () => { let n = 0; for (let i = 0; i < ${CALLS}; i++) n += await t.ping(); return n }`;
  const perCall = [];
  await measure(async () => {
    const outcome = await executor.execute({ code, providers, dispatch });
    if (outcome.result !== CALLS) throw new Error(`bad result ${JSON.stringify(outcome)}`);
    perCall.push((outcome.stats.wallMs * 1000) / CALLS);
  }, Math.max(50, N / 10));
  return { execute, toolCall: stats(perCall) };
}

function startDaemon() {
  const bin = path.join(__dirname, '..', 'bin', 'codemode-executor.js');
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--workers', String(WORKERS), '--quiet'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (ws:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`the daemon exited (${code})`)));
  });
}

async function main() {
  const local = new IsolateExecutor({ workers: WORKERS });
  const daemon = await startDaemon();
  const remote = await connect(daemon.url, { websocket: WebSocket });
  try {
    const inProcess = await figures(local);
    const overConnect = await figures(remote);
    const ms = (v) => `${v.toFixed(3)} ms`;
    const us = (v) => `${v.toFixed(0)} µs`;
    console.log(`daemon bench: ${N} executes each, ${WORKERS} workers, ${GAP_MS} ms gaps; tool call = one run's wall time / ${CALLS} sequential calls`);
    console.log('| | in process | over connect() (loopback) | ratio |');
    console.log('| --- | --- | --- | --- |');
    console.log(`| execute p50 | ${ms(inProcess.execute.p50)} | ${ms(overConnect.execute.p50)} | ${(overConnect.execute.p50 / inProcess.execute.p50).toFixed(2)}x |`);
    console.log(`| execute p99 | ${ms(inProcess.execute.p99)} | ${ms(overConnect.execute.p99)} | ${(overConnect.execute.p99 / inProcess.execute.p99).toFixed(2)}x |`);
    console.log(`| tool-call round trip p50 | ${us(inProcess.toolCall.p50)} | ${us(overConnect.toolCall.p50)} | ${(overConnect.toolCall.p50 / inProcess.toolCall.p50).toFixed(2)}x |`);
  } finally {
    await remote.close();
    await local.close();
    daemon.child.kill('SIGTERM');
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
