// Hostile program text against the host and the workers: nesting bombs (oxc recursed once per
// level with no depth check, so `'('.repeat(20000)` killed the host through the dialect's
// TypeScript fallback, and the worker through its own parse), import floods (the dialect's
// import lifting was quadratic) and oversize code. Each must end as a declared program failure,
// with the host alive and the same worker serving the next run.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { executor, failureCatalog } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');
const { normalizeCode } = require('../lib/codemode/normalize.js');
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const N = 20_000;
const r = (s, n) => s.repeat(n);
/** Programs that nest N deep, each in the shape a parser recurses on. */
const SHAPES = {
  paren: `async () => ${r('(', N)}1${r(')', N)}`,
  array: `async () => ${r('[', N)}${r(']', N)}`,
  object: `async () => (${r('{a:', N)}1${r('}', N)})`,
  block: `async () => { ${r('{', N)}${r('}', N)} }`,
  arrow: `async () => ${r('a=>', N)}1`,
  minus: `async () => ${r('- ', N)}1`,
  not: `async () => ${r('!', N)}1`,
  conditional: `async () => ${r('a?b:', N)}c`,
  template: `async () => ${r('`${', N)}1${r('}`', N)}`,
  member: `async () => x${r('.y', 8 * N)}`,
  binary: `async () => 1${r('+1', 8 * N)}`,
  call: `async () => f${r('()', 8 * N)}`,
  ifs: `async () => { ${r('if (a) ', N)}; }`,
  typescript: `async (x: number) => ${r('(', N)}x${r(')', N)}`,
  generics: `async () => { let x: ${r('A<', N)}B${r('>', N)} }`,
};
const DEEP_TEXT = /^The code nests too deeply: \d+ levels at line 1, more than the 500 levels code may nest/;

