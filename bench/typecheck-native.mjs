// The native TypeScript preview (@typescript/native-preview, its unstable sync API: a Go process
// the client talks to over a pipe, files served from memory) on bench/typecheck.js's check: the
// sandbox's globals, the three npm MCP servers' 36 tools, a 49-line program changed each time.
// Measured beside the compiler the type check uses (docs/typecheck.md, "Engine"); bench/run.sh
// installs the preview into bench/native-preview/.
//
// Usage: node bench/typecheck-native.mjs [--quick]
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const ts = require('typescript');
const { stats } = require('./measure');
const { sandboxGlobals } = require('../lib/typecheck/sandbox-lib');
const { OPTIONS } = require('../lib/typecheck/checker');
const { limits } = require('../lib/native');
const { LANGUAGE_GLOBALS } = require('../lib/validate');
const { declareServers } = require('../lib/model/declarations');
const { program } = require('./typecheck');

export async function run({ quick = false } = {}) {
  let API;
  try {
    ({ API } = await import(path.join(import.meta.dirname, 'native-preview', 'node_modules', '@typescript', 'native-preview', 'dist', 'api', 'sync', 'api.js')));
  } catch (e) {
    return { error: `@typescript/native-preview is not installed (bench/run.sh installs it): ${e instanceof Error ? e.message : String(e)}` };
  }
  const servers = require('../__test__/fixtures/typecheck-servers.json');
  const globals = sandboxGlobals(ts, path.dirname(require.resolve('typescript')), [...limits().runtimeGlobals, ...LANGUAGE_GLOBALS]);
  const { lib, module: _m, moduleResolution: _r, target: _t, ...options } = OPTIONS;
  /** @type {Record<string, string>} */
  const files = {
    '/p/tsconfig.json': JSON.stringify({ compilerOptions: { ...options, lib: ['esnext'], target: 'esnext', module: 'esnext' }, files: ['sandbox.d.ts', 'tools.d.ts', 'program.js'] }),
    '/p/sandbox.d.ts': globals,
    '/p/tools.d.ts': declareServers(servers),
    '/p/program.js': `export const __program = (${program(0)});\n`,
  };
  const fs = {
    readFile: (/** @type {string} */ f) => (f in files ? files[f] : f.startsWith('/p/') ? null : undefined),
    fileExists: (/** @type {string} */ f) => (f in files ? true : f.startsWith('/p/') ? false : undefined),
  };
  const t0 = performance.now();
  const api = new API({ fs, cwd: '/p' });
  try {
    let project = api.updateSnapshot({ openProjects: ['/p/tsconfig.json'] }).getProject('/p/tsconfig.json');
    const first = project.program.getSemanticDiagnostics('/p/program.js');
    const coldMs = performance.now() - t0;
    if (first.length !== 0) throw new Error(`the bench program does not check: ${first[0].text}`);
    const warm = [];
    let caught = 0;
    const n = quick ? 30 : 200;
    for (let i = 1; i <= n; i++) {
      // Every tenth program carries a mistake, which must be found.
      files['/p/program.js'] = `export const __program = (${program(i)});\n${i % 10 === 0 ? 'memory.nope();\n' : ''}`;
      const t = performance.now();
      project = api.updateSnapshot({ fileChanges: { changed: ['/p/program.js'] } }).getProject('/p/tsconfig.json');
      const found = project.program.getSemanticDiagnostics('/p/program.js');
      warm.push(performance.now() - t);
      if (i % 10 === 0 && found.length > 0) caught++;
    }
    return { coldMs, warm: stats(warm), caught, planted: Math.floor(n / 10) };
  } finally {
    api.close();
  }
}

export function table(r) {
  if (r.error) return `Not measured: ${r.error}`;
  const f = (x) => x.toFixed(1);
  return `| figure (native preview) | value |
| --- | --- |
| first check (cold: the process, the library, the declarations) | ${f(r.coldMs)} ms |
| per-check p50, warm | ${f(r.warm.p50)} ms |
| per-check p99, warm | ${f(r.warm.p99)} ms |
| planted mistakes found | ${r.caught} of ${r.planted} |
`;
}

if (process.argv[1] === import.meta.filename) {
  run({ quick: process.argv.includes('--quick') }).then((r) => console.log(table(r)));
}
