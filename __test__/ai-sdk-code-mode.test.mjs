// codeModeTool beside @ai-sdk/code-mode (the AI SDK's own QuickJS code tool) on the same tools, in
// one AI SDK 7 loop where both are local tool callers: the declarations the model reads (compared
// as the TypeScript compiler types them), what a program returns, how a failure and an approval
// come out. Where the two differ, the difference is one docs/ai-sdk.md states as a decision;
// each is asserted here, so a change on either side shows.
import { createRequire } from 'node:module';
import {
  DIRECT_TOOL_CALL,
  experimental_codeModeTool as quickJsCodeModeTool,
  experimental_continueCodeModeApproval as continueApproval,
  experimental_createCodeModeTool as createQuickJsCodeModeTool,
} from '@ai-sdk/code-mode';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { executor as makeExecutor } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { codeModeTool } = require('../index.js');
const executor = makeExecutor({ workers: 1 });

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};

function shop() {
  const ran = [];
  const tools = {
    getOrder: tool({
      description: 'Look up an order by id',
      inputSchema: z.object({ id: z.string().describe('The order id'), expand: z.array(z.enum(['lines', 'customer'])).optional() }),
      outputSchema: z.object({ id: z.string(), total: z.number(), customerId: z.string(), note: z.string().nullable() }),
      execute: async ({ id }) => {
        ran.push(`getOrder ${id}`);
        return { id, total: 42.5, customerId: 'C-7', note: null };
      },
    }),
    getCustomer: tool({
      description: 'Look up a customer',
      inputSchema: jsonSchema({ type: 'object', properties: { id: { type: 'string' }, fields: { type: 'array', items: { type: 'string' } } }, required: ['id'], additionalProperties: false }),
      execute: async ({ id }) => {
        ran.push(`getCustomer ${id}`);
        return { id, name: 'Ann', vip: true };
      },
    }),
    refund: tool({
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      needsApproval: true,
      execute: async ({ orderId, amount }) => {
        ran.push(`refund ${orderId}`);
        return { refundId: `rf_${orderId}`, amount };
      },
    }),
  };
  return { tools, ran };
}

// The same program in each tool's shape: a function body for @ai-sdk/code-mode (`js`), one async
// arrow function here (`code`).
const body = `const order = await tools.getOrder({ id: 'A-1' })
const customer = await tools.getCustomer({ id: order.customerId })
console.log('order', order.id)
return { order: order.id, total: order.total, customer: customer.name, note: order.note }`;
const arrow = (js) => `async () => {\n${js}\n}`;

/**
 * A model whose first turn calls both code tools on `js` (theirs with the body, ours with the
 * arrow function around it; `ids` their call ids) and which says 'done' once a tool answered;
 * `seen` collects the options of each turn.
 */
