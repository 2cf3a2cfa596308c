// Runs bench/tanstack/cases.mjs through one TanStack code-mode driver, with the packages
// installed in bench/tanstack/ (setup.mjs installs them): `stock` is @tanstack/ai-isolate-node
// (isolated-vm), `ours` is this checkout's @supolka/codemode-executor/tanstack. Prints one JSON
// line per case, then {"done":true}; with --bench N, runs each case N times (after a warm-up)
// and prints the latencies instead; with --oom-exit, runs one program past a 64 MiB memory limit
// through the driver directly, disposes its context, and calls process.exit(0) (oom-exit.mjs).
//
//   node --no-node-snapshot bench/tanstack/run.mjs --driver stock|ours [--cases a,b] [--bench N] [--oom-exit]
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { createCodeMode, stripTypeScript, toolsToBindings } from '@tanstack/ai-code-mode';
import { toolDefinition } from '@tanstack/ai';
import { z } from 'zod';
import { cases, runCases, makeTools, skillBindings } from './cases.mjs';

const { values: args } = parseArgs({
  options: {
    driver: { type: 'string' },
    cases: { type: 'string' },
    bench: { type: 'string' },
    warmup: { type: 'string', default: '20' },
    'oom-exit': { type: 'boolean', default: false },
  },
});

/** The driver asked for. */
async function driverOf(name) {
  if (name === 'stock') {
    const { createNodeIsolateDriver } = await import('@tanstack/ai-isolate-node');
    return { driver: createNodeIsolateDriver(), close: async () => {} };
  }
  if (name === 'ours') {
    const { createIsolateDriver } = createRequire(import.meta.url)('../../tanstack.js');
    const driver = createIsolateDriver({ executorOptions: { workers: 2 } });
    return { driver, close: () => driver.close() };
  }
  throw new Error(`--driver must be stock or ours, got ${name}`);
}

const wanted = args.cases ? args.cases.split(',') : null;
const list = wanted ? wanted.map((n) => cases.find((c) => c.name === n) ?? (() => { throw new Error(`no case ${n}`); })()) : cases;
const deps = { createCodeMode, stripTypeScript, toolsToBindings, toolDefinition, z };
const { driver, close } = await driverOf(args.driver);
const write = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

if (args['oom-exit']) {
  const ctx = await driver.createContext({ bindings: {}, timeout: 10_000, memoryLimit: 64 });
  const r = await ctx.execute('const a = []; while (true) a.push(new Array(1e5).fill(Math.random()));');
  let disposeThrew;
  try {
    await ctx.dispose();
  } catch (e) {
    disposeThrew = e.message;
  }
  write({ error: r.error, disposeThrew });
  process.exit(0);
}

if (args.bench) {
  const runs = Number(args.bench);
  const warmup = Number(args.warmup);
  const tools = makeTools(deps);
  for (const c of list) {
    const { tool } = createCodeMode({ driver, tools, getSkillBindings: async () => skillBindings() });
    const ms = [];
    let last;
    for (let i = 0; i < warmup + runs; i++) {
      const t = performance.now();
      last = await tool.execute({ typescriptCode: c.code }, {});
      if (i >= warmup) ms.push(performance.now() - t);
    }
    ms.sort((a, b) => a - b);
    const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))];
    write({ name: c.name, runs, p50: q(0.5), p90: q(0.9), min: ms[0], max: ms[ms.length - 1], last });
  }
} else {
  await runCases(deps, driver, list, write);
}
await close();
write({ done: true, node: process.version });
