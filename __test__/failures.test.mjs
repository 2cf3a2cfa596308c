import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExecutorError, IsolateExecutor, executor, failureCatalog, rejection, run } from './helpers.mjs';

const ex = executor();

describe('program failures come back in error, never as a rejection', () => {
  const cases = [
    ['throw null', 'async () => { throw null }', 'Uncaught null'],
    ['throw a string', 'async () => { throw "boom" }', "Uncaught 'boom'"],
    ['throw an object', 'async () => { throw { code: 42 } }', 'Uncaught { code: 42 }'],
    // An Error says where it was made (line, column), in the outcome and in its text.
    ['empty Error', 'async () => { throw new Error("") }', 'Error', [1, 21]],
    ['TypeError', 'async () => { null.x }', "TypeError: Cannot read properties of null (reading 'x')", [1, 20]],
    ['rejection', 'async () => Promise.reject(new RangeError("far"))', 'RangeError: far', [1, 28]],
    ['sync throw', '() => { throw new Error("sync") }', 'Error: sync', [1, 15]],
  ];
  it('deep recursion', async () => {
    const out = await run(ex, 'async () => { const f = () => f(); f() }');
    expect(out.error.code).toBe('PROGRAM_ERROR');
    expect(out.error.message).toMatch(/^RangeError: Maximum call stack size exceeded/);
  });
  for (const [name, code, message, at] of cases) {
    it(name, async () => {
      const out = await run(ex, code);
      const place = at ? { message: `${message} (line ${at[0]}, column ${at[1]})`, line: at[0], column: at[1] } : { message };
      expect(out.error).toEqual({ code: 'PROGRAM_ERROR', ...place });
      expect(out.result).toBeUndefined();
    });
  }

  it('a program awaiting nothing that can settle gets NEVER_SETTLED', async () => {
    const out = await run(ex, 'async () => new Promise(() => {})');
    expect(out.error.code).toBe('NEVER_SETTLED');
  });
});

describe('executor faults reject with ExecutorError', () => {
  it('names the bad option and what is allowed', () => {
    const bad = [
      [{ workers: 0 }, 'workers'],
      [{ workers: 1.5 }, 'workers'],
      [{ timeout: -1 }, 'timeout'],
      [{ memoryLimit: 'big' }, 'memoryLimit'],
      [{ queueBound: NaN }, 'queueBound'],
      [{ outbound: 'yes' }, 'outbound'],
      [{ wrokers: 2 }, 'wrokers'],
      ['fast', 'options'],
    ];
    for (const [options, field] of bad) {
      let err;
      try {
        new IsolateExecutor(options);
      } catch (e) {
        err = e;
      }
      expect(err, field).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('INVALID_OPTION');
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(`\`${field}\``);
      expect(err.message).toContain('Allowed:');
    }
  });

  it('names the bad request field', async () => {
    const bad = [
      [{}, 'code'],
      [{ code: 1 }, 'code'],
      [{ code: 'async () => 1', modules: { './a.js': 5 } }, 'modules["./a.js"]'],
      [{ code: 'async () => 1', providers: [{ name: 'store', tools: ['a'] }] }, 'dispatch'],
      [{ code: 'async () => 1', providers: [{ name: 'console', tools: [] }], dispatch() {} }, 'providers[0].name'],
      [{ code: 'async () => 1', providers: [{ name: 'a b', tools: [] }], dispatch() {} }, 'providers[0].name'],
      // Every language global (not only the common ones), and words code cannot name a global by.
      ...['TypeError', 'parseInt', 'Uint8Array', 'WeakRef', 'Iterator', 'import', 'await', 'let', 'arguments'].map((name) => [{ code: 'async () => 1', providers: [{ name, tools: [] }], dispatch() {} }, 'providers[0].name']),
      [{ code: 'async () => 1', providers: [{ name: 'p', tools: 'all' }], dispatch() {} }, 'providers[0].tools'],
      [{ code: 'async () => 1', providers: [{ name: 'p', tools: [] }, { name: 'p', tools: [] }], dispatch() {} }, 'providers[1].name'],
      [{ code: 'async () => 1', timeout: 0 }, 'timeout'],
      [{ code: 'async () => 1', memoryLimit: 1 }, 'memoryLimit'],
      [{ code: 'async () => 1', cod: 1 }, 'cod'],
      [null, 'request'],
    ];
    for (const [request, field] of bad) {
      const err = await rejection(ex.execute(request));
      expect(err, field).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('INVALID_REQUEST');
      expect(err.message).toContain(`\`${field}\``);
    }
  });

  it('rejects use after close with CLOSED, and close is idempotent', async () => {
    const own = new IsolateExecutor({ workers: 1 });
    expect((await own.execute({ code: 'async () => 1' })).result).toBe(1);
    await own.close();
    await own.close();
    const err = await rejection(own.execute({ code: 'async () => 1' }));
    expect(err).toBeInstanceOf(ExecutorError);
    expect(err.code).toBe('CLOSED');
    expect(err.retryable).toBe(false);
  });

  it('takes the worker binary from workerPath or CODEMODE_WORKER_PATH', async () => {
    const binary = new URL('../codemode-worker', import.meta.url).pathname;
    const byOption = new IsolateExecutor({ workers: 1, workerPath: binary });
    expect((await byOption.execute({ code: 'async () => "option"' })).result).toBe('option');
    await byOption.close();
    const saved = process.env.CODEMODE_WORKER_PATH;
    process.env.CODEMODE_WORKER_PATH = '/nonexistent/from-env';
    try {
      let err;
      try {
        new IsolateExecutor({ workers: 1 });
      } catch (e) {
        err = e;
      }
      expect(err?.code).toBe('WORKER_NOT_FOUND');
      expect(err.message).toContain('/nonexistent/from-env');
    } finally {
      if (saved === undefined) delete process.env.CODEMODE_WORKER_PATH;
      else process.env.CODEMODE_WORKER_PATH = saved;
    }
  });

  it('reports a missing worker binary naming where it looked', () => {
    let err;
    try {
      new IsolateExecutor({ workerPath: '/nonexistent/codemode-worker' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExecutorError);
    expect(err.code).toBe('WORKER_NOT_FOUND');
    expect(err.message).toContain('/nonexistent/codemode-worker');
  });
});

describe('the failure grammar', () => {
  it('docs/failures.md lists every code with its retryability and text', () => {
    const doc = readFileSync(new URL('../docs/failures.md', import.meta.url), 'utf8');
    for (const entry of failureCatalog()) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`${entry.code}\` |`));
      expect(row, entry.code).toBeDefined();
      expect(row).toContain(`| ${entry.kind} |`);
      expect(row).toContain(`| ${entry.retryable ? 'yes' : 'no'} |`);
      expect(row).toContain(entry.text.replace(/\|/g, '\\|'));
    }
  });
});
