import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { executor, rejection, run } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { reservedNames, LANGUAGE_GLOBALS } = require('../lib/validate');
const { limits } = require('../lib/native.js');

const ex = executor();

describe("provider names and the worker's globals", () => {
  it('reserves every name of the global object a program finds, as the worker reports it', async () => {
    const { result: names } = await run(ex, 'async () => Object.getOwnPropertyNames(globalThis)');
    // V8 15.2's, which a host on Node 20 (V8 11.3) has none of in its own realm.
    expect(names).toEqual(expect.arrayContaining(['Temporal', 'Iterator', 'DisposableStack', 'AsyncDisposableStack', 'SuppressedError', 'Float16Array']));
    expect(names.filter((name) => !reservedNames().has(name))).toEqual([]);
    // The list is the worker's exactly: the language's globals and the runtime's are every name
    // it has, plus the two the runtime removes (docs/runtime.md). A V8 that adds or drops a
    // global fails here, naming it, until lib/validate.js LANGUAGE_GLOBALS follows.
    expect([...LANGUAGE_GLOBALS, ...limits().runtimeGlobals].sort()).toEqual([...names, 'WebAssembly', 'SharedArrayBuffer'].sort());
  });

  it("refuses a provider named after one of V8 15.2's new globals before any program runs", async () => {
    for (const name of ['Temporal', 'DisposableStack', 'Float16Array']) {
      const e = await rejection(run(ex, 'async () => 1', { providers: [{ name, tools: ['t'] }], dispatch: () => 1 }));
      expect(e.code, name).toBe('INVALID_REQUEST');
      expect(e.message, name).toContain('providers[0].name');
    }
  });
});

describe('providers and dispatch', () => {
  it('routes a tool call to dispatch with provider, tool and args', async () => {
    const calls = [];
    const out = await run(ex, 'async () => await store.get("a", { n: 1 })', {
      providers: [{ name: 'store', tools: ['get'] }],
      dispatch: (call) => {
        calls.push(call);
        return { found: call.args[0] };
      },
    });
    expect(out.result).toEqual({ found: 'a' });
    expect(calls).toEqual([{ provider: 'store', tool: 'get', args: ['a', { n: 1 }] }]);
  });

  it('rejects a tool outside a closed list inside the sandbox, without reaching dispatch', async () => {
    let reached = 0;
    const out = await run(ex, 'async () => { try { await store.drop() } catch (e) { return e.message } }', {
      providers: [{ name: 'store', tools: ['get'] }],
      dispatch: () => {
        reached++;
      },
    });
    expect(out.result).toBe('Tool "drop" not found');
    expect(reached).toBe(0);
  });

  it("lets an open list ('*') reach dispatch under any name", async () => {
    const out = await run(ex, 'async () => [await any.whatever(1), await any.other()]', {
      providers: [{ name: 'any', tools: '*' }],
      dispatch: ({ tool, args }) => `${tool}:${args.length}`,
    });
    expect(out.result).toEqual(['whatever:1', 'other:0']);
  });

  it('makes an undeclared provider no name at all', async () => {
    const out = await run(ex, 'async () => [typeof store, typeof other, Object.keys(store)]', {
      providers: [{ name: 'store', tools: ['get', 'put'] }],
      dispatch: () => null,
    });
    expect(out.result).toEqual(['object', 'undefined', ['get', 'put']]);
  });

  it('keeps calls under Promise.all in flight on the host at the same time', async () => {
    let inFlight = 0;
    let peak = 0;
    const out = await run(ex, 'async () => Promise.all([1, 2, 3, 4, 5].map((n) => slow.wait(n)))', {
      providers: [{ name: 'slow', tools: ['wait'] }],
      dispatch: async ({ args: [n] }) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        return n * 10;
      },
    });
    expect(out.result).toEqual([10, 20, 30, 40, 50]);
    expect(peak).toBe(5);
  });

  it("rejects the tool call with the host's message when dispatch throws or rejects", async () => {
    const out = await run(
      ex,
      'async () => { const m = []; for (const t of ["sync", "async", "str"]) { try { await p[t]() } catch (e) { m.push(e.message) } } return m }',
      {
        providers: [{ name: 'p', tools: ['sync', 'async', 'str'] }],
        dispatch: ({ tool }) => {
          if (tool === 'sync') throw new Error('no such account');
          if (tool === 'async') return Promise.reject(new Error('rate limited'));
          throw 'plain string';
        },
      },
    );
    expect(out.result).toEqual(['no such account', 'rate limited', 'plain string']);
  });

  it('an uncaught dispatch failure becomes the run error, not a rejection', async () => {
    const out = await run(ex, 'async () => p.t()', {
      providers: [{ name: 'p', tools: ['t'] }],
      dispatch: () => {
        throw new Error('backend down');
      },
    });
    expect(out.error).toEqual({ code: 'PROGRAM_ERROR', message: 'Error: backend down' });
  });

  it('refuses uncloneable tool arguments and results with declared texts', async () => {
    const out = await run(
      ex,
      'async () => { const m = []; try { await p.t(() => 1) } catch (e) { m.push(e.message) } try { await p.fn() } catch (e) { m.push(e.message) } return m }',
      { providers: [{ name: 'p', tools: ['t', 'fn'] }], dispatch: () => () => 'a function' },
    );
    expect(out.result[0]).toContain('The arguments of p.t cannot be copied out of the sandbox');
    expect(out.result[1]).toContain('The tool p.fn returned a value that cannot be copied into the sandbox');
  });

  it('does not answer `then`, so awaiting a provider object is harmless', async () => {
    let reached = 0;
    const out = await run(ex, 'async () => { const s = await store; return typeof s.get }', {
      providers: [{ name: 'store', tools: '*' }],
      dispatch: () => {
        reached++;
      },
    });
    expect(out.result).toBe('function');
    expect(reached).toBe(0);
  });
});
