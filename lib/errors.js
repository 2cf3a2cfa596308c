'use strict';
// ExecutorError and the failure grammar as the addon declares it (one table, in Rust:
// crates/protocol/src/failures.rs). This file only renders its templates.

const { loadNative } = require('./native');

let catalog = null;
function failures() {
  if (!catalog) {
    catalog = new Map();
    for (const entry of loadNative().binding.failureCatalog()) catalog.set(entry.code, entry);
  }
  return catalog;
}

/** Fills `{name}` placeholders of the code's text. */
function render(code, vars = {}) {
  const entry = failures().get(code);
  if (!entry) return `${code}`;
  return entry.text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
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

function fault(code, vars) {
  return new ExecutorError(code, render(code, vars));
}

module.exports = { ExecutorError, fault, render, failures };
