// CodemodeExecutor's constructor options: DynamicWorkerExecutor's (besides `loader`) as defaults
// for every call, the per-call ExtendedExecuteOptions winning; anything else refused.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ExecutorError, executor, thrown } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const native = executor({ workers: 1 }); // outbound omitted: native
const lib = { 'mylib.js': 'export const answer = 42' };
const probe = `async () => { try { const r = await fetch('https://api.example.test/v1?q=1', { method: 'POST', headers: { 'x-k': 'v' }, body: 'ping' }); return [r.status, r.statusText, r.headers.get('x-echo'), await r.text()] } catch (e) { return e.message } }`;

/** A Fetcher as a Worker sees one: `fetch(Request) -> Response`, recording what it got. */
function fetcher() {
  const seen = [];
  return {
    seen,
    async fetch(request) {
      seen.push({ method: request.method, url: request.url, k: request.headers.get('x-k'), body: await request.text() });
      return new Response(`echo ${request.method}`, { status: 201, statusText: 'Made', headers: { 'x-echo': 'yes' } });
    },
  };
}

describe('CodemodeExecutor constructor options', () => {
  it('takes modules as the default module map (the reference test "custom modules importable in sandbox code")', async () => {
    const cm = new CodemodeExecutor(native, { modules: lib });
    expect(await cm.execute("async () => (await import('mylib.js')).answer", [])).toEqual({ result: 42, logs: [] });
    expect(await cm.execute("import { answer } from 'mylib.js'\nasync () => answer + 1", [])).toEqual({ result: 43, logs: [] });
    const other = await cm.execute("async () => (await import('mylib.js')).answer", [], { modules: { 'mylib.js': 'export const answer = 7' } });
    expect(other).toEqual({ result: 7, logs: [] });
  });

  it('takes timeout as the default bound, a per-call timeout winning', async () => {
    const cm = new CodemodeExecutor(native, { timeout: 200 });
    const slow = 'async () => { await new Promise((r) => setTimeout(r, 1500)); return "done" }';
    const started = Date.now();
    expect(await cm.execute(slow, [])).toEqual({ result: undefined, error: 'Execution timed out', logs: [] });
    expect(Date.now() - started).toBeLessThan(1400);
    expect(await cm.execute(slow, [], { timeout: 5000 })).toEqual({ result: 'done', logs: [] });
  });

  it('takes globalOutbound: null as a closed network', async () => {
    const cm = new CodemodeExecutor(native, { globalOutbound: null });
    const out = await cm.execute(probe, []);
    expect(out.result).toMatch(/^fetch is closed in this sandbox/);
  });

  it('sends every fetch to a Fetcher globalOutbound, a per-call outbound winning', async () => {
    const f = fetcher();
    const cm = new CodemodeExecutor(native, { globalOutbound: f });
    expect(await cm.execute(probe, [])).toEqual({ result: [201, 'Made', 'yes', 'echo POST'], logs: [] });
    expect(f.seen).toEqual([{ method: 'POST', url: 'https://api.example.test/v1?q=1', k: 'v', body: 'ping' }]);
    const closed = await cm.execute(probe, [], { outbound: null });
    expect(closed.result).toMatch(/^fetch is closed in this sandbox/);
    expect(f.seen).toHaveLength(1);
  });

  it('rejects a fetch whose Fetcher throws with its message', async () => {
    const cm = new CodemodeExecutor(native, { globalOutbound: { fetch: () => { throw new Error('upstream down') } } });
    const out = await cm.execute(probe, []);
    expect(out.result).toMatch(/upstream down/);
  });

  it('refuses unknown options and wrong types with INVALID_OPTION naming the allowed ones', () => {
    for (const [options, field] of [
      [{ bindings: {} }, 'bindings'],
      [{ loader: {} }, 'loader'],
      [{ modules: 'x' }, 'modules'],
      [{ modules: { 'a.js': 1 } }, 'modules'],
      [{ timeout: -1 }, 'timeout'],
      [{ globalOutbound: 'x' }, 'globalOutbound'],
      ['fast', 'options'],
    ]) {
      const e = thrown(() => new CodemodeExecutor(native, options));
      expect(e).toBeInstanceOf(ExecutorError);
      expect(e.code).toBe('INVALID_OPTION');
      expect(e.message.startsWith(`Invalid option \`${field}\`: `)).toBe(true);
    }
    const unknown = thrown(() => new CodemodeExecutor(native, { bindings: {} }));
    expect(unknown.message).toBe('Invalid option `bindings`: CodemodeExecutor options has no such field. Allowed: modules, timeout, globalOutbound, cpuLimit, toolCallLimit, fetchLimit.');
  });
});
