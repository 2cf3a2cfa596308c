// @ts-check
'use strict';
// normalizeCode as @cloudflare/codemode 0.5.x does it (acorn; docs: ../../docs/dialect-deviations.md
// lists where this differs). Import declarations are lifted out first, so a program can import
// from ExtendedExecuteOptions.modules.

const acorn = require('acorn');
const { loadNative } = require('../native');

/**
 * The addon's type stripping (codemode-typestrip, the worker's own); without the addon, no
 * TypeScript: the code goes on as the reference treats it.
 * @param {string} src
 * @returns {{ code?: string, refused?: string }}
 */
function stripTypes(src) {
  try {
    return loadNative().binding.stripTypes(src);
  } catch {
    return {};
  }
}

/**
 * CODE_TOO_LARGE's or NESTING_TOO_DEEP's text for code the executor must not read on the host's
 * event loop (longer than `limits::CODE_BYTES`, or nested past `limits::NESTING_LEVELS`: the
 * TypeScript stripper recurses per level), or undefined. Counted by the addon in one pass.
 * @param {string} src
 * @returns {string | undefined}
 */
function refusedProgram(src) {
  return loadNative().binding.checkProgram(src) ?? undefined;
}

const FENCE = /^```(js|javascript|typescript|ts|tsx|jsx)?\s*\n([\s\S]*?)```\s*$/;

/**
 * A list of declared names whose `indexOf` is a set lookup: acorn keeps each scope's names in
 * arrays and searches them on every declaration, which made a program of 20,000 imports (or
 * `let`s) take seconds of the event loop (quadratic). acorn only pushes to these arrays and
 * compares `indexOf` with -1 (and reads element 0), so the answers are the same.
 */
class DeclaredNames extends Array {
  /** @type {Set<string>} */
  #names = new Set();

  /** @param {...string} names */
  push(...names) {
    for (const n of names) this.#names.add(n);
    return super.push(...names);
  }

  /** @param {string} name */
  indexOf(name) {
    return this.#names.has(name) ? super.indexOf(name) : -1;
  }

  static get [Symbol.species]() {
    return Array;
  }
}

/**
 * acorn's scope hooks, which its typings leave out: `enterScope` pushes the scope
 * `currentScope` returns.
 * @typedef {{ var: string[], lexical: string[], functions: string[] }} Scope
 * @typedef {new (...args: any[]) => { enterScope(flags: number): void, currentScope(): Scope }} ScopedParser
 */

/** @typedef {acorn.Statement | acorn.ModuleDeclaration} TopLevel */

const Parser = acorn.Parser.extend(
  (Base) =>
    /** @type {typeof acorn.Parser} */ (/** @type {unknown} */ (class extends /** @type {ScopedParser} */ (/** @type {unknown} */ (Base)) {
      /** @param {number} flags */
      enterScope(flags) {
        super.enterScope(flags);
        const scope = this.currentScope();
        scope.var = new DeclaredNames();
        scope.lexical = new DeclaredNames();
        scope.functions = new DeclaredNames();
      }
    })),
);

/** @param {string} src */
function parse(src) {
  return Parser.parse(src, { ecmaVersion: 'latest', sourceType: 'module' });
}

/**
 * @param {string} code
 * @param {boolean} [typescript] strip TypeScript's types when acorn cannot read the code (the
 *   executor does; the exported `normalizeCode` stays the reference's)
 * @returns {{ imports: string, code: string, refused?: string, origin?: { line: number, modelLine: number } }}
 *   the lifted import declarations and one expression that evaluates to a function; `origin`:
 *   line `line` of that expression is line `modelLine` of the code as given (the lines after it
 *   follow one for one). For TypeScript that cannot run with its types removed, `refused`: the
 *   TYPESCRIPT_UNSUPPORTED text; with `typescript`, also CODE_TOO_LARGE's or NESTING_TOO_DEEP's
 *   for code past those bounds (checked before anything parses it).
 */
