// What a run's tool calls may hold on the host: the serialized argument bytes of calls whose
// dispatch has not settled (TOOL_BYTES_IN_FLIGHT past the budget), and how many dispatches run
// at once (later calls wait, serialized, in arrival order). Both carriers: the in-process pool
// and a connect() client, whose host dispatches the daemon's calls.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { executor, failureCatalog } from './helpers.mjs';
import { connected, served } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
const { loadNative } = require('../lib/native.js');
const FLOOD = fileURLToPath(new URL('./dispatch-flood.mjs', import.meta.url));

/** The bounds, from the addon (crates/protocol `limits`). */
const bounds = () => loadNative().binding.dispatchLimits();

/** Runs dispatch-flood.mjs in a child Node with a 192 MiB heap. */
function flood(mode) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--max-old-space-size=192', FLOOD, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

const declared = () => failureCatalog().find((f) => f.code === 'TOOL_BYTES_IN_FLIGHT');

describe('the argument bytes a run holds on its host', () => {
  for (const mode of ['inprocess', 'connect']) {
    it(`rejects the calls past the budget inside the sandbox, and the host stays healthy (${mode})`, async () => {
      const { code, signal, stdout, stderr } = await flood(mode);
      // Without the budget, 100 calls of 8 MiB held by a slow dispatch exhaust the host's heap.
      expect(stderr).not.toMatch(/heap out of memory/);
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      const out = JSON.parse(stdout.trim().split('\n').pop());
      expect(out.error).toBeUndefined();
      const { ok, rejected, errors } = out.result;
      expect(ok + rejected).toBe(100);
      expect(rejected).toBeGreaterThan(0);
      // Each call carries a little over 8 MiB: no more of them than fit in the budget are held.
      const fit = Math.floor(bounds().toolBytesInFlight / (8 * 1024 * 1024 + 64));
      expect(out.heldPeak).toBeGreaterThan(0);
      expect(out.heldPeak).toBeLessThanOrEqual(fit);
      // One declared text, written for the model, which the program caught.
      const text = new RegExp(`^${declared().text.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[a-z]+\}/g, '.+?')}$`);
      for (const e of errors) {
        expect(e).toMatch(text);
        expect(e).toContain('kv.put');
      }
      expect(out.after).toBe(42);
    }, 120_000);
  }

  it('is declared in the failure grammar, as a sandbox rejection', () => {
    const entry = declared();
    expect(entry).toBeDefined();
    expect(entry.kind).toBe('sandbox');
    expect(entry.text).toMatch(/await/);
  });
});

/** A dispatch that records how many calls it runs at once, each answered after `ms`. */
function counting(ms) {
  const seen = { now: 0, peak: 0, order: [] };
  const dispatch = async ({ args }) => {
    seen.now++;
    seen.peak = Math.max(seen.peak, seen.now);
    seen.order.push(args[0]);
    await new Promise((r) => setTimeout(r, ms));
    seen.now--;
    return args[0] * 2;
  };
  return { seen, dispatch };
}

const many = `async () => {
  const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => kv.get(i)));
  return answers.every((a, i) => a === i * 2) ? answers.length : answers;
}`;

describe('dispatches a run has running at once', () => {
  it('caps them; later calls wait in arrival order and all are answered (in process)', async () => {
    const ex = executor({ workers: 1 });
    const { seen, dispatch } = counting(20);
    const out = await ex.execute({ code: many, providers: [{ name: 'kv', tools: ['get'] }], dispatch });
    expect(out.error).toBeUndefined();
    expect(out.result).toBe(300);
    expect(seen.peak).toBe(bounds().dispatches);
    expect(seen.order).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it('caps them on a connect() client too', async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url);
    const { seen, dispatch } = counting(20);
    const out = await remote.execute({ code: many, providers: [{ name: 'kv', tools: ['get'] }], dispatch });
    expect(out.error).toBeUndefined();
    expect(out.result).toBe(300);
    expect(seen.peak).toBe(bounds().dispatches);
  });

  it('keeps the runs apart: one run waiting on its cap does not hold up another', async () => {
    const ex = executor({ workers: 2 });
    const slow = counting(200);
    const busy = ex.execute({ code: many, providers: [{ name: 'kv', tools: ['get'] }], dispatch: slow.dispatch });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    const quick = await ex.execute({ code: 'async () => kv.get(21)', providers: [{ name: 'kv', tools: ['get'] }], dispatch: async ({ args }) => args[0] * 2 });
    expect(quick.result).toBe(42);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(slow.seen.peak).toBeLessThanOrEqual(bounds().dispatches);
    expect((await busy).result).toBe(300);
  });
});
