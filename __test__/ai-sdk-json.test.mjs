// codeModeTool's values have @ai-sdk/code-mode's JSON semantics (docs/ai-sdk.md, "Values are
// JSON"): a table of programs, each run through both tools on the same host tools, the real
// executor on our side and @ai-sdk/code-mode 1.0.42's QuickJS on theirs. A program that succeeds
// there succeeds here with the same value; one refused there is refused here, with a text of ours.
// Then what the JSON conversion must not change: the program's own toJSON and getters run in the
// sandbox, and an error's place, the entry-shape and syntax failures and a resumed run are what
// the executor gives for the code as the model wrote it.
import { createRequire } from 'node:module';
import { experimental_createCodeModeTool as createQuickJsCodeModeTool } from '@ai-sdk/code-mode';
import { jsonSchema, tool } from 'ai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { declaredText, executor as makeExecutor } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { codeModeTool } = require('../index.js');
const executor = makeExecutor({ workers: 2, approvalKey: 'a test approval key of at least thirty-two bytes' });

class Money {
  constructor(cents) {
    this.cents = cents;
  }
  toJSON() {
    return `$${this.cents / 100}`;
  }
}
const cyclic = { name: 'loop' };
cyclic.self = cyclic;
const anything = jsonSchema({ type: 'object' });

/** Host tools whose answers JSON changes or refuses, and two that show the input they got. */
const tools = {
  cyclic: tool({ description: 'an answer with a cycle', inputSchema: anything, execute: async () => cyclic }),
  dated: tool({ description: 'an answer with a Date', inputSchema: anything, execute: async () => ({ at: new Date(0) }) }),
  odd: tool({ description: 'an answer with values JSON changes', inputSchema: anything, execute: async () => ({ m: new Map([[1, 2]]), n: NaN, z: -0, u: undefined, arr: [undefined, 1] }) }),
  priced: tool({ description: 'an answer with a toJSON', inputSchema: anything, execute: async () => ({ price: new Money(500) }) }),
  big: tool({ description: 'an answer with a BigInt', inputSchema: anything, execute: async () => ({ n: 1n }) }),
  fn: tool({ description: 'an answer that is a function', inputSchema: anything, execute: async () => () => 1 }),
  nothing: tool({ description: 'no answer', inputSchema: anything, execute: async () => undefined }),
  echo: tool({ description: 'answers its input', inputSchema: anything, execute: async (input) => input }),
  day: tool({ description: 'takes a string', inputSchema: z.object({ day: z.string() }), execute: async (input) => input }),
};

const theirTool = createQuickJsCodeModeTool(tools);
const ourTool = codeModeTool(tools, { executor });
let calls = 0;

