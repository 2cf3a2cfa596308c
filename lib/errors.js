// @ts-check
'use strict';
// ExecutorError and the failure grammar as the addon declares it (one table and one renderer, in
// Rust: crates/protocol/src/failures.rs, reached through the addon's failureCatalog and
// renderFailure).

const { loadNative } = require('./native');

/** @typedef {import('../native').FailureEntry} FailureEntry */

/** @type {Map<string, FailureEntry> | null} */
let catalog = null;
/** @returns {Map<string, FailureEntry>} code -> entry */
function failures() {
  if (!catalog) {
    catalog = new Map();
    for (const entry of loadNative().binding.failureCatalog()) catalog.set(entry.code, entry);
  }
  return catalog;
}

/**
 * The code's text with its `{name}` placeholders filled (values as `String()` writes them).
 * @param {string} code
 * @param {Record<string, unknown>} [vars]
 */
function render(code, vars = {}) {
  /** @type {Record<string, string>} */
  const text = {};
  for (const [name, value] of Object.entries(vars)) text[name] = String(value);
  return loadNative().binding.renderFailure(code, text);
}

class ExecutorError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {boolean} [retryable]
   */
  constructor(code, message, retryable) {
    super(message);
    this.name = 'ExecutorError';
    this.code = code;
    this.retryable = retryable ?? Boolean(failures().get(code)?.retryable);
  }
}

/**
 * The fault `code` with its rendered text.
 * @param {string} code
 * @param {Record<string, unknown>} [vars]
 */
function fault(code, vars) {
  return new ExecutorError(code, render(code, vars));
}

/**
 * An error the addon threw: its `code` is a failure code when it reports a fault (napi makes the
 * Rust error's status the JS error's `code`), which becomes an ExecutorError; anything else is
 * rethrown as it is.
 * @param {unknown} e
 * @returns {unknown}
 */
function fromNative(e) {
  if (e instanceof Error && 'code' in e && typeof e.code === 'string' && failures().has(e.code)) {
    return new ExecutorError(e.code, e.message);
  }
  return e;
}

/** Marks an Error a host's dispatch throws to deny a call, as approval would (`denial`). */
const DENIAL = Symbol('codemode.denial');

/**
 * The error a dispatch of this package throws to deny a call as approval would (codeModeTool's
 * check of a resumed call): the call rejects inside the sandbox as a denial, with the
 * `APPROVAL_DENIED` code, and the audit trail says `denied`.
 * @param {string} provider
 * @param {string} tool
 * @param {string} reason
 * @returns {Error}
 */
function denial(provider, tool, reason) {
  const e = new Error(render('APPROVAL_DENIED', { provider, tool, reason }));
  Object.defineProperty(e, DENIAL, { value: true });
  return e;
}

/**
 * Whether `e` is a {@link denial}.
 * @param {unknown} e
 */
function isDenial(e) {
  return e instanceof Error && Object.hasOwn(e, DENIAL);
}

module.exports = { ExecutorError, fault, fromNative, render, failures, denial, isDenial };
