// `codemode-executor testbed`: a host's own corpus through the real DynamicWorkerExecutor (in
// workerd) and CodemodeExecutor, run as a host runs it, through the CLI. workerd, esbuild and
// @cloudflare/codemode come from the project the command runs in: here the checkout, where they
// are devDependencies; the last test runs it from a project that has none of them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(root, 'bin', 'codemode-executor.js');
const installed = JSON.parse(readFileSync(path.join(root, 'node_modules', '@cloudflare', 'codemode', 'package.json'), 'utf8')).version;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'codemode-testbed-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The CLI's testbed command run in `cwd`, bounded in time. */
function testbed(args, cwd = root) {
  return spawnSync(process.execPath, [BIN, 'testbed', ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
}

function corpus(name, source) {
  const file = path.join(tmp, name);
  writeFileSync(file, source);
  return file;
}

describe("the project's case set", () => {
  it('is as large as the README and docs/architecture.md say', async () => {
    const { cases } = await import('../testbed/cases.mjs');
    expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toContain(`\`npm run testbed\` replays ${cases.length} cases`);
    expect(readFileSync(path.join(root, 'docs/architecture.md'), 'utf8')).toContain(`project's ${cases.length} cases`);
  });
});

describe('codemode-executor testbed', () => {
  it('runs the example corpus: one identical case, one with a canned tool answer, one accepted difference', () => {
    const run = testbed(['--cases', 'examples/testbed-cases.mjs']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`@cloudflare/codemode ${installed} (DynamicWorkerExecutor in workerd) vs CodemodeExecutor`);
    expect(run.stdout).toMatch(/^ {2}identical +totals-without-tools$/m);
    expect(run.stdout).toMatch(/^ {2}identical +invoices-through-a-tool$/m);
    expect(run.stdout).toMatch(/^ {2}accepted +thrown-string: a thrown string is an error here/m);
    // The accepted difference is shown, both sides.
    expect(run.stdout).toContain("reference: { result: undefined, logs: [] }");
    expect(run.stdout).toContain("ours:      { result: undefined, error: 'no such account', logs: [] }");
    expect(run.stdout).toMatch(/^testbed: 3 cases, 2 identical, 1 accepted, 0 differ$/m);
  });

  it('fails the run, naming the case, when a case differs without accepting it; answers are data (canned, thrown, in sequence)', () => {
    const file = corpus('differs.mjs', `export const cases = [
      { id: 'scripted', code: 'async () => [await t.next(), await t.next().catch((e) => e.message), await t.next().catch((e) => e.message)]',
        providers: [{ name: 't', fns: { next: { sequence: [new Date(0), { throws: 'second fails' }] } } }] },
      { id: 'silent-throw', code: 'async () => { throw "nobody accepted this" }' },
      { id: 'stale-accept', code: 'async () => 1', accept: 'expected to differ, but does not' },
    ];\n`);
    const run = testbed(['--cases', file]);
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/^ {2}identical +scripted$/m);
    expect(run.stdout).toMatch(/^ {2}DIFFERS +silent-throw$/m);
    expect(run.stdout).toContain("ours:      { result: undefined, error: 'nobody accepted this', logs: [] }");
    expect(run.stdout).toMatch(/^ {2}identical +stale-accept \(it accepts a difference that did not occur/m);
    expect(run.stdout).toMatch(/^testbed: 3 cases, 2 identical, 0 accepted, 1 differ$/m);

    // The same report for machines.
    const json = testbed(['--cases', file, '--json']);
    expect(json.status).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.summary).toEqual({ cases: 3, identical: 2, accepted: 0, differ: 1, skipped: 0, failed: 0 });
    expect(report.cases.map((c) => [c.id, c.status])).toEqual([['scripted', 'identical'], ['silent-throw', 'differs'], ['stale-accept', 'stale']]);
    // The scripted answers reached the code in order, and the exhausted sequence said so.
    expect(report.cases[0].ours.outcome.result).toEqual(['1970-01-01T00:00:00.000Z', 'second fails', 't.next: no answer left in its sequence']);
  });

  it('refuses a case that is not data, naming it, before starting anything (exit 2)', () => {
    const file = corpus('not-data.mjs', `export const cases = [{ id: 'live-tool', code: 'async () => t.f()', providers: [{ name: 't', fns: { f: () => 1 } }] }];\n`);
    const run = testbed(['--cases', file]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('case live-tool: t.f: a function is not data');
    const typo = corpus('typo.mjs', `export const cases = [{ id: 'typo', code: 'async () => 1', accepts: 'x' }];\n`);
    const bad = testbed(['--cases', typo]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('case "typo": unknown key accepts');
    const none = testbed([]);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('--cases PATH is required');
  });

  it('says which packages to install when the host project has none of them (exit 2)', () => {
    const project = mkdtempSync(path.join(tmp, 'empty-project-'));
    writeFileSync(path.join(project, 'package.json'), '{ "name": "host", "private": true }\n');
    // Nothing above the temp folder may provide them either, or this test proves nothing.
    for (let dir = project; path.dirname(dir) !== dir; dir = path.dirname(dir)) expect(existsSync(path.join(dir, 'node_modules', 'workerd'))).toBe(false);
    writeFileSync(path.join(project, 'cases.mjs'), "export const cases = [{ id: 'one', code: 'async () => 1' }];\n");
    const run = testbed(['--cases', './cases.mjs'], project);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('workerd, esbuild, @cloudflare/codemode');
    expect(run.stderr).toContain('npm install -D workerd esbuild @cloudflare/codemode');
  });
});
