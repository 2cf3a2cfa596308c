// @ts-check
'use strict';
// One checker per declaration set (docs/typecheck.md): a TypeScript language service whose
// library (the sandbox's globals, lib/typecheck/sandbox-lib.js) and declarations stay parsed
// and bound between checks, so a check re-reads only the program. The program is checked as
// the executor runs it: one expression that evaluates to a function, wrapped in a declaration
// on its first line, so a diagnostic's line is the program's and only the first line's columns
// shift (by the wrapper's length, taken back). JavaScript is checked as JavaScript (checkJs:
// expando properties and untyped values pass); TypeScript as TypeScript.

const path = require('node:path');

/** The compiler's diagnostics that make a run wrong, not a style (docs/typecheck.md). */
const OPTIONS = {
  noEmit: true,
  allowJs: true,
  checkJs: true,
  strict: true,
  // On, for one of its errors alone (KEPT_IMPLICIT_ANY): an element access by a literal name the
  // declared type does not have (`everything["get-weather"]`). Every other implicit-any error
  // is dropped: a model's untyped `(x) => x.id` in JavaScript must pass.
  noImplicitAny: true,
  noImplicitThis: false,
  useUnknownInCatchVariables: false,
  skipLibCheck: true,
  // A union of many literals printed whole, so the widening rule (WIDENED) reads it.
  noErrorTruncation: true,
  types: [],
  lib: ['lib.esnext.d.ts'],
  module: 99, // ESNext
  moduleResolution: 100, // Bundler
  target: 99, // ESNext
};
const PREFIX = 'export const __program = (';
const SUFFIX = '\n);\n';
const MAX_DIAGNOSTICS = 5;
/** Of the implicit-any errors (7000-7999), the one kept: an index the type does not have. */
const KEPT_IMPLICIT_ANY = new Set([7053]);
/**
 * A widened primitive held against a union of literals (`Type 'string' is not assignable to
 * type '"a" | "b"'`): in JavaScript a value from an array or a variable is widened, and the
 * program cannot say it is narrower, so it is not an error there (a literal written in place,
 * `"Boston"`, keeps its own type and is still caught).
 */
const WIDENED = /Type '(string|number|boolean)' is not assignable to (type|parameter of type) '(("[^"]*"|-?[\d.]+|true|false|undefined|null)( \| )?)+'\.?$/;

/** A module not found: the request's `modules` and dynamic imports resolve at run time. */
const MODULE_NOT_FOUND = new Set([2307, 2792]);
/** A property the type does not have (read, it is a mistake; written in JavaScript, an expando). */
const NO_SUCH_PROPERTY = 2339;

/**
 * The deepest node of `file` that spans `pos`.
 * @param {typeof import('typescript')} ts
 * @param {import('typescript').SourceFile} file
 * @param {number} pos
 * @returns {import('typescript').Node}
 */
function nodeAt(ts, file, pos) {
  /** @type {import('typescript').Node} */
  let found = file;
  /** @param {import('typescript').Node} node */
  const visit = (node) => {
    if (node.getStart(file) <= pos && pos < node.getEnd()) {
      found = node;
      ts.forEachChild(node, visit);
    }
  };
  ts.forEachChild(file, visit);
  return found;
}

/** A name the program uses that nothing declares (a provider or a global the sandbox lacks). */
const UNKNOWN_NAME = new Set([2304, 2552, 2580, 2581, 2582, 2583, 2584, 2591, 2592, 2593]);
const DECLARED = '/tools.d.ts';
/**
 * What a program can get wrong about a declared tool: a property it does not have, an argument
 * it does not take (a name, a type, a count), a value that may be missing, a call of what is
 * not a function, an index it does not have.
 */
const TOOL_MISTAKES = new Set([2339, 2551, 2345, 2322, 2353, 2561, 2820, 2554, 2555, 2556, 2559, 2739, 2740, 2741, 2769, 2349, 2531, 2532, 2533, 18046, 18047, 18048, 18049, 7053]);

/**
 * Whether `type` (or a union member, a type argument, an alias of it, one level down) was
 * written in the declarations: a tool, its input or its result.
 * @param {import('typescript').TypeChecker} checker
 * @param {import('typescript').Type | undefined} type
 * @param {number} depth
 * @returns {boolean}
 */
