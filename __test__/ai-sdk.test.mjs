// codeModeTool (docs/ai-sdk.md): the AI SDK's own tools as one code-mode tool whose programs run
// in real workers. Loops through AI SDK 7's generateText and streamText with its mock model,
// direct and as the local tool caller of experimental_toolCallers; declarations; approvals
// (interrupt and callback, needsApproval and toolApproval); failures and their shapes.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { generateText, jsonSchema, streamText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4, convertArrayToReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ExecutorError, IsolateExecutor, executor as makeExecutor, rejection, thrown } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { codeModeTool } = require('../index.js');
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

const executor = makeExecutor({ workers: 2, approvalKey: 'a test approval key of at least thirty-two bytes' });

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};
const finish = (unified) => ({ unified, raw: undefined });

/** The host's tools, recording each execution as [tool, input, toolCallId]. */
function shop() {
  const ran = [];
  const tools = {
    getOrder: tool({
      description: 'Look up an order by id',
      inputSchema: z.object({ id: z.string().describe('The order id') }),
      outputSchema: z.object({ id: z.string(), total: z.number(), customerId: z.string() }),
      execute: async ({ id }, { toolCallId }) => {
        ran.push(['getOrder', id, toolCallId]);
        return { id, total: 42.5, customerId: 'C-7' };
      },
    }),
    getCustomer: tool({
      description: 'Look up a customer',
      inputSchema: jsonSchema({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false }),
      execute: async ({ id }, { toolCallId }) => {
        ran.push(['getCustomer', id, toolCallId]);
        return { id, name: 'Ann', vip: true };
      },
    }),
    refund: tool({
      description: 'Refund an order',
      inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
      // A person approves refunds above 10.
      needsApproval: async ({ amount }) => amount > 10,
      execute: async ({ orderId, amount }) => {
        ran.push(['refund', orderId, amount]);
        return { refundId: `rf_${orderId}`, amount };
      },
    }),
  };
  return { tools, ran };
}

const twoTools = `async () => {
  const order = await tools.getOrder({ id: 'A-1' })
  const customer = await tools.getCustomer({ id: order.customerId })
  console.log('order', order.id, 'for', customer.name)
  return { order: order.id, total: order.total, customer: customer.name, vip: customer.vip }
}`;

/** A mock model that calls `toolName` with `program` first, then answers with the JSON it was shown. */
function scripted(program, toolName = 'codemode') {
  const calls = [];
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      calls.push(options);
      const toolMessage = options.prompt.findLast((m) => m.role === 'tool');
      if (!toolMessage) {
        return { content: [{ type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify({ code: program }) }], finishReason: finish('tool-calls'), usage, warnings: [] };
      }
      return { content: [{ type: 'text', text: JSON.stringify(toolMessage.content[0].output) }], finishReason: finish('stop'), usage, warnings: [] };
    },
  });
  return { model, calls };
}

const anyCalls = (...tools) => tools.map(([tool, status]) => ({ provider: 'tools', tool, status, ms: expect.any(Number) }));

describe('codeModeTool in an AI SDK 7 loop', () => {
  it('generateText: the program calls two host tools; the model sees the declarations, then the result and logs', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const { model, calls } = scripted(twoTools);
    const out = await generateText({ model, tools: { codemode }, prompt: 'Who ordered A-1?', stopWhen: stepCountIs(3) });

    expect(out.steps[0].toolResults[0].output).toEqual({
      result: { order: 'A-1', total: 42.5, customer: 'Ann', vip: true },
      logs: [{ level: 'log', message: 'order A-1 for Ann' }],
      calls: anyCalls(['getOrder', 'ok'], ['getCustomer', 'ok']),
    });
    // Each host tool ran once, with its validated input and an id under the code tool's call.
    expect(ran).toEqual([['getOrder', 'A-1', 'call-1:1'], ['getCustomer', 'C-7', 'call-1:2']]);
    // The model was offered one tool, `codemode`, whose description declares the host tools.
    const offered = calls[0].tools;
    expect(offered.map((t) => t.name)).toEqual(['codemode']);
    expect(offered[0].description).toContain('getOrder(input: {\n    /** The order id */\n    id: string;\n  }): Promise<{');
    expect(offered[0].inputSchema).toEqual({ type: 'object', properties: { code: expect.objectContaining({ type: 'string' }) }, required: ['code'], additionalProperties: false });
    // Then it was shown the result and the console lines.
    expect(calls[1].prompt.findLast((m) => m.role === 'tool').content[0].output).toEqual({
      type: 'json',
      value: { result: { order: 'A-1', total: 42.5, customer: 'Ann', vip: true }, logs: ['[log] order A-1 for Ann'] },
    });
    expect(JSON.parse(out.text).value.result.customer).toBe('Ann');
  });

  it('streamText with experimental_toolCallers: the code tool is the local caller of the tools routed to it', async () => {
    const { tools, ran } = shop();
    const seen = [];
    const stream = (parts) => ({ stream: convertArrayToReadableStream([{ type: 'stream-start', warnings: [] }, ...parts]) });
    const model = new MockLanguageModelV4({
      doStream: async (options) => {
        seen.push(options);
        if (seen.length === 1) {
          return stream([
            { type: 'tool-call', toolCallId: 'call-1', toolName: 'codemode', input: JSON.stringify({ code: twoTools }) },
            { type: 'finish', finishReason: finish('tool-calls'), usage },
          ]);
        }
        return stream([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Ann ordered A-1.' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: finish('stop'), usage },
        ]);
      },
    });
    const result = streamText({
      model,
      // Made without tools: the AI SDK binds those that name it as their caller.
      tools: { codemode: codeModeTool({}, { executor }), ...tools },
      experimental_toolCallers: { getOrder: ['codemode'], getCustomer: ['codemode', 'AI_SDK_DIRECT_TOOL_CALL'] },
      prompt: 'Who ordered A-1?',
      stopWhen: stepCountIs(3),
    });
    const parts = [];
    for await (const part of result.fullStream) parts.push(part);
    expect(await result.text).toBe('Ann ordered A-1.');

    // getOrder only through the code tool; getCustomer both ways; refund, not routed, only directly.
    const offered = Object.fromEntries(seen[0].tools.map((t) => [t.name, t]));
    expect(Object.keys(offered).sort()).toEqual(['codemode', 'getCustomer', 'refund']);
    expect(offered.codemode.description).toContain('  getOrder(input: {');
    expect(offered.codemode.description).toContain('  getCustomer(input: {');
    expect(offered.codemode.description).not.toContain('refund');

    const toolResult = parts.find((p) => p.type === 'tool-result');
    expect(toolResult.output).toEqual({
      result: { order: 'A-1', total: 42.5, customer: 'Ann', vip: true },
      logs: [{ level: 'log', message: 'order A-1 for Ann' }],
      calls: anyCalls(['getOrder', 'ok'], ['getCustomer', 'ok']),
    });
    expect(ran.map(([name]) => name)).toEqual(['getOrder', 'getCustomer']);
  });
});

