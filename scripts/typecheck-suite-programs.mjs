// Makes __test__/fixtures/typecheck-suite-programs.json: the programs the vitest suite runs to a
// result, recorded by a run with CODEMODE_RECORD_PROGRAMS=FILE (__test__/record-programs.mjs),
// each once, with the names of its providers. The type-check test holds the checker to refusing
// none of them (docs/typecheck.md, "The corpus and the figures").
//
//   CODEMODE_RECORD_PROGRAMS=/tmp/programs.jsonl npx vitest run
//   node scripts/typecheck-suite-programs.mjs /tmp/programs.jsonl
import { readFileSync, writeFileSync } from 'node:fs';

const [file] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/typecheck-suite-programs.mjs RECORDED.jsonl');
  process.exit(2);
}
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** @type {Map<string, string[]>} */
const programs = new Map();
for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (!line) continue;
  const { code, providers } = JSON.parse(line);
  // Bounded: a generated program of megabytes (a bounds test's) says nothing a short one does not.
  if (code.length > 4096 || programs.has(code)) continue;
  // An adapter's wrapper around the model's code (the TanStack driver's, the dialect's provider
  // proxies): checked by that adapter against its own declarations, not here.
  if (code.includes('__tsdSetup(') || code.includes('new Proxy({}, { get(t, k)')) continue;
  programs.set(code, providers.filter((p) => IDENTIFIER.test(p)));
}
const out = [...programs].map(([code, providers]) => ({ code, providers })).sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
writeFileSync(new URL('../__test__/fixtures/typecheck-suite-programs.json', import.meta.url), `${JSON.stringify(out, null, 1)}\n`);
console.log(`${out.length} programs`);