function normalizeCode(code, typescript = false) {
  const raw = String(code);
  if (typescript) {
    // Before acorn or the stripper reads a byte: bounded size (acorn holds the event loop for
    // the whole parse) and bounded nesting (the stripper recurses per level).
    const refused = refusedProgram(raw);
    if (refused !== undefined) return { imports: '', code: '', refused };
  }
  const trimmed = raw.trim();
  const fenced = FENCE.exec(trimmed);
  let src = fenced ? fenced[2] : trimmed;
  if (src.trim() === '') return { imports: '', code: 'async () => {}' };
  // Lines of the model's code before `src` begins (leading blank lines, the fence's own line).
  const before = lineOf(raw, raw.length - raw.trimStart().length) - 1 + (fenced ? 1 : 0);
  let ast;
  let stripped = false;
  try {
    ast = parse(src);
  } catch {
    // TypeScript (which acorn cannot read): its types blanked, every position kept. Code that
    // is not TypeScript either goes on as the reference has it.
    const ts = typescript ? stripTypes(src) : {};
    if (ts.refused) return { imports: '', code: '', refused: ts.refused };
    try {
      if (ts.code === undefined) throw new Error('not TypeScript');
      ast = parse(ts.code);
      src = ts.code;
      stripped = true;
    } catch {
      // As the reference: an unparsable program (a top-level `return`, say) becomes a body.
      return { imports: '', code: `async () => {\n${src}\n}`, origin: { line: 2, modelLine: before + 1 } };
    }
  }
  let imports = '';
  const importNodes = ast.body.filter((n) => n.type === 'ImportDeclaration');
  if (importNodes.length > 0) {
    imports = importNodes.map((n) => src.slice(n.start, n.end)).join('\n');
    // Blank the imports out in place, keeping offsets (and line numbers) of the rest: one pass
    // over the source (rebuilding it once per import was quadratic in their number).
    const pieces = [];
    let from = 0;
    for (const n of importNodes) {
      pieces.push(src.slice(from, n.start), ' '.repeat(n.end - n.start));
      from = n.end;
    }
    pieces.push(src.slice(from));
    src = pieces.join('');
    ast = parse(src);
  }
  // A declaration removed with the types (an interface, a type-only import) leaves a `;`.
  /** @param {TopLevel} n */
  const kept = (n) => n.type !== 'ImportDeclaration' && !(stripped && n.type === 'EmptyStatement');
  const [body, line, at] = normalizeBody(src, ast.body.filter(kept));
  return { imports, code: body, origin: at === undefined ? undefined : { line, modelLine: before + lineOf(src, at) } };
}

/**
 * The 1-based line of offset `at` in `text`.
 * @param {string} text
 * @param {number} at
 */
function lineOf(text, at) {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < at; i = text.indexOf('\n', i + 1)) line += 1;
  return line;
}

/**
 * @param {string} src
 * @param {TopLevel[]} body
 * @returns {[string, number, number | undefined]} the expression, and which of its lines (1-based)
 *   begins at which offset of `src` (undefined: no line maps back).
 */
function normalizeBody(src, body) {
  if (body.length === 0) return ['async () => {}', 1, undefined];
  /** @param {acorn.Node} n */
  const text = (n) => src.slice(n.start, n.end);
  if (body.length === 1) {
    const only = body[0];
    if (only.type === 'ExpressionStatement' && only.expression.type === 'ArrowFunctionExpression') {
      // The reference returns the statement unchanged, trailing `;` included, which then fails
      // to load; without the `;` is what was meant (a listed deviation).
      return [text(only).replace(/;\s*$/, ''), 1, only.start];
    }
    if (only.type === 'ExportDefaultDeclaration') {
      const d = only.declaration;
      if ((d.type === 'FunctionDeclaration' || d.type === 'FunctionExpression') && !d.id) {
        return [`async () => {\nreturn (${text(d)})();\n}`, 2, d.start];
      }
      if ((d.type === 'ClassDeclaration' || d.type === 'ClassExpression') && !d.id) {
        return [`async () => {\nreturn (${text(d)});\n}`, 2, d.start];
      }
      return [normalizeCode(text(d)).code, 1, undefined];
    }
    if (only.type === 'FunctionDeclaration' && only.id) {
      return [`async () => {\n${src.slice(only.start, only.end)}\nreturn ${only.id.name}();\n}`, 2, only.start];
    }
  }
  const last = body[body.length - 1];
  const start = body[0].start;
  if (last.type === 'ExpressionStatement') {
    return [`async () => {\n${src.slice(start, last.start)}return (${text(last.expression)})\n}`, 2, start];
  }
  return [`async () => {\n${src.slice(start, last.end)}\n}`, 2, start];
}

module.exports = { normalizeCode };
