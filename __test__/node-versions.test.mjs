// The package on the Node running this file (npm test runs the suite under the machine's Node and
// once more under Node 26; the install test covers 20, 22, 24 and 26): `cloudflare:workers` is
// importable through `module.registerHooks()` where Node has it (22.15+, 23.5+: Node 26 deprecates
// `module.register()`, DEP0205) and `module.register()` elsewhere, with no warning about either;
// and a Node older than 22 gets exactly one CODEMODE_NODE_EOL warning per process.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const RECORD = path.join(root, '__test__', 'fixtures', 'record-module-hooks.cjs');
const { SUPPORTED_NODE_MAJORS, NODE_EOL_WARNING } = require('../lib/node-support.js');
const major = Number(process.versions.node.split('.')[0]);
// Keeps Node 20's CODEMODE_NODE_EOL warning out of a child's stderr (the last test checks it).
const NO_EOL_WARNING = ['--disable-warning=CODEMODE_NODE_EOL'];
const hasRegisterHooks = typeof require('node:module').registerHooks === 'function';

/** `node ...args` from the checkout, bounded; NODE_OPTIONS left out so nothing but `args` applies. */
function node(args) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const r = spawnSync(process.execPath, args, { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
  expect(r.error).toBeUndefined();
  return r;
}

/** The hook registrations a child made, from the record-module-hooks.cjs line. */
function hooksCalled(stdout) {
  const line = stdout.split('\n').find((l) => l.startsWith('hooks:'));
  expect(line, stdout).toBeDefined();
  return JSON.parse(line.slice('hooks:'.length));
}

// @cloudflare/codemode's root, its /ai entry (createCodeTool), and the stand-in module itself.
const IMPORTS = `
  const cm = await import('@cloudflare/codemode');
  const { createCodeTool } = await import('@cloudflare/codemode/ai');
  const { WorkerEntrypoint, env } = await import('cloudflare:workers');
  const e = new WorkerEntrypoint({ ctx: 1 }, { env: 2 });
  console.log(JSON.stringify([typeof cm.DynamicWorkerExecutor, typeof createCodeTool, e.env, env]));`;
const IMPORTED = JSON.stringify(['function', 'function', { env: 2 }, {}]);

describe(`the package on Node ${process.versions.node} (V8 ${process.versions.v8})`, () => {
  it('--import ./lib/register.mjs: @cloudflare/codemode and its /ai entry load, and nothing is printed on stderr', () => {
    const r = node([...NO_EOL_WARNING, '--import', './lib/register.mjs', '--input-type=module', '-e', IMPORTS]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout.trim()).toBe(IMPORTED);
  });

  it('register() (programmatic, twice): the same, registered once', () => {
    const r = node([...NO_EOL_WARNING, '--require', RECORD, '--input-type=module', '-e', `
      import { createRequire } from 'node:module';
      const { register } = createRequire(process.cwd() + '/')('./index.js');
      register();
      register();
      ${IMPORTS}`]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(r.stdout.trim().split('\n')[0]).toBe(IMPORTED);
    expect(hooksCalled(r.stdout)).toEqual([hasRegisterHooks ? 'registerHooks' : 'register']);
  });

  it(`uses module.registerHooks() where Node has it (this Node: ${hasRegisterHooks ? 'yes' : 'no'}), module.register() only where not`, () => {
    const r = node([...NO_EOL_WARNING, '--require', RECORD, '--import', './lib/register.mjs', '--input-type=module', '-e', IMPORTS]);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(hooksCalled(r.stdout)).toEqual([hasRegisterHooks ? 'registerHooks' : 'register']);
    // Every Node this package supports has registerHooks; Node 20 has only register().
    if (major >= SUPPORTED_NODE_MAJORS[0]) expect(hasRegisterHooks).toBe(true);
  });

  it(major < SUPPORTED_NODE_MAJORS[0]
    ? `Node ${major} is past its end of life: one ${NODE_EOL_WARNING} warning per process, from any entry`
    : `Node ${major} is supported: no warning on load`, () => {
    // The /register entry, index.js and register() in one process; the CLI in another.
    const lib = node(['--import', './lib/register.mjs', '-e', "require('./index.js').register()"]);
    const cli = node(['bin/codemode-executor.js', '--help']);
    expect([lib.status, cli.status]).toEqual([0, 0]);
    expect(cli.stdout).toContain('Usage: codemode-executor');
    for (const { stderr } of [lib, cli]) {
      if (major >= SUPPORTED_NODE_MAJORS[0]) {
        expect(stderr).toBe('');
        continue;
      }
      expect(stderr.split(`[${NODE_EOL_WARNING}]`)).toHaveLength(2);
      expect(stderr).toContain(`Warning: Node ${process.version} is past its end of life and gets no security fixes.`);
      expect(stderr).toContain('supports Node 22, 24 and 26');
      expect(stderr).toContain(`--disable-warning=${NODE_EOL_WARNING}`);
      // Nothing else: the warning and Node's one hint line about --trace-warnings.
      expect(stderr.trim().split('\n')).toHaveLength(2);
    }
    // --disable-warning (Node 20.11+) silences it.
    const quiet = node([...NO_EOL_WARNING, '-e', "require('./index.js')"]);
    expect({ status: quiet.status, stderr: quiet.stderr }).toEqual({ status: 0, stderr: '' });
  });
});