describe('declarations', () => {
  it('zod and JSON schemas, output types, quoted names, titles; tools without execute are left out', () => {
    const codemode = codeModeTool(
      {
        search: tool({
          description: 'Search the catalog.\nReturns at most `limit` items.',
          inputSchema: z.object({ query: z.string(), limit: z.number().int().optional(), sort: z.enum(['price', 'name']) }),
          outputSchema: z.array(z.object({ sku: z.string(), price: z.number().nullable() })),
          execute: async () => [],
        }),
        'stock-level': tool({ title: 'Stock level of one SKU', inputSchema: jsonSchema({ type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] }), execute: async () => 3 }),
        ping: tool({ inputSchema: z.object({}), execute: async () => 'pong' }),
        providerSide: tool({ description: 'Runs at the provider', inputSchema: z.object({ q: z.string() }) }),
      },
      { executor, outbound: null },
    );
    const text = codemode.description;
    const block = text.slice(text.indexOf('declare const tools'), text.indexOf('\n};') + 3);
    expect(block).toBe(
      [
        'declare const tools: {',
        '  /**',
        '   * Search the catalog.',
        '   * Returns at most `limit` items.',
        '   */',
        '  search(input: {',
        '    query: string;',
        '    limit?: number;',
        '    sort: "price" | "name";',
        '  }): Promise<{',
        '    sku: string;',
        '    price: number | null;',
        '  }[]>;',
        '  /** Stock level of one SKU */',
        '  "stock-level"(input: {',
        '    sku: string;',
        '  }): Promise<unknown>;',
        '  ping(input?: Record<string, unknown>): Promise<unknown>;',
        '};',
      ].join('\n'),
    );
    expect(text).toContain('Write one async arrow function');
    expect(text).toContain('The program has no network: fetch is closed');
    expect(text).not.toContain('approval');
    expect(text).toContain('tools["stock-level"]({ /* its input */ })');
  });

  it('the global takes another name with `provider`; a tool that may need approval is said to', async () => {
    const { tools } = shop();
    const codemode = codeModeTool(tools, { executor, provider: 'shop' });
    expect(codemode.description).toContain('declare const shop: {');
    expect(codemode.description).toContain("Some calls wait for a person's approval");
    const out = await codemode.execute({ code: "async () => (await shop.getOrder({ id: 'B-2' })).total" }, { toolCallId: 'c', messages: [] });
    expect(out.result).toBe(42.5);
  });
});

