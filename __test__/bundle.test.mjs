// bundleModules on real registry packages (devDependencies): lodash-es and date-fns bundle and
// run in both executors; temp-dir imports node:fs and node:os and is refused, or runs once both
// are aliased to modules written for the sandbox.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { executor, rejection, ExecutorError } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { bundleModules, CodemodeExecutor } = require('../index.js');
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const ex = executor({ workers: 1 });
const scratch = mkdtempSync(join(tmpdir(), 'codemode-bundle-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const PROGRAM = `import { chunk, sum } from 'lodash-es'
import { addDays, format } from 'date-fns'

async () => {
  const day = addDays(new Date(2024, 0, 30), 3)
  return { chunks: chunk([1, 2, 3, 4, 5], 2), total: sum([1, 2, 3]), day: format(day, 'yyyy-MM-dd') }
}`;
const EXPECTED = { chunks: [[1, 2], [3, 4], [5]], total: 6, day: '2024-02-02' };

describe('bundleModules', () => {
  let modules;

  it('bundles each package into one ES module keyed by its specifier', async () => {
    modules = await bundleModules({ packages: ['lodash-es', 'date-fns'], from: ROOT });
    expect(Object.keys(modules).sort()).toEqual(['date-fns', 'lodash-es']);
    for (const source of Object.values(modules)) {
      expect(typeof source).toBe('string');
      // One module: no import of anything left outside it.
      expect(source).not.toMatch(/^import .* from /m);
    }
  }, 60_000);

  it('a program importing them runs in the native executor', async () => {
    const out = await ex.execute({ code: PROGRAM, modules });
    expect(out.error).toBeUndefined();
    expect(out.result).toEqual(EXPECTED);
  });

  it('a program importing them runs in the dialect (ExtendedExecuteOptions.modules)', async () => {
    const dialect = new CodemodeExecutor(ex);
    const out = await dialect.execute(PROGRAM, [], { modules });
    expect(out).toEqual({ result: EXPECTED, logs: [] });
  });

  it('caches by package version: the second call returns the same text without bundling', async () => {
    const t0 = performance.now();
    const again = await bundleModules({ packages: ['lodash-es', 'date-fns'], from: ROOT });
    expect(performance.now() - t0).toBeLessThan(500);
    expect(again).toEqual(modules);
    const dir = join(scratch, 'cache');
    await bundleModules({ packages: ['lodash-es'], from: ROOT, cacheDir: dir, minify: true });
    expect(readdirSync(dir)).toHaveLength(1);
  }, 60_000);

  it('refuses a package that imports a Node built-in, naming the built-in and the package', async () => {
    const err = await rejection(bundleModules({ packages: ['temp-dir'], from: ROOT }));
    expect(err).toBeInstanceOf(ExecutorError);
    expect(err.code).toBe('BUNDLE_NODE_BUILTIN');
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^The package "temp-dir" imports the Node built-in "node:(fs|os)" \(from node_modules\/temp-dir\/index\.js\)/);
  }, 60_000);

  it('aliases node: built-ins to sandbox modules, which join the map under their node: names', async () => {
    writeFileSync(join(scratch, 'fs.mjs'), 'export const promises = { realpath: async (p) => p + "/real" }\nexport default { promises }\n');
    writeFileSync(join(scratch, 'os.mjs'), 'export const tmpdir = () => "/sandbox-tmp"\nexport default { tmpdir }\n');
    const map = await bundleModules({
      packages: ['temp-dir'],
      from: ROOT,
      alias: { 'node:fs': join(scratch, 'fs.mjs'), 'node:os': join(scratch, 'os.mjs') },
    });
    expect(Object.keys(map).sort()).toEqual(['node:fs', 'node:os', 'temp-dir']);
    const out = await ex.execute({ code: "import dir from 'temp-dir'\nasync () => dir", modules: map });
    expect(out.result).toBe('/sandbox-tmp/real');
  }, 60_000);

  it('names a package that is not installed', async () => {
    const err = await rejection(bundleModules({ packages: ['no-such-package-here'], from: ROOT }));
    expect(err.code).toBe('BUNDLE_FAILED');
    expect(err.message).toContain('"no-such-package-here"');
  });

  it('refuses options it cannot read', async () => {
    expect((await rejection(bundleModules({ packages: [] }))).code).toBe('INVALID_OPTION');
    expect((await rejection(bundleModules({ packages: ['x'], alias: { lodash: 'y' } }))).code).toBe('INVALID_OPTION');
  });

  it('bundled modules count against the request size bound', async () => {
    const bundled = Object.values(modules).reduce((n, s) => n + Buffer.byteLength(s), 0);
    // Code plus this module alone fit one frame; with the bundles they do not.
    const pad = 'x'.repeat(256 * 1024 * 1024 - bundled + 1024);
    const err = await rejection(ex.execute({ code: 'async () => 1', modules: { ...modules, './pad.js': `/*${pad}*/` } }));
    expect(err.code).toBe('REQUEST_TOO_LARGE');
    const size = Number(/came to (\d+) bytes/.exec(err.message)[1]);
    expect(size).toBeGreaterThan(pad.length + bundled);
  }, 60_000);
});
