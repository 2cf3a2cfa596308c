// The programs both TanStack code-mode drivers run: this executor's
// (`@supolka/codemode-executor/tanstack`) and the stock one (`@tanstack/ai-isolate-node`,
// isolated-vm). The tools, the programs and the runner are shared; each side passes the packages
// it loaded (`@tanstack/ai-code-mode`, `@tanstack/ai`, `zod`), so the same code runs under the
// suite's Node beside this checkout and under Node 22 in bench/tanstack/ (run.mjs).
//
// `same`: the two drivers must give equal outcomes. Otherwise `differs` names the difference,
// which docs/tanstack.md lists and __test__/tanstack.test.mjs asserts on both sides.

const CITIES = {
  Tokyo: { temperature: 18, conditions: 'rain' },
  Paris: { temperature: 24, conditions: 'sun' },
  NYC: { temperature: 21, conditions: 'cloud' },
};

/**
 * The tools, as an agent would define them (zod schemas, server implementations).
 * @param {{ toolDefinition: Function, z: any }} deps
 */
export function makeTools({ toolDefinition, z }) {
  const getWeather = toolDefinition({
    name: 'getWeather',
    description: 'Current weather of a city',
    inputSchema: z.object({ city: z.string() }),
    outputSchema: z.object({ city: z.string(), temperature: z.number(), conditions: z.string() }),
  }).server(async ({ city }) => {
    const w = CITIES[city];
    if (!w) throw new Error(`Unknown city: ${city}`);
    return { city, ...w };
  });
  const echo = toolDefinition({
    name: 'echo',
    description: 'Returns its input',
    inputSchema: z.record(z.string(), z.unknown()),
  }).server(async (input) => input);
  const clock = toolDefinition({
    name: 'clock',
    description: 'A fixed instant, as a Date',
    inputSchema: z.object({}),
  }).server(async () => ({ at: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)), when: 'then' }));
  const fail = toolDefinition({
    name: 'fail',
    description: 'Fails in the way asked',
    inputSchema: z.object({ how: z.enum(['error', 'string', 'typeerror', 'nothing']) }),
  }).server(async ({ how }) => {
    if (how === 'error') throw new Error('the tool failed');
    if (how === 'typeerror') throw new TypeError('a tool type error');
    if (how === 'string') throw 'a thrown string';
    return undefined;
  });
  return [getWeather, echo, clock, fail];
}

/** Skill bindings, as createCodeModeTool's getSkillBindings returns them. */
export function skillBindings() {
  return {
    skill_double: {
      name: 'skill_double',
      description: 'Doubles n',
      inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
      execute: async ({ n }) => ({ doubled: n * 2 }),
    },
  };
}

/**
 * @typedef {{ name: string, code: string, timeout?: number, memoryLimit?: number, same?: true,
 *   differs?: string, level?: 'tool' | 'driver' | 'both', deadline?: number, reuse?: string,
 *   binding?: string }} Case
 */