describe('approvals', () => {
  const refundProgram = `async () => {
  const order = await tools.getOrder({ id: 'A-1' })
  console.log('refunding', order.total)
  try {
    const refund = await tools.refund({ orderId: order.id, amount: order.total })
    return { refunded: refund.refundId }
  } catch (e) {
    return { refused: e.message }
  }
}`;
  const stopOnPause = ({ steps }) => Boolean(steps.at(-1)?.toolResults.some((r) => r.output?.approvals));

  it('interrupt: the loop stops at the pause; a person approves; the run resumes on another executor and the model gets the result', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const { model, calls } = scripted(refundProgram);
    const messages = [{ role: 'user', content: 'Refund A-1' }];
    const first = await generateText({ model, tools: { codemode }, messages, stopWhen: [stepCountIs(3), stopOnPause] });

    const paused = first.steps[0].toolResults[0].output;
    expect(paused).toEqual({
      approvals: [{ approvalId: 'call-1:approval-1', toolName: 'refund', input: { orderId: 'A-1', amount: 42.5 } }],
      continuation: { token: expect.stringMatching(/^cm2\./), toolCallId: 'call-1', decided: {}, dispatched: 1, entry: { line: 1, column: 1 } },
      logs: [{ level: 'log', message: 'refunding 42.5' }],
      calls: anyCalls(['getOrder', 'ok'], ['refund', 'pending']),
    });
    expect(ran.map(([name]) => name)).toEqual(['getOrder']);
    expect(calls).toHaveLength(1); // the loop stopped: nothing for the model until a person decides
    // What the conversation holds for the model shows the waiting call, never the token.
    const history = JSON.stringify(first.response.messages);
    expect(history).not.toContain(paused.continuation.token);
    expect(first.response.messages.at(-1).content[0].output.value.waitingForApproval).toEqual([{ tool: 'refund', input: { orderId: 'A-1', amount: 42.5 } }]);

    // The person's answer as the AI SDK writes it; resumed by another executor with the same key,
    // as after a restart.
    const other = new IsolateExecutor({ workers: 1, approvalKey: 'a test approval key of at least thirty-two bytes' });
    try {
      const after = await codeModeTool(tools, { executor: other }).resume(paused, [{ type: 'tool-approval-response', approvalId: 'call-1:approval-1', approved: true }]);
      expect(after).toEqual({
        result: { refunded: 'rf_A-1' },
        logs: [{ level: 'log', message: 'refunding 42.5' }],
        calls: anyCalls(['getOrder', 'replayed'], ['refund', 'ok']),
      });
      // getOrder was answered from the token; the refund ran once, with the next id.
      expect(ran).toEqual([['getOrder', 'A-1', 'call-1:1'], ['refund', 'A-1', 42.5]]);

      // The code tool's call ends with the resumed output, and the loop goes on to the model.
      const output = await codemode.toModelOutput({ toolCallId: 'call-1', input: {}, output: after });
      const resumed = [
        ...messages,
        ...first.response.messages.map((m) => (m.role === 'tool' ? { ...m, content: m.content.map((p) => ({ ...p, output })) } : m)),
      ];
      const second = await generateText({ model, tools: { codemode }, messages: resumed, stopWhen: stepCountIs(3) });
      expect(JSON.parse(second.text)).toEqual({ type: 'json', value: { result: { refunded: 'rf_A-1' }, logs: ['[log] refunding 42.5'] } });
    } finally {
      await other.close();
    }
  });

  it('interrupt, denied: the call rejects inside the program with the reason and never runs', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const paused = await codemode.execute({ code: refundProgram }, { toolCallId: 'call-9', messages: [] });
    const after = await codemode.resume(paused, [{ approvalId: 'call-9:approval-1', approved: false, reason: 'a manager must sign' }]);
    expect(after.result.refused).toMatch(/The call to tools\.refund was not made: .*denied \(a manager must sign\)/);
    expect(after.calls).toEqual(anyCalls(['getOrder', 'replayed'], ['refund', 'denied']));
    expect(ran.map(([name]) => name)).toEqual(['getOrder']);
  });

  it('a denial carries code APPROVAL_DENIED; uncaught, the output fails DENIAL_UNCAUGHT, not PROGRAM_ERROR', async () => {
    const { tools, ran } = shop();
    const deny = { refund: { type: 'denied', reason: 'refunds are closed today' } };
    const caught = await codeModeTool(tools, { executor, toolApproval: deny }).execute({ code: "async () => { try { await tools.refund({ orderId: 'X', amount: 1 }) } catch (e) { return e.code } }" }, { toolCallId: 'dc', messages: [] });
    expect(caught.result).toBe('APPROVAL_DENIED');
    const uncaught = await codeModeTool(tools, { executor, toolApproval: deny }).execute({ code: "async () => tools.refund({ orderId: 'X', amount: 1 })" }, { toolCallId: 'du', messages: [] });
    expect(uncaught.error?.code).toBe('DENIAL_UNCAUGHT');
    expect(uncaught.error.message).toMatch(/refunds are closed today/);
    // A person's no on a resume too.
    const codemode = codeModeTool(tools, { executor });
    const paused = await codemode.execute({ code: "async () => tools.refund({ orderId: 'Y', amount: 500 })" }, { toolCallId: 'dp', messages: [] });
    const after = await codemode.resume(paused, [{ approvalId: paused.approvals[0].approvalId, approved: false, reason: 'no' }]);
    expect(after.error?.code).toBe('DENIAL_UNCAUGHT');
    expect(ran).toEqual([]);
  });

  it('a needsApproval function that says no lets the call run without asking', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const out = await codemode.execute({ code: "async () => (await tools.refund({ orderId: 'S-1', amount: 5 })).refundId" }, { toolCallId: 'c', messages: [] });
    expect(out).toEqual({ result: 'rf_S-1', logs: [], calls: anyCalls(['refund', 'ok']) });
    expect(ran).toEqual([['refund', 'S-1', 5]]);
  });

  it('two calls of one turn wait together; each gets its own answer', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const code = `async () => Promise.allSettled([
      tools.refund({ orderId: 'A', amount: 20 }),
      tools.refund({ orderId: 'B', amount: 30 }),
      tools.refund({ orderId: 'C', amount: 1 }),
    ]).then((all) => all.map((r) => r.status === 'fulfilled' ? r.value.refundId : 'no'))`;
    const paused = await codemode.execute({ code }, { toolCallId: 'two', messages: [] });
    // The third needs no person: decided at once, it is not among the approvals.
    expect(paused.approvals.map((a) => a.input.orderId)).toEqual(['A', 'B']);
    expect(Object.values(paused.continuation.decided)).toEqual([{ approved: true }]);
    const [a, b] = paused.approvals;
    const after = await codemode.resume(paused, [
      { approvalId: b.approvalId, approved: false },
      { approvalId: a.approvalId, approved: true },
    ]);
    expect(after.result).toEqual(['rf_A', 'no', 'rf_C']);
    expect(ran.map(([, id]) => id).sort()).toEqual(['A', 'C']);
  });

  it("toolApproval, as generateText takes it, wins over needsApproval: 'denied', 'approved', user-approval with a reason, one function", async () => {
    const { tools, ran } = shop();
    const code = "async () => { try { return (await tools.refund({ orderId: 'X', amount: 99 })).refundId } catch (e) { return e.message } }";
    const denied = await codeModeTool(tools, { executor, toolApproval: { refund: { type: 'denied', reason: 'refunds are closed today' } } }).execute({ code }, { toolCallId: 'd', messages: [] });
    expect(denied.result).toMatch(/denied \(refunds are closed today\)/);
    const approved = await codeModeTool(tools, { executor, toolApproval: { refund: 'approved' } }).execute({ code }, { toolCallId: 'a', messages: [] });
    expect(approved.result).toBe('rf_X');
    const asked = await codeModeTool(tools, { executor, toolApproval: { getOrder: 'not-applicable', refund: (input) => ({ type: 'user-approval', reason: `${input.amount} EUR leaves the company` }) } }).execute({ code }, { toolCallId: 'u', messages: [] });
    expect(asked.approvals).toEqual([{ approvalId: 'u:approval-0', toolName: 'refund', input: { orderId: 'X', amount: 99 }, reason: '99 EUR leaves the company' }]);
    const seen = [];
    const generic = codeModeTool(tools, {
      executor,
      toolApproval: ({ toolCall }) => {
        seen.push(toolCall.toolName);
        return toolCall.toolName === 'refund' ? 'denied' : undefined;
      },
    });
    const both = await generic.execute({ code: "async () => { await tools.getOrder({ id: 'G' }); try { await tools.refund({ orderId: 'G', amount: 1 }) } catch (e) { return e.message } }" }, { toolCallId: 'g', messages: [] });
    // Checked when the run pauses at a call, and again as it is dispatched (the check that binds
    // it to what a person approved): getOrder passes both.
    expect(seen).toEqual(['getOrder', 'getOrder', 'refund']);
    expect(both.result).toMatch(/denied \(the host's approval policy denies it\)/);
    expect(ran.map(([name, id]) => `${name} ${id}`)).toEqual(['refund X', 'getOrder G']);
  });

  it('callback: decide is asked, while the run waits, only about the calls that need a person', async () => {
    const { tools, ran } = shop();
    const asked = [];
    const codemode = codeModeTool(tools, {
      executor,
      approval: {
        mode: 'callback',
        decide: async (request) => {
          asked.push(request);
          return request.input.amount < 50 ? true : { approved: false, reason: 'too much' };
        },
      },
    });
    const code = `async () => {
      const small = await tools.refund({ orderId: 'S', amount: 2 })
      const mid = await tools.refund({ orderId: 'M', amount: 40 })
      let big
      try { big = await tools.refund({ orderId: 'L', amount: 400 }) } catch (e) { big = e.message }
      return [small.refundId, mid.refundId, big]
    }`;
    const out = await codemode.execute({ code }, { toolCallId: 'cb', messages: [] });
    expect(out.result.slice(0, 2)).toEqual(['rf_S', 'rf_M']);
    expect(out.result[2]).toMatch(/denied \(too much\)/);
    expect(asked).toEqual([
      { approvalId: 'cb:approval-2', toolName: 'refund', input: { orderId: 'M', amount: 40 } },
      { approvalId: 'cb:approval-3', toolName: 'refund', input: { orderId: 'L', amount: 400 } },
    ]);
    expect(out.calls).toEqual(anyCalls(['refund', 'ok'], ['refund', 'ok'], ['refund', 'denied']));
    expect(ran.map(([, id]) => id)).toEqual(['S', 'M']);
  });

  it("resume refuses answers that do not match the pause, and outputs that are not one", async () => {
    const { tools } = shop();
    const codemode = codeModeTool(tools, { executor });
    const paused = await codemode.execute({ code: refundProgram }, { toolCallId: 'r', messages: [] });
    const missing = await rejection(codemode.resume(paused, []));
    expect(missing).toBeInstanceOf(ExecutorError);
    expect(missing.code).toBe('DECISIONS_INVALID');
    expect(missing.message).toContain('no response for approval "r:approval-1"');
    const stranger = await rejection(codemode.resume(paused, [{ approvalId: 'r:approval-1', approved: true }, { approvalId: 'zzz', approved: true }]));
    expect(stranger.code).toBe('DECISIONS_INVALID');
    expect(stranger.message).toContain('"zzz" names no approval of this pause');
    const notBoolean = await rejection(codemode.resume(paused, [{ approvalId: 'r:approval-1', approved: 'yes' }]));
    expect([notBoolean.code, notBoolean.message]).toEqual(['INVALID_REQUEST', expect.stringContaining('responses[0].approved')]);
    const done = await codemode.execute({ code: 'async () => 1' }, { toolCallId: 'x', messages: [] });
    expect((await rejection(codemode.resume(done, []))).code).toBe('INVALID_REQUEST');
    const forged = { ...paused, continuation: { ...paused.continuation, token: `${paused.continuation.token.slice(0, -4)}AAAA` } };
    expect((await rejection(codemode.resume(forged, [{ approvalId: 'r:approval-1', approved: true }]))).code).toBe('TOKEN_TAMPERED');
  });
});

