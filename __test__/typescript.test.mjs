// TypeScript programs in both executors (types blanked in the worker, every position kept),
// refused constructs, and failures that point at the line of the model's own code, in process
// and over connect().
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';
import { connected, served } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');

const ex = executor();
const dialect = new CodemodeExecutor(ex);

const shapes = './shapes.ts';
const modules = {
  [shapes]: 'export const unit = 2\nexport function area(w, h) {\n  if (w < 0) throw new RangeError("negative width")\n  return w * h * unit\n}',
};

// One program with each kind of type syntax: annotations, an interface, a type alias, generics
// (a declaration and explicit type arguments), `as`, `satisfies`, non-null `!`, a type-only
// import and a type-only specifier, an optional parameter, a class with modifiers.
const PROGRAM = `import type { Shape } from './types.ts'
import { type Unit, area } from './shapes.ts'

async (): Promise<{ total: number; names: string[] }> => {
  interface Row { name: string; w: number; h?: number }
  type Pair<T> = [T, T]
  const rows: Row[] = (await store.rows()) as Row[]
  const first = <T,>(xs: readonly T[]): T | undefined => xs[0]
  const pair: Pair<number> = [1, 2] satisfies Pair<number>
  class Box {
    private readonly label: string
    constructor(label: string) { this.label = label }
    public name(suffix?: string): string { return this.label + (suffix ?? '') }
  }
  const sizes = new Map<string, number>()
  for (const r of rows) sizes.set(r.name, area(r.w, r.h ?? 1))
  const total = [...sizes.values()].reduce<number>((a, b) => a + b, 0) + pair[0]
  return { total: total + sizes.get(first<Row>(rows)!.name)!, names: rows.map((r) => new Box(r.name).name('!')) }
}`;

const providers = [{ name: 'store', tools: ['rows'] }];
const rows = [{ name: 'a', w: 2, h: 3 }, { name: 'b', w: 1 }];
const dispatch = async () => rows;
// a: 2*3*2 = 12, b: 1*1*2 = 2; total 14 + pair[0] 1 = 15; + sizes.get('a') 12 = 27
const EXPECTED = { total: 27, names: ['a!', 'b!'] };

describe('TypeScript programs', () => {
  it('run in the native executor with their types removed', async () => {
    const out = await run(ex, PROGRAM, { providers, dispatch, modules: { ...modules, './types.ts': 'export {}' } });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual(EXPECTED);
  });

  it('run in the dialect (ExtendedExecuteOptions.modules)', async () => {
    const out = await dialect.execute(PROGRAM, [{ name: 'store', fns: { rows: async () => rows } }], {
      modules: { ...modules, './types.ts': 'export {}' },
    });
    expect(out).toEqual({ result: EXPECTED, logs: [] });
  });

  it('run in the dialect when written as a fenced body, as models answer', async () => {
    const code = '```ts\nconst n: number = await store.count()\nreturn (n as number) * 2\n```';
    const out = await dialect.execute(code, [{ name: 'store', fns: { count: async () => 21 } }]);
    expect(out).toEqual({ result: 42, logs: [] });
  });

  it('keep plain JavaScript as it was: a comparison is not a type argument', async () => {
    const out = await run(ex, 'async () => { const a = 1, b = 2, c = 3; return a < b > c }');
    expect(out.result).toBe(false);
  });

  const refused = [
    ['an `enum`', 'async () => {\n  enum Color { Red, Blue }\n  return Color.Red\n}', 2, 'a plain object'],
    ['a `namespace` that holds values', 'async () => {\n  namespace Geo {\n    export const pi = 3\n  }\n}', 2, 'plain objects'],
    ['a parameter property', 'async () => {\n\n  class A { constructor(private x: number) {} }\n}', 3, 'the field in the class body'],
    ['a decorator', 'async () => {\n  @sealed\n  class A {}\n}', 2, 'a plain call'],
  ];
  for (const [what, code, line, instead] of refused) {
    it(`refuses ${what} with a text naming it, its line and what to write`, async () => {
      const out = await run(ex, code);
      expect(out.error.code).toBe('TYPESCRIPT_UNSUPPORTED');
      expect(out.error.message).toContain(`uses ${what}`);
      expect(out.error.message).toContain(`on line ${line}.`);
      expect(out.error.message).toContain(`Write ${instead}`);
      expect(out.error.line).toBe(line);
      const d = await dialect.execute(code, []);
      expect(d.error).toBe(out.error.message);
    });
  }
});

// A multi-line TypeScript program whose line 6 throws: types before it on the same line and on
// earlier lines must not move the reported place.
const THROWS = `async (): Promise<number> => {
  interface Item { id: number; price?: number }
  const items: Item[] = [{ id: 1 }] as Item[]
  let sum: number = 0
  for (const item of items) {
    const price: number = item.price!.valueOf()
    sum += price
  }
  return sum
}`;

