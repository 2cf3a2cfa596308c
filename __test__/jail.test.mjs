import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const worker = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'codemode-worker');

describe('the worker jail (Linux)', () => {
  it('refuses files, sockets, exec, new processes and ptrace once jailed, and V8 still runs', () => {
    const out = execFileSync(worker, ['--jail-selftest'], { encoding: 'utf8' });
    const probes = Object.fromEntries(out.trim().split('\n').map((l) => {
      const [name, verdict, errno] = l.split(' ');
      return [name, { verdict, errno: Number(errno) }];
    }));
    // An allow-list: a sample of what lies outside it, harmless calls (getppid) included.
    for (const name of ['open', 'openat', 'socket', 'execve', 'fork', 'clone-process', 'ptrace', 'unshare', 'mkdir',
      'process_vm_readv', 'kill-parent', 'kill-init', 'tgkill-other', 'mount', 'bpf', 'perf_event_open', 'userfaultfd',
      'io_uring_setup', 'prlimit-set', 'getppid']) {
      expect(probes[name], name).toEqual({ verdict: 'refused', errno: 1 /* EPERM */ });
    }
    for (const name of ['prlimit-get', 'kill-self', 'tgkill-self', 'getrandom', 'mmap', 'mprotect']) {
      expect(probes[name].verdict, name).toBe('allowed');
    }
    expect(probes.thread.verdict).toBe('allowed');
    expect(probes['core-limit'].verdict).toBe('0');
    expect(probes.v8.verdict).toBe('42');
  });

  it('runs normal programs jailed, tool calls included', async () => {
    const ex = executor({ workers: 1 });
    const out = await run(ex, 'async () => { console.log("jailed"); return await t.echo([1, new Map([[2, 3]])]) }', {
      providers: [{ name: 't', tools: ['echo'] }],
      dispatch: ({ args }) => args[0],
    });
    expect(out.result).toEqual([1, new Map([[2, 3]])]);
    expect(out.logs).toEqual([{ level: 'log', message: 'jailed' }]);
    // The live worker process carries the filter and no_new_privs.
    const [pid] = ex.workerPids();
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^Seccomp:\s+2$/m);
  });

  it('closes descriptors the host leaked into the worker', async () => {
    // fd 5 of the host is a pipe without close-on-exec, as hosts leak them: the worker must
    // not keep it (nor any other descriptor beyond its own four).
    const child = spawn(process.execPath, ['-e', `
      const { IsolateExecutor } = require(${JSON.stringify(path.resolve('index.js'))});
      const ex = new IsolateExecutor({ workers: 1 });
      setTimeout(() => {
        const fs = require('fs');
        const fds = fs.readdirSync('/proc/' + ex.workerPids()[0] + '/fd').map(Number).sort((a, b) => a - b);
        console.log(JSON.stringify(fds));
        ex.close();
      }, 500);`], { stdio: ['pipe', 'pipe', 'inherit', 'ignore', 'ignore', 'pipe'] });
    const line = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(String(d))));
    child.kill();
    expect(JSON.parse(line)).toEqual([0, 1, 2, 3]);
  });
});