describe('failures and their shapes', () => {
  it('a program that throws: an output with the error, its place, the logs and calls; the model gets error-json', async () => {
    const { tools } = shop();
    const codemode = codeModeTool(tools, { executor });
    const program = "async () => {\n  const o = await tools.getOrder({ id: 'A-1' })\n  console.log('got', o.id)\n  throw new Error('no refund for ' + o.id)\n}";
    const { model, calls } = scripted(program);
    const out = await generateText({ model, tools: { codemode }, prompt: 'x', stopWhen: stepCountIs(3) });
    const failed = out.steps[0].toolResults[0].output;
    expect(failed).toEqual({
      error: { code: 'PROGRAM_ERROR', message: 'Error: no refund for A-1 (line 4, column 9)', line: 4, column: 9 },
      logs: [{ level: 'log', message: 'got A-1' }],
      calls: anyCalls(['getOrder', 'ok']),
    });
    expect(out.steps[0].content.some((p) => p.type === 'tool-error')).toBe(false);
    expect(calls[1].prompt.findLast((m) => m.role === 'tool').content[0].output).toEqual({
      type: 'error-json',
      value: { error: 'PROGRAM_ERROR: Error: no refund for A-1 (line 4, column 9)', logs: ['[log] got A-1'] },
    });
  });

  it("a tool that throws rejects its call inside the program: uncaught it fails the run, caught it is the program's to handle", async () => {
    const broken = {
      stock: tool({
        description: 'Stock of a SKU',
        inputSchema: z.object({ sku: z.string() }),
        execute: async ({ sku }) => {
          throw new Error(`warehouse offline while reading ${sku}`);
        },
      }),
    };
    const codemode = codeModeTool(broken, { executor });
    const uncaught = await codemode.execute({ code: "async () => tools.stock({ sku: 'K' })" }, { toolCallId: 't', messages: [] });
    expect(uncaught.error.code).toBe('PROGRAM_ERROR');
    expect(uncaught.error.message).toContain('warehouse offline while reading K');
    expect(uncaught.calls).toEqual([{ provider: 'tools', tool: 'stock', status: 'error', ms: expect.any(Number) }]);
    const caught = await codemode.execute({ code: "async () => { try { return await tools.stock({ sku: 'K' }) } catch (e) { return 'fallback: ' + e.message } }" }, { toolCallId: 't2', messages: [] });
    expect(caught.result).toBe('fallback: warehouse offline while reading K');
  });

  it("an input the tool's schema refuses, too many arguments, and an unknown tool reject without running anything", async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const attempt = (call) => `async () => { try { await ${call} } catch (e) { return e.message } }`;
    const results = [];
    for (const call of ['tools.getOrder({ id: 7 })', "tools.getOrder({ id: 'A' }, 2)", 'tools.nope({})']) {
      results.push((await codemode.execute({ code: attempt(call) }, { toolCallId: 'v', messages: [] })).result);
    }
    expect(results[0]).toBe('Invalid input for tool "getOrder": id: Invalid input: expected string, received number');
    expect(results[1]).toBe('tools.getOrder takes one argument, its input object; it was given 2');
    expect(results[2]).toMatch(/Tool "nope" not found/);
    expect(ran).toEqual([]);
  });

  it("an executor fault rejects the tool's execute, and the AI SDK reports a tool error", async () => {
    const closed = new IsolateExecutor({ workers: 1 });
    await closed.close();
    const { tools } = shop();
    const codemode = codeModeTool(tools, { executor: closed });
    const fault = await rejection(codemode.execute({ code: 'async () => 1' }, { toolCallId: 'f', messages: [] }));
    expect(fault).toBeInstanceOf(ExecutorError);
    expect(fault.code).toBe('CLOSED');
    const { model } = scripted('async () => 1');
    const out = await generateText({ model, tools: { codemode }, prompt: 'x', stopWhen: stepCountIs(3) });
    const error = out.steps[0].content.find((p) => p.type === 'tool-error');
    expect(error.error).toBeInstanceOf(ExecutorError);
    expect(error.error.code).toBe('CLOSED');
  });

  it('an input that is not { code: string } is refused by the SDK before anything runs, and the model is told why', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const calls = [];
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        calls.push(options);
        return calls.length === 1
          ? { content: [{ type: 'tool-call', toolCallId: 'bad', toolName: 'codemode', input: JSON.stringify({ program: 'async () => 1' }) }], finishReason: finish('tool-calls'), usage, warnings: [] }
          : { content: [{ type: 'text', text: 'ok' }], finishReason: finish('stop'), usage, warnings: [] };
      },
    });
    const out = await generateText({ model, tools: { codemode }, prompt: 'x', stopWhen: stepCountIs(3) });
    const error = out.steps[0].content.find((p) => p.type === 'tool-error');
    expect(String(error.error?.message ?? error.error)).toContain("The input's `code` must be a string holding the program; got none");
    expect(JSON.stringify(calls[1].prompt.findLast((m) => m.role === 'tool').content[0].output)).toContain('must be a string holding the program');
    expect(ran).toEqual([]);
  });

  it("the SDK's abortSignal stops the run: execute rejects with ABORTED, the reason as its cause", async () => {
    let started;
    const reached = new Promise((resolve) => (started = resolve));
    const slow = {
      wait: tool({
        description: 'Waits',
        inputSchema: z.object({}),
        execute: (_, { abortSignal }) => {
          started();
          return new Promise((resolve) => abortSignal.addEventListener('abort', () => resolve('late')));
        },
      }),
    };
    const ac = new AbortController();
    const pending = codeModeTool(slow, { executor }).execute({ code: 'async () => tools.wait({})' }, { toolCallId: 'a', messages: [], abortSignal: ac.signal });
    await reached;
    const reason = new Error('the user left');
    ac.abort(reason);
    const fault = await rejection(pending);
    expect(fault).toBeInstanceOf(ExecutorError);
    expect([fault.code, fault.cause]).toEqual(['ABORTED', reason]);
  });

  it('the model sees a long result cut structurally; the output keeps it whole', async () => {
    const big = { rows: tool({ description: 'Many rows', inputSchema: z.object({}), execute: async () => Array.from({ length: 2000 }, (_, i) => ({ i, text: 'x'.repeat(40) })) }) };
    const codemode = codeModeTool(big, { executor, maxResultChars: 2000 });
    const out = await codemode.execute({ code: 'async () => tools.rows({})' }, { toolCallId: 'b', messages: [] });
    expect(out.result).toHaveLength(2000);
    const shown = await codemode.toModelOutput({ toolCallId: 'b', input: {}, output: out });
    expect(JSON.stringify(shown.value.result).length).toBeLessThanOrEqual(2000);
    expect(JSON.stringify(shown.value.result)).toContain('TRUNCATED');
    expect(shown.value.note).toMatch(/longer than 2000 characters/);
  });

  it('bad options throw INVALID_OPTION naming the field', () => {
    const { tools } = shop();
    const cases = [
      [[tools, {}], 'executor'],
      [[tools, { executor, provider: 'console' }], 'provider'],
      [[tools, { executor, provider: '1x' }], 'provider'],
      [[[1], { executor }], 'tools'],
      [[{ a: 3 }, { executor }], 'tools.a'],
      [[tools, { executor, approval: { mode: 'later' } }], 'approval.mode'],
      [[tools, { executor, approval: { mode: 'callback' } }], 'approval.decide'],
      [[tools, { executor, approval: { mode: 'interrupt', expiresIn: 0 } }], 'approval.expiresIn'],
      [[tools, { executor, toolApproval: { refund: 'maybe' } }], 'toolApproval.refund'],
      [[tools, { executor, timeout: -1 }], 'timeout'],
      [[tools, { executor, modules: { a: 1 } }], 'modules'],
      [[tools, { executor, typecheck: 'yes' }], 'typecheck'],
      [[tools, { executor, typecheck: true, modules: { m: 'export const x = 1' } }], 'typecheck'],
      [[tools, { executor, color: 'red' }], 'color'],
    ];
    for (const [args, field] of cases) {
      const e = thrown(() => codeModeTool(...args));
      expect(e, field).toBeInstanceOf(ExecutorError);
      expect([e.code, e.message]).toEqual(['INVALID_OPTION', expect.stringContaining(`\`${field}\``)]);
    }
  });
});

