// @ts-check
'use strict';
// The code the executor runs for the model's: its expression wrapped so that the value it returns
// comes back as JSON text made inside the sandbox (json.js reads it), every other line and column
// as the model wrote them; and a failure's place counted back into the code the model wrote.

const acorn = require('acorn');
const { loadNative } = require('../native');
const { JSON_TAG } = require('./json');
const { moveListedPlaces } = require('../model/type-errors');

/**
 * The 1-based line and column (UTF-16 units) at which the model's expression starts, and so the
 * wrapper around it (`HEAD`).
 * @typedef {{ line: number, column: number }} Entry
 */

/**
 * What goes in front of the model's expression (with `TAIL` after it), on the expression's own
 * line: a function that calls the model's function as the executor would (no arguments, no
 * `this`), awaits it, and answers `{ [JSON_TAG]: 'json', detail: <JSON text> }`, or `'threw'`
 * with what JSON.stringify threw, or `'none'` with the type of a value JSON has none for.
 * JSON.stringify is taken before the model's expression is evaluated. A value that is not a
 * function passes through, for the executor's own ENTRY_SHAPE. One line: only the columns of
 * that line after it move, by its length (`placed` counts them back).
 */
const HEAD = `((s) => (f) => typeof f !== 'function' ? f : async () => { const v = await f(); if (v === undefined) return v; let t; try { t = s(v); } catch (e) { let d; try { d = e instanceof Error ? e.name + ': ' + e.message : String(e); } catch { d = 'a value that cannot be named'; } return { '${JSON_TAG}': 'threw', detail: d }; } return t === undefined ? { '${JSON_TAG}': 'none', detail: typeof v } : { '${JSON_TAG}': 'json', detail: t }; })(JSON.stringify)((`;
const TAIL = '))';

/**
 * acorn, reading the model's code here only to find its expression: without acorn's lists of
 * declared names, so the parse is linear whatever the declarations (the worker reports a
 * redeclaration itself).
 */
const EntryParser = acorn.Parser.extend(
  (Base) =>
    /** @type {typeof acorn.Parser} */ (/** @type {unknown} */ (class extends /** @type {new (...args: any[]) => object} */ (/** @type {unknown} */ (Base)) {
      declareName() {}
    })),
);

/** @param {string} src @returns {acorn.Program | null} */
function parseEntry(src) {
  try {
    return EntryParser.parse(src, { ecmaVersion: 'latest', sourceType: 'module', locations: true });
  } catch {
    return null;
  }
}

/**
 * The code the executor runs for the model's: its expression wrapped in `HEAD` and `TAIL`, every
 * other line and column as the model wrote them (TypeScript goes with its types blanked, as the
 * worker blanks them). Code that is not the entry shape, or that cannot be read here, goes as it
 * is, for the executor to report (entry null); code too long or too deeply nested for a parser on
 * this thread is not read at all. With `keepTypes` (a program type-checked before it runs), the
 * wrapper goes around the TypeScript as written, for the check to read its types: blanking keeps
 * every place, so the expression found in the blanked code is at the same place in it.
 * @param {string} code
 * @param {boolean} [keepTypes]
 * @returns {{ code: string, entry: Entry | null }}
 */
function wrapEntry(code, keepTypes = false) {
  const binding = loadNative().binding;
  if (binding.checkProgram(code) != null) return { code, entry: null };
  let src = code;
  let ast = parseEntry(src);
  if (!ast) {
    const stripped = binding.stripTypes(code).code;
    if (typeof stripped !== 'string') return { code, entry: null };
    src = stripped;
    ast = parseEntry(src);
    if (!ast) return { code, entry: null };
  }
  const body = ast.body.filter((n) => n.type !== 'EmptyStatement');
  const last = body[body.length - 1];
  if (last?.type !== 'ExpressionStatement' || body.slice(0, -1).some((n) => n.type !== 'ImportDeclaration')) return { code, entry: null };
  const { start, end, loc } = last.expression;
  if (!loc) return { code, entry: null };
  const out = keepTypes && src.length === code.length ? code : src;
  return { code: out.slice(0, start) + HEAD + out.slice(start, end) + TAIL + out.slice(end), entry: { line: loc.start.line, column: loc.start.column + 1 } };
}

/**
 * A failure with its place counted in the code the model wrote: on the expression's first line,
 * the columns after the wrapper move back by its length (in `column` and the text's `(line L,
 * column C)`). A place inside the wrapper (its call of the model's function: a class called
 * without `new`) is none in the model's code, as when the executor calls the function: dropped.
 * A `TYPE_ERROR`'s listed diagnostics move back the same way.
 * @param {import('../../index').ProgramError} error
 * @param {Entry | null} entry
 */
function placed(error, entry) {
  const out = { ...error };
  if (entry && out.code === 'TYPE_ERROR') {
    out.message = moveListedPlaces(out.message, (line, column) => ({ line, column: line === entry.line && column >= entry.column + HEAD.length ? column - HEAD.length : column }));
  }
  if (!entry || out.module !== undefined || out.line !== entry.line || typeof out.column !== 'number' || out.column < entry.column) return out;
  const at = `(line ${out.line}, column ${out.column})`;
  const i = out.message.lastIndexOf(at);
  if (out.column < entry.column + HEAD.length) {
    if (i >= 0) out.message = `${out.message.slice(0, i).replace(/ $/, '')}${out.message.slice(i + at.length)}`;
    delete out.line;
    delete out.column;
    return out;
  }
  const column = out.column - HEAD.length;
  if (i >= 0) out.message = `${out.message.slice(0, i)}(line ${out.line}, column ${column})${out.message.slice(i + at.length)}`;
  out.column = column;
  return out;
}

module.exports = { wrapEntry, placed };
