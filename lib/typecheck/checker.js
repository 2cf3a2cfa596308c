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
const WIDENED = /Type '(string|number|boolean)' is not assignable to (type|parameter of type) '(("[^"]*"|-?[\d.]+|true|false)( \| )?)+'\.?$/;

/**
 * Whether a diagnostic counts (docs/typecheck.md, "Which errors count").
 * @param {number} code
 * @param {string} message flattened
 * @param {boolean} typescript
 */
function counts(code, message, typescript) {
  if (code >= 7000 && code < 8000 && !KEPT_IMPLICIT_ANY.has(code)) return false;
  if (!typescript && WIDENED.test(message)) return false;
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
        const text = f === this.name ? this.text : files.get(f) ?? (f.startsWith(libDir) && fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : undefined);
        return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
      },
      getCurrentDirectory: () => '/',
      getCompilationSettings: () => /** @type {import('typescript').CompilerOptions} */ (options),
      getDefaultLibFileName: (o) => path.join(libDir, ts.getDefaultLibFileName(o)),
      fileExists: (f) => f === this.name || files.has(f) || (f.startsWith(libDir) && fs.existsSync(f)),
      readFile: (f) => (f === this.name ? this.text : files.get(f) ?? (f.startsWith(libDir) && fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : undefined)),
    };
    this.service = ts.createLanguageService(host, ts.createDocumentRegistry());
  }

  /**
   * The first diagnostics of `code` (at most five), positions in the code as written, and how
   * many there were.
   * @param {string} code
   * @param {boolean} typescript whether to check it as TypeScript
   * @returns {{ diagnostics: Diagnostic[], count: number, typescriptOnly: boolean }}
   */
  check(code, typescript) {
    const { ts } = this;
    this.name = typescript ? '/program.ts' : '/program.js';
    this.text = PREFIX + code + SUFFIX;
    this.version++;
    const all = [...this.service.getSyntacticDiagnostics(this.name), ...this.service.getSemanticDiagnostics(this.name)];
    const found = all
      .map((d) => ({ d, message: ts.flattenDiagnosticMessageText(d.messageText, ' ') }))
      .filter(({ d, message }) => counts(d.code, message, typescript));
    const source = this.service.getProgram()?.getSourceFile(this.name);
    /** @type {Diagnostic[]} */
    const diagnostics = [];
    for (const { d, message } of found.slice(0, MAX_DIAGNOSTICS)) {
      const at = d.start === undefined || !source ? { line: 0, character: PREFIX.length } : source.getLineAndCharacterOfPosition(d.start);
      const column = at.line === 0 ? at.character - PREFIX.length : at.character;
      diagnostics.push({ line: at.line + 1, column: Math.max(0, column) + 1, message, code: d.code });
    }
    // TypeScript syntax in a JavaScript check (8000-8999: "... can only be used in TypeScript
    // files"): the caller checks it again as TypeScript.
    const typescriptOnly = !typescript && all.some((d) => d.code >= 8000 && d.code < 9000);
    return { diagnostics, count: found.length, typescriptOnly };
  }
}

module.exports = { Checker, OPTIONS, MAX_DIAGNOSTICS };
