// Host instrumentation around the model's code: the host wraps the model's arrow in its own (the
// recipe in docs/contract.md, "Instrumenting the model's code", read from the docs and run here
// as written), captures the console, records the hosts the run fetched, and flushes the record
// through a provider of its own in a `finally` while the dispatchers are still live. Against
// IsolateExecutor and CodemodeExecutor: imports, a throw, a timeout, an unawaited tool call.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { executor, sleep } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const here = path.dirname(new URL(import.meta.url).pathname);

/** The docs' recipe, as written. */
function recipe() {
  const doc = readFileSync(path.join(here, '..', 'docs', 'contract.md'), 'utf8');
  const section = doc.slice(doc.indexOf("## Instrumenting the model's code"));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/contract.md has no recipe block');
  return new Function('require', `${block[1]}\nreturn instrument;`)(require);
}
const instrument = recipe();

const MODULES = { 'greet.js': 'export const greet = (n) => `hello ${n}`;', 'lib/math.js': 'export default (a, b) => a + b;' };
const WITH_IMPORTS = `import { greet } from 'greet.js'
import add from 'lib/math.js'
async () => {
  console.log(greet('model'))
  console.warn('two', 2)
  const r = await fetch('https://api.example.test/items?x=1')
  await fetch(new Request('http://other.example.test:8080/'))
  return add(await store.count(), (await r.json()).n)
}`;
const THROWS = `async () => { console.log('before'); await fetch('https://a.example.test/'); throw new Error('model failed') }`;
const TIMES_OUT = `async () => { console.log('spinning'); await fetch('https://b.example.test/'); while (true) {} }`;
const UNAWAITED = `async () => { store.slow(); console.log('returning'); return 'early' }`;

/** A routed outbound that answers every fetch with `{ n: 1 }` and records what it saw. */
function outbound(seen) {
  return (req) => {
    seen.push(new URL(req.url).host);
    return { status: 200, statusText: 'OK', headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"n":1}').buffer };
  };
}

describe('instrument(code), the recipe', () => {
  it('keeps the imports first and wraps the one expression', () => {
    const out = instrument(WITH_IMPORTS);
    expect(out.startsWith("import { greet } from 'greet.js'\nimport add from 'lib/math.js'\nasync () => {")).toBe(true);
    expect(out).toContain('await __host.flush(__record)');
  });

  it('refuses code that is not imports and one expression', () => {
    expect(() => instrument('const x = 1; x')).toThrow(SyntaxError);
    expect(() => instrument('async () => {')).toThrow(SyntaxError);
  });
});

describe('against IsolateExecutor', () => {
  const ex = executor({ workers: 2 });

  /** Runs the instrumented code; the host's own provider `__host` collects the flushes. */
  function instrumented(code, { dispatch = () => 0, timeout = 5000 } = {}) {
    const flushed = [];
    const fetched = [];
    const calls = [];
    const outcome = ex.execute({
      code: instrument(code),
      modules: MODULES,
      providers: [{ name: '__host', tools: ['flush'] }, { name: 'store', tools: ['count', 'slow'] }],
      dispatch: (call) => {
        calls.push(call.tool);
        if (call.provider === '__host') { flushed.push(call.args[0]); return undefined; }
        return dispatch(call);
      },
      outbound: outbound(fetched),
      timeout,
    });
    return { outcome, flushed, fetched, calls };
  }

  it('model code with imports: the record holds its console and fetched hosts, flushed once', async () => {
    const run = instrumented(WITH_IMPORTS, { dispatch: () => 41 });
    const out = await run.outcome;
    expect(out.error).toBeUndefined();
    expect(out.result).toBe(42);
    expect(run.flushed).toEqual([{
      logs: [{ level: 'log', text: 'hello model' }, { level: 'warn', text: 'two 2' }],
      hosts: ['api.example.test', 'other.example.test:8080'],
      fetches: 2,
    }]);
    // The wrapper forwards to the console it wrapped: the outcome's logs are as without it.
    expect(out.logs).toEqual([{ level: 'log', message: 'hello model' }, { level: 'warn', message: 'two 2' }]);
    expect(run.fetched).toEqual(['api.example.test', 'other.example.test:8080']);
    // The flush was the last call, after the model's own.
    expect(run.calls).toEqual(['count', 'flush']);
  });

  it('a throw: the finally flushes, then the run fails with the model\'s error', async () => {
    const run = instrumented(THROWS);
    const out = await run.outcome;
    expect(out.error).toMatchObject({ code: 'PROGRAM_ERROR', message: expect.stringMatching(/^Error: model failed \(line \d+, column \d+\)$/) });
    expect(run.flushed).toEqual([{ logs: [{ level: 'log', text: 'before' }], hosts: ['a.example.test'], fetches: 1 }]);
  });

  it('a timeout: the isolate is terminated, the finally never runs, nothing is flushed; logs and the outbound still saw it', async () => {
    const run = instrumented(TIMES_OUT, { timeout: 300 });
    const out = await run.outcome;
    expect(out.error.code).toBe('TIMEOUT');
    expect(run.flushed).toEqual([]);
    expect(run.calls).toEqual([]);
    expect(out.logs).toEqual([{ level: 'log', message: 'spinning' }]);
    expect(run.fetched).toEqual(['b.example.test']);
  });

  it('an unawaited tool call: flushed on return; the call was dispatched and its late answer reaches nothing', async () => {
    let answered = false;
    const run = instrumented(UNAWAITED, {
      dispatch: async ({ tool }) => {
        if (tool !== 'slow') return 0;
        await sleep(800);
        answered = true;
        return 'late';
      },
    });
    const out = await run.outcome;
    expect(out.error).toBeUndefined();
    expect(out.result).toBe('early');
    expect(run.flushed).toEqual([{ logs: [{ level: 'log', text: 'returning' }], hosts: [], fetches: 0 }]);
    expect(run.calls).toEqual(['slow', 'flush']);
    // The run did not wait for it; the answer comes later and the pool goes on.
    expect(answered).toBe(false);
    await sleep(1000);
    expect(answered).toBe(true);
    await expect(ex.execute({ code: 'async () => 1' })).resolves.toMatchObject({ result: 1 });
    expect(ex.stats()).toMatchObject({ running: 0, queued: 0 });
  });
});

