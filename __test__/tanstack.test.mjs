// @supolka/codemode-executor/tanstack: @tanstack/ai-code-mode's IsolateDriver over this
// executor (docs/tanstack.md). The real packages throughout: code mode's createCodeMode and its
// execute_typescript tool, its TypeScript stripping (sucrase) and bindings, zod tools.
//
// Side by side: every case of bench/tanstack/cases.mjs runs through this driver here and through
// the stock driver, @tanstack/ai-isolate-node (isolated-vm 6.2.0), in a Node 22 child process
// (isolated-vm 6 needs Node >= 22; bench/tanstack/setup.mjs fetches Node 22 from the npm registry
// and installs the stock packages, once). Cases marked `same` must give equal outcomes: the tool's
// answer, code mode's custom events (without clock readings), and the driver's ExecutionResult
// (with `stack` reduced to whether there is one). The others are the differences docs/tanstack.md
// lists, each asserted on both sides.
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCodeMode, stripTypeScript, toolsToBindings } from '@tanstack/ai-code-mode';
import { toolDefinition } from '@tanstack/ai';
import { z } from 'zod';
import { cases, runCases } from '../bench/tanstack/cases.mjs';
import { ensureStock } from '../bench/tanstack/setup.mjs';
import { declaredText, ExecutorError, IsolateExecutor, rejection, thrown } from './helpers.mjs';
import { served, connected } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
// Through the package's own name: the `./tanstack` entry of its exports map.
const { createIsolateDriver } = require('@supolka/codemode-executor/tanstack');
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const deps = { createCodeMode, stripTypeScript, toolsToBindings, toolDefinition, z };
const drivers = [];
/** A driver closed after the file. */
function driverOf(options = { executorOptions: { workers: 2 } }) {
  const d = createIsolateDriver(options);
  drivers.push(d);
  return d;
}
afterAll(() => Promise.all(drivers.map((d) => d.close())));

/**
 * Runs `argv` with `node` to its end within `ms`.
 * @returns {Promise<{ code: number | null, signal: string | null, stdout: string, stderr: string }>}
 */
