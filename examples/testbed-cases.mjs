// A corpus for `codemode-executor testbed --cases examples/testbed-cases.mjs`: three of a host's
// own cases, replayed through the real DynamicWorkerExecutor (workerd) and through
// CodemodeExecutor. The case model is in docs/testbed.md.
export const cases = [
  // No tools: both executors must agree exactly (result, error, logs, and which keys are there).
  {
    id: 'totals-without-tools',
    code: 'async () => { const rows = [3, 4, 5]; console.log("rows", rows.length); return rows.reduce((a, b) => a + b, 0) }',
  },
  // A tool call: the provider's answer is canned data, so the same answer reaches both executors.
  {
    id: 'invoices-through-a-tool',
    code: 'async () => { const rows = await billing.invoices({ account: "ada" }); return rows.map((r) => r.id).join(",") }',
    providers: [{ name: 'billing', fns: { invoices: [{ id: 'i1', cents: 1200 }, { id: 'i2', cents: 800 }] } }],
  },
  // A known difference the host accepts: DynamicWorkerExecutor reports a thrown string as a
  // success with no result, CodemodeExecutor as an error (docs/dialect-deviations.md D2).
  {
    id: 'thrown-string',
    code: 'async () => { throw "no such account" }',
    accept: 'a thrown string is an error here, not a silent success (dialect deviation D2)',
  },
];