describe('nesting bombs', () => {
  it('the failure is declared: a program failure with a text for the model', () => {
    const entry = failureCatalog().find((f) => f.code === 'NESTING_TOO_DEEP');
    expect(entry).toMatchObject({ kind: 'program', retryable: false });
  });

  it('a host running the dialect on each shape survives (a child process, so a crash cannot take the suite)', () => {
    // The host's TypeScript fallback (acorn fails, the addon strips types with oxc on Node's
    // thread) used to end this process with SIGSEGV.
    const script = `
      const { IsolateExecutor, CodemodeExecutor } = require(${JSON.stringify(ROOT)});
      const shapes = ${JSON.stringify(SHAPES)};
      (async () => {
        const native = new IsolateExecutor({ workers: 1 });
        const cm = new CodemodeExecutor(native);
        const out = {};
        for (const [name, code] of Object.entries(shapes)) out[name] = (await cm.execute(code, [])).error;
        await native.close();
        process.stdout.write(JSON.stringify(out));
      })();`;
    const child = spawnSync(process.execPath, ['-'], { input: script, encoding: 'utf8', timeout: 120_000 });
    expect(child.error).toBeUndefined();
    expect({ signal: child.signal, status: child.status, stderr: child.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
    const errors = JSON.parse(child.stdout);
    for (const name of Object.keys(SHAPES)) expect(errors[name], name).toMatch(DEEP_TEXT);
  }, 130_000);

  it('the dialect in this process refuses each shape before parsing it', async () => {
    const native = executor({ workers: 1 });
    const cm = new CodemodeExecutor(native);
    for (const [name, code] of Object.entries(SHAPES)) {
      const out = await cm.execute(code, []);
      expect(out.error, name).toMatch(DEEP_TEXT);
      expect(out.result, name).toBeUndefined();
    }
  });

  it('the worker refuses each shape as a program failure, and is not lost', async () => {
    // It used to abort on a stack overflow: WORKER_LOST (retryable, so a retry loop), a restart.
    const ex = executor({ workers: 1 });
    const first = await ex.execute({ code: 'async () => 1' });
    const pid = first.stats.workerPid;
    for (const [name, code] of Object.entries(SHAPES)) {
      const out = await ex.execute({ code });
      expect(out.error?.code, name).toBe('NESTING_TOO_DEEP');
      expect(out.error.message, name).toMatch(DEEP_TEXT);
      expect(out.error.line, name).toBe(1);
      expect(out.stats.workerPid, name).toBe(pid);
    }
    expect(ex.workerPids()).toEqual([pid]);
    expect((await ex.execute({ code: 'async () => 2' })).result).toBe(2);
  });

  it('code within the bound runs, in both executors', async () => {
    const ex = executor({ workers: 1 });
    const code = `async () => ${r('(', 300)}${r('[', 100)}7${r(']', 100)}${r(')', 300)}`;
    const expected = JSON.parse(`${r('[', 100)}7${r(']', 100)}`);
    expect((await ex.execute({ code })).result).toEqual(expected);
    expect(await new CodemodeExecutor(ex).execute(code, [])).toEqual({ result: expected, logs: [] });
  });

  it('a deeply nested TypeScript module is refused unparsed; a JavaScript one is V8s to refuse', async () => {
    const ex = executor({ workers: 1 });
    const pid = (await ex.execute({ code: 'async () => 1' })).stats.workerPid;
    const deep = `export const x = ${r('(', N)}1${r(')', N)}`;
    const ts = await ex.execute({ code: "import { x } from './deep.ts'\nasync () => x", modules: { './deep.ts': deep } });
    expect(ts.error?.code).toBe('NESTING_TOO_DEEP');
    expect(ts.error.message).toMatch(/^The module "\.\/deep\.ts" nests too deeply/);
    // V8 checks its own stack while parsing: a RangeError, no lost worker.
    const js = await ex.execute({ code: "import { x } from './deep.js'\nasync () => x", modules: { './deep.js': deep } });
    expect(js.error?.message).toMatch(/Maximum call stack size exceeded|too deep|nest/i);
    const dynamic = await ex.execute({ code: "async () => { try { await import('./deep.ts') } catch (e) { return e.message } }", modules: { './deep.ts': deep } });
    expect(dynamic.result).toMatch(/^The module "\.\/deep\.ts" nests too deeply/);
    expect(ex.workerPids()).toEqual([pid]);
  });

  it('brackets inside strings, comments, templates and regular expressions do not count', async () => {
    const ex = executor({ workers: 1 });
    const code = `async () => {
  const s = '${r('(', 5000)}' // ${r('[', 5000)}
  /* ${r('{', 5000)} */
  const t = \`${r('(', 5000)}\`
  const re = /${r('\\(', 5000)}/
  return s.length + t.length + re.source.length
}`;
    expect((await ex.execute({ code })).result).toBe(20_000);
  });
});

describe('oversize code and import floods (the dialect)', () => {
  it('20,000 imports normalize in time linear in their number (against 2,000)', () => {
    const program = (n) => {
      let s = '';
      for (let i = 0; i < n; i++) s += `import { a${i} } from 'm${i}'\n`;
      return `${s}async () => a0`;
    };
    const time = (code) => {
      const runs = [];
      for (let k = 0; k < 5; k++) {
        const t0 = performance.now();
        const out = normalizeCode(code, true);
        runs.push(performance.now() - t0);
        expect(out.refused).toBeUndefined();
      }
      return Math.min(...runs);
    };
    const small = program(2_000);
    const large = program(20_000);
    time(small); // warm up
    time(large);
    // Ten times the imports: linear takes about 10 times the baseline, quadratic about 100 times
    // (the lifting that rebuilt the source per import took thousands). The best of three rounds,
    // so a busy machine cannot make a linear run look quadratic.
    const ratios = [];
    for (let round = 0; round < 3; round++) ratios.push(time(large) / time(small));
    expect(Math.min(...ratios)).toBeLessThan(32);
    const out = normalizeCode(large, true);
    expect(out.imports.split('\n')).toHaveLength(20_000);
    expect(out.code).toBe('async () => a0');
    // The lines after the imports keep their numbers.
    expect(out.origin).toEqual({ line: 1, modelLine: 20_001 });
  });

  it('code past the size bound is refused before it is read, naming the bound', async () => {
    const cm = new CodemodeExecutor(executor({ workers: 1 }));
    const code = `async () => '${'x'.repeat(1024 * 1024)}'`;
    const out = await cm.execute(code, []);
    expect(out.error).toBe(`The code is ${Buffer.byteLength(code)} bytes, more than the 1048576 bytes a program may take. Write a shorter program: fetch large data through a tool call, or import it from a module, instead of writing it into the code.`);
    const entry = failureCatalog().find((f) => f.code === 'CODE_TOO_LARGE');
    expect(entry).toMatchObject({ kind: 'program', retryable: false });
    // Just under the bound runs.
    const fits = `async () => '${'x'.repeat(1024 * 1024 - 100)}'.length`;
    expect(await cm.execute(fits, [])).toEqual({ result: 1024 * 1024 - 100, logs: [] });
  });
});