/** @type {Case[]} */
export const cases = [
  // What a model writes.
  {
    name: 'weather-parallel',
    same: true,
    code: `// Fetch weather for multiple cities in parallel
const cities = ["Tokyo", "Paris", "NYC"];
const results = await Promise.all(
  cities.map(city => external_getWeather({ city }))
);
const warmest = results.reduce((prev, curr) =>
  curr.temperature > prev.temperature ? curr : prev
);
console.log("checked", results.length, "cities");
return { warmestCity: warmest.city, temperature: warmest.temperature };`,
  },
  {
    name: 'typescript',
    same: true,
    code: `interface Reading { city: string; temperature: number }
type Summary = { hottest: string; mean: number }
function summarize<T extends Reading>(rows: T[]): Summary {
  const hottest = rows.reduce((a: T, b: T) => (b.temperature > a.temperature ? b : a));
  const mean = rows.reduce((s: number, r: T) => s + r.temperature, 0) / rows.length;
  return { hottest: hottest.city, mean: Math.round(mean * 100) / 100 };
}
const rows = (await Promise.all(["Tokyo", "Paris"].map((city: string) => external_getWeather({ city })))) as Reading[];
const n = rows.length!;
return { ...summarize(rows), n } satisfies Summary & { n: number };`,
  },
  {
    name: 'allsettled',
    same: true,
    code: `const settled = await Promise.allSettled(["Paris", "Atlantis"].map((city) => external_getWeather({ city })));
return settled.map((s) => s.status === "fulfilled" ? s.value.city : s.reason.message);`,
  },
  {
    name: 'logs',
    same: true,
    code: `console.log("a", 1, { b: 2 }, [1, "x"], null, undefined, true, 10.5);
console.info("info", { nested: { deep: [1, 2] } });
console.warn("warn %s %d", "not substituted", 7);
console.error(new Error("an error object"));
console.log();
console.log("multi\\nline");
return "done";`,
  },
  { name: 'cpu-work', same: true, code: `let count = 0;
for (let n = 2; n < 20000; n++) { let p = true; for (let d = 2; d * d <= n; d++) if (n % d === 0) { p = false; break; } if (p) count++; }
return count;` },
  { name: 'global', same: true, code: `return [typeof global, global === globalThis, typeof external_echo, external_echo.name];` },
  { name: 'arguments', same: true, code: `return typeof arguments;` },
  { name: 'syntax-error', same: true, level: 'tool', code: `const x = (1;\nreturn x;` },
  // Values out: JSON.
  { name: 'values', same: true, code: `return { d: new Date(0), m: new Map([[1, 2]]), s: new Set([1]), u: undefined, n: NaN, i: -Infinity, nested: [1, [2, [3]]], neg: -0 };` },
  { name: 'return-undefined', same: true, code: `return undefined;` },
  { name: 'return-nothing', same: true, code: `const x = 1;` },
  { name: 'return-string', same: true, code: `return "plain";` },
  { name: 'return-null', same: true, code: `return null;` },
  { name: 'return-date', same: true, code: `return new Date(86400000);` },
  { name: 'return-function', same: true, code: `return () => 1;` },
  { name: 'return-tojson', same: true, code: `return { toJSON() { return { custom: true } } };` },
  { name: 'result-cyclic', same: true, code: `const a = { name: "a" }; a.self = a; return a;` },
  { name: 'result-bigint', same: true, code: `return { n: 10n };` },
  // Errors out.
  { name: 'throw-typeerror', same: true, code: `throw new TypeError("bad thing");` },
  { name: 'throw-custom-named', same: true, code: `class QuotaError extends Error { constructor(m) { super(m); this.name = "QuotaError"; this.code = "E_QUOTA"; } }
throw new QuotaError("over quota");` },
  { name: 'throw-custom-unnamed', same: true, code: `class Plain extends Error {}
throw new Plain("no name of its own");` },
  { name: 'throw-renamed-typeerror', same: true, code: `const e = new TypeError("renamed"); e.name = "Other"; throw e;` },
  { name: 'throw-empty-message', same: true, code: `throw new RangeError();` },
  { name: 'throw-string', same: true, code: `throw "a string";` },
  { name: 'throw-number', same: true, code: `throw 42;` },
  { name: 'throw-null', same: true, code: `throw null;` },
  { name: 'throw-undefined', same: true, code: `throw undefined;` },
  { name: 'throw-error-like', same: true, code: `throw { name: "LikeError", message: "looks like one" };` },
  { name: 'throw-message-only', same: true, code: `throw { message: "just a message" };` },
  { name: 'reject', same: true, code: `await Promise.reject(new Error("rejected"));` },
  { name: 'reference-error', same: true, code: `return notDefinedAnywhere + 1;` },
  { name: 'deep-stack', same: true, code: `function inner() { throw new RangeError("deep"); }
function outer() { inner(); }
outer();` },
  // Tools: arguments in and values out as JSON, failures as Error(message).
  { name: 'tool-error-uncaught', same: true, code: `return await external_fail({ how: "error" });` },
  { name: 'tool-typeerror-uncaught', same: true, code: `return await external_fail({ how: "typeerror" });` },
  { name: 'tool-error-caught', same: true, code: `try { await external_fail({ how: "error" }); } catch (e) { return [e.name, e.message, e instanceof Error]; }` },
  { name: 'tool-throws-string', same: true, code: `return await external_fail({ how: "string" });` },
  { name: 'tool-returns-undefined', same: true, code: `const r = await external_fail({ how: "nothing" }); return [typeof r, r === undefined];` },
  { name: 'tool-validation', same: true, code: `return await external_getWeather({ city: 42 });` },
  { name: 'tool-unknown-city', same: true, code: `return await external_getWeather({ city: "Atlantis" });` },
  { name: 'tool-no-args', same: true, code: `return await external_echo();` },
  { name: 'tool-args-json', same: true, code: `return await external_echo({ d: new Date(0), u: undefined, n: NaN, list: [undefined, 1], m: new Map([[1, 2]]) });` },
  { name: 'tool-returns-date', same: true, code: `const r = await external_clock({}); return [typeof r.at, r.at, r.when];` },
  { name: 'tool-bigint-args', same: true, code: `try { await external_echo({ n: 1n }); } catch (e) { return [e.name, e.message]; }` },
  { name: 'skill-binding', same: true, code: `return await skill_double({ n: 21 });` },
  { name: 'array-buffer-large', same: true, memoryLimit: 64, code: `const bufs = [];
for (let i = 0; i < 4; i++) bufs.push(new ArrayBuffer(64 * 1024 * 1024));
return bufs.length;` },
  { name: 'eval', same: true, code: `return eval("6 * 7");` },
  { name: 'array-buffers-many', same: true, memoryLimit: 64, code: `const bufs = [];
for (let i = 0; i < 300; i++) bufs.push(new ArrayBuffer(1024 * 1024));
return bufs.length;` },
  { name: 'many-calls', same: true, code: `let total = 0;
for (let i = 0; i < 50; i++) { const r = await external_echo({ i }); total += r.i; }
return total;` },
  // Where the drivers differ on purpose (docs/tanstack.md).
  { name: 'timeout', differs: 'the timeout text', timeout: 500, code: `while (true) {}` },
  { name: 'strict-assign', differs: 'strict mode', code: `undeclared = 5; return undeclared;` },
  { name: 'strict-this', differs: 'strict mode', code: `return typeof this;` },
  { name: 'fetch', differs: 'web globals', code: `return typeof fetch;` },
  { name: 'fetch-call', differs: 'web globals', code: `await fetch("https://example.com/"); return "fetched";` },
  { name: 'timers', differs: 'web globals', code: `await new Promise((r) => setTimeout(r, 5)); return "waited";` },
  { name: 'console-debug', differs: 'more console methods', code: `console.debug("dbg", { a: 1 }); return 1;` },
  { name: 'throw-opaque', differs: 'the text for a thrown non-error object', code: `throw { a: 1 };` },
  { name: 'throw-symbol', differs: 'the text for a thrown non-error object', code: `throw Symbol("s");` },
  { name: 'binding-not-identifier', differs: 'a binding name that is not an identifier', level: 'driver', binding: 'external_get-weather', code: `return 1;` },
  { name: 'log-flood', differs: 'the log bound', code: `for (let i = 0; i < 1500; i++) console.log("line " + i); return "flooded";` },
  { name: 'unhandled-rejection', differs: 'a rejection nothing handles', code: `Promise.reject(new Error("nobody awaits this")); return 1;` },
  { name: 'wasm-memory', differs: 'WebAssembly memory outside the memory limit', memoryLimit: 64, code: `const mems = [];
for (let i = 0; i < 4; i++) { const m = new WebAssembly.Memory({ initial: 2048 }); new Uint8Array(m.buffer).fill(1); mems.push(m); }
return mems.length * 128 + " MiB";` },
  { name: 'never-settles', differs: 'a promise nothing can settle', timeout: 500, deadline: 2000, code: `await new Promise(() => {}); return "unreachable";` },
  { name: 'context-reuse', differs: 'a fresh isolate per execute', level: 'driver', reuse: `return typeof globalThis.leftBehind;`, code: `globalThis.leftBehind = 1; return "set";` },
  // Last: after it the stock driver's host may be unstable (docs/tanstack.md).
  { name: 'heap-oom', differs: 'the memory limit', memoryLimit: 64, timeout: 10000, code: `const a = [];
while (true) a.push(new Array(1e5).fill(Math.random()));` },
];

