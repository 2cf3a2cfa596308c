// @ts-check
'use strict';
// bundleModules: npm packages from the host project's node_modules, each bundled with esbuild
// into one ES module, returned as a module map for `execute({ modules })` (or the dialect's
// ExtendedExecuteOptions.modules). The sandbox has no Node: a package that imports a Node
// built-in is refused here, at bundle time, naming the built-in and the package, unless the
// host aliases that built-in to a module written for the sandbox; the alias then becomes a
// module-map entry under the built-in's `node:` name, as a bundle built without nodejs_compat
// would alias it.
//
// esbuild is an optional peer dependency: only hosts that bundle need it, and it is resolved
// from the host project first (`from`), then from this package.

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { builtinModules, createRequire } = require('node:module');
const { fault } = require('./errors');

/** @type {Map<string, string>} cache key -> bundled module source */
const memory = new Map();

const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith('_')));

/**
 * `node:fs` for `fs` and `node:fs`; `null` when `spec` is no Node built-in.
 * @param {string} spec
 */
function builtinName(spec) {
  const bare = spec.startsWith('node:') ? spec.slice(5) : spec;
  if (spec.startsWith('node:') || BUILTINS.has(bare) || BUILTINS.has(bare.split('/')[0])) return `node:${bare}`;
  return null;
}

/**
 * The package name of a specifier: `lodash-es`, `@scope/pkg` (from `@scope/pkg/sub`).
 * @param {string} spec
 */
function packageName(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * @param {string} from
 * @returns {typeof import('esbuild')}
 */
function loadEsbuild(from) {
  for (const base of [path.join(from, 'noop.js'), __filename]) {
    try {
      return createRequire(base)('esbuild');
    } catch {
      // next
    }
  }
  throw fault('BUNDLE_FAILED', { package: 'esbuild', detail: 'esbuild is not installed; bundleModules needs it (npm install -D esbuild)' });
}

/**
 * The installed version of `name`, found from `from` as Node resolves it (a package whose
 * `exports` hide package.json is found by walking up from its entry).
 * @param {string} name
 * @param {string} from
 */
function installedVersion(name, from) {
  const req = createRequire(path.join(from, 'noop.js'));
  try {
    return JSON.parse(fs.readFileSync(req.resolve(`${name}/package.json`), 'utf8')).version;
  } catch {
    // next
  }
  for (const dir of req.resolve.paths(name) ?? []) {
    const file = path.join(dir, name, 'package.json');
    if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')).version;
  }
  throw fault('BUNDLE_FAILED', { package: name, detail: `it is not installed in the node_modules ${from} resolves from` });
}

// A package as a specifier names it: npm's name rules (an optional `@scope/`, then a name of
// URL-safe characters not starting with `.` or `_`, at most 214 in all), then optionally a
// subpath of plain segments. Nothing that could lead resolution out of the package: no `.` or
// `..` segment, no empty segment, no backslash, no percent-encoding, no absolute path, no URL
// scheme (`file:`, `node:`, a drive letter).
const SCOPE = /^@[A-Za-z0-9~-][A-Za-z0-9._~-]*$/;
const NAME = /^[A-Za-z0-9~-][A-Za-z0-9._~-]*$/;
const SEGMENT = /^[\w.~+@$=,-]+$/;

/**
 * What is wrong with `spec` as a package specifier, or null.
 * @param {unknown} spec
 * @returns {string | null}
 */
function specifierProblem(spec) {
  if (typeof spec !== 'string') return `got ${spec === null ? 'null' : typeof spec}`;
  const quoted = JSON.stringify(spec);
  if (spec === '') return 'got an empty string';
  if (spec.includes('\\')) return `${quoted} holds a backslash`;
  if (spec.includes('%')) return `${quoted} holds a percent-encoding`;
  if (spec.startsWith('/') || path.isAbsolute(spec)) return `${quoted} is an absolute path`;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(spec)) return `${quoted} starts with a URL scheme`;
  const parts = spec.split('/');
  if (parts.some((p) => p === '')) return `${quoted} has an empty path segment`;
  if (parts.some((p) => p === '.' || p === '..')) return `${quoted} has a "." or ".." segment`;
  const scoped = spec.startsWith('@');
  const name = scoped ? parts.slice(0, 2).join('/') : parts[0];
  if (scoped ? parts.length < 2 || !SCOPE.test(parts[0]) || !NAME.test(parts[1]) : !NAME.test(parts[0])) {
    return `${JSON.stringify(name)} is not an npm package name`;
  }
  if (name.length > 214) return `${JSON.stringify(name)} is longer than the 214 characters of an npm package name`;
  const sub = parts.slice(scoped ? 2 : 1).find((p) => !SEGMENT.test(p));
  if (sub !== undefined) return `${quoted} has a path segment with characters a package path does not use (${JSON.stringify(sub)})`;
  return null;
}

