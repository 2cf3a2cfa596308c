'use strict';
// normalizeCode as @cloudflare/codemode 0.5.x does it (acorn; docs: ../../docs/dialect-deviations.md
// lists where this differs). Import declarations are lifted out first, so a program can import
// from ExtendedExecuteOptions.modules.

const acorn = require('acorn');

const FENCE = /^```(js|javascript|typescript|ts|tsx|jsx)?\s*\n([\s\S]*?)```\s*$/;

function parse(src) {
  return acorn.parse(src, { ecmaVersion: 'latest', sourceType: 'module' });
}

/**
 * @param {string} code
 * @returns {{ imports: string, code: string }} the lifted import declarations and one
 *   expression that evaluates to a function.
 */
function normalizeCode(code) {
  const trimmed = String(code).trim();
  const fenced = FENCE.exec(trimmed);
  let src = fenced ? fenced[2] : trimmed;
  if (src.trim() === '') return { imports: '', code: 'async () => {}' };
  let ast;
  try {
    ast = parse(src);
  } catch {
    // As the reference: an unparsable program (a top-level `return`, say) becomes a body.
    return { imports: '', code: `async () => {\n${src}\n}` };
  }
  let imports = '';
  const importNodes = ast.body.filter((n) => n.type === 'ImportDeclaration');
  if (importNodes.length > 0) {
    imports = importNodes.map((n) => src.slice(n.start, n.end)).join('\n');
    // Blank the imports out in place, keeping offsets (and line numbers) of the rest.
    let rest = src;
    for (const n of importNodes) rest = rest.slice(0, n.start) + ' '.repeat(n.end - n.start) + rest.slice(n.end);
    src = rest;
    ast = parse(src);
  }
  return { imports, code: normalizeBody(src, ast.body.filter((n) => n.type !== 'ImportDeclaration')) };
}

function normalizeBody(src, body) {
  if (body.length === 0) return 'async () => {}';
  const text = (n) => src.slice(n.start, n.end);
  if (body.length === 1) {
    const only = body[0];
    if (only.type === 'ExpressionStatement' && only.expression.type === 'ArrowFunctionExpression') {
      // The reference returns the statement unchanged, trailing `;` included, which then fails
      // to load; without the `;` is what was meant (a listed deviation).
      return text(only).replace(/;\s*$/, '');
    }
    if (only.type === 'ExportDefaultDeclaration') {
      const d = only.declaration;
      if ((d.type === 'FunctionDeclaration' || d.type === 'FunctionExpression') && !d.id) {
        return `async () => {\nreturn (${text(d)})();\n}`;
      }
      if ((d.type === 'ClassDeclaration' || d.type === 'ClassExpression') && !d.id) {
        return `async () => {\nreturn (${text(d)});\n}`;
      }
      return normalizeCode(text(d)).code;
    }
    if (only.type === 'FunctionDeclaration' && only.id) {
      return `async () => {\n${src.slice(only.start, only.end)}\nreturn ${only.id.name}();\n}`;
    }
  }
  const last = body[body.length - 1];
  const start = body[0].start;
  if (last.type === 'ExpressionStatement') {
    return `async () => {\n${src.slice(start, last.start)}return (${text(last.expression)})\n}`;
  }
  return `async () => {\n${src.slice(start, last.end)}\n}`;
}

module.exports = { normalizeCode };