/**
 * A custom event as the test compares it: without its clock readings.
 * @param {string} name
 * @param {Record<string, unknown>} data
 */
function event(name, data) {
  const { timestamp, duration, ...rest } = data ?? {};
  return { name, ...rest };
}

/**
 * Runs `p` within `ms`; past it answers `{ pending: true }` (a run the driver never ends).
 * @param {Promise<unknown>} p
 * @param {number | undefined} ms
 */
async function within(p, ms) {
  if (!ms) return p;
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve({ pending: true }), ms); });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A driver's ExecutionResult as the test compares it: `stack` becomes whether there was one.
 * @param {any} r
 */
function driverShape(r) {
  if (!r || typeof r !== 'object' || !r.error) return r;
  const { stack, ...error } = r.error;
  return { ...r, error: { ...error, hasStack: typeof stack === 'string' && stack.length > 0 } };
}

/**
 * Runs each case through `createCodeMode({ driver, tools })`'s execute_typescript tool (what an
 * agent loop calls) and, for the driver level, through `driver.createContext().execute()` with
 * code mode's own TypeScript stripping and bindings.
 * @param {{ createCodeMode: Function, stripTypeScript: Function, toolsToBindings: Function, toolDefinition: Function, z: any }} deps
 * @param {any} driver
 * @param {Case[]} list
 * @param {(result: object) => void} [onResult]
 */