const SPECIFIER_ALLOWED = "an npm package name, optionally with a path inside the package, as imported, e.g. 'lodash-es', '@scope/pkg', 'date-fns/locale'";

/**
 * The directory `name` is installed in, found from `from` as Node resolves it, after symlinks.
 * @param {string} name
 * @param {string} from
 * @returns {string | null}
 */
function packageDir(name, from) {
  const req = createRequire(path.join(from, 'noop.js'));
  try {
    return fs.realpathSync(path.dirname(req.resolve(`${name}/package.json`)));
  } catch {
    // next
  }
  for (const dir of req.resolve.paths(name) ?? []) {
    const found = path.join(dir, name);
    if (fs.existsSync(path.join(found, 'package.json'))) return fs.realpathSync(found);
  }
  return null;
}

/**
 * @param {unknown} value
 * @param {string} field
 * @param {string} allowed
 */
function invalid(value, field, allowed) {
  return fault('INVALID_OPTION', { field, problem: `got ${value === null ? 'null' : typeof value}`, allowed });
}

/**
 * Bundles each of `options.packages` into one ES module.
 * @param {{ packages: string[], from?: string, alias?: Record<string, string>, cacheDir?: string, minify?: boolean }} options
 * @returns {Promise<Record<string, string>>}
 */
async function bundleModules(options) {
  if (options === null || typeof options !== 'object') throw invalid(options, 'options', '{ packages, from?, alias?, cacheDir?, minify? }');
  const { packages, from = process.cwd(), alias = {}, cacheDir, minify = false } = options;
  if (!Array.isArray(packages) || packages.length === 0) {
    throw fault('INVALID_OPTION', { field: 'packages', problem: 'not a non-empty array of package specifiers', allowed: "package names as imported, e.g. ['lodash-es', 'date-fns']" });
  }
  for (const [i, spec] of packages.entries()) {
    const problem = specifierProblem(spec);
    if (problem) throw fault('INVALID_OPTION', { field: `packages[${i}]`, problem, allowed: SPECIFIER_ALLOWED });
  }
  if (typeof from !== 'string') throw invalid(from, 'from', 'a directory path');
  if (alias === null || typeof alias !== 'object') throw invalid(alias, 'alias', "an object mapping a Node built-in to a package or file, e.g. { 'node:events': 'events' }");
  /** @type {Map<string, string>} `node:x` -> package or file */
  const aliases = new Map();
  for (const [key, target] of Object.entries(alias)) {
    const name = builtinName(key);
    if (!name || typeof target !== 'string' || target === '') {
      throw fault('INVALID_OPTION', { field: `alias.${key}`, problem: name ? 'no target' : 'not a Node built-in', allowed: "a Node built-in mapped to a package or file, e.g. { 'node:events': 'events' }" });
    }
    // A target that is no file is a package, named as `packages` name them.
    const problem = target.startsWith('.') || path.isAbsolute(target) ? null : specifierProblem(target);
    if (problem) throw fault('INVALID_OPTION', { field: `alias.${key}`, problem, allowed: `a file ('./shim.js'), or ${SPECIFIER_ALLOWED}` });
    aliases.set(name, target);
  }
  const root = path.resolve(from);
  const esbuild = loadEsbuild(root);
  /** @type {Record<string, string>} */
  const out = {};
  for (const spec of packages) out[spec] = await bundleOne(esbuild, spec, spec, root, aliases, { cacheDir, minify });
  for (const [name, target] of aliases) {
    const isFile = target.startsWith('.') || path.isAbsolute(target);
    const entry = isFile ? path.resolve(root, target) : target;
    out[name] = await bundleOne(esbuild, entry, isFile ? name : target, root, aliases, { cacheDir, minify });
  }
  return out;
}

/**
 * @param {typeof import('esbuild')} esbuild
 * @param {string} entry what esbuild resolves: a package specifier or an absolute file
 * @param {string} label the package named in texts
 * @param {string} root
 * @param {Map<string, string>} aliases
 * @param {{ cacheDir?: string, minify: boolean }} opts
 */
