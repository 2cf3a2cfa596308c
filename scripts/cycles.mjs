// Import cycles, JavaScript and Rust: `node scripts/cycles.mjs [root]` prints every cycle as
// `a -> b -> a`, each edge's first reference under it, and exits 1 if there is any.
//
// JavaScript: the package's own files (lib/, index.js, tanstack.js, bin/), an edge for each
// relative require(...), import, export ... from, or import(...) with a literal specifier,
// resolved as Node resolves it, wherever it is (a require inside a function is still an edge;
// its evidence line says so). Parsed with acorn, the package's own dependency.
//
// Rust: each crate of the workspace (src/ and crates/*/src/; src/bin/*.rs are crates of their
// own). Modules are the files and folders under src/ and the inline `mod x { ... }` blocks;
// a `crate::a::b`, `super::a` or `self::a` path (in a `use` tree or anywhere in code) from a
// module under c to a module under a, c and a siblings in one parent, is the edge c -> a in that
// parent, so a cycle between sibling modules in any folder counts. A path through a re-export
// (`pub use ceilings::Ceilings;` in lib.rs, then `crate::Ceilings`) counts as the path it
// re-exports; a path to an item the parent defines itself is no edge between siblings. Ignored: comments, strings,
// items under `#[cfg(test)]` or `#[test]` (an inline `mod tests { ... }`, a `mod tests;` file and
// everything under it), and the crate's tests/, benches/ and examples/, which are not in src/.
//
// Strongly connected components by Tarjan's algorithm; within each, every elementary cycle
// (at most MAX_PER_COMPONENT printed), from the component's first node in name order.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as acorn from 'acorn';

const MAX_PER_COMPONENT = 50;

// ---- graphs and cycles -------------------------------------------------------------------------

/** A directed graph: node -> (successor -> the references that make the edge). */
export class Graph {
  constructor() {
    /** @type {Map<string, Map<string, string[]>>} */
    this.edges = new Map();
  }
  node(n) {
    if (!this.edges.has(n)) this.edges.set(n, new Map());
    return this.edges.get(n);
  }
  /** An edge; `evidence` is `file:line what`, kept once per file and line. */
  edge(from, to, evidence) {
    this.node(to);
    const out = this.node(from);
    if (!out.has(to)) out.set(to, []);
    const refs = out.get(to);
    const at = evidence.split(' ')[0];
    if (!refs.some((r) => r.split(' ')[0] === at)) refs.push(evidence);
  }
}

/** Tarjan's strongly connected components, iterative; each component sorted by name. */
export function components(graph) {
  const index = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const found = [];
  let next = 0;
  for (const root of [...graph.edges.keys()].sort()) {
    if (index.has(root)) continue;
    const work = [[root, [...graph.edges.get(root).keys()].sort(), 0]];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length) {
      const frame = work[work.length - 1];
      const [v, succ] = frame;
      if (frame[2] < succ.length) {
        const w = succ[frame[2]++];
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push([w, [...graph.edges.get(w).keys()].sort(), 0]);
        } else if (onStack.has(w)) {
          low.set(v, Math.min(low.get(v), index.get(w)));
        }
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(v)));
      }
      if (low.get(v) === index.get(v)) {
        const component = [];
        let w;
        do {
          w = stack.pop();
          onStack.delete(w);
          component.push(w);
        } while (w !== v);
        found.push(component.sort());
      }
    }
  }
  return found;
}

/**
 * Every cycle: the elementary cycles of each component with more than one node (or a node with
 * an edge to itself), each as its node list with the first node repeated at the end.
 * @returns {{ component: string[], cycles: string[][], more: boolean }[]}
 */
export function findCycles(graph) {
  const result = [];
  for (const component of components(graph)) {
    const only = component[0];
    if (component.length === 1 && !graph.edges.get(only).has(only)) continue;
    const members = new Set(component);
    const cycles = [];
    let more = false;
    // Elementary cycles, each once: from each start node, paths through nodes after it in name
    // order only (the components are small: a few modules).
    for (let s = 0; s < component.length; s++) {
      const start = component[s];
      const allowed = new Set(component.slice(s));
      const pathNow = [start];
      const onPath = new Set([start]);
      const walk = (v) => {
        for (const w of [...graph.edges.get(v).keys()].sort()) {
          if (!members.has(w) || !allowed.has(w)) continue;
          if (more) return;
          if (w === start) {
            if (cycles.length < MAX_PER_COMPONENT) cycles.push([...pathNow, start]);
            else more = true;
          } else if (!onPath.has(w)) {
            pathNow.push(w);
            onPath.add(w);
            walk(w);
            pathNow.pop();
            onPath.delete(w);
          }
        }
      };
      walk(start);
    }
    result.push({ component, cycles, more });
  }
  return result;
}

