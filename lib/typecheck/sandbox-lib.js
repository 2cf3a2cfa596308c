// @ts-check
'use strict';
// The TypeScript library a program is checked against: the language's own (ES2024) and, of the
// web platform's declarations (the compiler's lib.webworker.d.ts), every interface and type but
// only the globals the sandbox's runtime really installs (`limits().runtimeGlobals`, the list
// the worker's runtime.js is held to). Generated from that list on first use, so it cannot
// drift: a global the runtime drops is an unknown name to the checker the next time.

/**
 * @param {typeof import('typescript')} ts
 * @param {string} libDir the compiler's lib directory
 * @param {readonly string[]} runtimeGlobals
 * @returns {string} the declarations of the sandbox's globals
 */
function sandboxGlobals(ts, libDir, runtimeGlobals) {
  const fs = require('node:fs');
  const path = require('node:path');
  const allowed = new Set(runtimeGlobals);
  const text = fs.readFileSync(path.join(libDir, 'lib.webworker.d.ts'), 'utf8');
  const file = ts.createSourceFile('lib.webworker.d.ts', text, ts.ScriptTarget.Latest, false);
  const kept = [];
  for (const statement of file.statements) {
    // A value at global scope: kept only when the runtime installs it.
    if (ts.isVariableStatement(statement)) {
      const names = statement.declarationList.declarations.map((d) => d.name.getText(file));
      if (names.every((n) => allowed.has(n))) kept.push(statement.getFullText(file));
    } else if (ts.isFunctionDeclaration(statement)) {
      if (statement.name && allowed.has(statement.name.text)) kept.push(statement.getFullText(file));
    } else if (ts.isModuleDeclaration(statement)) {
      // `declare namespace WebAssembly { ... }` and the like hold values.
      if (allowed.has(statement.name.getText(file))) kept.push(statement.getFullText(file));
    } else {
      // Interfaces and type aliases name shapes, not values.
      kept.push(statement.getFullText(file));
    }
  }
  return kept.join('');
}

module.exports = { sandboxGlobals };