function declaredType(checker, type, depth = 0) {
  if (!type || depth > 2) return false;
  const symbols = [type.getSymbol(), type.aliasSymbol];
  if (symbols.some((s) => s?.declarations?.some((d) => d.getSourceFile().fileName === DECLARED))) return true;
  const parts = [...(type.isUnionOrIntersection() ? type.types : []), ...(type.aliasTypeArguments ?? []), ...checker.getTypeArguments(/** @type {import('typescript').TypeReference} */ (type))];
  return parts.some((t) => declaredType(checker, t, depth + 1));
}

/**
 * Whether the diagnostic at `node` is about the declared tools: `node` or one of its nearest
 * ancestors names something the declarations declare, or has a type they wrote.
 * @param {typeof import('typescript')} ts
 * @param {import('typescript').TypeChecker} checker
 * @param {import('typescript').Node} node
 */
function aboutTools(ts, checker, node) {
  /** @type {import('typescript').Node | undefined} */
  let at = node;
  for (let i = 0; at && !ts.isSourceFile(at) && !ts.isStatement(at); i++, at = at.parent) {
    // The call of a declared tool, however deep in its argument the diagnostic is.
    if (ts.isCallExpression(at) && declaredType(checker, checker.getTypeAtLocation(at.expression))) return true;
    if (i >= 4) continue;
    const symbol = checker.getSymbolAtLocation(at);
    if (symbol?.declarations?.some((d) => d.getSourceFile().fileName === DECLARED)) return true;
    if (ts.isExpression(at) && declaredType(checker, checker.getTypeAtLocation(at))) return true;
    if (ts.isPropertyAccessExpression(at) || ts.isElementAccessExpression(at)) {
      const object = checker.getTypeAtLocation(at.expression);
      if (declaredType(checker, object)) return true;
      // A property a Promise does not have (an await left out), or one read off a string,
      // number or boolean: never what a program means, whatever it was given.
      const missing = node === (/** @type {import('typescript').PropertyAccessExpression} */ (at)).name;
      if (missing && object.getSymbol()?.getName() === 'Promise') return true;
      if (missing && object.flags & (ts.TypeFlags.StringLike | ts.TypeFlags.NumberLike | ts.TypeFlags.BooleanLike | ts.TypeFlags.BigIntLike)) return true;
    }
  }
  return false;
}

/**
 * Whether a diagnostic counts (docs/typecheck.md, "Which errors count").
 * @param {typeof import('typescript')} ts
 * @param {import('typescript').Diagnostic} d
 * @param {string} message flattened
 * @param {boolean} typescript
 * @param {import('typescript').SourceFile | undefined} file
 * @param {import('typescript').TypeChecker | undefined} checker
 */
function counts(ts, d, message, typescript, file, checker) {
  const { code } = d;
  if (code >= 7000 && code < 8000 && !KEPT_IMPLICIT_ANY.has(code)) return false;
  if (MODULE_NOT_FOUND.has(code)) return false;
  if (!typescript && WIDENED.test(message)) return false;
  if (file && d.start !== undefined) {
    const node = nodeAt(ts, file, d.start);
    // `typeof name` of a name not declared is how JavaScript asks whether it exists.
    if (ts.isIdentifier(node) && node.parent && ts.isTypeOfExpression(node.parent)) return false;
    // `import('fs')`: a module the run resolves (and refuses), not a name.
    if (ts.isStringLiteral(node) && node.parent && ts.isCallExpression(node.parent) && node.parent.expression.kind === ts.SyntaxKind.ImportKeyword) return false;
    // `o.extra = value` on a plain object is an expando in JavaScript.
    if (!typescript && code === NO_SUCH_PROPERTY && ts.isIdentifier(node)) {
      const access = node.parent;
      const assigned = access?.parent;
      if (access && ts.isPropertyAccessExpression(access) && access.name === node && assigned && ts.isBinaryExpression(assigned) && assigned.left === access && assigned.operatorToken.kind === ts.SyntaxKind.EqualsToken) return false;
    }
    // JavaScript is held to the declarations, not to the compiler's view of plain JavaScript:
    // a diagnostic counts when it is about a declared tool (its name, its input, its result) or
    // names something nothing declares. `({}).polluted`, `a < b > c`, a thenable returned, a
    // prototype patched: valid JavaScript the compiler dislikes, none of them a run gone wrong.
    if (!typescript && !UNKNOWN_NAME.has(code) && checker) {
      if (!TOOL_MISTAKES.has(code) || !aboutTools(ts, checker, node)) return false;
    }
  }
  return true;
}

