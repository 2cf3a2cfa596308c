// CodemodeExecutor: @cloudflare/codemode's executor dialect over an IsolateExecutor. Expected
// values are the reference's (0.5.6), except the deviations in docs/dialect-deviations.md.
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { IsolateExecutor, executor, rejection } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { CodemodeExecutor } = require('../index.js');
const { normalizeCode, sanitizeToolName } = require('../lib/codemode-executor.js');

const native = executor({ workers: 1 });
const ex = new CodemodeExecutor(native);

describe('normalizeCode (reference rules)', () => {
  it.each([
    ['async () => 1', 'async () => 1'],
    ['```js\nasync () => 2\n```', 'async () => 2'],
    ['   ', 'async () => {}'],
    ['export default function () { return 1 }', 'async () => {\nreturn (function () { return 1 })();\n}'],
    ['function main() { return 3 }', 'async () => {\nfunction main() { return 3 }\nreturn main();\n}'],
    ['const x = 1;\nx + 1;', 'async () => {\nconst x = 1;\nreturn (x + 1)\n}'],
    ['const x = 1;', 'async () => {\nconst x = 1;\n}'],
    ['return 5', 'async () => {\nreturn 5\n}'],
  ])('%j', (code, expected) => {
    expect(normalizeCode(code)).toBe(expected);
  });
});

describe('sanitizeToolName (reference rules)', () => {
  it.each([
    ['my-tool', 'my_tool'], ['3d.render', '_3d_render'], ['delete', 'delete_'], ['foo@bar!', 'foobar'], ['', '_'], ['@@', '_'], ['NaN', 'NaN'],
  ])('%j -> %j', (raw, safe) => {
    expect(sanitizeToolName(raw)).toBe(safe);
  });

  it('is the one name rule the gateway uses too, which keeps reserved words as method names', () => {
    const { toolIdentifier } = require('../lib/model/names.js');
    for (const raw of ['my-tool', '3d.render', 'foo@bar!', '', '@@', 'NaN']) expect(toolIdentifier(raw)).toBe(sanitizeToolName(raw));
    expect([toolIdentifier('delete'), toolIdentifier('delete', { bare: true })]).toEqual(['delete', 'delete_']);
  });
});

