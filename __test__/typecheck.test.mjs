// Type-check before run (docs/typecheck.md), through the native contract with real workers: a
// program that calls a declared tool with the wrong shape is answered with TYPE_ERROR and its
// line before any tool runs; the same program fixed runs; valid JavaScript is never refused.
import { describe, expect, it } from 'vitest';
import { executor, rejection } from './helpers.mjs';

const DECLARATIONS = `declare const billing: {
  /** Refunds an order. */
  refund(input: { id: string; amount?: number }): Promise<{ ok: boolean; total: number }>
  list(): Promise<{ id: string; note?: string }[]>
}`;

/** A billing provider whose dispatch records every call it sees. */
function billing() {
  const seen = [];
  return {
    seen,
    providers: [{ name: 'billing', tools: ['refund', 'list'] }],
    dispatch: ({ tool }) => {
      seen.push(tool);
      return tool === 'list' ? [{ id: 'o1' }] : { ok: true, total: 7 };
    },
  };
}

const run = (ex, code, b = billing()) => ex.execute({ code, providers: b.providers, dispatch: b.dispatch, declarations: DECLARATIONS, typecheck: true });

describe('typecheck', () => {
  const ex = executor({ workers: 1 });

  it('answers a wrong call with TYPE_ERROR and its line, and no tool is called; fixed, it runs', async () => {
    const b = billing();
    const wrong = `async () => {
  const orders = await billing.list()
  await billing.refund({ orderId: orders[0].id })
  return 'done'
}`;
    const outcome = await run(ex, wrong, b);
    expect(outcome.error.code).toBe('TYPE_ERROR');
    expect(outcome.error.line).toBe(3);
    expect(outcome.error.message).toContain("line 3, column 26: Object literal may only specify known properties, and 'orderId' does not exist");
    expect(outcome.error.message).toMatch(/^This program was not run and no tool was called: it does not type-check against the declared tools \(errors: 1\)\.\n- line/);
    expect(b.seen).toEqual([]);
    expect(outcome.stats.workerPid).toBe(0);
    const fixed = await run(ex, wrong.replace('orderId', 'id'), b);
    expect(fixed.error).toBeUndefined();
    expect(fixed.result).toBe('done');
    expect(b.seen).toEqual(['list', 'refund']);
  });

  it.each([
    ['an unknown tool', 'async () => billing.refnd({ id: "1" })', "Property 'refnd' does not exist"],
    ['a misspelled result property', 'async () => (await billing.refund({ id: "1" })).totl', "Did you mean 'total'?"],
    ['a result used without await', 'async () => billing.refund({ id: "1" }).total', "on type 'Promise<"],
    ['an argument of the wrong type', 'async () => billing.refund({ id: 1 })', "Type 'number' is not assignable to type 'string'"],
    ['a missing argument', 'async () => billing.refund()', 'Expected 1 arguments, but got 0'],
    ['an optional result used unchecked', 'async () => (await billing.list())[0].note.length', "is possibly 'undefined'"],
    ['a global the sandbox lacks', 'async () => document.title', "Cannot find name 'document'"],
    ['a provider not declared', 'async () => shipping.track("x")', "Cannot find name 'shipping'"],
  ])('catches %s', async (_, code, text) => {
    const b = billing();
    const outcome = await run(ex, code, b);
    expect(outcome.error?.code).toBe('TYPE_ERROR');
    expect(outcome.error.message).toContain(text);
    expect(b.seen).toEqual([]);
  });

  it.each([
    ['expando properties on a plain object', 'async () => { const o = {}; o.n = 1; return o.n }', 1],
    ['untyped parameters', 'async () => [1, 2].map((x) => x * 2).reduce((a, b) => a + b)', 6],
    ['the runtime globals', 'async () => new URL("https://a.example/x").pathname + new TextEncoder().encode("ab").length + typeof fetch', '/x2function'],
    ['a caught error read loosely', 'async () => { try { JSON.parse("{") } catch (e) { return e.name } }', 'SyntaxError'],
    ['TypeScript annotations', 'async (): Promise<number> => { const r: { ok: boolean; total: number } = await billing.refund({ id: "1" }); return r.total }', 7],
    ['a tool result used with its declared shape', 'async () => (await billing.list()).map((o) => o.id).join()', 'o1'],
  ])('never refuses valid code: %s', async (_, code, result) => {
    const outcome = await run(ex, code);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toBe(result);
  });

  it('checks TypeScript as TypeScript, at the line written', async () => {
    const outcome = await run(ex, 'async () => {\n  const id: number = "x"\n  return id\n}');
    expect(outcome.error.code).toBe('TYPE_ERROR');
    expect(outcome.error.message).toContain("line 2, column 9: Type 'string' is not assignable to type 'number'");
  });

  it('leaves a syntax error to the run: SYNTAX_ERROR, as without the check', async () => {
    const b = billing();
    const outcome = await run(ex, 'async () => { billing.list( }', b);
    expect(outcome.error.code).toBe('SYNTAX_ERROR');
    expect(b.seen).toEqual([]);
  });

  it('lists at most five diagnostics and counts the rest', async () => {
    const code = `async () => {\n${Array.from({ length: 7 }, (_, i) => `  await billing.refund({ id: ${i} })`).join('\n')}\n}`;
    const outcome = await run(ex, code);
    expect(outcome.error.message).toContain('(errors: 7)');
    expect(outcome.error.message.match(/^- line \d+/gm)).toHaveLength(5);
    expect(outcome.error.message).toContain('- and 2 more');
  });

  it('needs declarations, and refuses a bad one', async () => {
    const e = await rejection(ex.execute({ code: 'async () => 1', typecheck: true }));
    expect(e.code).toBe('INVALID_REQUEST');
    expect(e.message).toContain('`declarations`');
    const bad = await rejection(ex.execute({ code: 'async () => 1', typecheck: true, declarations: 7 }));
    expect(bad.message).toContain('`declarations`: got number 7');
    const off = await ex.execute({ code: 'async () => 1', declarations: 'declare const x: number' });
    expect(off.result).toBe(1);
  });
});