// ---- JavaScript --------------------------------------------------------------------------------

const JS_EXT = /\.(c|m)?js$/;

function listFiles(dir, keep) {
  if (!fs.existsSync(dir)) return [];
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(full, keep));
    else if (entry.isFile() && keep(entry.name)) out.push(full);
  }
  return out.sort();
}

/** The files the JavaScript graph covers, relative to root with forward slashes. */
function jsFiles(root) {
  const files = [...listFiles(path.join(root, 'lib'), (n) => JS_EXT.test(n)), ...listFiles(path.join(root, 'bin'), (n) => JS_EXT.test(n))];
  for (const top of ['index.js', 'tanstack.js']) if (fs.existsSync(path.join(root, top))) files.push(path.join(root, top));
  return files.map((f) => path.relative(root, f).split(path.sep).join('/'));
}

function parseJs(source, file) {
  const options = { ecmaVersion: 'latest', locations: true, allowHashBang: true };
  if (!file.endsWith('.mjs')) {
    try {
      return acorn.parse(source, { ...options, sourceType: 'script', allowReturnOutsideFunction: true });
    } catch {
      // an ES module in a .js file: parsed as one below
    }
  }
  return acorn.parse(source, { ...options, sourceType: 'module' });
}

/** The literal specifier a node holds, if it is a string or a template without expressions. */
function literal(node) {
  if (!node) return null;
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return null;
}

const FUNCTION = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression']);

/** Each relative specifier a file loads: { spec, line, lazy (inside a function) }. */
export function jsImports(source, file) {
  const found = [];
  const visit = (node, lazy) => {
    if (!node || typeof node.type !== 'string') return;
    let spec = null;
    if (node.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === 'require') spec = literal(node.arguments[0]);
    else if (node.type === 'ImportExpression') spec = literal(node.source);
    else if (node.type === 'ImportDeclaration' || node.type === 'ExportAllDeclaration' || node.type === 'ExportNamedDeclaration') spec = literal(node.source);
    if (spec !== null && /^\.\.?(\/|$)/.test(spec)) found.push({ spec, line: node.loc.start.line, lazy: lazy || node.type === 'ImportExpression' });
    const inner = lazy || FUNCTION.has(node.type);
    for (const key of Object.keys(node)) {
      if (key === 'loc') continue;
      const child = node[key];
      if (Array.isArray(child)) for (const c of child) visit(c, inner);
      else if (child && typeof child === 'object') visit(child, inner);
    }
  };
  visit(parseJs(source, file), false);
  return found;
}

/** Node's resolution of a relative specifier, among the given files; null outside them. */
function resolveJs(fromFile, spec, known) {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), spec));
  const candidates = [base, `${base}.js`, `${base}.mjs`, `${base}.cjs`, `${base}/index.js`, `${base}/index.mjs`, `${base}/index.cjs`];
  return candidates.find((c) => known.has(c)) ?? null;
}

export function jsGraph(root) {
  const graph = new Graph();
  const files = jsFiles(root);
  const known = new Set(files);
  for (const file of files) {
    graph.node(file);
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    for (const { spec, line, lazy } of jsImports(source, file)) {
      const target = resolveJs(file, spec, known);
      if (target) graph.edge(file, target, `${file}:${line} '${spec}'${lazy ? ' (inside a function)' : ''}`);
    }
  }
  return graph;
}

// ---- Rust --------------------------------------------------------------------------------------

/**
 * Rust source as tokens: identifiers, `::` and single punctuation characters, each with its line.
 * Comments (nested block comments too), strings (raw, byte, C), char literals and numbers are
 * dropped (a literal leaves a `lit` token, so it still separates what is around it).
 */