function runChild(node, argv, ms) {
  return new Promise((resolve, reject) => {
    const child = spawn(node, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${argv.join(' ')} ran past ${ms} ms\n${stderr}`));
    }, ms);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** What the side-by-side compares of one case's result. */
const compared = (r) => JSON.parse(JSON.stringify({ tool: r.tool, events: r.events, driver: r.driver, reuse: r.reuse }));

describe('side by side with @tanstack/ai-isolate-node (isolated-vm)', () => {
  /** @type {Map<string, any>} */
  const stock = new Map();
  /** @type {Map<string, any>} */
  const ours = new Map();

  beforeAll(async () => {
    const started = Date.now();
    const { node, dir } = ensureStock();
    const ready = Date.now();
    const child = await runChild(node, ['--no-node-snapshot', path.join(dir, 'run.mjs'), '--driver', 'stock'], 180_000);
    const lines = child.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.at(-1), `the stock run did not finish (exit ${child.code}, ${child.signal})\n${child.stderr}`).toMatchObject({ done: true });
    expect(lines.at(-1).node).toMatch(/^v22\./);
    for (const r of lines.slice(0, -1)) stock.set(r.name, r);
    const stockDone = Date.now();
    for (const r of await runCases(deps, driverOf(), cases)) ours.set(r.name, r);
    console.log(
      `tanstack side by side: setup ${((ready - started) / 1000).toFixed(1)} s, stock driver (Node ${lines.at(-1).node}) ` +
        `${((stockDone - ready) / 1000).toFixed(1)} s, this driver (Node ${process.version}) ${((Date.now() - stockDone) / 1000).toFixed(1)} s, ` +
        `${cases.filter((c) => c.same).length} cases equal by rule, ${cases.filter((c) => !c.same).length} documented differences`,
    );
  }, 600_000);

  it('ran every case on both sides', () => {
    expect([...stock.keys()]).toEqual(cases.map((c) => c.name));
    expect([...ours.keys()]).toEqual(cases.map((c) => c.name));
    for (const c of cases) expect(Boolean(c.same) !== Boolean(c.differs), c.name).toBe(true);
  });

  it.each(cases.filter((c) => c.same).map((c) => [c.name]))('%s: the same outcome', (name) => {
    const theirs = compared(stock.get(name));
    expect(compared(ours.get(name))).toStrictEqual(theirs);
    // Not vacuous: each side answered (no rejection, nothing left pending).
    for (const r of [theirs.tool, theirs.driver]) if (r) expect(typeof r.success, name).toBe('boolean');
  });

  // The differences (docs/tanstack.md, "Where it differs"), each side as observed.
  const tool = (side, name) => side.get(name).tool;

  it('timeout: both fail; the text is this executor\'s, with the TIMEOUT code', () => {
    expect(tool(stock, 'timeout')).toEqual({ success: false, error: { name: 'Error', message: 'Script execution timed out.' }, logs: [] });
    expect(tool(ours, 'timeout')).toEqual({ success: false, error: { name: 'Error', message: declaredText('TIMEOUT', { ms: 500 }) }, logs: [] });
    expect(ours.get('timeout').driver.error).toMatchObject({ code: 'TIMEOUT', hasStack: false });
  });

  it('strict mode: an undeclared assignment throws and `this` is undefined here', () => {
    expect(tool(stock, 'strict-assign')).toMatchObject({ success: true, result: 5 });
    expect(tool(ours, 'strict-assign')).toMatchObject({ success: false, error: { name: 'ReferenceError', message: 'undeclared is not defined' } });
    expect(tool(stock, 'strict-this').result).toBe('object');
    expect(tool(ours, 'strict-this').result).toBe('undefined');
  });

  it('web globals: fetch exists (closed by default) and timers work here', () => {
    expect(tool(stock, 'fetch').result).toBe('undefined');
    expect(tool(ours, 'fetch').result).toBe('function');
    expect(tool(stock, 'fetch-call').error).toEqual({ name: 'ReferenceError', message: 'fetch is not defined' });
    expect(tool(ours, 'fetch-call').error).toEqual({ name: 'TypeError', message: declaredText('NETWORK_CLOSED') });
    expect(tool(stock, 'timers').error).toEqual({ name: 'ReferenceError', message: 'setTimeout is not defined' });
    expect(tool(ours, 'timers')).toMatchObject({ success: true, result: 'waited' });
  });

  it('console.debug logs here (prefixed DEBUG:, rendered like Node) and is missing there', () => {
    expect(tool(stock, 'console-debug').error).toEqual({ name: 'TypeError', message: 'console.debug is not a function' });
    expect(tool(ours, 'console-debug')).toEqual({ success: true, result: 1, logs: ['DEBUG: dbg { a: 1 }'] });
  });

  it('a thrown object with no message or stack: this executor\'s Uncaught text', () => {
    expect(tool(stock, 'throw-opaque').error.message).toBe('An object was thrown from supplied code within isolated-vm, but that object was not an instance of `Error`.');
    expect(tool(ours, 'throw-opaque').error).toEqual({ name: 'Error', message: 'Uncaught { a: 1 }' });
    expect(ours.get('throw-opaque').driver.error.code).toBe('PROGRAM_ERROR');
  });

  it('a thrown symbol: this executor\'s Uncaught text', () => {
    expect(tool(stock, 'throw-symbol').error.message).toBe('An object was thrown from supplied code within isolated-vm, but that object was not an instance of `Error`.');
    expect(tool(ours, 'throw-symbol').error).toEqual({ name: 'Error', message: 'Uncaught Symbol(s)' });
  });

  it('a binding name that is not an identifier: createContext rejects on both sides', () => {
    expect(stock.get('binding-not-identifier').driver.rejected).toMatch(/^SyntaxError: /);
    expect(ours.get('binding-not-identifier').driver.rejected).toMatch(/^ExecutorError: Invalid request field `bindings\.external_get-weather`/);
  });

  it('logs: the first 1,000 alike, then this executor stops keeping them and says so', () => {
    const theirs = tool(stock, 'log-flood').logs;
    const mine = tool(ours, 'log-flood').logs;
    expect(theirs).toHaveLength(1500);
    expect(mine).toHaveLength(1001);
    expect(mine.slice(0, 1000)).toEqual(theirs.slice(0, 1000));
    expect(mine[1000]).toBe(`WARN: ${declaredText('LOG_LIMIT', { dropped: 500 })}`);
  });

  it('a rejection nothing handles fails the run there, not here', () => {
    expect(tool(stock, 'unhandled-rejection')).toMatchObject({ success: false, error: { name: 'Error', message: 'nobody awaits this' } });
    expect(tool(ours, 'unhandled-rejection')).toMatchObject({ success: true, result: 1 });
  });

  it('WebAssembly memory: 512 MiB in the host under a 64 MiB limit there; no WebAssembly here', () => {
    expect(tool(stock, 'wasm-memory')).toMatchObject({ success: true, result: '512 MiB' });
    expect(tool(ours, 'wasm-memory').error).toEqual({ name: 'ReferenceError', message: 'WebAssembly is not defined' });
  });

  it('a promise nothing can settle: pending past its timeout there, NEVER_SETTLED at once here', () => {
    expect(stock.get('never-settles').tool).toEqual({ pending: true });
    expect(stock.get('never-settles').driver).toEqual({ pending: true });
    expect(tool(ours, 'never-settles').error).toEqual({ name: 'Error', message: declaredText('NEVER_SETTLED') });
    expect(ours.get('never-settles').ms).toBeLessThan(1000);
  });

  it('a second execute on one context: a fresh isolate here', () => {
    expect(stock.get('context-reuse').reuse.value).toBe('number');
    expect(ours.get('context-reuse').reuse.value).toBe('undefined');
  });

  it('the heap limit: the memory error here; there the tool rejects with an unrelated error', () => {
    const theirs = stock.get('heap-oom');
    expect(theirs.tool).toEqual({ rejected: 'Error: Isolate is already disposed' });
    expect(theirs.driver.error.message).toBe('Isolate was disposed during execution due to memory limit');
    expect(theirs.disposeThrew).toBe('Isolate is already disposed');
    const mine = ours.get('heap-oom');
    expect(mine.tool).toEqual({ success: false, error: { name: 'Error', message: declaredText('MEMORY_LIMIT', { mib: 64 }) }, logs: [] });
    expect(mine.driver.error.code).toBe('MEMORY_LIMIT');
    expect(mine.disposeThrew).toBeUndefined();
  });
});

describe('the driver', () => {
  const driver = driverOf();
  const echo = {
    name: 'external_echo',
    description: 'echo',
    inputSchema: {},
    execute: async (args) => args,
  };

  it('answers exactly the shapes of ExecutionResult', async () => {
    const ctx = await driver.createContext({ bindings: { external_echo: echo } });
    const ok = await ctx.execute('console.log("x", { y: 1 }); console.info("i"); console.warn("w"); console.error("e"); return await external_echo({ v: 1 })');
    expect(Object.keys(ok)).toEqual(['success', 'value', 'logs']);
    expect(ok).toEqual({ success: true, value: { v: 1 }, logs: ['x {"y":1}', 'INFO: i', 'WARN: w', 'ERROR: e'] });
    const none = await ctx.execute('const x = 1');
    expect(Object.keys(none)).toEqual(['success', 'value', 'logs']);
    expect(none.value).toBeUndefined();
    const failed = await ctx.execute('console.log("before"); throw new TypeError("bad")');
    expect(Object.keys(failed)).toEqual(['success', 'error', 'logs']);
    expect(failed.logs).toEqual(['before']);
    expect(Object.keys(failed.error)).toEqual(['name', 'message', 'stack']);
    await ctx.dispose();
  });

  it('a stack counts lines and columns in the code it was given, without the wrapper\'s frames', async () => {
    const ctx = await driver.createContext({ bindings: {} });
    const r = await ctx.execute('function f() {\n  throw new RangeError("deep");\n}\nf();');
    expect(r.error.stack).toBe('RangeError: deep\n    at f (program.js:2:9)\n    at program.js:4:1');
    const first = await ctx.execute('throw new Error("first line")');
    expect(first.error.stack).toBe('Error: first line\n    at program.js:1:7');
    await ctx.dispose();
  });

  it('TypeScript the transpiler left (transpile: identity) is stripped by the executor, lines kept', async () => {
    const { tool } = createCodeMode({
      driver,
      tools: [toolDefinition({ name: 'add', description: 'adds', inputSchema: z.object({ a: z.number(), b: z.number() }) }).server(async ({ a, b }) => a + b)],
      transpile: (code) => code,
    });
    const ts = 'interface P { a: number }\nconst p: P = { a: 40 };\nconst n = await external_add({ a: p.a, b: 2 }) as number;\nreturn n satisfies number;';
    expect(await tool.execute({ typescriptCode: ts }, {})).toEqual({ success: true, result: 42, logs: [] });
    const ctx = await driver.createContext({ bindings: {} });
    const thrownAt = await ctx.execute('type T = { a: string }\nconst t: T = { a: "x" };\nthrow new Error(t.a as string);');
    expect(thrownAt.error.stack).toBe('Error: x\n    at program.js:3:7');
    const enumerated = await ctx.execute('enum Color { Red }\nreturn Color.Red;');
    expect(enumerated.error).toMatchObject({ name: 'TypeScriptError', code: 'TYPESCRIPT_UNSUPPORTED' });
    expect(enumerated.error.message).toMatch(/^The code uses an `enum` on line 1\./);
    await ctx.dispose();
  });

  it('a syntax error names its place in the given code; one left open is at its end', async () => {
    const ctx = await driver.createContext({ bindings: {} });
    const bad = await ctx.execute('const a = 1;\nconst b = a +* 2;\nreturn b;');
    expect(bad.error).toEqual({ name: 'SyntaxError', message: "Unexpected token '*' (line 2, column 14).", code: 'SYNTAX_ERROR' });
    const first = await ctx.execute('return 1 +* 2');
    expect(first.error.message).toBe("Unexpected token '*' (line 1, column 11).");
    const open = await ctx.execute('return (1 + 2');
    expect(open.error).toMatchObject({ name: 'SyntaxError', code: 'SYNTAX_ERROR' });
    expect(open.error.message).toMatch(/\(at the end of the code\)\.$/);
    await ctx.dispose();
  });

  it('typecheck: a wrong call is TYPE_ERROR with its line against the declarations code mode shows, and no binding runs; fixed, it runs', async () => {
    const checked = driverOf({ executorOptions: { workers: 1 }, typecheck: true });
    const seen = [];
    const weather = toolDefinition({ name: 'getWeather', description: 'Weather of a city', inputSchema: z.object({ location: z.string() }), outputSchema: z.object({ temperature: z.number() }) })
      .server(async ({ location }) => {
        seen.push(location);
        return { temperature: 21 };
      });
    const { tool, systemPrompt } = createCodeMode({ driver: checked, tools: [weather] });
    expect(systemPrompt).toContain('declare function external_getWeather(input: External_getWeatherInput): Promise<External_getWeatherOutput>;');
    // A call that would run (Paris), then a misnamed argument (`city`, declared `location`) on line 2.
    const wrong = 'const a = await external_getWeather({ location: "Paris" });\nconst b = await external_getWeather({ city: "Rome" });\nreturn a.temperature + b.temperature;';
    const refused = await tool.execute({ typescriptCode: wrong }, {});
    expect(refused).toEqual({ success: false, error: { name: 'TypeScriptError', message: expect.stringMatching(/^This program was not run and no tool was called/) }, logs: [] });
    expect(refused.error.message).toContain("- line 2, column 39: Object literal may only specify known properties, and 'city' does not exist in type 'External_getWeatherInput'.");
    expect(seen).toEqual([]);
    expect(await tool.execute({ typescriptCode: wrong.replace('{ city:', '{ location:') }, {})).toEqual({ success: true, result: 42, logs: [] });
    expect(seen).toEqual(['Paris', 'Rome']);

    // The driver's own answer: the code, the column on the first line counted in the code given;
    // the wrapper and the prelude's `global` are no errors.
    const ctx = await checked.createContext({ bindings: { external_add: { name: 'external_add', description: 'adds', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }, execute: async ({ a, b }) => a + b } } });
    const first = await ctx.execute('return await external_add({ a: 1, b: "2" })');
    expect(first.error).toMatchObject({ name: 'TypeScriptError', code: 'TYPE_ERROR' });
    expect(first.error.message).toContain("- line 1, column 35: Type 'string' is not assignable to type 'number'.");
    expect(await ctx.execute('console.info("sum"); return global === globalThis && await external_add({ a: 1, b: 2 })')).toEqual({ success: true, value: 3, logs: ['INFO: sum'] });
    await ctx.dispose();
  }, 10_000);

  it('passes timeout and memoryLimit through, from the config or else the driver', async () => {
    const ctx = await driver.createContext({ bindings: {}, timeout: 300 });
    const t = await ctx.execute('while (true) {}');
    expect(t.error).toEqual({ name: 'Error', message: declaredText('TIMEOUT', { ms: 300 }), code: 'TIMEOUT' });
    const fallback = driverOf({ executorOptions: { workers: 1 }, timeout: 250, memoryLimit: 32 });
    const ctx2 = await fallback.createContext({ bindings: {} });
    expect((await ctx2.execute('while (true) {}')).error.message).toBe(declaredText('TIMEOUT', { ms: 250 }));
    const grow = 'const a = []; for (let i = 0; i < 30; i++) a.push(new Array(1e6).fill(i)); return a.length';
    expect((await ctx2.execute(grow)).error).toEqual({ name: 'Error', message: declaredText('MEMORY_LIMIT', { mib: 32 }), code: 'MEMORY_LIMIT' });
    const small = await driver.createContext({ bindings: {}, memoryLimit: 64 });
    expect((await small.execute(grow)).error.code).toBe('MEMORY_LIMIT');
    const large = await driver.createContext({ bindings: {}, memoryLimit: 512, timeout: 20_000 });
    expect(await large.execute(grow)).toEqual({ success: true, value: 30, logs: [] });
  });

  it('each execute is a fresh isolate: nothing carries across contexts or executes', async () => {
    const a = await driver.createContext({ bindings: {} });
    const b = await driver.createContext({ bindings: {} });
    expect((await a.execute('globalThis.mark = 1; Object.prototype.polluted = true; return typeof mark')).value).toBe('number');
    expect((await a.execute('return [typeof mark, ({}).polluted]')).value).toEqual(['undefined', null]);
    expect((await b.execute('return [typeof mark, ({}).polluted]')).value).toEqual(['undefined', null]);
  });

  it('bindings: arguments arrive as parsed JSON, failures come back as Error(message)', async () => {
    const seen = [];
    const ctx = await driver.createContext({
      bindings: {
        external_seen: { ...echo, execute: async (args) => { seen.push(args); return { ok: true, at: new Date(0) }; } },
        external_boom: { ...echo, execute: async () => { throw Object.assign(new RangeError('host says no'), { code: 'E_HOST' }); } },
        external_raw: { ...echo, execute: async () => { throw 404; } },
      },
    });
    const r = await ctx.execute(`const a = await external_seen({ when: new Date(0), drop: undefined, list: [undefined] });
const b = await external_seen();
const errs = [];
for (const f of [external_boom, external_raw]) { try { await f({}); } catch (e) { errs.push([e.constructor.name, e.message]); } }
return { a, b, errs, names: [external_seen.name, typeof globalThis.external_boom] };`);
    expect(r.value).toEqual({ a: { ok: true, at: '1970-01-01T00:00:00.000Z' }, b: { ok: true, at: '1970-01-01T00:00:00.000Z' }, errs: [['Error', 'host says no'], ['Error', '404']], names: ['external_seen', 'function'] });
    expect(seen).toEqual([{ when: '1970-01-01T00:00:00.000Z', list: [null] }, {}]);
  });

  it('dispose stops a run in flight; executes after it answer DisposedError', async () => {
    let calls = 0;
    const ctx = await driver.createContext({ bindings: { external_tick: { ...echo, execute: async () => ++calls } }, timeout: 20_000 });
    const running = ctx.execute('for (;;) { await external_tick({}); await new Promise((r) => setTimeout(r, 20)); }');
    await new Promise((r) => setTimeout(r, 200));
    const t = performance.now();
    await ctx.dispose();
    expect(await running).toEqual({ success: false, error: { name: 'DisposedError', message: 'Context has been disposed', code: 'ABORTED' }, logs: [] });
    expect(performance.now() - t).toBeLessThan(2000);
    const after = calls;
    expect(after).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toBe(after);
    expect(await ctx.execute('return 1')).toEqual({ success: false, error: { name: 'DisposedError', message: 'Context has been disposed' }, logs: [] });
    await ctx.dispose(); // twice is fine
  });

  it('budgets and outbound go on every run', async () => {
    const server = http.createServer((_req, res) => res.end('from loopback'));
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${server.address().port}/`;
    try {
      const closed = await (await driver.createContext({ bindings: {} })).execute(`return await (await fetch(${JSON.stringify(url)})).text()`);
      expect(closed.error).toMatchObject({ name: 'TypeError', message: declaredText('NETWORK_CLOSED') });
      const open = driverOf({ executorOptions: { workers: 1 }, outbound: 'native', toolCallLimit: 2, cpuLimit: 100 });
      const ctx = await open.createContext({ bindings: { external_echo: echo } });
      expect((await ctx.execute(`return await (await fetch(${JSON.stringify(url)})).text()`)).value).toBe('from loopback');
      const calls = await ctx.execute('const out = []; for (let i = 0; i < 3; i++) { try { await external_echo({ i }); out.push("ok"); } catch (e) { out.push(e.message); } } return out;');
      expect(calls.value).toEqual(['ok', 'ok', declaredText('TOOL_CALL_LIMIT', { provider: '__tanstackBindings', tool: 'external_echo', limit: 2 })]);
      expect((await ctx.execute('for (;;) {}')).error).toMatchObject({ code: 'CPU_LIMIT', message: declaredText('CPU_LIMIT', { ms: 100 }) });
    } finally {
      server.close();
    }
  });

  it('an executor fault is an answer, not a rejection', async () => {
    const ex = new IsolateExecutor({ workers: 1, queueBound: 0 });
    try {
      const d = createIsolateDriver({ executor: ex });
      const ctx = await d.createContext({ bindings: {}, timeout: 5000 });
      const busy = ctx.execute('await new Promise((r) => setTimeout(r, 500)); return "first"');
      await new Promise((r) => setTimeout(r, 100));
      const refused = await ctx.execute('return "second"');
      expect(refused.success).toBe(false);
      expect(refused.error).toMatchObject({ name: 'ExecutorError', code: 'QUEUE_FULL' });
      expect(refused.error.message).toMatch(/waiting/);
      expect(await busy).toEqual({ success: true, value: 'first', logs: [] });
      // close() leaves an executor it was given open.
      await d.close();
      expect((await ctx.execute('return 2')).value).toBe(2);
    } finally {
      await ex.close();
    }
  });

  it('close() closes its own executor: createContext rejects CLOSED, a context answers CLOSED', async () => {
    const d = createIsolateDriver({ executorOptions: { workers: 1 } });
    const ctx = await d.createContext({ bindings: {} });
    expect((await ctx.execute('return 1')).value).toBe(1);
    await d.close();
    expect(await ctx.execute('return 1')).toMatchObject({ success: false, error: { name: 'ExecutorError', code: 'CLOSED', message: declaredText('CLOSED') }, logs: [] });
    const e = await rejection(d.createContext({ bindings: {} }));
    expect(e).toBeInstanceOf(ExecutorError);
    expect(e.code).toBe('CLOSED');
  });

  it('runs on a daemon through connect(), held to its ceilings', async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url);
    const d = createIsolateDriver({ executor: remote });
    const { tool } = createCodeMode({
      driver: d,
      tools: [toolDefinition({ name: 'twice', description: 'twice', inputSchema: z.object({ n: z.number() }) }).server(async ({ n }) => n * 2)],
    });
    expect(await tool.execute({ typescriptCode: 'const r: number = await external_twice({ n: 21 }); console.log(r); return r' }, {})).toEqual({ success: true, result: 42, logs: ['42'] });
    // Above the daemon's ceiling (128 MiB by default): the daemon's refusal, as an answer.
    const ctx = await d.createContext({ bindings: {}, memoryLimit: 256 });
    expect(await ctx.execute('return 1')).toMatchObject({ success: false, error: { name: 'ExecutorError', code: 'INVALID_OPTION' }, logs: [] });
  });

  it('refuses bad options with INVALID_OPTION', () => {
    const bad = [
      [{ workers: 2 }, 'workers'],
      [{ executor: {} }, 'executor'],
      [{ executor: new Proxy({}, {}) }, 'executor'],
      [{ executor: { execute() {} }, executorOptions: {} }, 'executorOptions'],
      [{ executorOptions: { workers: 0 } }, 'workers'],
      [{ timeout: 0 }, 'timeout'],
      [{ memoryLimit: 4 }, 'memoryLimit'],
      [{ outbound: 'everywhere' }, 'outbound'],
      [{ cpuLimit: -1 }, 'cpuLimit'],
      [{ typecheck: 'yes' }, 'typecheck'],
    ];
    for (const [options, field] of bad) {
      const e = thrown(() => createIsolateDriver(options));
      expect(e, JSON.stringify(options)).toBeInstanceOf(ExecutorError);
      expect(e.code).toBe('INVALID_OPTION');
      expect(e.message).toContain(`\`${field}\``);
    }
    expect(thrown(() => createIsolateDriver(null)).code).toBe('INVALID_OPTION');
  });

  it('refuses a bad config with INVALID_REQUEST', async () => {
    const bad = [
      [null, 'config'],
      [{}, 'bindings'],
      [{ bindings: [] }, 'bindings'],
      [{ bindings: {}, extra: 1 }, 'extra'],
      [{ bindings: { external_x: {} } }, 'bindings.external_x.execute'],
      [{ bindings: { 'external_get-weather': echo } }, 'bindings.external_get-weather'],
      [{ bindings: { console: echo } }, 'bindings.console'],
      [{ bindings: { JSON: echo } }, 'bindings.JSON'],
      // biome-ignore lint/suspicious/noDuplicateObjectKeys: `__proto__:` sets the prototype, the computed key is an own property
      [{ bindings: { __proto__: null, ['__proto__']: echo } }, 'bindings.__proto__'],
      [{ bindings: {}, timeout: 1.5 }, 'timeout'],
      [{ bindings: {}, memoryLimit: 4 }, 'memoryLimit'],
    ];
    for (const [config, field] of bad) {
      const e = await rejection(driver.createContext(config));
      expect(e, JSON.stringify(config)).toBeInstanceOf(ExecutorError);
      expect(e.code).toBe('INVALID_REQUEST');
      expect(e.message).toContain(`\`${field}\``);
    }
  });

  it('a value past the result bound is RESULT_TOO_LARGE', async () => {
    const ctx = await driver.createContext({ bindings: {} });
    const r = await ctx.execute('return "x".repeat(17 * 1024 * 1024)');
    expect(r).toMatchObject({ success: false, error: { name: 'Error', code: 'RESULT_TOO_LARGE' }, logs: [] });
  });

  it('an execute of something other than a string answers INVALID_REQUEST', async () => {
    const ctx = await driver.createContext({ bindings: {} });
    expect(await ctx.execute(42)).toMatchObject({ success: false, error: { name: 'ExecutorError', code: 'INVALID_REQUEST' }, logs: [] });
  });
});

