// @ts-check
'use strict';
// The one rule that makes a tool's name an identifier a program calls, and the provider and
// connector names @cloudflare/codemode 0.5.x validates. Every surface that names tools for the
// model (the dialect, the MCP gateway's servers, codeModeTool) goes through `toolIdentifier`.

/** @type {Set<unknown>} */
const RESERVED_NAMES = new Set([
  '__dispatchers', '__connectors', '__logs', '__CODEMODE_BINARY_TAG', '__bytesToBase64', '__base64ToBytes',
  '__encodeCodemodeValue', '__decodeCodemodeValue', '__stringifyForCodemode', '__parseForCodemode',
  'WorkerEntrypoint', 'CodeExecutor', 'Promise', 'setTimeout', 'Error', 'console',
]);

const IDENTIFIER = /^[a-zA-Z_$][a-zA-Z0-9_$]*$/;

const RESERVED_WORDS = new Set([
  'break', 'case', 'catch', 'class', 'const', 'continue', 'debugger', 'default', 'delete', 'do', 'else', 'export',
  'extends', 'finally', 'for', 'function', 'if', 'import', 'in', 'instanceof', 'new', 'return', 'super', 'switch',
  'this', 'throw', 'try', 'typeof', 'var', 'void', 'while', 'with', 'yield', 'let', 'static', 'enum', 'await',
  'implements', 'package', 'protected', 'interface', 'private', 'public', 'abstract', 'boolean', 'byte', 'char',
  'double', 'final', 'float', 'goto', 'int', 'long', 'native', 'short', 'synchronized', 'throws', 'transient',
  'volatile', 'arguments', 'eval', 'undefined', 'null', 'true', 'false',
]);

/**
 * A tool name made an identifier: `-`, `.` and spaces become `_`, other characters outside
 * identifiers go, a leading digit gets `_`, nothing at all is `_`. With `bare`, a reserved word
 * gets a trailing `_` too (the name stands alone, as @cloudflare/codemode 0.5.x sanitizes it);
 * without, reserved words stay (the name is a method, written `server.delete(...)`).
 * @param {unknown} name
 * @param {{ bare?: boolean }} [how]
 */
function toolIdentifier(name, how) {
  let s = name ? String(name).replace(/[-.\s]/g, '_').replace(/[^a-zA-Z0-9_$]/g, '') : '';
  if (s === '') return '_';
  if (/^[0-9]/.test(s)) s = '_' + s;
  if (how?.bare && RESERVED_WORDS.has(s)) s += '_';
  return s;
}

/** @param {unknown} name the name as @cloudflare/codemode 0.5.x's sanitizeToolName gives it */
function sanitizeToolName(name) {
  return toolIdentifier(name, { bare: true });
}

/**
 * The reference's up-front refusal for a provider list and connectors, or null.
 * @param {Array<{ name: unknown }>} providers
 * @param {Array<{ name: unknown }>} connectors
 * @returns {string | null}
 */
function validateNames(providers, connectors) {
  const seen = new Set();
  for (const p of providers) {
    if (RESERVED_NAMES.has(p.name)) return `Provider name "${p.name}" is reserved`;
    if (!IDENTIFIER.test(String(p.name))) return `Provider name "${p.name}" is not a valid JavaScript identifier`;
    if (seen.has(p.name)) return `Duplicate provider name "${p.name}"`;
    seen.add(p.name);
  }
  for (const c of connectors) {
    if (RESERVED_NAMES.has(c.name)) return `Connector name "${c.name}" is reserved`;
    if (!IDENTIFIER.test(String(c.name))) return `Connector name "${c.name}" is not a valid JavaScript identifier`;
    if (seen.has(c.name)) return `Duplicate name "${c.name}" (connector clashes with provider)`;
    seen.add(c.name);
  }
  return null;
}

module.exports = { toolIdentifier, sanitizeToolName, validateNames, RESERVED_NAMES };