describe('typecheck', () => {
  it('a wrong call is answered TYPE_ERROR with its line and no tool runs; the program fixed runs', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor, typecheck: true });
    // A call that would run (getOrder) before the misnamed argument (`order`, declared `orderId`).
    const wrong = "async () => {\n  const o = await tools.getOrder({ id: 'A-1' })\n  return await tools.refund({ order: o.id, amount: 5 })\n}";
    const first = scripted(wrong);
    const out = await generateText({ model: first.model, tools: { codemode }, prompt: 'x', stopWhen: stepCountIs(3) });
    const failed = out.steps[0].toolResults[0].output;
    expect(failed).toEqual({ error: { code: 'TYPE_ERROR', message: expect.stringMatching(/^This program was not run and no tool was called/), line: 3, column: 31 }, logs: [], calls: [] });
    expect(failed.error.message).toContain("- line 3, column 31: Object literal may only specify known properties, but 'order' does not exist in type '{ orderId: string; amount: number; }'.");
    // The model reads it as the tool's failed output, as it reads a SYNTAX_ERROR; nothing ran.
    expect(first.calls[1].prompt.findLast((m) => m.role === 'tool').content[0].output).toEqual({ type: 'error-json', value: { error: `TYPE_ERROR: ${failed.error.message}` } });
    expect(ran).toEqual([]);

    const second = scripted(wrong.replace('{ order:', '{ orderId:'));
    const fixed = await generateText({ model: second.model, tools: { codemode }, prompt: 'x', stopWhen: stepCountIs(3) });
    expect(fixed.steps[0].toolResults[0].output.result).toEqual({ refundId: 'rf_A-1', amount: 5 });
    expect(ran).toEqual([['getOrder', 'A-1', 'call-1:1'], ['refund', 'A-1', 5]]);

    // On the expression's own line the column is the model's, not the wrapper's; and TypeScript
    // is checked with the types it was written with (getCustomer declares no output: `unknown`).
    const oneLine = await codemode.execute({ code: "async () => tools.getOrder({ order: 'A-1' })" }, { toolCallId: 'l', messages: [] });
    expect(oneLine.error).toMatchObject({ code: 'TYPE_ERROR', line: 1, column: 30 });
    expect(oneLine.error.message).toContain("- line 1, column 30: Object literal may only specify known properties, and 'order' does not exist");
    const typed = "async (): Promise<string> => {\n  const c = await tools.getCustomer({ id: 'C-7' }) as { name: string }\n  return c.name\n}";
    expect((await codemode.execute({ code: typed }, { toolCallId: 't', messages: [] })).result).toBe('Ann');
    expect(ran.slice(2)).toEqual([['getCustomer', 'C-7', 't:1']]);
    // A tool without an output schema is checked as resolving to `any`: reading its result, a
    // valid program, is not refused.
    const untyped = await codemode.execute({ code: "async () => (await tools.getCustomer({ id: 'C-7' })).name" }, { toolCallId: 'u', messages: [] });
    expect(untyped.error).toBeUndefined();
    expect(untyped.result).toBe('Ann');
  }, 10_000);
});