describe('TypeScript modules', () => {
  it('a module keyed .ts has its types removed, and its errors keep their place', async () => {
    const ts = { './calc.ts': 'interface Opts { scale: number }\nexport function scaled(x: number, o: Opts): number {\n  if (x < 0) throw new Error(`bad ${x as number}`)\n  return x * o.scale\n}' };
    const ok = await run(ex, "import { scaled } from './calc.ts'\nasync () => scaled(2, { scale: 3 })", { modules: ts });
    expect(ok.result).toBe(6);
    const bad = await run(ex, "import { scaled } from './calc.ts'\nasync () => scaled(-1, { scale: 3 })", { modules: ts });
    expect(bad.error).toMatchObject({ code: 'PROGRAM_ERROR', module: './calc.ts', line: 3, column: 20 });
    const refused = await run(ex, "import { E } from './e.ts'\nasync () => E.A", { modules: { './e.ts': 'export enum E { A }' } });
    expect(refused.error.code).toBe('SYNTAX_ERROR');
    // The table's TYPESCRIPT_UNSUPPORTED text, naming the module, as a program's refusal is worded.
    expect(refused.error.message).toContain('The module "./e.ts" uses an `enum` on line 1. TypeScript runs here with its types removed');
    expect(refused.error.message).not.toContain('..');
  });
});

describe('failures point at the line of the model\'s code', () => {
  it('a runtime error in a multi-line TypeScript program', async () => {
    const out = await run(ex, THROWS);
    expect(out.error).toEqual({
      code: 'PROGRAM_ERROR',
      message: "TypeError: Cannot read properties of undefined (reading 'valueOf') (line 6, column 39)",
      line: 6,
      column: 39,
    });
  });

  it('the first line of the expression, where the entry rewrite moved the columns', async () => {
    const out = await run(ex, 'async (n: number) => n.a.b');
    expect([out.error.line, out.error.column]).toEqual([1, 24]);
    expect(out.error.message).toBe("TypeError: Cannot read properties of undefined (reading 'a') (line 1, column 24)");
  });

  it('a throw inside a module names the module', async () => {
    const out = await run(ex, "import { area } from './shapes.ts'\n\nasync () => area(-1, 2)", { modules });
    expect(out.error).toEqual({
      code: 'PROGRAM_ERROR',
      message: 'RangeError: negative width (module "./shapes.ts", line 3, column 20)',
      line: 3,
      column: 20,
      module: './shapes.ts',
    });
  });

  it('a TypeScript syntax error, without the entry-shape reminder', async () => {
    const out = await run(ex, 'async () => {\n  const a: number = 1\n  const b: = 2\n  return a\n}');
    expect(out.error.code).toBe('SYNTAX_ERROR');
    expect([out.error.line, out.error.column]).toEqual([3, 12]);
    expect(out.error.message).toMatch(/^SyntaxError: .* \(line 3, column 12\)\.$/);
  });

  it('a JavaScript syntax error, with V8 wording and without the entry-shape reminder', async () => {
    const out = await run(ex, 'async () => {\n  const a = [1, 2\n  return a\n}');
    expect(out.error.code).toBe('SYNTAX_ERROR');
    expect(out.error.line).toBe(3);
    expect(out.error.message).not.toContain('must be one expression');
  });

  it('the entry-shape reminder when statements were written without their function', async () => {
    const out = await run(ex, 'const rows = await store.rows()\nreturn rows.length');
    expect(out.error.code).toBe('SYNTAX_ERROR');
    expect(out.error.line).toBe(2);
    expect(out.error.message).toContain('The code must be one expression that evaluates to a function');
  });

  it('a thrown value that is not an Error has no place', async () => {
    const out = await run(ex, 'async () => { await null; throw "plain" }');
    expect(out.error).toEqual({ code: 'PROGRAM_ERROR', message: "Uncaught 'plain'" });
  });

  it('the dialect keeps the reference text for a runtime error', async () => {
    const out = await dialect.execute(THROWS, []);
    expect(out).toEqual({ result: undefined, error: "Cannot read properties of undefined (reading 'valueOf')", logs: [] });
  });

  it('the dialect reports a syntax error at the line of the model\'s code', async () => {
    const out = await dialect.execute('async () => {\n  const a: number = 1\n  const b = ;\n}', []);
    // Not JavaScript, and the TypeScript parser read further: its text, at the model's line.
    expect(out.error).toBe('SyntaxError: Unexpected token (line 3).');
  });
});

describe('over connect()', () => {
  let remote;
  afterAll(async () => {
    await remote?.close();
  });

  it('a TypeScript program runs and its failure carries the place', async () => {
    const server = await served();
    remote = await connected(server.url);
    const ok = await remote.execute({ code: 'async (): Promise<number> => (6 as number) * 7' });
    expect(ok.result).toBe(42);
    const out = await remote.execute({ code: THROWS });
    expect(out.error).toEqual({
      code: 'PROGRAM_ERROR',
      message: "TypeError: Cannot read properties of undefined (reading 'valueOf') (line 6, column 39)",
      line: 6,
      column: 39,
    });
    const inModule = await remote.execute({ code: "import { area } from './shapes.ts'\nasync () => area(-1, 2)", modules });
    expect(inModule.error.module).toBe('./shapes.ts');
    expect(inModule.error.line).toBe(3);
  });
});