/**
 * @typedef {{ line: number, column: number, message: string, code: number }} Diagnostic
 */

class Checker {
  /**
   * @param {typeof import('typescript')} ts
   * @param {string} globals the sandbox's globals (sandboxGlobals)
   * @param {string} declarations the providers' declarations
   */
  constructor(ts, globals, declarations) {
    const fs = require('node:fs');
    const libDir = path.dirname(require.resolve('typescript'));
    // The one real file a check reads: one of the compiler's own library files. Nothing a
    // program or a declaration names (a path, an import) reaches the host's disk.
    const isLib = (/** @type {string} */ f) => path.dirname(f) === libDir && /^lib\.[\w.]+\.d\.ts$/.test(path.basename(f)) && fs.existsSync(f);
    /** @type {Map<string, string>} */
    const files = new Map([
      ['/sandbox.d.ts', globals],
      ['/tools.d.ts', declarations],
    ]);
    this.ts = ts;
    this.version = 0;
    this.name = '/program.js';
    this.text = '';
    const options = { ...OPTIONS, lib: OPTIONS.lib };
    /** @type {import('typescript').LanguageServiceHost} */
    const host = {
      getScriptFileNames: () => ['/sandbox.d.ts', '/tools.d.ts', this.name],
      getScriptVersion: (f) => (f === this.name ? String(this.version) : '0'),
      getScriptSnapshot: (f) => {
        const text = f === this.name ? this.text : files.get(f) ?? (isLib(f) ? fs.readFileSync(f, 'utf8') : undefined);
        return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
      },
      getCurrentDirectory: () => '/',
      getCompilationSettings: () => /** @type {import('typescript').CompilerOptions} */ (options),
      getDefaultLibFileName: (o) => path.join(libDir, ts.getDefaultLibFileName(o)),
      fileExists: (f) => f === this.name || files.has(f) || isLib(f),
      readFile: (f) => (f === this.name ? this.text : files.get(f) ?? (isLib(f) ? fs.readFileSync(f, 'utf8') : undefined)),
    };
    this.service = ts.createLanguageService(host, ts.createDocumentRegistry());
  }

  /**
   * The first diagnostics of `code` (at most five), positions in the code as written, and how
   * many there were.
   * @param {string} code
   * @param {boolean} typescript whether to check it as TypeScript
   * @returns {{ diagnostics: Diagnostic[], count: number, typescriptOnly: boolean, unreadable: boolean }}
   *   (`unreadable`: a syntax error, left to the run to report; no diagnostics then)
   */
  check(code, typescript) {
    const { ts } = this;
    this.name = typescript ? '/program.ts' : '/program.js';
    this.text = PREFIX + code + SUFFIX;
    this.version++;
    const syntactic = this.service.getSyntacticDiagnostics(this.name);
    // TypeScript syntax in a JavaScript check (8000-8999: "... can only be used in TypeScript
    // files"): the caller checks it again as TypeScript.
    const typescriptOnly = !typescript && syntactic.some((d) => d.code >= 8000 && d.code < 9000);
    // A syntax error is the run's to report (SYNTAX_ERROR, with the worker's own text): the
    // check says nothing of a program it cannot read.
    if (!typescriptOnly && syntactic.length > 0) return { diagnostics: [], count: 0, typescriptOnly, unreadable: true };
    const all = [...syntactic, ...this.service.getSemanticDiagnostics(this.name)];
    const source = this.service.getProgram()?.getSourceFile(this.name);
    const found = all
      .map((d) => ({ d, message: ts.flattenDiagnosticMessageText(d.messageText, ' ') }))
      .filter(({ d, message }) => counts(ts, d, message, typescript, source, this.service.getProgram()?.getTypeChecker()));
    /** @type {Diagnostic[]} */
    const diagnostics = [];
    for (const { d, message } of found.slice(0, MAX_DIAGNOSTICS)) {
      const at = d.start === undefined || !source ? { line: 0, character: PREFIX.length } : source.getLineAndCharacterOfPosition(d.start);
      const column = at.line === 0 ? at.character - PREFIX.length : at.character;
      diagnostics.push({ line: at.line + 1, column: Math.max(0, column) + 1, message, code: d.code });
    }
    return { diagnostics, count: found.length, typescriptOnly, unreadable: false };
  }
}

module.exports = { Checker, OPTIONS, MAX_DIAGNOSTICS };
