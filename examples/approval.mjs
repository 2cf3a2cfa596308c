// An AI SDK agent loop where a tool needs a person's approval (docs/approvals.md, docs/ai-sdk.md).
// The SDK declares the tools; `refund` is marked `needsApproval`. `codeModeTool` is the loop's
// code tool: with `experimental_toolCallers`, the AI SDK binds it the tools that name it as their
// caller, and the model writes one program that calls them as `billing.<name>(input)` in an
// IsolateExecutor. When the program calls `billing.refund`, the run pauses and the code tool
// answers with the pause. The loop stops there, a person (here scripted) answers as the AI SDK's
// approval responses, and the run resumes - on a new executor, as after a restart: the token
// carries the program and every answer so far - and the loop hands the run's final output to the
// model, which answers. The model is the AI SDK's mock, scripted, so the example runs offline.
//
// Run: node examples/approval.mjs [approve|deny]
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { IsolateExecutor, codeModeTool } from '../index.js';

// Every executor that is to resume a token needs the key that signed it (from a secret store in
// a real deployment; at least 32 bytes). Without one, an executor makes a random key per process.
const approvalKey = 'example approval key: keep it secret, share it across processes';

// --- The tools, as the AI SDK declares them --------------------------------------------------
const ran = { getOrder: 0, refund: 0 };
const tools = {
  getOrder: tool({
    description: 'Look up an order by id',
    inputSchema: z.object({ id: z.string() }),
    execute: async ({ id }) => {
      ran.getOrder += 1;
      return { id, total: 42.5, currency: 'EUR', status: 'damaged on delivery' };
    },
  }),
  refund: tool({
    description: 'Refund an order (money leaves the company: a person approves each refund)',
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: async ({ orderId, amount }) => {
      ran.refund += 1;
      return { refundId: `rf_${orderId}`, amount };
    },
  }),
};

// --- The model (scripted) ------------------------------------------------------------------
const program = `async () => {
  const order = await billing.getOrder({ id: 'A-1042' })
  console.log('order', order.id, order.status)
  const refund = await billing.refund({ orderId: order.id, amount: order.total })
  return { orderId: order.id, refundId: refund.refundId, amount: refund.amount, currency: order.currency }
}`;
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};
const model = new MockLanguageModelV4({
  doGenerate: async (options) => {
    const toolMessage = options.prompt.findLast((m) => m.role === 'tool');
    if (!toolMessage) {
      return {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'codemode', input: JSON.stringify({ code: program }) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    }
    // What the code tool shows the model (its toModelOutput): the result, or the failure.
    const out = toolMessage.content[0].output.value;
    const text = out.result
      ? `Refunded ${out.result.amount} ${out.result.currency} for order ${out.result.orderId} (${out.result.refundId}).`
      : `The refund did not go through: ${out.error ?? JSON.stringify(out)}`;
    return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
  },
});

// --- The person (scripted) -----------------------------------------------------------------
// `node examples/approval.mjs deny` makes the person say no: the refund then rejects inside the
// program with APPROVAL_DENIED and the reason, and is never dispatched. The answers are the AI
// SDK's tool-approval-response parts, as a chat UI's addToolApprovalResponse makes them.
const says = process.argv[2] ?? 'approve';
const asked = [];
const person = async ({ approvalId, toolName, input }) => {
  asked.push(`billing.${toolName} ${JSON.stringify(input)}`);
  return says === 'approve'
    ? { type: 'tool-approval-response', approvalId, approved: true }
    : { type: 'tool-approval-response', approvalId, approved: false, reason: 'refunds need a manager today' };
};

// --- The loop ----------------------------------------------------------------------------
const executor = new IsolateExecutor({ approvalKey, workers: 1 });
// The code tool, made without tools: the AI SDK binds those that name it as their caller.
const codemode = codeModeTool({}, { executor, provider: 'billing' });
const pausedIn = (step) => step?.toolResults.find((r) => r.toolName === 'codemode' && r.output?.approvals);
let messages = [{ role: 'user', content: 'Order A-1042 arrived damaged. Please refund it.' }];
let pauses = 0;
let answer;
try {
  for (;;) {
    const turn = await generateText({
      model,
      tools: { codemode, ...tools },
      // Both tools only through programs; the model sees one tool, `codemode`.
      experimental_toolCallers: { getOrder: ['codemode'], refund: ['codemode'] },
      messages,
      // Stop as soon as a run pauses: the model has nothing to do until a person decides.
      stopWhen: [stepCountIs(5), ({ steps }) => Boolean(pausedIn(steps.at(-1)))],
    });
    messages = [...messages, ...turn.response.messages];
    const waiting = pausedIn(turn.steps.at(-1));
    if (!waiting) {
      answer = turn.text;
      break;
    }
    // A person decides; the run goes on, and may pause again at a later call. Any executor with
    // the same key resumes it (here a new one, as after a restart), given the same tools.
    let output = waiting.output;
    const resumer = new IsolateExecutor({ approvalKey, workers: 1 });
    try {
      while (output.approvals) {
        pauses += 1;
        const responses = [];
        for (const request of output.approvals) responses.push(await person(request));
        output = await codeModeTool({}, { executor: resumer, provider: 'billing' }).resume(output, responses, { tools });
      }
    } finally {
      await resumer.close();
    }
    // The code tool's call ends with the resumed run's output: the model sees one call of the
    // code tool and its final answer, as if the run had simply taken longer.
    const shown = await codemode.toModelOutput({ toolCallId: waiting.toolCallId, input: waiting.input, output });
    messages = messages.map((m) =>
      m.role !== 'tool'
        ? m
        : { ...m, content: m.content.map((p) => (p.type === 'tool-result' && p.toolCallId === waiting.toolCallId ? { ...p, output: shown } : p)) },
    );
  }
} finally {
  await executor.close();
}

console.log(answer);
console.log(JSON.stringify({ pauses, asked, ran }));
