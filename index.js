'use strict';
// @supolka/codemode-executor: run model-written JavaScript in fresh V8 isolates inside
// supervised worker processes. See index.d.ts for the documented API.

const { IsolateExecutor } = require('./lib/isolate-executor');
const { ExecutorError, failures } = require('./lib/errors');
const { CodemodeExecutor } = require('./lib/codemode-executor');

/** The failure grammar: every code with its kind, retryability, when it happens, and text. */
function failureCatalog() {
  return [...failures().values()].map((e) => ({ ...e }));
}

module.exports = { IsolateExecutor, CodemodeExecutor, ExecutorError, failureCatalog };