describe('loading', () => {
  const node = (script) => execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8', timeout: 30_000 }).trim();

  it('requiring the package does not load ai; codeModeTool does', () => {
    const out = node("const m = require('./index.js'); const loaded = () => Object.keys(require.cache).some((k) => k.includes('/node_modules/ai/')); const before = loaded(); m.codeModeTool({}, { executor: { execute() {} } }); console.log(before, loaded())");
    expect(out).toBe('false true');
  });

  it('without ai, codeModeTool throws PEER_MISSING saying what to install', () => {
    const out = node(`const M = require('node:module'); const resolve = M._resolveFilename;
      M._resolveFilename = function (request, ...rest) { if (request === 'ai') { const e = new Error("Cannot find module 'ai'"); e.code = 'MODULE_NOT_FOUND'; throw e } return resolve.call(this, request, ...rest) };
      try { require('./index.js').codeModeTool({}, { executor: { execute() {} } }) } catch (e) { console.log(e.code + ' ' + e.message) }`);
    expect(out).toMatch(/^PEER_MISSING codeModeTool needs the package `ai` \(7\) in the host project, and it could not be loaded \(Cannot find module 'ai'[\s\S]*npm install ai@7\.$/);
  });
});

describe('a review\'s attacks on codeModeTool', () => {
  it('a tool named constructor with needsApproval still waits for a person under an object toolApproval', async () => {
    const ran = [];
    const tools = {
      constructor: tool({ description: 'c', inputSchema: z.object({}), needsApproval: true, execute: async () => { ran.push('constructor'); return 'EXECUTED' } }),
      other: tool({ description: 'o', inputSchema: z.object({}), execute: async () => 'other' }),
    };
    const out = await codeModeTool(tools, { executor, toolApproval: { other: 'approved' } }).execute({ code: 'async () => tools.constructor({})' }, { toolCallId: 'k', messages: [] });
    expect(out.approvals?.map((a) => a.toolName)).toEqual(['constructor']);
    expect(ran).toEqual([]);
  });

  it('resume trusts only the token: a call moved from approvals into decided is refused at dispatch', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const code = "async () => { try { return (await tools.refund({ orderId: 'Z', amount: 500 })).refundId } catch (e) { return e.message } }";
    const paused = await codemode.execute({ code }, { toolCallId: 'f', messages: [] });
    expect(paused.approvals).toHaveLength(1);
    // What a client could send back from a UI stream: no approval asked, the call "decided".
    const pendingId = paused.approvals[0].approvalId.slice('f:approval-'.length);
    const forged = { ...paused, approvals: [], continuation: { ...paused.continuation, decided: { [pendingId]: { approved: true } } } };
    const after = await codemode.resume(forged, []);
    expect(after.result).toMatch(/APPROVAL|not made: it needs a person's approval, and it was denied \(no person approved this call with these arguments\)/);
    expect(ran.filter(([name]) => name === 'refund')).toEqual([]);
    // An approval shown with other arguments than the program's is no approval of its call.
    const shown = { ...paused, approvals: [{ ...paused.approvals[0], input: { orderId: 'Z', amount: 5 } }] };
    const other = await codemode.resume(shown, [{ approvalId: paused.approvals[0].approvalId, approved: true }]);
    expect(other.result).toMatch(/no person approved this call with these arguments/);
    // That refusal is a denial as any other: the program reads its code, the trail says denied,
    // and uncaught it ends the output DENIAL_UNCAUGHT.
    const byCode = await codemode.execute({ code: "async () => { try { await tools.refund({ orderId: 'Q', amount: 500 }) } catch (e) { return e.code } }" }, { toolCallId: 'g', messages: [] });
    const q = byCode.approvals[0];
    const coded = await codemode.resume({ ...byCode, approvals: [{ ...q, input: { orderId: 'Q', amount: 1 } }] }, [{ approvalId: q.approvalId, approved: true }]);
    expect(coded.result).toBe('APPROVAL_DENIED');
    expect(coded.calls.at(-1).status).toBe('denied');
    const bare = await codemode.execute({ code: "async () => tools.refund({ orderId: 'R', amount: 500 })" }, { toolCallId: 'h', messages: [] });
    const r = bare.approvals[0];
    const uncaught = await codemode.resume({ ...bare, approvals: [{ ...r, input: { orderId: 'R', amount: 1 } }] }, [{ approvalId: r.approvalId, approved: true }]);
    expect(uncaught.error?.code).toBe('DENIAL_UNCAUGHT');
    expect(ran.filter(([name]) => name === 'refund')).toEqual([]);
    // The real approval runs it.
    const real = await codemode.resume(paused, [{ approvalId: paused.approvals[0].approvalId, approved: true }]);
    expect(real.result).toBe('rf_Z');
  });

  it('a sparse array as a tool input is refused before JSON or any schema walks it; a small one has null in its holes', async () => {
    const tools = { take: tool({ description: 't', inputSchema: z.object({ ids: z.array(z.string().nullable()) }), execute: async ({ ids }) => ids }) };
    const call = (length) => `async () => { const ids = []; ids.length = ${length}; ids[1] = 'x'; try { return await tools.take({ ids }) } catch (e) { return e.message } }`;
    const huge = await codeModeTool(tools, { executor }).execute({ code: call('2 ** 32 - 1') }, { toolCallId: 's', messages: [] });
    expect(huge.result).toBe('Invalid input for tool "take": it holds more than 100000 values; pass less (an id or a page)');
    const typed = await codeModeTool(tools, { executor }).execute({ code: 'async () => { try { return await tools.take({ ids: new Uint8Array(2 ** 20) }) } catch (e) { return e.message } }' }, { toolCallId: 's', messages: [] });
    expect(typed.result).toBe('Invalid input for tool "take": it holds more than 100000 values; pass less (an id or a page)');
    const small = await codeModeTool(tools, { executor }).execute({ code: call(3) }, { toolCallId: 's', messages: [] });
    expect(small.result).toEqual([null, 'x', null]);
  });

  it("a failure's text the model sees is cut like a result", async () => {
    const codemode = codeModeTool({}, { executor, maxResultChars: 1_000 });
    const out = await codemode.execute({ code: 'async () => { throw new Error("e".repeat(100000)) }' }, { toolCallId: 'e', messages: [] });
    const shown = await codemode.toModelOutput({ output: out });
    expect(shown.type).toBe('error-json');
    expect(JSON.stringify(shown.value.error).length).toBeLessThanOrEqual(1_000);
    expect(shown.value.error).toMatch(/^PROGRAM_ERROR: /);
  });

  it('tool call ids stay unique past the 1,000 calls a run lists', async () => {
    const { tools, ran } = shop();
    const codemode = codeModeTool(tools, { executor });
    const code = "async () => { for (let i = 0; i < 1100; i++) await tools.getOrder({ id: 'n' + i }); return (await tools.refund({ orderId: 'Q', amount: 50 })).refundId }";
    const paused = await codemode.execute({ code }, { toolCallId: 'u', messages: [] });
    const refunds = [];
    tools.refund.execute = async (_input, { toolCallId }) => { refunds.push(toolCallId); return { refundId: 'rf_Q', amount: 50 } };
    const after = await codemode.resume(paused, [{ approvalId: paused.approvals[0].approvalId, approved: true }]);
    expect(after.result).toBe('rf_Q');
    const ids = ran.filter(([name]) => name === 'getOrder').map(([, , id]) => id);
    expect(ids).toHaveLength(1100);
    expect(ids).not.toContain(refunds[0]);
    expect(refunds[0]).toBe('u:1101');
  }, 60_000);

  it('pauses resumed without a person share one time bound', async () => {
    const tools = { pay: tool({ description: 'p', inputSchema: z.object({ n: z.number() }), needsApproval: async () => false, execute: async ({ n }) => n }) };
    const codemode = codeModeTool(tools, { executor, timeout: 1_000 });
    // Each call pauses and is resumed at once (needsApproval says no), a replay of all before it.
    const out = await codemode.execute({ code: 'async () => { let s = 0; for (let i = 0; i < 2000; i++) s += await tools.pay({ n: i }); return s }' }, { toolCallId: 't', messages: [] });
    expect(out.error?.code).toBe('TIMEOUT');
    expect(out.error?.message).toContain('1000 ms');
  }, 60_000);

  it('fetch is closed unless the host opens it, and the model is told', async () => {
    const codemode = codeModeTool({}, { executor });
    expect(codemode.description).toContain('fetch is closed');
    const out = await codemode.execute({ code: "async () => { try { await fetch('http://127.0.0.1:9/') } catch (e) { return e.message } }" }, { toolCallId: 'n', messages: [] });
    expect(out.result).toMatch(/network|closed/i);
  });
});

describe('tenant', () => {
  it('every execute and resume names the tool\'s tenant: its paused output resumes only through a tool of that tenant', async () => {
    const { tools, ran } = shop();
    const code = "async () => tools.refund({ orderId: 'T-1', amount: 50 })";
    const paused = await codeModeTool(tools, { executor, tenant: 'shop-a' }).execute({ code }, { toolCallId: 'ten', messages: [] });
    expect(paused.approvals).toEqual([{ approvalId: expect.stringMatching(/^ten:approval-/), toolName: 'refund', input: { orderId: 'T-1', amount: 50 } }]);
    const approve = [{ approvalId: paused.approvals[0].approvalId, approved: true }];
    // The token is shop-a's: another tenant's tool, or one that names none, cannot resume it.
    for (const other of [{ tenant: 'shop-b' }, {}]) {
      const e = await rejection(codeModeTool(tools, { executor, ...other }).resume(paused, approve));
      expect([e.code, JSON.stringify(other)]).toEqual(['TOKEN_FOREIGN_KEY', JSON.stringify(other)]);
    }
    expect(ran).toEqual([]);
    const after = await codeModeTool(tools, { executor, tenant: 'shop-a' }).resume(paused, approve);
    expect(after.result).toEqual({ refundId: 'rf_T-1', amount: 50 });
    expect(ran).toEqual([['refund', 'T-1', 50]]);
  }, 10_000);

  it('a bad tenant throws INVALID_OPTION naming it', () => {
    const { tools } = shop();
    for (const bad of ['a b', '', 'x'.repeat(65), 'café', 7, null]) {
      const e = thrown(() => codeModeTool(tools, { executor, tenant: bad }));
      expect(e, JSON.stringify(bad)).toBeInstanceOf(ExecutorError);
      expect([e.code, e.message]).toEqual(['INVALID_OPTION', expect.stringContaining('`tenant`')]);
      expect(e.message).toContain('1 to 64 of A-Z a-z 0-9 . _ -');
    }
    expect(typeof codeModeTool(tools, { executor, tenant: 'a.B_c-9' }).execute).toBe('function');
  });
});
