// @ts-check
'use strict';
// Type-check before run (docs/typecheck.md): a program is checked against its providers'
// TypeScript declarations on a thread of its own (thread.js); on a type error the run does not
// start, and the outcome is the program failure `TYPE_ERROR`, its text listing the first
// diagnostics with their lines. The compiler (`typescript`) is an optional peer, loaded only
// when a request asks for a check.

const { fault } = require('../errors');
const { limits } = require('../native');
const { LANGUAGE_GLOBALS } = require('../validate');

/** The compiler, an optional peer (package.json `peerDependencies`). */
const PEER = { package: 'typescript', version: '6' };
/** How `TYPE_ERROR`'s text lists one diagnostic's place, at the start of its line. */
const LISTED = /^- line (\d+), column (\d+):/gm;
/** @param {{ line: number, column: number }} at */
const listedPlace = (at) => `- line ${at.line}, column ${at.column}:`;

/**
 * Throws PEER_MISSING when the compiler is not installed.
 * @param {string} feature what asks for the check (`typecheck`, `codeModeTool's typecheck`, ...)
 */
function needCompiler(feature) {
  try {
    require.resolve('typescript');
  } catch {
    throw fault('PEER_MISSING', { feature, ...PEER, problem: 'it is not installed' });
  }
}

/** @type {import('node:worker_threads').Worker | null} */
let thread = null;
let nextId = 1;
/** @type {Map<number, { resolve: (v: any) => void, reject: (e: unknown) => void }>} */
const waiting = new Map();

/** The checking thread, started on first use; it keeps no host alive while nothing waits. */
function started() {
  if (thread) return thread;
  needCompiler('typecheck');
  const { Worker } = require('node:worker_threads');
  const t = new Worker(require.resolve('./thread.js'), { workerData: { globals: [...limits().runtimeGlobals, ...LANGUAGE_GLOBALS] } });
  t.unref();
  t.on('message', (/** @type {{ id: number, error?: string }} */ m) => {
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (waiting.size === 0) t.unref();
    if (m.error !== undefined) w.reject(fault('INTERNAL', { detail: `the type checker failed: ${m.error}` }));
    else w.resolve(m);
  });
  t.on('error', (e) => {
    thread = null;
    for (const w of waiting.values()) w.reject(fault('INTERNAL', { detail: `the type checker's thread failed: ${e.message}` }));
    waiting.clear();
  });
  thread = t;
  return t;
}

/**
 * Checks `code` against `declarations`: the first diagnostics (at most five) and their count.
 * @param {string} code
 * @param {string} declarations
 * @returns {Promise<{ diagnostics: import('./checker').Diagnostic[], count: number }>}
 */
function check(code, declarations) {
  const t = started();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    t.ref();
    t.postMessage({ id, code, declarations });
  });
}

/**
 * The `TYPE_ERROR` outcome of a program that did not check: nothing ran.
 * @param {{ diagnostics: import('./checker').Diagnostic[], count: number }} found
 * @returns {import('../../index').Outcome}
 */
function typeErrorOutcome(found) {
  const { render } = require('../errors');
  const listed = found.diagnostics.map((d) => `${listedPlace(d)} ${d.message}`).join('\n');
  const more = found.count > found.diagnostics.length ? `\n- and ${found.count - found.diagnostics.length} more` : '';
  const first = found.diagnostics[0];
  return {
    result: undefined,
    error: { code: 'TYPE_ERROR', message: render('TYPE_ERROR', { count: String(found.count), diagnostics: `\n${listed}${more}\n` }), line: first?.line, column: first?.column },
    logs: [],
    stats: { wallMs: 0, cpuMs: 0, heapPeakBytes: 0, buffersPeakBytes: 0, toolCalls: 0, workerPid: 0, cpuBudgetMs: 0, fetches: 0 },
    calls: [],
  };
}

module.exports = { check, typeErrorOutcome, needCompiler, LISTED, listedPlace };
