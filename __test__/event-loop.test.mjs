// The in-process executor reads its workers' output on Node's own event loop (src/uv.rs,
// crates/pool/src/watched.rs): no reader thread per worker, frames whole and in order however
// the pipe splits them, workers lost and replaced, close() with the loop as the reader, and an
// idle executor that never keeps Node alive.
import { describe, it, expect, afterEach } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { IsolateExecutor } = require('..');

/** Names of this process's threads. */
function threadNames() {
  return readdirSync('/proc/self/task').map((t) => {
    try {
      return readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  });
}
const readerThreads = () => threadNames().filter((n) => /^worker-\d+$/.test(n));
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let ex;
afterEach(async () => {
  await ex?.close();
  ex = undefined;
});

describe('workers read on Node\'s event loop', () => {
  it('starts no reader thread per worker, before and after a worker is replaced', async () => {
    ex = new IsolateExecutor({ workers: 2 });
    expect((await ex.execute({ code: 'async () => 1' })).result).toBe(1);
    expect(threadNames()).toContain('spawner');
    expect(readerThreads()).toEqual([]);
    const [victim] = ex.workerPids();
    process.kill(victim, 'SIGKILL');
    const deadline = Date.now() + 10_000;
    while ((ex.workerPids().includes(victim) || ex.workerPids().length < 2) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(ex.workerPids()).not.toContain(victim);
    expect(ex.workerPids()).toHaveLength(2);
    for (let i = 0; i < 4; i++) expect((await ex.execute({ code: 'async () => 2' })).result).toBe(2);
    expect(readerThreads()).toEqual([]);
  });

  it('assembles frames whole and in order: many small ones, and results far larger than a pipe read', async () => {
    ex = new IsolateExecutor({ workers: 2 });
    const seen = [];
    const code = `async () => {
      for (let i = 0; i < 500; i++) await t.note(i);
      return 'x'.repeat(6 * 1024 * 1024) + 'end';
    }`;
    const runs = await Promise.all(
      [0, 1, 2].map((n) =>
        ex.execute({
          code,
          providers: [{ name: 't', tools: ['note'] }],
          dispatch: ({ args }) => void seen.push([n, args[0]]),
          timeout: 60_000,
        }),
      ),
    );
    for (const out of runs) {
      expect(out.error).toBeUndefined();
      expect(out.result.length).toBe(6 * 1024 * 1024 + 3);
      expect(out.result.endsWith('end')).toBe(true);
    }
    for (const n of [0, 1, 2]) {
      expect(seen.filter(([k]) => k === n).map(([, i]) => i)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    }
  });

  it('close() reaps every worker at once although the loop it blocks is their reader', async () => {
    ex = new IsolateExecutor({ workers: 2 });
    await ex.execute({ code: 'async () => 1' });
    const pids = ex.workerPids();
    const running = ex.execute({ code: 'async () => { for (;;) {} }', timeout: 200 });
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    await ex.close();
    // close() waits for the run (200 ms bound), then stops the workers: well within its grace.
    expect(Date.now() - started).toBeLessThan(1_500);
    expect((await running).error.code).toBe('TIMEOUT');
    // Reaped, not merely killed: a zombie still answers signal 0.
    for (const pid of pids) expect(alive(pid)).toBe(false);
    ex = undefined;
  });

  it('never keeps Node alive once idle, without close()', () => {
    const script = `
      const { IsolateExecutor } = require(${JSON.stringify(require.resolve('..'))});
      const ex = new IsolateExecutor({ workers: 2 });
      ex.execute({ code: 'async () => 40 + 2' }).then((o) => console.log('result', o.result));
    `;
    const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(out.error).toBeUndefined();
    expect(out.stdout).toContain('result 42');
    expect(out.status).toBe(0);
  });

  it('leaves no handle on a worker thread\'s loop: the thread ends cleanly with or without close()', () => {
    const script = `
      const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');
      if (isMainThread) {
        const results = [];
        const run = (mode) => new Promise((resolve) => {
          const w = new Worker(__filename, { workerData: mode });
          w.on('message', (m) => results.push(mode + ':' + m));
          w.on('exit', (code) => { results.push(mode + ' exit ' + code); resolve(); });
        });
        (async () => {
          for (const mode of ['close', 'idle', 'exit']) await run(mode);
          console.log(results.join(','));
        })();
      } else {
        const { IsolateExecutor } = require(${JSON.stringify(require.resolve('..'))});
        const ex = new IsolateExecutor({ workers: 2 });
        ex.execute({ code: 'async () => 42' }).then(async (o) => {
          parentPort.postMessage(o.result);
          if (workerData === 'close') await ex.close();
          if (workerData === 'exit') process.exit(0);
        });
      }
    `;
    const dir = mkdtempSync(join(tmpdir(), 'codemode-loop-'));
    const file = join(dir, 'threads.cjs');
    writeFileSync(file, script);
    const out = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30_000 });
    rmSync(dir, { recursive: true, force: true });
    expect(out.stderr).not.toContain('open handles');
    expect(out.status).toBe(0);
    expect(out.stdout.trim()).toBe('close:42,close exit 0,idle:42,idle exit 0,exit:42,exit exit 0');
  });
});