async function bundleOne(esbuild, entry, label, root, aliases, opts) {
  const isFile = path.isAbsolute(entry);
  const version = isFile
    ? crypto.createHash('sha256').update(fs.readFileSync(entry)).digest('hex').slice(0, 16)
    : installedVersion(packageName(entry), root);
  const key = JSON.stringify([entry, version, root, [...aliases], opts.minify, esbuild.version]);
  const cached = memory.get(key);
  if (cached !== undefined) return cached;
  const diskFile = opts.cacheDir
    ? path.join(opts.cacheDir, `${crypto.createHash('sha256').update(key).digest('hex').slice(0, 32)}.mjs`)
    : null;
  if (diskFile && fs.existsSync(diskFile)) {
    const source = fs.readFileSync(diskFile, 'utf8');
    memory.set(key, source);
    return source;
  }
  /** The first Node built-in the package imports (set by the resolve hook). */
  const seen = {
    refused: /** @type {{ builtin: string, importer: string } | null} */ (null),
    /** Why the entry was refused for resolving outside its package (set by the resolve hook). */
    escaped: /** @type {string | null} */ (null),
  };
  // A package's entry must be a file of that package, after symlinks: a specifier that passed
  // the name rules can still resolve elsewhere through a symlink the package holds.
  const home = isFile ? null : packageDir(packageName(entry), root);
  /** @type {import('esbuild').Plugin} */
  const confined = {
    name: 'codemode-package-confined',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'entry-point' || isFile || args.pluginData === 'codemode-inner') return undefined;
        const found = await build.resolve(args.path, { kind: 'import-statement', resolveDir: root, pluginData: 'codemode-inner' });
        if (found.errors.length > 0 || found.external || !found.path) return undefined;
        let real = found.path;
        try {
          real = fs.realpathSync(found.path);
        } catch {
          // esbuild's own path
        }
        const inside = home !== null && (real === home || real.startsWith(home + path.sep));
        if (!inside) {
          seen.escaped = `"${entry}" resolves to ${real}, outside the package's directory (${home ?? 'not found'}); a package may only be bundled from its own files`;
          return { errors: [{ text: seen.escaped }] };
        }
        return { path: real };
      });
    },
  };
  /** @type {import('esbuild').Plugin} */
  const builtins = {
    name: 'codemode-no-node-builtins',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'codemode-inner' || args.kind === 'entry-point') return undefined;
        const name = builtinName(args.path);
        if (!name) return undefined;
        if (aliases.has(name)) return { path: name, external: true };
        if (!args.path.startsWith('node:')) {
          // A bare name the project provides (a browser field's mapping, an npm polyfill such
          // as `events`) is that package, not the built-in.
          const found = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: 'codemode-inner' });
          if (found.errors.length === 0) return found;
        }
        seen.refused ??= { builtin: name, importer: path.relative(root, args.importer) || args.importer };
        return { path: name, external: true };
      });
    },
  };
  let result;
  try {
    result = await esbuild.build({
      entryPoints: [entry],
      absWorkingDir: root,
      bundle: true,
      write: false,
      format: 'esm',
      // Workers' resolution (what a package ships for the sandbox's runtime): the browser field
      // and the workerd / worker / browser export conditions.
      platform: 'browser',
      conditions: ['workerd', 'worker', 'browser'],
      target: 'es2022',
      minify: opts.minify,
      logLevel: 'silent',
      plugins: [confined, builtins],
    });
  } catch (e) {
    if (seen.escaped) throw fault('BUNDLE_FAILED', { package: label, detail: seen.escaped });
    const errors = /** @type {{ errors?: Array<{ text: string }> }} */ (e).errors;
    const detail = errors?.length ? errors.map((x) => x.text).join('; ') : e instanceof Error ? e.message : String(e);
    throw fault('BUNDLE_FAILED', { package: label, detail });
  }
  const refused = seen.refused;
  if (refused) throw fault('BUNDLE_NODE_BUILTIN', { package: label, builtin: refused.builtin, importer: refused.importer });
  const source = result.outputFiles[0].text;
  memory.set(key, source);
  if (diskFile) {
    fs.mkdirSync(path.dirname(diskFile), { recursive: true });
    fs.writeFileSync(diskFile, source);
  }
  return source;
}

module.exports = { bundleModules };
