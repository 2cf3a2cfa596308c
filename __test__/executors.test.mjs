// The host side of the addon: two executors alive at once, their executions interleaved, each
// keeping its own runs, tool payload bound (read from its own pool) and closed state; faults the
// addon throws arrive with their code as data; failure texts have one renderer.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ExecutorError, IsolateExecutor, executor, rejection } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { loadNative } = require('../lib/native.js');

/** A promise per round that settles once both executors' calls of that round have arrived. */
function rendezvous() {
  const rounds = new Map();
  return (round) => {
    let r = rounds.get(round);
    if (!r) {
      let open;
      r = { arrived: 0, both: new Promise((resolve) => (open = resolve)), open };
      rounds.set(round, r);
    }
    if (++r.arrived === 2) r.open();
    return r.both;
  };
}

describe('two executors side by side', () => {
  it('each enforces its own tool payload bound and keeps its own runs and closed state', async () => {
    const { NativePool } = loadNative().binding;
    const a = executor({ workers: 1 });
    // Every pool reports the protocol's bound today. B's pool is made to report a smaller one,
    // so a bound shared between executors (the last constructed one's) would show in A.
    const real = NativePool.prototype.limits;
    const spy = vi.spyOn(NativePool.prototype, 'limits').mockImplementation(function () {
      return { ...real.call(this), toolPayloadBytes: 1000 };
    });
    let b;
    try {
      b = executor({ workers: 1 });
    } finally {
      spy.mockRestore();
    }

    const both = rendezvous();
    const calls = { a: [], b: [] };
    const request = (name) => ({
      code: `async () => {
        const out = [];
        for (let i = 0; i < 3; i++) {
          try { out.push((await ${name}.get(i)).length) } catch (e) { out.push(e.message) }
        }
        return out }`,
      providers: [{ name, tools: ['get'] }],
      // Each answer waits for the other executor's call of the same round: the runs interleave.
      dispatch: async ({ provider, args: [i] }) => {
        calls[name].push(`${provider}.get(${i})`);
        await both(i);
        return 'x'.repeat(2000);
      },
    });
    const [outA, outB] = await Promise.all([a.execute(request('a')), b.execute(request('b'))]);
    expect(calls.a).toEqual(['a.get(0)', 'a.get(1)', 'a.get(2)']);
    expect(calls.b).toEqual(['b.get(0)', 'b.get(1)', 'b.get(2)']);
    expect(outA.error).toBeUndefined();
    expect(outA.result).toEqual([2000, 2000, 2000]);
    expect(outB.error).toBeUndefined();
    expect(outB.result).toHaveLength(3);
    for (const message of outB.result) {
      expect(message).toMatch(/^The answer of b\.get came to \d+ bytes, more than the 1000 bytes a tool call may carry/);
    }

    // Closing A leaves B running: its run in flight finishes and it takes new ones.
    let release;
    const gate = new Promise((r) => (release = r));
    const held = b.execute({ code: 'async () => t.wait()', providers: [{ name: 't', tools: ['wait'] }], dispatch: () => gate });
    await a.close();
    const err = await rejection(a.execute({ code: 'async () => 1' }));
    expect(err).toBeInstanceOf(ExecutorError);
    expect(err.code).toBe('CLOSED');
    expect(a.workerPids()).toEqual([]);
    expect(b.workerPids()).toHaveLength(1);
    release('released');
    expect((await held).result).toBe('released');
    const again = await b.execute({ code: 'async () => t.get()', providers: [{ name: 't', tools: ['get'] }], dispatch: () => 'y'.repeat(2000) });
    expect(again.error.code).toBe('PROGRAM_ERROR');
    expect(again.error.message).toContain('more than the 1000 bytes');
  });
});

describe('faults the addon throws', () => {
  /** The constructor's error for `workerPath`. */
  function startError(workerPath) {
    try {
      new IsolateExecutor({ workers: 1, workerPath }).close();
    } catch (e) {
      return e;
    }
    throw new Error('expected the constructor to throw');
  }

  it('carry their code: a path that is not a file is WORKER_NOT_FOUND from the pool', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cme-'));
    try {
      const err = startError(dir);
      expect(err).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('WORKER_NOT_FOUND');
      expect(err.retryable).toBe(false);
      expect(err.message).toBe(`The worker binary was not found at ${dir}. Build it (npm run build), install the platform package, or point \`workerPath\` or CODEMODE_WORKER_PATH at it.`);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('carry their code: a file that cannot be run is WORKER_START_FAILED (retryable)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cme-'));
    const file = join(dir, 'not-executable');
    writeFileSync(file, 'not a program', { mode: 0o644 });
    try {
      const err = startError(file);
      expect(err).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('WORKER_START_FAILED');
      expect(err.retryable).toBe(true);
      expect(err.message).toMatch(/^A worker process could not be started: .+\.$/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

describe('failure texts', () => {
  const { binding } = loadNative();
  const { render } = require('../lib/errors.js');

  it('are rendered by the addon (crates/protocol) for the host side', () => {
    expect(render('TOOL_NOT_FOUND', { tool: 'drop' })).toBe('Tool "drop" not found');
    expect(render('TOOL_PAYLOAD_TOO_LARGE', { what: 'answer', provider: 'p', tool: 't', size: 20, limit: 10 })).toBe(
      binding.renderFailure('TOOL_PAYLOAD_TOO_LARGE', { what: 'answer', provider: 'p', tool: 't', size: '20', limit: '10' }),
    );
    // A placeholder without a value stays as written; braces that are not a placeholder too.
    expect(render('QUEUE_FULL')).toContain('{bound} {what}');
    expect(render('SYNTAX_ERROR', { detail: 'x', hint: ' The code must be one expression' })).toBe('x. The code must be one expression');
    expect(render('NO_SUCH_CODE', { a: 1 })).toBe('NO_SUCH_CODE');
  });
});
