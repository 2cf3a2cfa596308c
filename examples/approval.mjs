// An AI SDK agent loop where a tool needs a person's approval (docs/approvals.md). The SDK declares
// the tools; `refund` is marked `needsApproval`. A small code tool runs the model's program in an
// IsolateExecutor with those tools as the `billing` provider, `needsApproval` mapped to the
// provider's `approve`: when the program calls `billing.refund`, the run pauses and the code tool
// answers with the pause (the token and the pending calls). The loop stops there, a person (here
// scripted) decides, and the loop resumes the run - on a new executor, as after a restart: the
// token carries the program and every answer so far - and hands the run's final outcome to the
// model, which answers. The model is the AI SDK's mock, scripted, so the example runs offline.
//
// Run: node examples/approval.mjs [approve|deny]
import { asSchema, generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { IsolateExecutor } from '../index.js';

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

// --- A code tool over IsolateExecutor with approvals ------------------------------------------
// The program sees the tools as `billing.<name>(input)`. A tool whose `needsApproval` is `true`
// or a function is in the provider's `approve`; a pending call whose function says `false` for
// its input is approved without asking anyone (`forPerson`).
function codeTool(toolSet, provider = 'billing') {
  const names = Object.keys(toolSet);
  const declaration = { name: provider, tools: names, approve: names.filter((n) => toolSet[n].needsApproval) };
  const dispatch = async ({ tool: name, args }) => {
    const input = await validate(toolSet[name], args[0]);
    return toolSet[name].execute(input, { toolCallId: `${provider}.${name}`, messages: [] });
  };
  // What the code tool answers: the pause (token and pending calls), or the result or error.
  const answer = (outcome) =>
    outcome.paused
      ? { paused: outcome.paused }
      : outcome.error
        ? { error: outcome.error.message, logs: outcome.logs }
        : { result: outcome.result, logs: outcome.logs };
  const withExecutor = async (run) => {
    const executor = new IsolateExecutor({ approvalKey, workers: 1 });
    try {
      return answer(await run(executor));
    } finally {
      await executor.close();
    }
  };
  return {
    tool: tool({
      description: `Run a JavaScript async arrow function. It may call ${names.map((n) => `${provider}.${n}(input)`).join(', ')}; some calls wait for a person's approval.`,
      inputSchema: z.object({ code: z.string() }),
      execute: ({ code }) =>
        withExecutor((executor) => executor.execute({ code, providers: [declaration], dispatch, approval: { mode: 'interrupt' } })),
      // The token holds the program and every answer so far, signed but not encrypted: the model
      // is shown what waits, not the token.
      toModelOutput: ({ output }) => ({
        type: 'json',
        value: output.paused ? { waitingForApproval: output.paused.pending.map((c) => ({ tool: c.tool, input: c.args[0] })) } : output,
      }),
    }),
    // The pending calls a person must see: those whose `needsApproval` function (if any) says so.
    async forPerson(pending) {
      const ask = [];
      for (const call of pending) {
        const rule = toolSet[call.tool].needsApproval;
        if (typeof rule !== 'function' || (await rule(call.args[0], { toolCallId: call.id, messages: [] }))) ask.push(call);
      }
      return ask;
    },
    // Runs a paused program on with the decisions (a pending call `forPerson` left out is
    // approved). Any executor with the same key can do this, in any process.
    resume: (paused, decisions) =>
      withExecutor((executor) =>
        executor.resume({
          token: paused.token,
          decisions: Object.fromEntries(paused.pending.map(({ id }) => [id, decisions[id] ?? { approved: true }])),
          dispatch,
        }),
      ),
  };
}

async function validate(t, value) {
  const schema = asSchema(t.inputSchema);
  if (!schema.validate) return value;
  const checked = await schema.validate(value);
  if (!checked.success) throw new Error(`invalid input: ${checked.error.message}`);
  return checked.value;
}

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
    const out = toolMessage.content[0].output.value;
    const text = out.result
      ? `Refunded ${out.result.amount} ${out.result.currency} for order ${out.result.orderId} (${out.result.refundId}).`
      : `The refund did not go through: ${out.error ?? JSON.stringify(out)}`;
    return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
  },
});

// --- The person (scripted) -----------------------------------------------------------------
// `node examples/approval.mjs deny` makes the person say no: the refund then rejects inside the
// program with APPROVAL_DENIED and the reason, and is never dispatched.
const says = process.argv[2] ?? 'approve';
const asked = [];
const person = async (call) => {
  asked.push(`${call.provider}.${call.tool} ${JSON.stringify(call.args[0])}`);
  return says === 'approve' ? { approved: true } : { approved: false, reason: 'refunds need a manager today' };
};

// --- The loop ----------------------------------------------------------------------------
const code = codeTool(tools);
const pausedIn = (step) => step?.toolResults.find((r) => r.toolName === 'codemode' && r.output?.paused);
let messages = [{ role: 'user', content: 'Order A-1042 arrived damaged. Please refund it.' }];
let pauses = 0;
let answer;
for (;;) {
  const turn = await generateText({
    model,
    tools: { codemode: code.tool },
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
  // A person decides; the run goes on, and may pause again at a later call.
  let outcome = waiting.output;
  while (outcome.paused) {
    pauses += 1;
    const decisions = {};
    for (const call of await code.forPerson(outcome.paused.pending)) decisions[call.id] = await person(call);
    outcome = await code.resume(outcome.paused, decisions);
  }
  // The code tool's call ends with the resumed run's outcome: the model sees one call of the
  // code tool and its final answer, as if the run had simply taken longer.
  const output = code.tool.toModelOutput({ toolCallId: waiting.toolCallId, input: waiting.input, output: outcome });
  messages = messages.map((m) =>
    m.role !== 'tool'
      ? m
      : { ...m, content: m.content.map((p) => (p.type === 'tool-result' && p.toolCallId === waiting.toolCallId ? { ...p, output } : p)) },
  );
}

console.log(answer);
console.log(JSON.stringify({ pauses, asked, ran }));