export function rustTokens(src) {
  const tokens = [];
  let i = 0;
  let line = 1;
  const n = src.length;
  const isIdentStart = (c) => /[A-Za-z_]/.test(c) || c > '\x7f';
  const isIdent = (c) => /[A-Za-z0-9_]/.test(c) || c > '\x7f';
  const skipTo = (j) => {
    for (; i < j; i++) if (src[i] === '\n') line++;
  };
  const quoted = (from) => {
    // a "..." string with escapes, its opening quote at `from`; returns the index after it
    let j = from + 1;
    while (j < n && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
    return j + 1;
  };
  const raw = (from) => {
    // r#*"..."#*, `from` at the first # or the quote; returns the index after it
    let hashes = 0;
    let j = from;
    while (src[j] === '#') {
      hashes++;
      j++;
    }
    const close = `"${'#'.repeat(hashes)}`;
    const end = src.indexOf(close, j + 1);
    return end < 0 ? n : end + close.length;
  };
  while (i < n) {
    const c = src[i];
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '/' && src[i + 1] === '/') {
      const end = src.indexOf('\n', i);
      i = end < 0 ? n : end;
    } else if (c === '/' && src[i + 1] === '*') {
      let depth = 0;
      let j = i;
      while (j < n) {
        if (src[j] === '/' && src[j + 1] === '*') {
          depth++;
          j += 2;
        } else if (src[j] === '*' && src[j + 1] === '/') {
          depth--;
          j += 2;
          if (depth === 0) break;
        } else j++;
      }
      skipTo(j);
    } else if (c === '"') {
      tokens.push({ t: 'lit', line });
      skipTo(quoted(i));
    } else if (c === "'") {
      if (src[i + 1] === '\\') {
        let j = i + 2;
        while (j < n && src[j] !== "'") j += src[j] === '\\' ? 2 : 1;
        tokens.push({ t: 'lit', line });
        skipTo(j + 1);
      } else {
        const cp = src.codePointAt(i + 1);
        const width = cp > 0xffff ? 2 : 1;
        if (src[i + 1 + width] === "'") {
          tokens.push({ t: 'lit', line });
          skipTo(i + 2 + width);
        } else i++; // a lifetime or a label: its name follows as an identifier
      }
    } else if (/[0-9]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_.]/.test(src[j]) && !(src[j] === '.' && (src[j + 1] === '.' || isIdentStart(src[j + 1] ?? '')))) j++;
      tokens.push({ t: 'lit', line });
      i = j;
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < n && isIdent(src[j])) j++;
      const word = src.slice(i, j);
      if ((word === 'r' || word === 'br' || word === 'cr') && (src[j] === '"' || (src[j] === '#' && /["#]/.test(src[j + 1] ?? '')))) {
        tokens.push({ t: 'lit', line });
        skipTo(raw(j));
      } else if ((word === 'b' || word === 'c') && src[j] === '"') {
        tokens.push({ t: 'lit', line });
        skipTo(quoted(j));
      } else if (word === 'b' && src[j] === "'") {
        let k = j + 1;
        while (k < n && src[k] !== "'") k += src[k] === '\\' ? 2 : 1;
        tokens.push({ t: 'lit', line });
        skipTo(k + 1);
      } else if (word === 'r' && src[j] === '#' && isIdentStart(src[j + 1] ?? '')) {
        let k = j + 1;
        while (k < n && isIdent(src[k])) k++;
        tokens.push({ t: 'ident', v: src.slice(j + 1, k), line });
        i = k;
      } else {
        tokens.push({ t: 'ident', v: word, line });
        i = j;
      }
    } else if (c === ':' && src[i + 1] === ':') {
      tokens.push({ t: 'p', v: '::', line });
      i += 2;
    } else {
      tokens.push({ t: 'p', v: c, line });
      i++;
    }
  }
  return tokens;
}

const isP = (tok, v) => tok?.t === 'p' && tok.v === v;
const isWord = (tok, v) => tok?.t === 'ident' && tok.v === v;

/** Whether an attribute's tokens (between `[` and `]`) say the item is compiled for tests only. */
function testOnly(attr) {
  const words = attr.map((t) => t.v).join(' ');
  return words === 'test' || words === 'cfg ( test )' || /^cfg \( all \( (.* , )?test( , .*)? \) \)$/.test(words);
}

