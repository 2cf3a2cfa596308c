import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const worker = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'codemode-worker');

// What `codemode-worker --jail-selftest` must find: every probe listed, nothing else.
const MUST_REFUSE = [
  // An allow-list: a sample of what lies outside it, harmless calls (getppid) included.
  'open', 'openat', 'socket', 'execve', 'fork', 'clone-process', 'ptrace', 'unshare', 'mkdir', 'process_vm_readv',
  'kill-parent', 'kill-init', 'tgkill-other', 'mount', 'bpf', 'perf_event_open', 'userfaultfd', 'io_uring_setup',
  'getppid',
  // Allowed calls, refused with arguments that reach outside the process.
  'prlimit-set', 'prlimit-set-high', 'prlimit-other', 'sched-other', 'mmap-shared', 'mmap-growsdown', 'mremap', 'address-space', 'clock-other',
  'madvise-hwpoison',
  // Signals by proxy: a descriptor's owner is signalled by the kernel when the host writes.
  'fcntl-setown', 'fcntl-setown-ex', 'fcntl-setsig', 'fcntl-async', 'fcntl-setlease', 'fcntl-notify',
  'fcntl-setpipe-sz', 'ioctl-setown', 'ioctl-async',
  // prctl beyond thread names: the death signal, dumpability, Yama's ptracer.
  'prctl-pdeathsig', 'prctl-dumpable', 'prctl-ptracer',
  // No thread starts once jailed; no core dump.
  'thread', 'core-dump',
];
const MUST_ALLOW = ['prlimit-get', 'kill-self', 'tgkill-self', 'getrandom', 'mmap', 'mprotect', 'madvise-dontneed',
  'fcntl-getfl', 'prctl-name', 'sched-self', 'clock-thread', 'v8', 'v8-entropy'];

describe('the worker jail (Linux)', () => {
  it('refuses files, sockets, exec, new processes, ptrace and signals by proxy once jailed, and V8 still runs', () => {
    const out = spawnSync(worker, ['--jail-selftest'], { encoding: 'utf8' });
    const lines = out.stdout.trim().split('\n');
    for (const line of lines) expect(line).toMatch(/^[a-z0-9_-]+ (refused|allowed)$/);
    const probes = Object.fromEntries(lines.map((l) => l.split(' ')));
    expect(Object.keys(probes).sort()).toEqual([...MUST_REFUSE, ...MUST_ALLOW].sort());
    const wrong = [
      ...MUST_REFUSE.filter((name) => probes[name] !== 'refused'),
      ...MUST_ALLOW.filter((name) => probes[name] !== 'allowed'),
    ].map((name) => `${name} ${probes[name]}`);
    expect(wrong).toEqual([]);
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
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
    if (process.getuid() === 0) {
      // A root host's workers run as nobody/nogroup, with no groups and no capabilities, under
      // a task limit for that uid (18 threads for each of at least 64 workers).
      expect(status).toMatch(/^Uid:\s+65534\s+65534\s+65534\s+65534$/m);
      expect(status).toMatch(/^Gid:\s+65534\s+65534\s+65534\s+65534$/m);
      expect(status).toMatch(/^Groups:\s*$/m);
      expect(status).toMatch(/^CapEff:\s+0+$/m);
      expect(readFileSync(`/proc/${pid}/limits`, 'utf8')).toMatch(/^Max processes\s+1152\s+1152\s/m);
    } else {
      const uid = process.getuid();
      expect(status).toMatch(new RegExp(`^Uid:\\s+${uid}\\s+${uid}\\s+${uid}\\s+${uid}$`, 'm'));
    }
  });

  it('closes descriptors the host leaked into the worker', async () => {
    // fd 5 of the host is a pipe (a socket pair, as Node makes them) without close-on-exec, as hosts leak them: the worker must
    // not keep it, nor any descriptor beyond its own: stdin, stdout, stderr, the control pipe
    // (3), and the two ends of the pipe that wakes its cancel thread (made after the others
    // were closed).
    const child = spawn(process.execPath, ['-e', `
      const { IsolateExecutor } = require(${JSON.stringify(path.resolve('index.js'))});
      const fs = require('fs');
      const leaked = fs.readlinkSync('/proc/self/fd/5');
      const ex = new IsolateExecutor({ workers: 1 });
      setTimeout(() => {
        const dir = '/proc/' + ex.workerPids()[0] + '/fd';
        const fds = fs.readdirSync(dir).map(Number).sort((a, b) => a - b).map((fd) => [fd, fs.readlinkSync(dir + '/' + fd)]);
        console.log(JSON.stringify({ leaked, fds }));
        ex.close();
      }, 500);`], { stdio: ['pipe', 'pipe', 'inherit', 'ignore', 'ignore', 'pipe'] });
    const line = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(String(d))));
    child.kill();
    const { leaked, fds } = JSON.parse(line);
    expect(leaked).toMatch(/^(pipe|socket):\[\d+\]$/);
    expect(fds.map(([fd]) => fd)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(fds.map(([, target]) => target)).not.toContain(leaked);
    // 4 and 5 are the two ends of one pipe, the worker's own.
    expect(fds[4][1]).toMatch(/^pipe:\[\d+\]$/);
    expect(fds[5][1]).toBe(fds[4][1]);
  });
});