describe('the package entry', () => {
  it('require and import of every exports path resolve from the package name', () => {
    const script = `
      const assert = require('node:assert');
      assert.equal(typeof require('@supolka/codemode-executor').IsolateExecutor, 'function');
      assert.equal(typeof require('@supolka/codemode-executor/tanstack').createIsolateDriver, 'function');
      assert.equal(require('@supolka/codemode-executor/package.json').name, '@supolka/codemode-executor');
      (async () => {
        assert.equal(typeof (await import('@supolka/codemode-executor')).IsolateExecutor, 'function');
        const t = await import('@supolka/codemode-executor/tanstack');
        assert.equal(typeof t.createIsolateDriver, 'function');
        assert.equal(t.createIsolateDriver, require('@supolka/codemode-executor/tanstack').createIsolateDriver);
        assert.equal(typeof (await import('@supolka/codemode-executor/register')), 'object');
        assert.equal((await import('@supolka/codemode-executor/package.json', { with: { type: 'json' } })).default.name, '@supolka/codemode-executor');
        console.log('ok');
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const r = spawnSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('ok');
  });

  it('the packed package carries tanstack.js and tanstack.d.ts', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    const files = JSON.parse(r.stdout)[0].files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['tanstack.js', 'tanstack.d.ts', 'lib/tanstack.js']));
  });

  it("its types are @tanstack/ai-code-mode's (tsc on __test__/fixtures/tanstack-types)", () => {
    const tsc = require.resolve('typescript/bin/tsc');
    const r = spawnSync(process.execPath, [tsc, '-p', '__test__/fixtures/tanstack-types'], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 130_000);
});

describe("a program that forges the driver's answer", () => {
  it('execute resolves with a failure or JSON data, never rejects or hands over other values', async () => {
    const ctx = await driverOf().createContext({ bindings: {}, timeout: 5000, memoryLimit: 64 });
    const outside = 'The program returned from outside its body (it closed the function the driver runs it in): return from the body instead';
    const cases = {
      // JSON replaced inside the sandbox: the wrapper's text is no JSON.
      jsonOverwrite: ['JSON.stringify = () => ({}); return 1', (r) => expect(r.success).toBe(false)],
      forgedStack: ["return 1 })(); return { __tsd: 'error', stack: 5 }; (async function () {", (r) => expect(r.error).toEqual({ name: 'Error', message: '', stack: 'Error' })],
      forgedName: ["return 1 })(); return { __tsd: 'error', name: { evil: 1 }, message: 7 }; (async function () {", (r) => expect(r.error).toEqual({ name: 'Error', message: '', stack: 'Error' })],
      rawBigint: ['return 1 })(); return { x: 10n, m: new Map([[1, 2]]) }; (async function () {', (r) => expect(r.error.message).toBe(outside)],
      rawSparse: ['return 1 })(); const a = []; a.length = 2 ** 32 - 1; return a; (async function () {', (r) => expect(r.error.message).toBe(outside)],
      forgedJson: ["return 1 })(); return { __tsd: 'ok', json: 5 }; (async function () {", (r) => expect(r.error.message).toBe(outside)],
    };
    for (const [name, [code, check]] of Object.entries(cases)) {
      const r = await ctx.execute(code);
      expect(r.success, name).toBe(false);
      check(r);
    }
    await ctx.dispose();
  });
});

describe('tenant', () => {
  // ~30 ms of CPU: past a tenant's share of 1 ms a minute once the run ends.
  const burn = 'let x = 0; for (let i = 0; i < 3e7; i++) x += i % 7; return x > 0';

  it("every run names the driver's tenant: its CPU share refuses its next run, and only its own", async () => {
    const ex = new IsolateExecutor({ workers: 1, tenants: { 'ts-acme': { cpuPerMinute: 1 } } });
    try {
      const acme = await createIsolateDriver({ executor: ex, tenant: 'ts-acme' }).createContext({ bindings: {} });
      expect(await acme.execute(burn)).toEqual({ success: true, value: true, logs: [] });
      const refused = await acme.execute(burn);
      expect(refused).toMatchObject({ success: false, error: { name: 'ExecutorError', code: 'TENANT_CPU_LIMIT' }, logs: [] });
      expect(refused.error.message).toContain('Tenant "ts-acme" has spent');
      // A driver naming no tenant, or another, runs on the same executor as before.
      for (const options of [{ executor: ex }, { executor: ex, tenant: 'ts-other' }]) {
        const ctx = await createIsolateDriver(options).createContext({ bindings: {} });
        expect(await ctx.execute(burn), JSON.stringify(options.tenant)).toEqual({ success: true, value: true, logs: [] });
      }
    } finally {
      await ex.close();
    }
  }, 10_000);

  it('refuses a bad tenant with INVALID_OPTION, before making an executor', () => {
    for (const tenant of ['a b', '', 'x'.repeat(65), 'ü', 3, null]) {
      const e = thrown(() => createIsolateDriver({ executorOptions: { workers: 1 }, tenant }));
      expect(e, JSON.stringify(tenant)).toBeInstanceOf(ExecutorError);
      expect([e.code, e.message]).toEqual(['INVALID_OPTION', expect.stringContaining('`tenant`')]);
      expect(e.message).toContain('1 to 64 of A-Z a-z 0-9 . _ -');
    }
  });
});