/**
 * One Rust file's module structure and references.
 * @param {string[]} modPath the file's module path (crate root: [])
 * @returns {{ refs: { from: string[], to: string[], line: number }[], inline: string[][], testMods: string[][], aliases: { at: string[], to: string[] }[] }}
 */
export function rustFile(src, modPath) {
  const toks = rustTokens(src);
  const refs = [];
  /** What each `use` makes visible in its module: the name there, and the path it stands for. */
  const aliases = [];
  const inline = [];
  const testMods = [];
  // the inline modules around the cursor: { path, depth } (depth: the brace depth inside it)
  const scopes = [{ path: modPath, depth: 0 }];
  let depth = 0;
  let i = 0;
  const here = () => scopes[scopes.length - 1].path;

  /** The index after the item starting at `j` (up to its `;` or its closing brace). */
  const skipItem = (j) => {
    let d = 0;
    for (; j < toks.length; j++) {
      const t = toks[j];
      if (t.t !== 'p') continue;
      if (t.v === '{' || t.v === '(' || t.v === '[') d++;
      else if (t.v === '}' || t.v === ')' || t.v === ']') {
        d--;
        if (d === 0 && t.v === '}') return isP(toks[j + 1], ';') ? j + 2 : j + 1;
        if (d < 0) return j; // the end of the enclosing block: no item here
      } else if (t.v === ';' && d === 0) return j + 1;
    }
    return j;
  };

  /** The `[...]` of an attribute at `j` (the `[`): its inner tokens and the index after it. */
  const attribute = (j) => {
    let d = 0;
    const start = j;
    for (; j < toks.length; j++) {
      if (isP(toks[j], '[')) d++;
      else if (isP(toks[j], ']') && --d === 0) break;
    }
    return { inner: toks.slice(start + 1, j), end: j + 1 };
  };

  /** Every path a path or `use` tree names, from `j` (the token after the leading keyword). */
  const paths = (j, base, line, out) => {
    let p = base;
    while (isP(toks[j], '::')) {
      j++;
      const t = toks[j];
      if (isP(t, '{')) return group(j, p, line, out);
      if (isP(t, '*')) return j + 1;
      if (t?.t !== 'ident') break;
      if (t.v === 'super') p = p.slice(0, -1);
      else if (t.v !== 'self') p = [...p, t.v];
      j++;
    }
    out.push({ to: p, line });
    return j;
  };
  /** A `use` group `{ tree, ... }` at `j` (the `{`); returns the index after its `}`. */
  const group = (j, base, line, out) => {
    j++;
    while (j < toks.length && !isP(toks[j], '}')) {
      const before = j;
      j = tree(j, base, line, out);
      if (isP(toks[j], ',')) j++;
      else if (j === before) j++;
    }
    return j + 1;
  };
  /** One subtree of a `use` group: `a::b`, `self`, `*`, `{...}`, `x as y`. */
  const tree = (j, base, line, out) => {
    const t = toks[j];
    if (isP(t, '{')) return group(j, base, line, out);
    if (isP(t, '*')) return j + 1;
    if (t?.t !== 'ident') return j + 1;
    const start = t.v === 'self' ? base : t.v === 'super' ? base.slice(0, -1) : [...base, t.v];
    const before = out.length;
    j = paths(j + 1, start, t.line, out);
    if (isWord(toks[j], 'as') && toks[j + 1]?.t === 'ident' && out.length === before + 1) out[before].as = toks[j + 1].v;
    if (isWord(toks[j], 'as')) j += 2;
    return j;
  };

  while (i < toks.length) {
    const t = toks[i];
    if (isP(t, '#') && (isP(toks[i + 1], '[') || (isP(toks[i + 1], '!') && isP(toks[i + 2], '[')))) {
      const inner = isP(toks[i + 1], '!');
      let { inner: attr, end } = attribute(inner ? i + 2 : i + 1);
      let test = testOnly(attr);
      if (inner) {
        // `#![cfg(test)]` at the top of a file: the whole module is for tests
        if (test && depth === 0) return { refs: [], inline, testMods: [modPath], aliases: [] };
        i = end;
        continue;
      }
      while (isP(toks[end], '#') && isP(toks[end + 1], '[')) {
        ({ inner: attr, end } = attribute(end + 1));
        test ||= testOnly(attr);
      }
      if (test) {
        // the item under the attribute: `mod x;` names a test module in its own file
        let j = end;
        if (isWord(toks[j], 'pub')) {
          j++;
          if (isP(toks[j], '(')) while (j < toks.length && !isP(toks[j - 1], ')')) j++;
        }
        if (isWord(toks[j], 'mod') && toks[j + 1]?.t === 'ident' && isP(toks[j + 2], ';')) testMods.push([...here(), toks[j + 1].v]);
        i = skipItem(end);
        continue;
      }
      i = end;
      continue;
    }
    if (isWord(t, 'mod') && toks[i + 1]?.t === 'ident' && isP(toks[i + 2], '{')) {
      const inner = [...here(), toks[i + 1].v];
      inline.push(inner);
      depth++;
      scopes.push({ path: inner, depth });
      i += 3;
      continue;
    }
    if (isP(t, '{')) {
      depth++;
      i++;
      continue;
    }
    if (isP(t, '}')) {
      if (scopes.length > 1 && scopes[scopes.length - 1].depth === depth) scopes.pop();
      depth--;
      i++;
      continue;
    }
    if (isWord(t, 'use') && toks[i + 1]?.t === 'ident' && !isP(toks[i - 1], '::')) {
      // a `use` item: its tree, relative to this module unless it starts at crate/super/self
      const from = here();
      const out = [];
      const first = toks[i + 1];
      const base = first.v === 'crate' ? [] : from;
      i = first.v === 'crate' ? paths(i + 2, base, first.line, out) : tree(i + 1, base, first.line, out);
      for (const r of out) {
        const name = r.as ?? r.to[r.to.length - 1];
        if (name !== undefined) aliases.push({ at: [...from, name], to: r.to });
        if (first.v === 'crate' || first.v === 'super' || first.v === 'self') refs.push({ from, to: r.to, line: r.line });
      }
      continue;
    }
    const startsPath = t.t === 'ident' && (t.v === 'crate' || t.v === 'super' || t.v === 'self') && isP(toks[i + 1], '::') && !isP(toks[i - 1], '::');
    if (startsPath) {
      const from = here();
      const base = t.v === 'crate' ? [] : t.v === 'super' ? from.slice(0, -1) : from;
      const out = [];
      i = paths(i + 1, base, t.line, out);
      for (const r of out) refs.push({ from, to: r.to, line: r.line });
      continue;
    }
    i++;
  }
  return { refs, inline, testMods, aliases };
}