describe('against CodemodeExecutor', () => {
  const cm = new CodemodeExecutor(executor({ workers: 1 }));

  /** The host's own provider is one with fns; the model's providers beside it. */
  function instrumented(code, { fns = {}, timeout = 5000 } = {}) {
    const flushed = [];
    const fetched = [];
    const calls = [];
    const track = (name, fn) => async (...args) => { calls.push(name); return fn(...args); };
    const store = Object.fromEntries(Object.entries({ count: () => 0, slow: () => 0, ...fns }).map(([k, f]) => [k, track(k, f)]));
    const outcome = cm.execute(instrument(code), [
      { name: '__host', fns: { flush: track('flush', async (record) => { flushed.push(record); }) } },
      { name: 'store', fns: store },
    ], { modules: MODULES, timeout, outbound: outbound(fetched) });
    return { outcome, flushed, fetched, calls };
  }

  it('model code with imports: the record holds its console and fetched hosts, flushed once', async () => {
    const run = instrumented(WITH_IMPORTS, { fns: { count: () => 41 } });
    const out = await run.outcome;
    expect(out).toEqual({ result: 42, logs: ['hello model', '[warn] two 2'] });
    expect(run.flushed).toEqual([{
      logs: [{ level: 'log', text: 'hello model' }, { level: 'warn', text: 'two 2' }],
      hosts: ['api.example.test', 'other.example.test:8080'],
      fetches: 2,
    }]);
    expect(run.calls).toEqual(['count', 'flush']);
  });

  it('a throw: the finally flushes, then the dialect reports the model\'s error', async () => {
    const run = instrumented(THROWS);
    const out = await run.outcome;
    expect(out).toEqual({ result: undefined, error: 'model failed', logs: ['before'] });
    expect(run.flushed).toEqual([{ logs: [{ level: 'log', text: 'before' }], hosts: ['a.example.test'], fetches: 1 }]);
  });

  it('a timeout: nothing is flushed; the dialect says "Execution timed out" and keeps the logs', async () => {
    const run = instrumented(TIMES_OUT, { timeout: 300 });
    const out = await run.outcome;
    expect(out).toEqual({ result: undefined, error: 'Execution timed out', logs: ['spinning'] });
    expect(run.flushed).toEqual([]);
    expect(run.fetched).toEqual(['b.example.test']);
  });

  it('an unawaited tool call: flushed on return; the call ran on the host and its answer reaches nothing', async () => {
    let answered = false;
    const run = instrumented(UNAWAITED, { fns: { slow: async () => { await sleep(800); answered = true; return 'late'; } } });
    const out = await run.outcome;
    expect(out).toEqual({ result: 'early', logs: ['returning'] });
    expect(run.flushed).toEqual([{ logs: [{ level: 'log', text: 'returning' }], hosts: [], fetches: 0 }]);
    expect(run.calls).toEqual(['slow', 'flush']);
    expect(answered).toBe(false);
    await sleep(1000);
    expect(answered).toBe(true);
    expect(await cm.execute('async () => 2', [])).toEqual({ result: 2, logs: [] });
  });
});
