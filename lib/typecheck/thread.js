// @ts-check
'use strict';
// The thread checks run on (lib/typecheck/index.js): it holds a warm checker per declaration set
// (the last CHECKERS used), so a check does not block the host's thread, and a gateway's or a
// codeModeTool's declarations, which rarely change, are parsed once.

const { parentPort, workerData } = require('node:worker_threads');
const { Checker } = require('./checker');
const { sandboxGlobals } = require('./sandbox-lib');

const CHECKERS = 8;
const ts = require('typescript');
const path = require('node:path');
const globals = sandboxGlobals(ts, path.dirname(require.resolve('typescript')), workerData.globals);
/** @type {Map<string, Checker>} by declarations, the least recently used first */
const checkers = new Map();

/**
 * The checker of `declarations`, made on first use.
 * @param {string} declarations
 */
function checkerOf(declarations) {
  let checker = checkers.get(declarations);
  if (checker) checkers.delete(declarations);
  else {
    checker = new Checker(ts, globals, declarations);
    if (checkers.size >= CHECKERS) checkers.delete(/** @type {string} */ (checkers.keys().next().value));
  }
  checkers.set(declarations, checker);
  return checker;
}

parentPort?.on('message', (/** @type {{ id: number, code: string, declarations: string }} */ m) => {
  try {
    const checker = checkerOf(m.declarations);
    let found = checker.check(m.code, false);
    if (found.typescriptOnly) found = checker.check(m.code, true);
    parentPort?.postMessage({ id: m.id, diagnostics: found.diagnostics, count: found.count });
  } catch (e) {
    parentPort?.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) });
  }
});