function callingBoth(js, ids, seen = []) {
  return new MockLanguageModelV4({
    doGenerate: async (options) => {
      seen.push(options);
      if (options.prompt.some((m) => m.role === 'tool')) return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
      return {
        content: [
          { type: 'tool-call', toolCallId: ids[0], toolName: 'code_mode', input: JSON.stringify({ js }) },
          { type: 'tool-call', toolCallId: ids[1], toolName: 'codemode', input: JSON.stringify({ code: arrow(js) }) },
        ],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

/** The `declare const tools: { ... }` block of a description. */
function declarations(description) {
  const start = description.indexOf('declare const tools');
  const end = description.indexOf('\n};', start);
  expect(start).toBeGreaterThanOrEqual(0);
  return description.slice(start, end + 3);
}

/**
 * Each tool's input and output type as the TypeScript compiler resolves them from a declaration
 * block (so method and arrow-property syntax, layout and comments do not matter).
 */
function typesOf(block, names) {
  const file = '/decl.ts';
  const aliases = names.map((n, i) => `type In${i} = Parameters<typeof tools[${JSON.stringify(n)}]>[0];\ntype Out${i} = Awaited<ReturnType<typeof tools[${JSON.stringify(n)}]>>;`);
  const text = `${block}\n${aliases.join('\n')}\nexport {};\n`;
  const options = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (name === file ? ts.createSourceFile(name, text, language) : read(name, language, ...rest));
  const program = ts.createProgram([file], options, host);
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  expect(problems).toEqual([]);
  const checker = program.getTypeChecker();
  const out = {};
  for (const statement of program.getSourceFile(file).statements) {
    if (!ts.isTypeAliasDeclaration(statement)) continue;
    const type = checker.getTypeAtLocation(statement.name);
    out[statement.name.text] = checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation);
  }
  return names.map((n, i) => ({ tool: n, input: out[`In${i}`], output: out[`Out${i}`] }));
}

describe('codeModeTool beside @ai-sdk/code-mode, as local tool callers in one generateText loop', () => {
  it('the same tools are declared with the same types; the same program returns the same value', async () => {
    const { tools, ran } = shop();
    const seen = [];
    const model = callingBoth(body, ['quickjs-1', 'isolate-1'], seen);
    const out = await generateText({
      model,
      tools: { code_mode: quickJsCodeModeTool(), codemode: codeModeTool({}, { executor }), getOrder: tools.getOrder, getCustomer: tools.getCustomer },
      experimental_toolCallers: { getOrder: ['code_mode', 'codemode'], getCustomer: ['code_mode', 'codemode', DIRECT_TOOL_CALL] },
      prompt: 'Who ordered A-1?',
      stopWhen: stepCountIs(3),
    });

    // Both were bound to the same two tools by the SDK; the compiler reads the same types from both.
    const offered = Object.fromEntries(seen[0].tools.map((t) => [t.name, t]));
    const names = ['getOrder', 'getCustomer'];
    const theirs = typesOf(declarations(offered.code_mode.description), names);
    const ours = typesOf(declarations(offered.codemode.description), names);
    expect(ours).toEqual(theirs);
    expect(ours[0]).toEqual({
      tool: 'getOrder',
      input: '{ id: string; expand?: ("lines" | "customer")[] | undefined; }',
      output: '{ id: string; total: number; customerId: string; note: string | null; }',
    });
    // Decision: the input is `{ code }` holding one async arrow function (this executor's entry
    // shape, as the MCP gateway's and @cloudflare/codemode's), where theirs is `{ js }`, a body.
    expect(Object.keys(offered.code_mode.inputSchema.properties)).toEqual(['js']);
    expect(Object.keys(offered.codemode.inputSchema.properties)).toEqual(['code']);

    const results = Object.fromEntries(out.steps[0].toolResults.map((r) => [r.toolName, r.output]));
    // Decision: the output carries the result with the console lines and the calls; theirs is the
    // bare result (its console output is not returned).
    expect(results.codemode).toEqual({
      result: results.code_mode,
      logs: [{ level: 'log', message: 'order A-1' }],
      calls: [
        { provider: 'tools', tool: 'getOrder', status: 'ok', ms: expect.any(Number) },
        { provider: 'tools', tool: 'getCustomer', status: 'ok', ms: expect.any(Number) },
      ],
    });
    expect(results.code_mode).toEqual({ order: 'A-1', total: 42.5, customer: 'Ann', note: null });
    expect(ran).toEqual(['getOrder A-1', 'getCustomer C-7', 'getOrder A-1', 'getCustomer C-7']);
  });

  it('a program that throws: theirs is a tool error, ours an output the model reads with the logs (a decision)', async () => {
    const { tools } = shop();
    const failing = "console.log('before')\nthrow new Error('no refund today')";
    const model = callingBoth(failing, ['q', 'i']);
    const out = await generateText({
      model,
      tools: { code_mode: createQuickJsCodeModeTool({ getOrder: tools.getOrder }), codemode: codeModeTool({ getOrder: tools.getOrder }, { executor }) },
      prompt: 'x',
      stopWhen: stepCountIs(3),
    });
    const parts = out.steps[0].content.filter((p) => p.type === 'tool-error' || p.type === 'tool-result');
    const byTool = Object.fromEntries(parts.map((p) => [p.toolName, p]));
    expect(byTool.code_mode.type).toBe('tool-error');
    expect(String(byTool.code_mode.error?.message ?? byTool.code_mode.error)).toContain('no refund today');
    expect(byTool.codemode.type).toBe('tool-result');
    expect(byTool.codemode.output).toEqual({
      error: { code: 'PROGRAM_ERROR', message: 'Error: no refund today (line 3, column 7)', line: 3, column: 7 },
      logs: [{ level: 'log', message: 'before' }],
      calls: [],
    });
  });

  it('TypeScript: ours strips types in the worker on every Node; theirs needs Node 22.13+ to (its engines say so)', async () => {
    const typed = 'const n: number = 6\nreturn n * 7';
    const ours = await codeModeTool({}, { executor }).execute({ code: arrow(typed) }, { toolCallId: 't', messages: [] });
    expect(ours.result).toBe(42);
    const theirs = createQuickJsCodeModeTool({}).execute({ js: typed }, { toolCallId: 'q', messages: [] });
    const [major, minor] = process.versions.node.split('.').map(Number);
    if (major > 22 || (major === 22 && minor >= 13)) await expect(theirs).resolves.toBe(42);
    else await expect(theirs).rejects.toThrow(/[Ss]yntax/);
  });

  it('approval: both stop at the call with its tool and input, and both resume to the same result', async () => {
    const { tools, ran } = shop();
    const refundBody = "const order = await tools.getOrder({ id: 'A-1' })\nconst r = await tools.refund({ orderId: order.id, amount: order.total })\nreturn r";
    const set = { getOrder: tools.getOrder, refund: tools.refund };
    // Theirs defaults to callback mode and, with no callback, refuses the call outright.
    await expect(createQuickJsCodeModeTool(set).execute({ js: refundBody }, { toolCallId: 'q0', messages: [] })).rejects.toThrow(/requires approval/);
    ran.length = 0; // its getOrder ran before the refusal

    const quickjs = createQuickJsCodeModeTool(set, { approval: { mode: 'interrupt' } });
    const interrupt = await quickjs.execute({ js: refundBody }, { toolCallId: 'q1', messages: [] });
    const ours = codeModeTool(set, { executor });
    const paused = await ours.execute({ code: arrow(refundBody) }, { toolCallId: 'i1', messages: [] });
    expect(interrupt).toMatchObject({ type: 'code-mode-interrupt', toolName: 'refund', input: { orderId: 'A-1', amount: 42.5 } });
    expect(paused.approvals).toEqual([{ approvalId: 'i1:approval-1', toolName: 'refund', input: interrupt.input }]);

    const theirResult = await continueApproval({ interrupt, approvalResponse: { approvalId: interrupt.interruptId, approved: true }, tools: set, options: { approval: { mode: 'interrupt' } } });
    const ourOutput = await ours.resume(paused, [{ approvalId: paused.approvals[0].approvalId, approved: true }]);
    expect(ourOutput.result).toEqual(theirResult);
    expect(theirResult).toEqual({ refundId: 'rf_A-1', amount: 42.5 });
    // Each ran getOrder once before the pause and the refund once after it.
    expect(ran.sort()).toEqual(['getOrder A-1', 'getOrder A-1', 'refund A-1', 'refund A-1']);
  });
});