describe('the corpus', () => {
  it('refuses no valid program, catches at least 90% of the mistakes, and is the committed report', async () => {
    const { createRequire } = await import('node:module');
    const { readFileSync } = await import('node:fs');
    const require = createRequire(import.meta.url);
    const { runCorpus, report } = require('../lib/typecheck/corpus');
    const corpus = await import('./fixtures/typecheck-corpus.mjs');
    const { corpusDeclarations } = await import('./fixtures/typecheck-declarations.mjs');
    const r = await runCorpus(corpus, corpusDeclarations());
    expect(r.refused).toEqual([]);
    expect(r.mistakes.length).toBeGreaterThanOrEqual(60);
    expect(r.mistakes.filter((m) => m.caught).length / r.mistakes.length).toBeGreaterThanOrEqual(0.9);
    const committed = readFileSync(new URL('../docs/typecheck-corpus.md', import.meta.url), 'utf8');
    expect(committed, 'run node scripts/typecheck-corpus.mjs').toBe(report(r));
  }, 60_000);
});

describe("the testbed's programs", () => {
  it('are never refused where they run: the one the checker refuses fails to run anyway', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const { normalizeCode } = require('../lib/codemode/normalize');
    const { check } = require('../lib/typecheck');
    const { cases } = await import('../testbed/cases.mjs');
    const ex = executor({ workers: 2 });
    let checked = 0;
    const refused = [];
    for (const c of cases) {
      // TypeScript is checked as written (the normalized form has its types removed, and with
      // them a `!` or an `as`); only what normalizes without stripping is checked normalized.
      const plain = normalizeCode(c.code, false);
      const norm = plain.refused === undefined && c.id.startsWith('typescript') && /^async \(/.test(c.code) ? { code: c.code, imports: '' } : normalizeCode(c.code, true);
      if (norm.refused || norm.imports) continue;
      const names = [...new Set([...(c.providers ?? []).map((p) => p.name), ...(c.connectors ?? []).map((p) => p.name), ...(c.legacy || c.providers === undefined ? ['codemode'] : [])])].filter((n) => /^[A-Za-z_$][\w$]*$/.test(n));
      const declarations = names.map((n) => `declare const ${n}: Record<string, (...args: any[]) => Promise<any>>;`).join('\n');
      const found = await check(norm.code, declarations);
      checked++;
      if (found.count === 0) continue;
      // Refused: it must be a program that does not run either.
      const outcome = await ex.execute({ code: norm.code, providers: names.map((name) => ({ name, tools: '*' })), dispatch: () => undefined, timeout: 5000 });
      refused.push({ id: c.id, ran: outcome.error?.code ?? 'OK', why: found.diagnostics[0].message });
    }
    expect(checked).toBeGreaterThan(80);
    // Refusing a program that throws anyway (often at the very place the checker names) costs
    // nothing; refusing one that runs to its result would be a false positive.
    expect(refused.filter((r) => r.ran === 'OK'), JSON.stringify(refused, null, 1)).toEqual([]);
    expect(refused.map((r) => r.id).sort()).toEqual(['reference-error']);
  }, 120_000);
});

