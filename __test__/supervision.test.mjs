import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExecutorError, IsolateExecutor, rejection, until } from './helpers.mjs';

function alive(pid) {
  // A reaped process has no /proc entry; a zombie would still show state Z.
  if (!existsSync(`/proc/${pid}/stat`)) return false;
  return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

function workerProcessesOf(parentPid) {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === parentPid && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'codemode-worker';
      } catch {
        return false;
      }
    });
}

import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);


/** Runs `body` with a new executor of `options`, closed after it whatever happens. */
async function withExecutor(options, body) {
  const ex = new IsolateExecutor(options);
  try {
    await body(ex);
  } finally {
    await ex.close();
  }
}

describe('supervision', () => {
  it('a SIGKILLed worker fails only its run with WORKER_LOST, is replaced, and later runs succeed', async () => {
    await withExecutor({ workers: 2 }, async (ex) => {
      // Two runs, one per worker, both parked in a tool call until released.
      let release;
      const released = new Promise((r) => (release = r));
      let parked = 0;
      let bothParked;
      const allParked = new Promise((r) => (bothParked = r));
      const park = () => {
        if (++parked === 2) bothParked();
        return released;
      };
      const runs = ['A', 'B'].map((name) =>
        ex.execute({
          code: `async () => { await host.park(); return "${name}" }`,
          providers: [{ name: 'host', tools: ['park'] }],
          dispatch: park,
        }),
      );
      // A queued third run must not be affected either.
      const queued = ex.execute({ code: 'async () => "queued"' });
      await allParked;
      const before = ex.workerPids();
      expect(before).toHaveLength(2);
      process.kill(before[0], 'SIGKILL');
      const first = await Promise.race(runs.map((p) => p.then(() => 'resolved', (e) => e)));
      expect(first).toBeInstanceOf(ExecutorError);
      expect(first.code).toBe('WORKER_LOST');
      expect(first.retryable).toBe(true);
      expect(first.message).toContain('signal 9');
      release('go');
      const settled = await Promise.allSettled(runs);
      expect(settled.filter((r) => r.status === 'rejected')).toHaveLength(1);
      const survivor = settled.find((r) => r.status === 'fulfilled');
      expect(['A', 'B']).toContain(survivor.value.result);
      expect((await queued).result).toBe('queued');
      expect(await until(() => ex.workerPids().length === 2 && !ex.workerPids().includes(before[0]))).toBe(true);
      for (let i = 0; i < 6; i++) {
        expect((await ex.execute({ code: `async () => ${i}` })).result).toBe(i);
      }
    });
  });

  it('a worker killed while idle is replaced without any run noticing', async () => {
    await withExecutor({ workers: 1 }, async (ex) => {
      expect((await ex.execute({ code: 'async () => 1' })).result).toBe(1);
      const [pid] = ex.workerPids();
      process.kill(pid, 'SIGKILL');
      expect(await until(() => ex.workerPids().length === 1 && ex.workerPids()[0] !== pid)).toBe(true);
      expect((await ex.execute({ code: 'async () => 2' })).result).toBe(2);
    });
  });

  it('runs submitted right after both idle workers were killed all succeed (none was started, none is lost)', async () => {
    for (let round = 0; round < 3; round++) {
      await withExecutor({ workers: 2 }, async (ex) => {
        await Promise.all([ex.execute({ code: 'async () => 0' }), ex.execute({ code: 'async () => 0' })]);
        expect(await until(() => ex.stats().idle === 2)).toBe(true);
        for (const pid of ex.workerPids()) process.kill(pid, 'SIGKILL');
        const outs = await Promise.all([1, 2, 3].map((n) => ex.execute({ code: `async () => ${n}` })));
        expect(outs.map((o) => o.result)).toEqual([1, 2, 3]);
      });
    }
  });

  it('an execute request past the frame bound is refused before it leaves the host, not retryable', async () => {
    await withExecutor({ workers: 1 }, async (ex) => {
      expect((await ex.execute({ code: 'async () => 1' })).result).toBe(1);
      const pids = ex.workerPids();
      const code = `async () => 1 /*${'x'.repeat(256 * 1024 * 1024)}*/`;
      const err = await rejection(ex.execute({ code }));
      expect(err).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('REQUEST_TOO_LARGE');
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(String(256 * 1024 * 1024));
      expect(ex.workerPids()).toEqual(pids);
      expect((await ex.execute({ code: 'async () => 2' })).result).toBe(2);
    });
  }, 60_000);

  it('close() drains running work, then leaves no codemode-worker process behind', async () => {
    const ex = new IsolateExecutor({ workers: 2 });
    const pids = ex.workerPids();
    expect(pids).toHaveLength(2);
    const slow = ex.execute({
      code: 'async () => { await t.sleep(); return "drained" }',
      providers: [{ name: 't', tools: ['sleep'] }],
      dispatch: () => new Promise((r) => setTimeout(r, 200)),
    });
    const closing = ex.close();
    const err = await rejection(ex.execute({ code: 'async () => 1' }));
    expect(err.code).toBe('CLOSED');
    expect((await slow).result).toBe('drained');
    await closing;
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    expect(workerProcessesOf(process.pid)).toEqual([]);
  });

  it('workers die with their host process (no orphans)', async () => {
    const { spawn } = require('node:child_process');
    const script = `const { IsolateExecutor } = require(${JSON.stringify(require.resolve('../index.js'))});
      const ex = new IsolateExecutor({ workers: 2 });
      setTimeout(() => { console.log(JSON.stringify(ex.workerPids())); }, 300);
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(String(d))));
    const pids = JSON.parse(line);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    child.kill('SIGKILL');
    expect(await until(() => pids.every((pid) => !alive(pid)))).toBe(true);
  });
});