describe('execute', () => {
  const billing = [{ name: 'billing', fns: {
    invoices: async (account) => [{ id: 'i1', account }],
    'get-bytes': async () => new Uint8Array([1, 2, 3]),
    fail: async () => { throw new Error('nope') },
    echo: async (...args) => args,
  } }];

  it('runs the migration page example with ExtendedExecuteOptions', async () => {
    const out = await ex.execute(
      "import { total } from './invoices.js'\n\nasync () => total(await billing.invoices('ada'))",
      [{ name: 'billing', fns: { invoices: async (account) => [{ id: 'i1', account }] } }],
      { modules: { './invoices.js': 'export const total = (rows) => rows.length' }, timeout: 5_000, outbound: null },
    );
    expect(out).toEqual({ result: 1, logs: [] });
  });

  it('has the reference key sets: {result, logs} on success, {result, error, logs} on a throw, {result, error} up front', async () => {
    const ok = await ex.execute('async () => 1', billing);
    expect(Object.keys(ok)).toEqual(['result', 'logs']);
    const thrown = await ex.execute('async () => billing.fail()', billing);
    expect(thrown).toEqual({ result: undefined, error: 'nope', logs: [] });
    expect(Object.keys(thrown)).toEqual(['result', 'error', 'logs']);
    const refused = await ex.execute('async () => 1', [{ name: 'console', fns: {} }]);
    expect(refused).toEqual({ result: undefined, error: 'Provider name "console" is reserved' });
    expect(Object.keys(refused)).toEqual(['result', 'error']);
  });

  it('validates provider and connector names with the reference texts', async () => {
    const cases = [
      [[{ name: '1x', fns: {} }], {}, 'Provider name "1x" is not a valid JavaScript identifier'],
      [[{ name: 'a', fns: {} }, { name: 'a', fns: {} }], {}, 'Duplicate provider name "a"'],
      [[], { connectors: [{ name: '__logs', binding: {} }] }, 'Connector name "__logs" is reserved'],
      [[], { connectors: [{ name: 'a-b', binding: {} }] }, 'Connector name "a-b" is not a valid JavaScript identifier'],
      [[{ name: 'a', fns: {} }], { connectors: [{ name: 'a', binding: {} }] }, 'Duplicate name "a" (connector clashes with provider)'],
      [[{ name: 'p', fns: { 'x-y': async () => 1, 'x.y': async () => 2 } }], {}, 'Tool names "x-y" and "x.y" both sanitize to "x_y" in provider "p"'],
    ];
    for (const [providers, options, error] of cases) {
      expect(await ex.execute('async () => 1', providers, options)).toEqual({ result: undefined, error });
    }
  });

  it('calls sanitized tools with spread arguments and the JSON codec (binary round-trips)', async () => {
    const out = await ex.execute('async () => [await billing.echo(1, undefined, new Date(0), NaN, { u: undefined }), await billing.get_bytes()]', billing);
    expect(out.result[0]).toEqual([1, null, '1970-01-01T00:00:00.000Z', null, {}]);
    expect(out.result[1]).toEqual(new Uint8Array([1, 2, 3]));
    const raw = await ex.execute('async () => billing["get-bytes"]()', billing);
    expect(raw.error).toBe('Tool "get-bytes" not found');
  });

  it('captures log, warn and error with String() and the [warn]/[error] prefixes', async () => {
    const out = await ex.execute('async () => { console.log("a", { x: 1 }, [1, 2], undefined, 10n); console.warn("w"); console.error(new Error("e1")); console.log() }', []);
    expect(out.logs).toEqual(['a [object Object] 1,2 undefined 10', '[warn] w', '[error] Error: e1', '']);
  });

  it('keeps the legacy record form, with its deprecation warning', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const out = await ex.execute('async () => codemode.add(2, 3)', { add: async (a, b) => a + b });
      expect(out).toEqual({ result: 5, logs: [] });
      expect(warn).toHaveBeenCalledWith('[@cloudflare/codemode] Passing raw fns to executor.execute() is deprecated. Use ResolvedProvider[] instead. This will be removed in the next major version.');
    } finally {
      warn.mockRestore();
    }
  });

  it('runs a prelude, whose properties take precedence over dispatch', async () => {
    const out = await ex.execute('async () => [codemode.step(), await codemode.real()]', [{ name: 'codemode', fns: { real: async () => 'dispatched', step: async () => 'not me' }, prelude: 'codemode.step = () => "from prelude"' }]);
    expect(out.result).toEqual(['from prelude', 'dispatched']);
  });

  it('passes only the first argument to a connector, as a structured clone, and honours control objects', async () => {
    const calls = [];
    const binding = { callTool: async (method, args) => {
      calls.push([method, args]);
      if (method === 'boom') return { __codemode_control__: 'error', message: 'connector said no' };
      return { when: new Date(0), m: new Map([[1, 2]]) };
    } };
    const out = await ex.execute('async () => { const r = await conn.search({ q: 1 }, "ignored"); let e; try { await conn.boom() } catch (x) { e = x } return [r, e] }', [], { connectors: [{ name: 'conn', binding }] });
    expect(calls).toEqual([['search', { q: 1 }], ['boom', undefined]]);
    expect(out.result[0].when).toBeInstanceOf(Date);
    expect(out.result[0].m).toEqual(new Map([[1, 2]]));
    expect(out.result[1]).toBeInstanceOf(Error);
    expect(out.result[1].message).toBe('connector said no');
  });

  it('reports the pinned timeout sentence with the logs printed before it', async () => {
    const out = await ex.execute('async () => { console.log("before"); for (;;) {} }', [], { timeout: 200 });
    expect(out).toEqual({ result: undefined, error: 'Execution timed out', logs: ['before'] });
  });

  it('keeps structured-clone semantics for the final result', async () => {
    const out = await ex.execute('async () => ({ m: new Map([[1, 2]]), d: new Date(5), n: NaN, b: 3n, u: undefined })', []);
    expect(out.result).toEqual({ m: new Map([[1, 2]]), d: new Date(5), n: NaN, b: 3n, u: undefined });
  });

  it('does the sane thing where the reference is broken (docs/dialect-deviations.md)', async () => {
    expect(await ex.execute('async () => { throw null }', [])).toEqual({ result: undefined, error: 'null', logs: [] });
    expect(await ex.execute('async () => { throw "boom" }', [])).toEqual({ result: undefined, error: 'boom', logs: [] });
    expect(await ex.execute('async () => { throw new Error("") }', [])).toEqual({ result: undefined, error: 'Error', logs: [] });
    expect((await ex.execute('async () => 1;', [])).result).toBe(1);
    const syntax = await ex.execute('async () => {', []);
    expect(syntax.error).toMatch(/^SyntaxError/);
    const unclonable = await ex.execute('async () => Symbol("s")', []);
    expect(unclonable.error).toContain('cannot be copied out of the sandbox');
    const loop = await ex.execute('async () => { while (true) {} }', [], { timeout: 200 });
    expect(loop.error).toBe('Execution timed out');
  });

  it('reverses outbound on the swap: null blocks, as globalOutbound null does', async () => {
    const closed = new IsolateExecutor({ workers: 1, outbound: null });
    const blocked = new CodemodeExecutor(closed);
    try {
      const out = await blocked.execute('async () => { try { await fetch("https://example.invalid/") } catch (e) { return e.message } }', []);
      expect(out.result).toContain('fetch is closed in this sandbox');
    } finally {
      await closed.close();
    }
  });

  it('refuses a non-executor with a typed error', () => {
    expect(() => new CodemodeExecutor({})).toThrow(/native/);
  });
});

