import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const ex = executor();

describe('entry contract', () => {
  it('calls the function with no arguments and awaits it', async () => {
    const out = await run(ex, 'async (...args) => ({ n: args.length, v: await Promise.resolve(7) })');
    expect(out.result).toEqual({ n: 0, v: 7 });
    expect(out.logs).toEqual([]);
    expect(Object.keys(out).sort()).toEqual(['calls', 'logs', 'result', 'stats']);
  });

  it('accepts a synchronous function and a parenthesized expression', async () => {
    expect((await run(ex, '() => 3')).result).toBe(3);
    expect((await run(ex, '(async function named() { return 4 });')).result).toBe(4);
  });

  it('resolves imports only through the module map, node: specifiers included', async () => {
    const out = await run(
      ex,
      "import { total } from './invoices.js'\nimport { AsyncLocalStorage } from 'node:async_hooks'\nasync () => [total([1, 2]), AsyncLocalStorage.name]",
      {
        modules: {
          './invoices.js': "import { sum } from './lib/sum.js'\nexport const total = (rows) => sum(rows)",
          './lib/sum.js': 'export const sum = (xs) => xs.reduce((a, b) => a + b, 0)',
          'node:async_hooks': 'export class AsyncLocalStorage {}',
        },
      },
    );
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual([3, 'AsyncLocalStorage']);
  });

  it('evaluates a module once even when imported twice', async () => {
    const out = await run(ex, "import { n } from './a.js'\nimport { m } from './b.js'\nasync () => [n, m]", {
      modules: {
        './counter.js': 'export let count = 0; export const bump = () => ++count',
        './a.js': "import { bump } from './counter.js'\nexport const n = bump()",
        './b.js': "import { bump } from './counter.js'\nexport const m = bump()",
      },
    });
    expect(out.result).toEqual([1, 2]);
  });

  it('names an unknown specifier', async () => {
    const out = await run(ex, "import fs from 'node:fs'\nasync () => fs", { modules: { './a.js': '' } });
    expect(out.error.code).toBe('MODULE_NOT_FOUND');
    expect(out.error.message).toContain('"node:fs"');
    expect(out.error.message).toContain('"./a.js"');
  });

  it('tells the model the shape to write for statements', async () => {
    for (const code of ['const x = 1; async () => x', 'function main() {}', 'export default async () => 1', '']) {
      const out = await run(ex, code);
      expect(out.error.code, code).toBe('ENTRY_SHAPE');
      expect(out.error.message).toContain('one expression that evaluates to a function');
    }
  });

  it('tells the model when the expression is not a function', async () => {
    const out = await run(ex, '42');
    expect(out.error.code).toBe('ENTRY_SHAPE');
    expect(out.error.message).toContain('evaluates to number, not a function');
  });

  it('reports syntax errors with V8 wording and a line, in the program or a module', async () => {
    const a = await run(ex, 'async () => {\n  return 1 +\n}');
    expect(a.error.code).toBe('SYNTAX_ERROR');
    expect(a.error.message).toMatch(/^SyntaxError: .*\(line 3, column 1\)\.$/);
    expect([a.error.line, a.error.column]).toEqual([3, 1]);
    const b = await run(ex, "import { x } from './bad.js'\nasync () => x", { modules: { './bad.js': 'export const x = ;' } });
    expect(b.error.code).toBe('SYNTAX_ERROR');
    expect(b.error.message).toContain('module "./bad.js"');
  });

  it('gives every run a fresh isolate: nothing leaks between runs', async () => {
    await run(ex, 'async () => { globalThis.leak = 1; Array.prototype.evil = 1 }');
    for (let i = 0; i < 4; i++) {
      const out = await run(ex, 'async () => [typeof leak, [].evil]');
      expect(out.result).toEqual(['undefined', undefined]);
    }
  });

  it('has no Node and no WebAssembly inside', async () => {
    const out = await run(ex, 'async () => [typeof process, typeof require, typeof Buffer, typeof WebAssembly]');
    expect(out.result).toEqual(['undefined', 'undefined', 'undefined', 'undefined']);
  });
});
