// bundleModules on real registry packages (devDependencies): lodash-es and date-fns bundle and
// run in both executors; temp-dir imports node:fs and node:os and is refused, or runs once both
// are aliased to modules written for the sandbox.
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync, readdirSync } from 'node:fs';
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

// A host project in a temp directory: a package, and a file beside it that no package holds.
function project() {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-bundle-paths-'));
  const pkg = join(dir, 'node_modules', 'pkg');
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'pkg', version: '1.0.0', main: 'index.js' }));
  writeFileSync(join(pkg, 'index.js'), 'export const ok = 1\n');
  writeFileSync(join(dir, 'secret.json'), JSON.stringify({ token: 'host-secret' }));
  writeFileSync(join(dir, 'secret.js'), "export const token = 'host-secret'\n");
  return dir;
}

describe('bundleModules keeps to the package named', () => {
  const dir = project();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a specifier that climbs out of its package is refused before anything is read', async () => {
    const variants = {
      'pkg/../../secret.json': /has a "\." or "\.\." segment/,
      'pkg/../../secret.js': /has a "\." or "\.\." segment/,
      'pkg/..%2f..%2fsecret.json': /holds a percent-encoding/,
      'pkg\\..\\..\\secret.json': /holds a backslash/,
      '/etc/passwd': /is an absolute path/,
      [join(dir, 'secret.js')]: /is an absolute path/,
      'file:///etc/passwd': /starts with a URL scheme/,
      'node:fs': /starts with a URL scheme/,
      '@scope/../secret.json': /has a "\." or "\.\." segment/,
      '@scope': /is not an npm package name/,
      'pkg//secret.json': /has an empty path segment/,
      '..': /has a "\." or "\.\." segment/,
      '.bin': /is not an npm package name/,
      'pkg/a b': /characters a package path does not use/,
    };
    for (const [spec, problem] of Object.entries(variants)) {
      const err = await rejection(bundleModules({ packages: ['pkg', spec], from: dir }));
      expect(err, spec).toBeInstanceOf(ExecutorError);
      expect(err.code, spec).toBe('INVALID_OPTION');
      expect(err.message, spec).toMatch(/^Invalid option `packages\[1\]`: /);
      expect(err.message, spec).toMatch(problem);
      expect(err.message, spec).toContain('Allowed: an npm package name');
      expect(err.message, spec).not.toContain('host-secret');
    }
    // The same rules for an alias naming a package.
    const err = await rejection(bundleModules({ packages: ['pkg'], from: dir, alias: { 'node:fs': 'pkg/../../secret.js' } }));
    expect(err.code).toBe('INVALID_OPTION');
    expect(err.message).toMatch(/^Invalid option `alias.node:fs`: "pkg\/..\/..\/secret.js" has a "." or ".." segment/);
  });

  it('a package whose entry is a symlink out of it is refused; a symlinked package is its target', async () => {
    const evil = join(dir, 'node_modules', 'evil');
    mkdirSync(evil);
    writeFileSync(join(evil, 'package.json'), JSON.stringify({ name: 'evil', version: '1.0.0', main: 'index.js' }));
    symlinkSync(join(dir, 'secret.js'), join(evil, 'index.js'));
    const err = await rejection(bundleModules({ packages: ['evil'], from: dir }));
    expect(err.code).toBe('BUNDLE_FAILED');
    expect(err.message).toContain(`"evil" resolves to ${join(dir, 'secret.js')}, outside the package's directory (${evil})`);
    expect(err.message).not.toContain('host-secret');
    // A subpath through a symlinked directory inside the package, too.
    symlinkSync(dir, join(dir, 'node_modules', 'pkg', 'up'));
    const sub = await rejection(bundleModules({ packages: ['pkg/up/secret.js'], from: dir }));
    expect(sub.code).toBe('BUNDLE_FAILED');
    expect(sub.message).toContain('outside the package');
    // A workspace package linked into node_modules is bundled from where the link points.
    const real = join(dir, 'packages', 'linked');
    mkdirSync(real, { recursive: true });
    writeFileSync(join(real, 'package.json'), JSON.stringify({ name: 'linked', version: '1.0.0', main: 'index.js' }));
    writeFileSync(join(real, 'index.js'), 'export const linked = 2\n');
    symlinkSync(real, join(dir, 'node_modules', 'linked'));
    const map = await bundleModules({ packages: ['pkg', 'linked'], from: dir });
    expect(map.linked).toContain('linked = 2');
    expect(map.pkg).toContain('ok = 1');
  }, 60_000);

  it('subpaths inside a package still bundle', async () => {
    const map = await bundleModules({ packages: ['date-fns/addDays', 'lodash-es/chunk.js'], from: ROOT });
    expect(Object.keys(map).sort()).toEqual(['date-fns/addDays', 'lodash-es/chunk.js']);
  }, 60_000);
});