describe("the suite's programs", () => {
  it('refuses none of the programs the vitest suite runs to a result', async () => {
    const { createRequire } = await import('node:module');
    const { readFileSync } = await import('node:fs');
    const require = createRequire(import.meta.url);
    const { check } = require('../lib/typecheck');
    // Recorded by a run of the suite (scripts/typecheck-suite-programs.mjs says how), each with
    // its providers declared loosely: what is checked is the JavaScript, not the tools.
    const programs = JSON.parse(readFileSync(new URL('./fixtures/typecheck-suite-programs.json', import.meta.url), 'utf8'));
    expect(programs.length).toBeGreaterThan(300);
    const refused = [];
    for (const { code, providers } of programs) {
      const declarations = providers.map((n) => `declare const ${n}: Record<string, (...args: any[]) => Promise<any>>;`).join('\n');
      const found = await check(code, declarations);
      if (found.count > 0) refused.push({ code: code.slice(0, 200), why: found.diagnostics[0].message });
    }
    expect(refused).toEqual([]);
  }, 120_000);
});

describe('without the compiler', () => {
  it('a typecheck request rejects PEER_MISSING saying what to install, and one without runs', async () => {
    const { execFileSync } = await import('node:child_process');
    const root = new URL('..', import.meta.url).pathname;
    const out = execFileSync(
      process.execPath,
      [
        '-e',
        `const M = require('node:module'); const resolve = M._resolveFilename;
        M._resolveFilename = function (request, ...rest) { if (request === 'typescript') { const e = new Error("Cannot find module 'typescript'"); e.code = 'MODULE_NOT_FOUND'; throw e } return resolve.call(this, request, ...rest) };
        const { IsolateExecutor } = require('./index.js');
        const ex = new IsolateExecutor({ workers: 1 });
        ex.execute({ code: 'async () => 1', declarations: '', typecheck: true })
          .then(() => 'resolved', (e) => e.code + ' ' + e.message)
          .then(async (said) => { const plain = await ex.execute({ code: 'async () => 2' }); console.log(said + ' | ' + plain.result); await ex.close() })`,
      ],
      { cwd: root, encoding: 'utf8', timeout: 30_000 },
    ).trim();
    expect(out).toBe('PEER_MISSING typecheck needs the package `typescript` (6) in the host project, and it is not installed. Install it beside @supolka/codemode-executor: npm install typescript@6. | 2');
  });
});

describe('bounds of the check', () => {
  it('a check past its time bound is given up (the program runs unchecked); the next is checked on a new thread', async () => {
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.url);
    const { check } = require('../lib/typecheck');
    const slow = `async () => {\n${Array.from({ length: 200 }, (_, i) => `  const v${i} = await billing.list()`).join('\n')}\n}`;
    const two = [check(slow, DECLARATIONS, { timeoutMs: 1 }), check('async () => billing.refund({ id: 1 })', DECLARATIONS)];
    const [gaveUp, next] = await Promise.all(two);
    expect(gaveUp).toEqual({ diagnostics: [], count: 0, unchecked: 'the check took more than 1 ms' });
    // Queued behind it, sent again to the new thread and checked there.
    expect(next.count).toBe(1);
    expect(next.diagnostics[0].message).toContain("Type 'number' is not assignable to type 'string'");
    expect((await check('async () => billing.refnd()', DECLARATIONS)).count).toBe(1);
  });

  it("code past the executor's own bounds is the run's to refuse, with its text", async () => {
    const ex = executor({ workers: 1 });
    const deep = `async () => ${'['.repeat(600)}${']'.repeat(600)}`;
    const outcome = await run(ex, deep);
    expect(outcome.error.code).toBe('NESTING_TOO_DEEP');
  });
});

describe('what a review found', () => {
  const createRequire = async (url) => (await import('node:module')).createRequire(url);
  it('an optional or long enum filled from a loop of literals is not refused in JavaScript', async () => {
    const require = await createRequire(import.meta.url);
    const { check } = require('../lib/typecheck');
    const codes = Array.from({ length: 35 }, (_, i) => `"A${String.fromCharCode(65 + (i % 26))}${i}"`);
    const declarations = `declare const w: { get(input: { unit?: "c" | "f" }): Promise<number>; code(input: { code: ${codes.join(' | ')} }): Promise<number> }`;
    expect((await check('async () => { for (const unit of ["c", "f"]) await w.get({ unit }) }', declarations)).count).toBe(0);
    expect((await check(`async () => { for (const code of [${codes[0]}, ${codes[1]}]) await w.code({ code }) }`, declarations)).count).toBe(0);
    // A literal written in place keeps its type: still caught.
    expect((await check('async () => w.get({ unit: "k" })', declarations)).count).toBe(1);
  });

  it('reads no file of the host a program or a declaration names', async () => {
    const require = await createRequire(import.meta.url);
    const { check } = require('../lib/typecheck');
    const path = require('node:path');
    const lib = path.dirname(require.resolve('typescript'));
    const found = await check(`async (): Promise<number> => { const m = await import(${JSON.stringify(path.join(lib, 'typescript.js'))}); return 1 }`, '/// <reference path="/etc/hostname" />');
    expect(found.diagnostics.map((d) => d.message).join('\n')).not.toMatch(/not a module|typescript\.js/);
  });
});