export async function runCases(deps, driver, list, onResult) {
  const tools = makeTools(deps);
  const out = [];
  for (const c of list) {
    const level = c.level ?? 'both';
    const result = { name: c.name };
    if (level !== 'driver') {
      const events = [];
      const { tool } = deps.createCodeMode({
        driver,
        tools,
        getSkillBindings: async () => skillBindings(),
        ...(c.timeout ? { timeout: c.timeout } : {}),
        ...(c.memoryLimit ? { memoryLimit: c.memoryLimit } : {}),
      });
      const started = performance.now();
      try {
        result.tool = await within(tool.execute({ typescriptCode: c.code }, { emitCustomEvent: (n, d) => events.push(event(n, d)) }), c.deadline);
      } catch (e) {
        result.tool = { rejected: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
      }
      result.ms = performance.now() - started;
      result.events = events;
    }
    if (level !== 'tool') {
      const bindings = { ...deps.toolsToBindings(tools, 'external_'), ...skillBindings() };
      if (c.binding) bindings[c.binding] = { ...bindings.external_echo, name: c.binding };
      try {
        const code = await deps.stripTypeScript(c.code);
        const ctx = await driver.createContext({ bindings, timeout: c.timeout ?? 30000, memoryLimit: c.memoryLimit ?? 128 });
        result.driver = driverShape(await within(ctx.execute(code), c.deadline));
        if (c.reuse) result.reuse = driverShape(await ctx.execute(c.reuse));
        try {
          await within(ctx.dispose(), c.deadline);
        } catch (e) {
          result.disposeThrew = e instanceof Error ? e.message : String(e);
        }
      } catch (e) {
        result.driver = { rejected: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
      }
    }
    // The host's resident memory after the case (the stock driver's isolates live in it).
    result.rssMiB = Math.round(process.memoryUsage().rss / 2 ** 20);
    out.push(result);
    onResult?.(result);
  }
  return out;
}
