// scripts/cycles.mjs, the import-cycle check CI runs: on small trees written to a temporary
// directory, it finds a cycle where there is one (JavaScript files; Rust modules at the crate's
// top and between siblings in a folder), none where there is none, and ignores what is not code
// the module runs: comments, strings, `#[cfg(test)]` and `#[test]` items, a crate's tests/.
import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, components, findCycles, Graph, rustFile } from '../scripts/cycles.mjs';

const SCRIPT = fileURLToPath(new URL('../scripts/cycles.mjs', import.meta.url));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-cycles-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

let trees = 0;
/** A tree of files ({ 'lib/a.js': '...' }) in a fresh directory; returns its path. */
function tree(files) {
  const root = path.join(scratch, String(trees++));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

/** Every cycle found under root, as `a -> b -> a` lines, prefixed with where. */
const cycles = (root) => check(root).flatMap((c) => c.cycles.map((cycle) => `${c.where}: ${cycle.join(' -> ')}`));

const run = (root) => spawnSync(process.execPath, [SCRIPT, root], { encoding: 'utf8' });

/**
 * Writes `files` as a tree and expects the cycles found in it to be `found`; with `script`, runs
 * the script on the tree too and expects its exit `status`, and the lines in `stderr` in its
 * standard error and `stdout` (a pattern) on its standard output where given.
 * @param {Record<string, string>} files
 * @param {string[]} found
 * @param {{ status: number, stderr?: string[], stdout?: RegExp }} [script]
 */
function expectCycles(files, found, script) {
  const root = tree(files);
  expect(cycles(root)).toEqual(found);
  if (!script) return;
  const out = run(root);
  expect(out.status).toBe(script.status);
  for (const line of script.stderr ?? []) expect(out.stderr).toContain(line);
  if (script.stdout) expect(out.stdout).toMatch(script.stdout);
}

describe('the cycle finder', () => {
  it('finds each strongly connected component, and every elementary cycle in one', () => {
    const g = new Graph();
    for (const [a, b] of [['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'b'], ['d', 'e'], ['e', 'd'], ['e', 'f'], ['g', 'g']]) g.edge(a, b, `x:1 ${a}${b}`);
    expect(components(g).filter((c) => c.length > 1)).toEqual([['a', 'b', 'c'], ['d', 'e']]);
    expect(findCycles(g).map((c) => c.cycles.map((cycle) => cycle.join(' -> ')))).toEqual([
      ['a -> b -> c -> a', 'b -> c -> b'],
      ['d -> e -> d'],
      ['g -> g'],
    ]);
  });
});

describe('JavaScript', () => {
  it('finds a require cycle, and the script says so and exits 1', () => {
    expectCycles({
      'lib/a.js': "'use strict';\nconst b = require('./b');\n",
      'lib/b.js': "'use strict';\nfunction later() { return require('./sub/c.js'); }\nmodule.exports = { later };\n",
      'lib/sub/c.js': "const { a } = require('../a');\n",
    }, ['javascript: lib/a.js -> lib/b.js -> lib/sub/c.js -> lib/a.js'], {
      status: 1,
      stderr: ['lib/a.js -> lib/b.js -> lib/sub/c.js -> lib/a.js', "lib/b.js:2 './sub/c.js' (inside a function)"],
    });
  });

  it('follows import, export from, import(), index files and the package root files', () => {
    expectCycles({
      'index.js': "module.exports = require('./lib');\n",
      'lib/index.js': "module.exports = { m: () => import('./m.mjs') };\n",
      'lib/m.mjs': "export * from './n.mjs';\n",
      'lib/n.mjs': "import x from '../index.js';\nexport default x;\n",
    }, ['javascript: index.js -> lib/index.js -> lib/m.mjs -> lib/n.mjs -> index.js']);
  });

  it('finds none where the edges go one way; comments, strings and packages are no edges', () => {
    expectCycles({
      'lib/a.js': "const b = require('./b');\nconst fs = require('node:fs');\n// require('./c')\n",
      'lib/b.js': "const c = require('./c');\nconst text = \"require('./a')\";\n",
      'lib/c.js': "const code = `import a from './a.js'`;\n/* require('./a') */\n",
      'bin/cli.js': "#!/usr/bin/env node\nrequire('../lib/a');\n",
    }, [], { status: 0, stdout: /^cycles: none/ });
  });
});

describe('Rust', () => {
  it('finds a cycle between top-level modules, through use trees and paths in code', () => {
    expectCycles({
      'crates/k/Cargo.toml': '[package]\nname = "k"\n',
      'crates/k/src/lib.rs': 'mod a;\nmod b;\nmod c;\npub use a::Thing;\n',
      'crates/k/src/a.rs': 'use crate::{b::{self, B}, c};\npub struct Thing;\n',
      'crates/k/src/b.rs': 'pub struct B;\nfn f() { let _ = crate::c::C::new(); }\n',
      'crates/k/src/c.rs': 'pub struct C;\nfn g() -> crate::a::Thing { crate::a::Thing }\n',
    }, ['rust crates/k: a -> b -> c -> a', 'rust crates/k: a -> c -> a'], { status: 1, stderr: ['b -> c: crates/k/src/b.rs:2 crate::c::C::new'] });
  });

  it('finds a cycle between sibling modules in a folder, by crate:: and super:: paths', () => {
    // super::shared is an item of the parent: no edge between siblings
    expectCycles({
      'src/lib.rs': 'mod p;\n',
      'src/p/mod.rs': 'mod x;\nmod y;\npub(crate) fn shared() {}\n',
      'src/p/x.rs': 'use super::y::Y;\nuse super::shared;\npub struct X;\n',
      'src/p/y.rs': 'pub struct Y;\nfn f() -> crate::p::x::X { todo!() }\n',
    }, ['rust src: p::x -> p::y -> p::x']);
  });

  it('follows a re-export through the crate root to the module that defines the item', () => {
    // wire names crate::Ceilings, which lib.rs re-exports from ceilings, which uses wire
    expectCycles({
      'src/lib.rs': 'mod ceilings;\nmod wire;\npub use ceilings::{Ceilings as Bounds, Other};\npub(crate) use wire::Limits;\n',
      'src/ceilings.rs': 'use crate::Limits;\npub struct Ceilings;\npub struct Other;\n',
      'src/wire.rs': 'pub struct Limits;\nfn f(_: &crate::Bounds) {}\n',
    }, ['rust src: ceilings -> wire -> ceilings']);
    // the same names defined in lib.rs itself: no edge
    expectCycles({
      'src/lib.rs': 'mod ceilings;\nmod wire;\npub struct Bounds;\npub struct Limits;\n',
      'src/ceilings.rs': 'use crate::Limits;\n',
      'src/wire.rs': 'fn f(_: &crate::Bounds) {}\n',
    }, [], { status: 0 });
  });

  it('resolves super:: inside an inline module to that module', () => {
    expectCycles({
      'src/lib.rs': 'mod a;\nmod b;\n',
      'src/a.rs': 'pub fn f() {}\nmod inner {\n    use super::super::b::g;\n}\n',
      'src/b.rs': 'pub fn g() { crate::a::f() }\n',
    }, ['rust src: a -> b -> a']);
  });

  it('ignores test modules, #[test] items, tests/, comments and strings', () => {
    expectCycles({
      'src/main.rs': 'mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n',
      'src/a.rs': 'use crate::b::B;\npub struct A;\n',
      'src/b.rs': [
        'pub struct B;',
        '// crate::a::A in a comment',
        '/* a block /* nested */ crate::a::A */',
        'const S: &str = "crate::a::A";',
        'const R: &str = r#"crate::a::A "quoted""#;',
        "fn life<'a>(x: &'a str) -> char { let _ = x; 'c' }",
        '#[cfg(test)]',
        'mod tests {',
        '    use crate::a::A;',
        '}',
        '#[cfg(test)]',
        '#[allow(dead_code)]',
        'fn helper() -> crate::a::A { crate::a::A }',
        '#[test]',
        'fn t() { let _ = crate::a::A; }',
        '#[cfg(all(test, unix))]',
        'use crate::a::A as Unix;',
        '',
      ].join('\n'),
      'src/tests/mod.rs': 'mod more;\nuse crate::a::A;\n',
      'src/tests/more.rs': 'use crate::b::B;\n',
      'tests/it.rs': 'use k::a::A;\n',
    }, [], { status: 0 });
  });

  it('reads a test-only attribute before a module declaration, or at the top of a file', () => {
    const { refs, testMods } = rustFile('#[cfg(test)]\npub(crate) mod checks;\nuse crate::x::Y;\n', ['m']);
    expect(testMods).toEqual([['m', 'checks']]);
    expect(refs).toEqual([{ from: ['m'], to: ['x', 'Y'], line: 3 }]);
    // `#![cfg(test)]` at the top of a file makes the whole module a test module
    expect(rustFile('#![cfg(test)]\nuse crate::a::B;\n', ['t'])).toEqual({ refs: [], inline: [], testMods: [['t']], aliases: [] });
  });
});