/** The module path of a file under a crate's src/: `a/b.rs` and `a/b/mod.rs` are [a, b]. */
function modulePathOf(rel) {
  const parts = rel.replace(/\.rs$/, '').split('/');
  if (parts[parts.length - 1] === 'mod') parts.pop();
  if (parts.length === 1 && (parts[0] === 'lib' || parts[0] === 'main')) return [];
  return parts;
}

/** The workspace's crates: { name, files: [{ file, modPath }] }; each src/bin/*.rs a crate. */
function rustCrates(root) {
  const crates = [];
  const dirs = ['.', ...(fs.existsSync(path.join(root, 'crates')) ? fs.readdirSync(path.join(root, 'crates')).sort().map((d) => `crates/${d}`) : [])];
  for (const dir of dirs) {
    const src = path.join(root, dir, 'src');
    if (!fs.existsSync(src) || !fs.statSync(src).isDirectory()) continue;
    const rel = (f) => path.relative(src, f).split(path.sep).join('/');
    const all = listFiles(src, (n) => n.endsWith('.rs'));
    const name = dir === '.' ? 'src' : dir;
    const repoPath = (f) => path.relative(root, f).split(path.sep).join('/');
    crates.push({ name, files: all.filter((f) => !rel(f).startsWith('bin/')).map((f) => ({ file: repoPath(f), modPath: modulePathOf(rel(f)) })) });
    for (const f of all.filter((g) => /^bin\/[^/]+\.rs$/.test(rel(g)))) crates.push({ name: `${name} (${rel(f)})`, files: [{ file: repoPath(f), modPath: [] }] });
  }
  return crates;
}

