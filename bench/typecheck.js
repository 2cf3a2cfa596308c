'use strict';
// What a type check costs (docs/typecheck.md): a 50-line program checked against the three npm
// MCP servers' 36 tools as the gateway declares them (__test__/fixtures/typecheck-servers.json),
// through lib/typecheck (its thread, a warm checker per declaration set):
//   - cold: the first check of a fresh process (the thread, the compiler, the sandbox's library
//     and the declarations parsed);
//   - warm: each check after, the program changed every time (p50, p99);
//   - the host's thread: the longest it went without turning while checks ran (a timer every
//     millisecond, its largest lateness).
//
// Usage: node bench/typecheck.js [--quick]   prints the figures (bench.js uses run() and table())

const path = require('node:path');
const { check } = require('../lib/typecheck');
const { declareServers } = require('../lib/model/declarations');
const { stats } = require('./measure');

const servers = require(path.join(__dirname, '..', '__test__', 'fixtures', 'typecheck-servers.json'));

/** A 50-line program over the three servers, its `n` making each one new. */
const program = (n) => `async () => {
  const graph = await memory.read_graph()
  const people = graph.entities.filter((e) => e.entityType === "person")
  const notes = []
${Array.from({ length: 40 }, (_, i) => `  notes.push((await filesystem.read_text_file({ path: "/notes/${i}.md", head: ${i + 1} })).content.length + ${n})`).join('\n')}
  const w = await everything["get-structured-content"]({ location: "Chicago" })
  await memory.add_observations({ observations: people.map((p) => ({ entityName: p.name, contents: [String(w.temperature)] })) })
  const sum = await everything["get-sum"]({ a: notes.length, b: people.length })
  return { sum, notes: notes.reduce((a, b) => a + b, 0) }
}`;

async function run({ quick = false } = {}) {
  const declarations = declareServers(servers);
  let worst = 0;
  let last = process.hrtime.bigint();
  const timer = setInterval(() => {
    const now = process.hrtime.bigint();
    worst = Math.max(worst, Number(now - last) / 1e6 - 1);
    last = now;
  }, 1);
  try {
    const t0 = process.hrtime.bigint();
    const first = await check(program(0), declarations);
    const coldMs = Number(process.hrtime.bigint() - t0) / 1e6;
    if (first.count !== 0) throw new Error(`the bench program does not check: ${JSON.stringify(first.diagnostics[0])}`);
    worst = 0;
    const warm = [];
    for (let i = 1; i <= (quick ? 30 : 200); i++) {
      const t = process.hrtime.bigint();
      await check(program(i), declarations);
      warm.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    return { coldMs, warm: stats(warm), blockedMs: worst, lines: program(0).split('\n').length, tools: servers.reduce((n, s) => n + s.tools.length, 0) };
  } finally {
    clearInterval(timer);
  }
}

const f = (x) => x.toFixed(1);

function table(r) {
  return `| figure | value |
| --- | --- |
| first check (cold: thread, compiler, library, declarations) | ${f(r.coldMs)} ms |
| per-check p50, warm (${r.lines}-line program, ${r.tools} tools) | ${f(r.warm.p50)} ms |
| per-check p99, warm | ${f(r.warm.p99)} ms |
| the host's thread, longest late turn while warm checks ran | ${f(r.blockedMs)} ms |
`;
}

module.exports = { run, table, program };

if (require.main === module) {
  run({ quick: process.argv.includes('--quick') }).then((r) => {
    console.log(table(r));
    process.exit(0);
  });
}
