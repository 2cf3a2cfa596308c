// Dynamic import(): the same module map and resolution rules as static imports
// (docs/contract.md, "Modules").
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const ex = executor();
const dec = new TextDecoder();

const notFound = (specifier, available) =>
  `Cannot import "${specifier}": no module by that name was provided with this run. Only the modules in the request's module map can be imported (available: ${available}).`;

describe('dynamic import()', () => {
  it('resolves a map entry to its namespace', async () => {
    const out = await run(ex, "async () => (await import('mylib.js')).answer", {
      modules: { 'mylib.js': 'export const answer = 42' },
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toBe(42);
  });

  it('resolves a relative specifier against the importing module', async () => {
    const out = await run(ex, "async () => (await import('./lib/a.js')).viaB()", {
      modules: {
        './lib/a.js': "export const viaB = async () => (await import('./b.js')).b + 1",
        './lib/b.js': 'export const b = 41',
      },
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toBe(42);
  });

  it('rejects an unknown specifier with the MODULE_NOT_FOUND text, which the program may catch', async () => {
    const caught = await run(ex, "async () => { try { await import('./nope.js') } catch (e) { return [e instanceof Error, e.message] } }", {
      modules: { './a.js': 'export {}' },
    });
    expect(caught.error).toBeUndefined();
    expect(caught.result).toEqual([true, notFound('./nope.js', '"./a.js"')]);
    const uncaught = await run(ex, "async () => (await import('lodash')).default");
    // The place is the import() call's.
    expect(uncaught.error).toEqual({ code: 'PROGRAM_ERROR', message: `Error: ${notFound('lodash', 'none')} (line 1, column 38)`, line: 1, column: 38 });
  });

  it('gives the same instance as a static import, evaluated once', async () => {
    const out = await run(
      ex,
      "import { counter, bump } from './state.js'\nasync () => { bump(); const ns = await import('./state.js'); ns.bump(); const again = await import('state.js'.replace('s', './s')); return [counter(), ns.counter === counter, again === ns, globalThis.evaluated] }",
      { modules: { './state.js': 'globalThis.evaluated = (globalThis.evaluated ?? 0) + 1\nlet n = 0\nexport const bump = () => { n += 1 }\nexport const counter = () => n' } },
    );
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([2, true, true, 1]);
  });

  it('reports a throw during the imported module evaluation as the rejection', async () => {
    const out = await run(ex, "async () => { try { await import('./boom.js') } catch (e) { return e.message } }", {
      modules: { './boom.js': "throw new Error('boom at load')" },
    });
    expect(out.result).toBe('boom at load');
  });

  it('waits for an imported module with top-level await', async () => {
    const out = await run(ex, "async () => (await import('./slow.js')).value", {
      modules: { './slow.js': 'export const value = await new Promise((r) => setTimeout(() => r(7), 5))' },
    });
    expect(out.result).toBe(7);
  });

  it('lets a module import itself while it evaluates', async () => {
    const out = await run(ex, "async () => { const ns = await import('./self.js'); return [(await ns.me).x, (await ns.me) === ns] }", {
      modules: { './self.js': "export const x = 1\nexport const me = import('./self.js')" },
    });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([1, true]);
  });

  it('resolves through the execution map from inside a retained handler', async () => {
    const outcome = await ex.execute({
      code: "async () => ({ fetch: async () => new Response(String((await import('./greet.js')).greet('handle'))) })",
      modules: { './greet.js': 'export const greet = (who) => `hello ${who}`' },
      retainHandles: true,
    });
    expect(outcome.error).toBeUndefined();
    try {
      const answer = await ex.invokeHandle(outcome.executionId, 'fetch', { method: 'GET', url: 'https://app.internal/', headers: [], body: null });
      expect(dec.decode(answer.body)).toBe('hello handle');
    } finally {
      await ex.closeHandles(outcome.executionId);
    }
  });

  it('works through CodemodeExecutor with its per-call modules', async () => {
    const cm = new CodemodeExecutor(ex);
    const out = await cm.execute("async () => (await import('mylib.js')).answer", [], { modules: { 'mylib.js': 'export const answer = 42' } });
    expect(out).toEqual({ result: 42, logs: [] });
  });
});
