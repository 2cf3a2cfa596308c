// @cloudflare/codemode itself on plain Node: the registration hook makes `cloudflare:workers`
// importable, the AI SDK agent loop example runs end to end, and the reference's own
// normalizeCode / sanitizeToolName agree with the adapter's. These run in child processes:
// module hooks apply to Node's loader, not vitest's.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const node = (args, input) => execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8', input, timeout: 60_000 });

describe('@cloudflare/codemode on Node', () => {
  it('the AI SDK agent loop example runs with createCodeTool over CodemodeExecutor', () => {
    const out = node(['--import', './lib/register.mjs', 'examples/agent-loop.mjs']).trim().split('\n');
    expect(out[0]).toBe('It is 64.4°F in Paris (looked up Paris).');
    expect(JSON.parse(out[1])).toEqual({ toolOutput: { result: { city: 'Paris', f: 64.4 }, logs: ['looked up Paris'] }, typesShown: true });
  });

  it('register() (programmatic) lets the root entry load, with the stand-in base classes', () => {
    const out = node(['--input-type=module', '-e', `
      import { createRequire } from 'node:module';
      const require = createRequire(process.cwd() + '/');
      require('./index.js').register();
      const cm = await import('@cloudflare/codemode');
      const { WorkerEntrypoint } = await import('cloudflare:workers');
      const e = new WorkerEntrypoint({ ctx: 1 }, { env: 2 });
      console.log(JSON.stringify([typeof cm.DynamicWorkerExecutor, typeof cm.normalizeCode, e.env]));`]);
    expect(JSON.parse(out)).toEqual(['function', 'function', { env: 2 }]);
  });

  it("the adapter's normalizeCode and sanitizeToolName match the reference's own", () => {
    const codes = [
      'async () => 1', '() => 2', '```js\nasync () => 3\n```', '```\nconst x = 1\nx\n```', '', '   ',
      'export default function () { return 1 }', 'export default class {}', 'export default async () => 4',
      'function main() { return 5 }', 'async function go() { return 6 }', 'const a = 1;\nconst b = 2;\na + b;',
      'const a = 1;', 'if (true) { 1 }', 'return 7', 'await codemode.x()', 'let t: number = 1',
      'console.log(1); codemode.y()', '(async () => 8)', 'x => x',
    ];
    const names = ['my-tool', '3d.render', 'delete', 'foo@bar!', '', '@@', 'NaN', 'constructor', 'a b\tc', 'yield', 'enum', 'ok$name', '__proto__'];
    const out = node(['--import', './lib/register.mjs', '--input-type=module', '-e', `
      import { createRequire } from 'node:module';
      const require = createRequire(process.cwd() + '/');
      const ours = require('./lib/codemode-executor.js');
      const ref = await import('@cloudflare/codemode');
      const input = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
      const diffs = [];
      for (const c of input.codes) {
        const a = ours.normalizeCode(c), b = ref.normalizeCode(c);
        if (a !== b) diffs.push(['normalizeCode', c, a, b]);
      }
      for (const n of input.names) if (ours.sanitizeToolName(n) !== ref.sanitizeToolName(n)) diffs.push(['sanitize', n, ours.sanitizeToolName(n), ref.sanitizeToolName(n)]);
      console.log(JSON.stringify(diffs));`], JSON.stringify({ codes, names }));
    expect(JSON.parse(out)).toEqual([]);
  });
});
