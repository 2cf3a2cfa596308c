// An AI SDK agent loop on plain Node: the SDK declares the tools, @cloudflare/codemode collapses
// them into one code tool, and CodemodeExecutor runs what the "model" writes. The model here is
// the AI SDK's own mock, scripted to write a program, so the example runs offline.
//
// Run: node --import ./lib/register.mjs examples/agent-loop.mjs
// (from an installed package: node --import @supolka/codemode-executor/register app.mjs)
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { createCodeTool } from '@cloudflare/codemode/ai';
// The two lines the migration page names (on Workers: DynamicWorkerExecutor({ loader })):
import { CodemodeExecutor, IsolateExecutor } from '../index.js';
const native = new IsolateExecutor({ outbound: null });
const executor = new CodemodeExecutor(native);

const tools = {
  getWeather: tool({
    description: 'Current weather for a city',
    inputSchema: z.object({ city: z.string().describe('City name') }),
    execute: async ({ city }) => ({ city, tempC: city === 'Paris' ? 18 : 25 }),
  }),
  toFahrenheit: tool({
    description: 'Convert Celsius to Fahrenheit',
    inputSchema: z.object({ c: z.number() }),
    execute: async ({ c }) => ({ f: (c * 9) / 5 + 32 }),
  }),
};

const codeTool = createCodeTool({ tools, executor });

// What the model "writes" on its first step.
const program = `async () => {
  const w = await codemode.getWeather({ city: 'Paris' })
  const t = await codemode.toFahrenheit({ c: w.tempC })
  console.log('looked up', w.city)
  return { city: w.city, f: t.f }
}`;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};
let descriptionSeen = '';
const model = new MockLanguageModelV4({
  doGenerate: async (options) => {
    const toolMessage = options.prompt.find((m) => m.role === 'tool');
    if (!toolMessage) {
      descriptionSeen = options.tools?.[0]?.description ?? '';
      return {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'codemode', input: JSON.stringify({ code: program }) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    }
    const { result, logs } = toolMessage.content[0].output.value;
    return {
      content: [{ type: 'text', text: `It is ${result.f}°F in ${result.city} (${logs.join('; ')}).` }],
      finishReason: { unified: 'stop', raw: undefined },
      usage,
      warnings: [],
    };
  },
});

try {
  const answer = await generateText({
    model,
    tools: { codemode: codeTool },
    prompt: 'How warm is it in Paris, in Fahrenheit?',
    stopWhen: stepCountIs(3),
  });
  console.log(answer.text);
  console.log(JSON.stringify({ toolOutput: answer.steps[0].toolResults[0].output, typesShown: descriptionSeen.includes('getWeather: (input: GetWeatherInput) => Promise<GetWeatherOutput>;') }));
} finally {
  await native.close();
}