describe('tenant (ExtendedExecuteOptions.tenant)', () => {
  // ~30 ms of CPU: past a tenant's share of 1 ms a minute once it ends (the pool charges it then).
  const burn = 'async () => { let x = 0; for (let i = 0; i < 3e7; i++) x += i % 7; return x > 0 }';

  it("reaches the run: the tenant's CPU share refuses its next run, and only its own", async () => {
    const native = executor({ workers: 1, tenants: { 'cm-acme': { cpuPerMinute: 1 } } });
    const dialect = new CodemodeExecutor(native);
    expect(await dialect.execute(burn, [], { tenant: 'cm-acme' })).toEqual({ result: true, logs: [] });
    const refused = await rejection(dialect.execute(burn, [], { tenant: 'cm-acme' }));
    expect([refused.code, refused.message]).toEqual(['TENANT_CPU_LIMIT', expect.stringContaining('Tenant "cm-acme" has spent')]);
    // The unnamed domain and another tenant are not held to cm-acme's share.
    expect(await dialect.execute(burn, [])).toEqual({ result: true, logs: [] });
    expect(await dialect.execute(burn, [], { tenant: 'cm-other' })).toEqual({ result: true, logs: [] });
    expect(await dialect.execute(burn, [], { tenant: undefined })).toEqual({ result: true, logs: [] });
  }, 10_000);

  it('refuses a bad tenant with INVALID_REQUEST naming options.tenant, before anything runs', async () => {
    let called = 0;
    const svc = [{ name: 'svc', fns: { ping: async () => ++called } }];
    for (const bad of ['a b', '', 'x'.repeat(65), 'é', 42, null, {}]) {
      const e = await rejection(ex.execute('async () => svc.ping()', svc, { tenant: bad }));
      expect([e.code, e.message], JSON.stringify(bad)).toEqual(['INVALID_REQUEST', expect.stringContaining('`options.tenant`')]);
      expect(e.message).toContain('1 to 64 of A-Z a-z 0-9 . _ -');
    }
    expect(called).toBe(0);
    // 64 of the allowed characters is a name.
    expect(await ex.execute('async () => svc.ping()', svc, { tenant: `A-z_0.${'9'.repeat(58)}` })).toEqual({ result: 1, logs: [] });
  });
});
