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

const { withHalves, measure: sample } = require('./measure');

const measure = (once, n = N) => sample(once, n, GAP_MS);

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
  return { execute, toolCall: withHalves(perCall) };
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

/** Both executors' figures, measured in this run against the same pool size. */
async function run() {
  const local = new IsolateExecutor({ workers: WORKERS });
  const daemon = await startDaemon();
  const remote = await connect(daemon.url, { websocket: WebSocket });
  try {
    return { n: N, calls: CALLS, gapMs: GAP_MS, workers: WORKERS, inProcess: await figures(local), overConnect: await figures(remote) };
  } finally {
    await remote.close();
    await local.close();
    daemon.child.kill('SIGTERM');
  }
}

async function main() {
  {
    const { inProcess, overConnect } = await run();
    const ms = (v) => `${v.toFixed(3)} ms`;
    const us = (v) => `${v.toFixed(0)} µs`;
    console.log(`daemon bench: ${N} executes each, ${WORKERS} workers, ${GAP_MS} ms gaps; tool call = one run's wall time / ${CALLS} sequential calls`);
    console.log('| | in process | over connect() (loopback) | ratio |');
    console.log('| --- | --- | --- | --- |');
    console.log(`| execute p50 | ${ms(inProcess.execute.p50)} | ${ms(overConnect.execute.p50)} | ${(overConnect.execute.p50 / inProcess.execute.p50).toFixed(2)}x |`);
    console.log(`| execute p99 | ${ms(inProcess.execute.p99)} | ${ms(overConnect.execute.p99)} | ${(overConnect.execute.p99 / inProcess.execute.p99).toFixed(2)}x |`);
    console.log(`| tool-call round trip p50 | ${us(inProcess.toolCall.p50)} | ${us(overConnect.toolCall.p50)} | ${(overConnect.toolCall.p50 / inProcess.toolCall.p50).toFixed(2)}x |`);
  }
}

module.exports = { run };

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exitCode = 1;
  });
}