/** Theirs: `{ ok, value }` or `{ ok: false, message }` (their tool throws). */
async function theirs(body) {
  try {
    return { ok: true, value: await theirTool.execute({ js: body }, { toolCallId: `q${++calls}`, messages: [] }) };
  } catch (e) {
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

/** Ours: `{ ok, value }` or `{ ok: false, error }` (the output's error). */
async function ours(body) {
  const out = await ourTool.execute({ code: `async () => {\n${body}\n}` }, { toolCallId: `o${++calls}`, messages: [] });
  return out.error ? { ok: false, error: out.error } : { ok: true, value: out.result };
}

const notJson = (detail) => new RegExp(`^${escapeRegExp(declaredText('RESULT_NOT_JSON', { detail: '\u0000' })).replace('\u0000', detail)}$`);
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// [what, body, expected]: `{ value }` both return it; `{ refused }` both refuse, ours with this
// code and a text matching `text`.
const table = [
  // Numbers JSON has no value for, and -0.
  ['Infinity, NaN and -0 become null, null and 0', 'return { inf: Infinity, nan: NaN, negZero: -0, list: [-Infinity] }', { value: { inf: null, nan: null, negZero: 0, list: [null] } }],
  ['a result of -0 is 0', 'return -0', { value: 0 }],
  ['numbers keep their digits', 'return [1e21, 5e-324, 0.1 + 0.2, -1.5]', { value: [1e21, 5e-324, 0.1 + 0.2, -1.5] }],
  // BigInt.
  ['a BigInt result is refused', 'return 1n', { refused: 'RESULT_NOT_JSON', text: notJson('JSON.stringify threw TypeError: Do not know how to serialize a BigInt') }],
  ['a BigInt inside the result is refused', 'return { n: [1, 2n] }', { refused: 'RESULT_NOT_JSON', text: notJson('JSON.stringify threw TypeError: Do not know how to serialize a BigInt') }],
  // Dates.
  ['a Date is its ISO string; an invalid one null', 'return { at: new Date(0), bad: new Date(NaN) }', { value: { at: '1970-01-01T00:00:00.000Z', bad: null } }],
  ['a Date result is its ISO string', 'return new Date(86400000)', { value: '1970-01-02T00:00:00.000Z' }],
  // Functions, symbols, undefined.
  ['a function-valued key is dropped, as are symbols and symbol keys', "return { a: 1, f() {}, s: Symbol('s'), [Symbol('k')]: 2 }", { value: { a: 1 } }],
  ['a function result is refused', 'return () => 1', { refused: 'RESULT_NOT_JSON', text: notJson('JSON has no value for a function') }],
  ['a symbol result is refused', "return Symbol('s')", { refused: 'RESULT_NOT_JSON', text: notJson('JSON has no value for a symbol') }],
  ['an undefined value is dropped', 'return { a: undefined, b: 1 }', { value: { b: 1 } }],
  ['undefined, a function and a symbol in an array become null', "return [undefined, () => 1, Symbol('s'), 1]", { value: [null, null, null, 1] }],
  ['a result of undefined is undefined', 'return undefined', { value: undefined }],
  ['null is null', 'return null', { value: null }],
  // Collections, buffers and other objects.
  ['Map, Set and WeakMap become {}', 'return { m: new Map([[1, 2]]), s: new Set([1]), w: new WeakMap() }', { value: { m: {}, s: {}, w: {} } }],
  ['typed arrays become index objects, buffers and views {}', 'return { u8: new Uint8Array([1, 2]), f64: new Float64Array([0.5]), buf: new ArrayBuffer(2), view: new DataView(new ArrayBuffer(2)) }', { value: { u8: { 0: 1, 1: 2 }, f64: { 0: 0.5 }, buf: {}, view: {} } }],
  [
    'RegExp and Error become {}, boxed primitives their value, instances and null-prototype objects their own fields',
    "return { re: /x/g, err: new TypeError('t'), boxed: [new String('s'), new Number(1), new Boolean(false)], inst: new (class { x = 1; #p = 2 })(), bare: Object.assign(Object.create(null), { a: 1 }), proxied: new Proxy({ a: 1 }, {}), promise: Promise.resolve(1) }",
    { value: { re: {}, err: {}, boxed: ['s', 1, false], inst: { x: 1 }, bare: { a: 1 }, proxied: { a: 1 }, promise: {} } },
  ],
  ['a __proto__ key stays an own key', 'return JSON.parse(\'{"__proto__": {"a": 1}}\')', { value: JSON.parse('{"__proto__": {"a": 1}}') }],
  ['strings, lone surrogates and line separators included, are kept', "return ['\\u2028', '\\ud800', 'é']", { value: ['\u2028', '\ud800', 'é'] }],
  // toJSON and getters: the program's own code, run inside the sandbox.
  ["toJSON gives the value, with its key, run in the sandbox", "return { price: { toJSON() { return '$' + typeof process } }, at: { toJSON(key) { return key } } }", { value: { price: '$undefined', at: 'at' } }],
  ['a toJSON that gives nothing drops its key', 'return { a: { toJSON() {} }, b: 1 }', { value: { b: 1 } }],
  ['a result whose toJSON gives nothing is refused', 'return { toJSON() {} }', { refused: 'RESULT_NOT_JSON', text: notJson('its toJSON\\(\\) gave no JSON value') }],
  ['a toJSON that throws refuses the result', "return { toJSON() { throw new RangeError('no JSON today') } }", { refused: 'RESULT_NOT_JSON', text: notJson('JSON.stringify threw RangeError: no JSON today') }],
  ['a getter gives its value', 'return { get x() { return 5 } }', { value: { x: 5 } }],
  // Shape.
  ['a cycle is refused', 'const o = { a: 1 }; o.o = o; return o', { refused: 'RESULT_NOT_JSON', text: notJson('JSON.stringify threw TypeError: Converting circular structure to JSON[^]*') }],
  ['a shared reference is copied', 'const a = [1]; return { x: a, y: a }', { value: { x: [1], y: [1] } }],
  ['a sparse array has null in its holes', 'const a = [1, , 3]; a[5] = 6; return a', { value: [1, null, 3, null, null, 6] }],
  ['500 levels of nesting', 'let o = 1; for (let i = 0; i < 500; i++) o = [o]; return o', { value: (() => { let o = 1; for (let i = 0; i < 500; i++) o = [o]; return o })() }],
  // Size: within both bounds the same, past both refused (the bounds differ: docs/ai-sdk.md).
  ['a value of half a mebibyte', "return { s: 'x'.repeat(512 * 1024) }", { value: { s: 'x'.repeat(512 * 1024) } }],
  ['a value past both size bounds is refused', "return 'x'.repeat(17 * 1024 * 1024)", { refused: 'RESULT_TOO_LARGE', text: /^The program's result is \d+ bytes, more than the 16777216 bytes a result may take/ }],
  // Tool answers.
  ['a tool answer with a cycle rejects the call; the program may catch it', "try { await tools.cyclic({}); return 'passed' } catch (e) { return e instanceof Error }", { value: true }],
  ['a tool answer with a cycle, uncaught, refuses the run', 'return await tools.cyclic({})', { refused: 'PROGRAM_ERROR', text: /^Error: The tool tools\.cyclic returned a value that cannot be copied into the sandbox: it is passed as JSON, and JSON\.stringify threw TypeError: Converting circular structure to JSON[\s\S]*$/ }],
  ['a tool answer with a Date holds its ISO string', 'const r = await tools.dated({}); return { type: typeof r.at, r }', { value: { type: 'string', r: { at: '1970-01-01T00:00:00.000Z' } } }],
  ['a tool answer with a Map, NaN, -0 and undefined', 'return await tools.odd({})', { value: { m: {}, n: null, z: 0, arr: [null, 1] } }],
  ["a tool answer's toJSON (the host's) gives its value", 'return await tools.priced({})', { value: { price: '$5' } }],
  ['a tool answer with a BigInt rejects the call', "try { await tools.big({}); return 'passed' } catch (e) { return e instanceof Error }", { value: true }],
  ['a tool answer that is a function rejects the call', "try { await tools.fn({}); return 'passed' } catch (e) { return e instanceof Error }", { value: true }],
  ['a tool answer of undefined is undefined', 'return (await tools.nothing({})) === undefined', { value: true }],
  // Tool inputs.
  ['a tool input is JSON too: a Date its string, a Map {}, undefined dropped, NaN null', 'return await tools.echo({ d: new Date(0), m: new Map([[1, 2]]), u: undefined, n: NaN, arr: [undefined], neg: -0 })', { value: { d: '1970-01-01T00:00:00.000Z', m: {}, n: null, arr: [null], neg: 0 } }],
  ["a Date passes a string schema as its ISO string", 'return await tools.day({ day: new Date(0) })', { value: { day: '1970-01-01T00:00:00.000Z' } }],
  ['a sparse array in an input has null in its holes', 'return await tools.echo({ a: [1, , 3] })', { value: { a: [1, null, 3] } }],
  ['a BigInt in an input rejects the call', "try { await tools.echo({ n: 1n }); return 'passed' } catch (e) { return e instanceof Error }", { value: true }],
  ['a function or a symbol in an input rejects the call', "const r = []; for (const input of [{ f() {} }, { s: Symbol('s') }]) { try { await tools.echo(input); r.push('passed') } catch (e) { r.push(e instanceof Error) } } return r", { value: [true, true] }],
  ['a call without an input', 'return await tools.echo()', { value: undefined }],
];

describe('the same value as @ai-sdk/code-mode', () => {
  it.each(table)('%s', async (_what, body, expected) => {
    const [there, here] = await Promise.all([theirs(body), ours(body)]);
    if ('value' in expected) {
      expect(there).toStrictEqual({ ok: true, value: expected.value });
      expect(here).toStrictEqual({ ok: true, value: expected.value });
      if (Object.is(expected.value, 0)) expect(Object.is(here.value, 0)).toBe(true);
    } else {
      expect(there.ok).toBe(false);
      expect(here.ok).toBe(false);
      expect(here.error.code).toBe(expected.refused);
      expect(here.error.message).toMatch(expected.text);
      expect(here.error.message).not.toBe(there.message);
    }
  }, 60_000);

  it("a tool's refused answer, caught, says why in our text", async () => {
    const out = await ourTool.execute({ code: 'async () => { try { await tools.big({}) } catch (e) { return e.message } }' }, { toolCallId: 'b', messages: [] });
    expect(out.result).toBe(declaredText('TOOL_RESULT_NOT_CLONEABLE', { provider: 'tools', tool: 'big', detail: 'it is passed as JSON, and JSON.stringify threw TypeError: Do not know how to serialize a BigInt' }));
    const input = await ourTool.execute({ code: 'async () => { try { await tools.echo({ n: 1n }) } catch (e) { return e.message } }' }, { toolCallId: 'b', messages: [] });
    expect(input.result).toBe('Invalid input for tool "echo": it is passed as JSON, and JSON.stringify threw TypeError: Do not know how to serialize a BigInt');
  });
});

describe('what the JSON conversion leaves as it was', () => {
  it("the program's toJSON and getters run inside the sandbox: their console lines are the run's", async () => {
    const code = "async () => ({ a: { toJSON() { console.log('toJSON ran'); return typeof process } }, get b() { console.log('getter ran'); return typeof require } })";
    const out = await ourTool.execute({ code }, { toolCallId: 's', messages: [] });
    expect(out.result).toStrictEqual({ a: 'undefined', b: 'undefined' });
    expect(out.logs.map((l) => l.message)).toEqual(['toJSON ran', 'getter ran']);
  });

  it("what the model is shown is the output's result", async () => {
    const out = await ourTool.execute({ code: 'async () => ({ at: new Date(0), n: NaN })' }, { toolCallId: 'm', messages: [] });
    const shown = await ourTool.toModelOutput({ output: out });
    expect(shown).toEqual({ type: 'json', value: { result: { at: '1970-01-01T00:00:00.000Z', n: null } } });
  });

  // Each program's failure is the executor's own for the code as the model wrote it.
  const failing = [
    ['an error on the first line', 'async () => { null.x }'],
    ['an error on the first line after an import on it', "import { x } from './m.js'; async () => { null[x] }"],
    ['an error on a later line', "async () => {\n  const a = 1\n  throw new Error('at ' + a)\n}"],
    ['an indented first line', "   \n   async () => { throw new Error('e') }"],
    ['TypeScript, types on the first line', "async (): Promise<number> => { const n: number = 1; throw new Error('t' + n) }"],
    ['a thrown value that is not an Error', "async () => { throw 'plain' }"],
    ['not a function', '1'],
    ['two statements', 'async () => 1; async () => 2'],
    ['a syntax error', 'async () => {'],
    ['a function body written without its function', 'return 1'],
    ['an unknown import', "import { y } from './nope.js'\nasync () => y"],
    ['a TypeScript enum', 'enum E { A }\nasync () => E.A'],
    ['a trailing semicolon and comment', "async () => { throw new Error('x') }; // done"],
  ];
  it.each(failing)('%s', async (_what, code) => {
    const modules = { './m.js': "export const x = 'k'" };
    const native = await executor.execute({ code, modules, providers: [{ name: 'tools', tools: Object.keys(tools) }], dispatch: () => undefined, outbound: null });
    const out = await codeModeTool(tools, { executor, modules }).execute({ code }, { toolCallId: 'f', messages: [] });
    expect(native.error).toBeDefined();
    expect(out.error).toStrictEqual(native.error);
  });

  it('a failure in the call of the function (a class without new) has no place, as when the executor calls it', async () => {
    const code = '(class {})';
    const native = await executor.execute({ code });
    const out = await codeModeTool({}, { executor }).execute({ code }, { toolCallId: 'c', messages: [] });
    expect(native.error).toStrictEqual({ code: 'PROGRAM_ERROR', message: expect.stringMatching(/^TypeError: Class constructor.* cannot be invoked without 'new'$/) });
    expect(out.error).toStrictEqual({ code: 'PROGRAM_ERROR', message: expect.stringMatching(/^TypeError: Class constructor.* cannot be invoked without 'new'$/) });
  });

  it('a result of the executor is unchanged when it is JSON already', async () => {
    const code = "import { x } from './m.js'\nasync () => ({ x, list: [1, 'two', true, null, { deep: [2.5] }] })";
    const modules = { './m.js': "export const x = 'k'" };
    const native = await executor.execute({ code, modules });
    const out = await codeModeTool({}, { executor, modules }).execute({ code }, { toolCallId: 'j', messages: [] });
    expect(out.result).toStrictEqual(native.result);
  });

  it('a resumed run: its result is JSON, and a failure keeps its place', async () => {
    const gated = {
      refund: tool({ description: 'r', inputSchema: z.object({ id: z.string() }), needsApproval: true, execute: async ({ id }) => ({ id, at: new Date(0) }) }),
    };
    const codemode = codeModeTool(gated, { executor });
    const paused = await codemode.execute({ code: "async () => { const r = await tools.refund({ id: 'A', when: undefined }); return { r, n: NaN, m: new Map() } }" }, { toolCallId: 'r', messages: [] });
    expect(paused.approvals).toEqual([{ approvalId: 'r:approval-0', toolName: 'refund', input: { id: 'A' } }]);
    const done = await codemode.resume(paused, [{ approvalId: 'r:approval-0', approved: true }]);
    expect(done.result).toStrictEqual({ r: { id: 'A', at: '1970-01-01T00:00:00.000Z' }, n: null, m: {} });

    const failing = "async () => { const r = await tools.refund({ id: 'B' }); null[r.id] }";
    const pausedToFail = await codemode.execute({ code: failing }, { toolCallId: 'r2', messages: [] });
    const failed = await codemode.resume(pausedToFail, [{ approvalId: 'r2:approval-0', approved: true }]);
    const native = await executor.execute({ code: failing, providers: [{ name: 'tools', tools: ['refund'] }], dispatch: () => ({ id: 'B' }) });
    expect(native.error.line).toBe(1);
    expect(failed.error).toStrictEqual(native.error);
  });
});