/** One graph per crate, its nodes the modules (`a::b`), edges between siblings only. */
export function rustGraphs(root) {
  const graphs = [];
  for (const crate of rustCrates(root)) {
    const modules = new Set(crate.files.map((f) => f.modPath.join('::')));
    const testMods = [];
    const refs = [];
    /** @type {Map<string, string[]>} a re-exported name's path -> the path it stands for */
    const aliases = new Map();
    for (const { file, modPath } of crate.files) {
      const r = rustFile(fs.readFileSync(path.join(root, file), 'utf8'), modPath);
      for (const m of r.inline) modules.add(m.join('::'));
      testMods.push(...r.testMods);
      for (const ref of r.refs) refs.push({ ...ref, file });
      for (const a of r.aliases) if (a.at.join('::') !== a.to.join('::')) aliases.set(a.at.join('::'), a.to);
    }
    /** `to` with its longest re-exported prefix replaced by what it stands for (a few times over). */
    const resolve = (to) => {
      for (let round = 0; round < 4; round++) {
        let hit = false;
        for (let n = to.length; n > 0 && !hit; n--) {
          const target = aliases.get(to.slice(0, n).join('::'));
          if (target && !modules.has(to.slice(0, n).join('::'))) {
            to = [...target, ...to.slice(n)];
            hit = true;
          }
        }
        if (!hit) break;
      }
      return to;
    };
    const underTest = (p) => testMods.some((t) => t.length <= p.length && t.every((s, k) => s === p[k]));
    const graph = new Graph();
    for (const m of modules) if (m !== '' && !underTest(m.split('::'))) graph.node(m);
    for (const { from, to: named, line, file } of refs) {
      if (underTest(from)) continue;
      const to = resolve(named);
      let k = 0;
      while (k < from.length && k < to.length && from[k] === to[k]) k++;
      if (k >= from.length || k >= to.length) continue; // a reference to an ancestor or a descendant
      const parent = to.slice(0, k);
      const target = [...parent, to[k]];
      if (!modules.has(target.join('::')) || underTest(target)) continue; // an item of the parent, not a module
      const via = named === to ? '' : ` (re-exported as ${['crate', ...named].join('::')})`;
      graph.edge([...parent, from[k]].join('::'), target.join('::'), `${file}:${line} ${['crate', ...to].join('::')}${via}`);
    }
    graphs.push({ name: crate.name, graph });
  }
  return graphs;
}

// ---- the report --------------------------------------------------------------------------------

/** Every cycle in the tree at root: [{ where, component, cycles, more, graph }]. */
export function check(root) {
  const found = [];
  const js = jsGraph(root);
  for (const c of findCycles(js)) found.push({ where: 'javascript', graph: js, ...c });
  for (const { name, graph } of rustGraphs(root)) for (const c of findCycles(graph)) found.push({ where: `rust ${name}`, graph, ...c });
  return found;
}

export function report(found) {
  const lines = [];
  for (const { where, graph, component, cycles, more } of found) {
    lines.push(`${where}: ${component.length} modules in a cycle (${component.join(', ')})`);
    for (const cycle of cycles) {
      lines.push(`  ${cycle.join(' -> ')}`);
      for (let k = 0; k + 1 < cycle.length; k++) {
        const refs = graph.edges.get(cycle[k]).get(cycle[k + 1]);
        const others = refs.length > 1 ? ` (and ${refs.length - 1} more)` : '';
        lines.push(`      ${cycle[k]} -> ${cycle[k + 1]}: ${refs[0]}${others}`);
      }
    }
    if (more) lines.push(`  ... and more cycles (the first ${MAX_PER_COMPONENT} are shown)`);
  }
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const found = check(root);
  if (found.length) {
    console.error(report(found));
    const total = found.reduce((s, f) => s + f.cycles.length, 0);
    console.error(`cycles: ${total}${found.some((f) => f.more) ? '+' : ''} import cycle${total === 1 ? '' : 's'} in ${found.length} component${found.length === 1 ? '' : 's'}`);
    process.exit(1);
  }
  console.log('cycles: none (JavaScript in lib/, bin/, index.js, tanstack.js; Rust modules of every crate)');
}
