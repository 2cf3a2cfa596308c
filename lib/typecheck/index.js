// @ts-check
'use strict';
// Type-check before run (docs/typecheck.md): a program is checked against its providers'
// TypeScript declarations on a thread of its own (thread.js); on a type error the run does not
// start, and the outcome is the program failure `TYPE_ERROR`, its text listing the first
// diagnostics with their lines. The compiler (`typescript`) is an optional peer, loaded only
// when a request asks for a check.

const { fault } = require('../errors');
const { limits, loadNative } = require('../native');
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

/**
 * The most a check may take before it is given up (ms): the checker's thread is ended and a new
 * one started for the next check. A check is a help to the model, not a bound on the program,
 * so a program the checker could not finish with (a pathological type, its thread's memory
 * spent) runs unchecked, as without `typecheck`, rather than being refused for the checker's
 * sake; and no program holds the checks of every other behind it.
 */
const CHECK_TIMEOUT_MS = 10_000;
/** The checker thread's heap (MiB): a program cannot make it take the host's memory. */
const CHECK_HEAP_MIB = 512;

/**
 * @typedef {{ diagnostics: import('./checker').Diagnostic[], count: number, unchecked?: string }} Found
 *   `unchecked`: why the program was not checked (it then runs as without `typecheck`)
 */

/** @type {import('node:worker_threads').Worker | null} */
let thread = null;
let nextId = 1;
/**
 * @typedef {object} Waiting
 * @property {(v: Found) => void} resolve
 * @property {{ id: number, code: string, declarations: string }} message
 * @property {number} timeoutMs
 * @property {NodeJS.Timeout | undefined} timer running while the check is the thread's (the
 *   first waiting on it: the thread checks one at a time, in order)
 * @property {import('node:worker_threads').Worker | null} thread the thread it was sent to
 */
/** @type {Map<number, Waiting>} */
const waiting = new Map();

/**
 * Ends the checker's thread. The check `id` (or, with none, every check waiting: which one
 * broke the thread is not known) is answered unchecked, for `why`; the others are sent again
 * to a new thread.
 * @param {import('node:worker_threads').Worker} t
 * @param {string} why
 * @param {number} [id]
 */
function giveUp(t, why, id) {
  if (thread === t) thread = null;
  void t.terminate();
  const again = [];
  for (const [key, w] of waiting) {
    if (w.thread !== t) continue;
    clearTimeout(w.timer);
    waiting.delete(key);
    if (id === undefined || key === id) w.resolve({ diagnostics: [], count: 0, unchecked: why });
    else again.push(w);
  }
  for (const w of again) {
    try {
      post(w);
    } catch (e) {
      w.resolve({ diagnostics: [], count: 0, unchecked: `the checker could not start again: ${e instanceof Error ? e.message : String(e)}` });
    }
  }
}

/**
 * The first check waiting on thread `t` (the one it is checking), its time bound started.
 * @param {import('node:worker_threads').Worker} t
 */
function timeHead(t) {
  for (const w of waiting.values()) {
    if (w.thread !== t) continue;
    if (!w.timer) {
      w.timer = setTimeout(() => giveUp(t, `the check took more than ${w.timeoutMs} ms`, w.message.id), w.timeoutMs);
      w.timer.unref();
    }
    return true;
  }
  return false;
}

/**
 * Sends a check to the checker's thread; its time bound runs from when the thread reaches it.
 * @param {Waiting} w
 */
function post(w) {
  const t = started();
  w.thread = t;
  w.timer = undefined;
  waiting.set(w.message.id, w);
  t.ref();
  t.postMessage(w.message);
  timeHead(t);
}

/** The checking thread, started on first use; it keeps no host alive while nothing waits. */
function started() {
  if (thread) return thread;
  needCompiler('typecheck');
  const { Worker } = require('node:worker_threads');
  const t = new Worker(require.resolve('./thread.js'), {
    workerData: { globals: [...limits().runtimeGlobals, ...LANGUAGE_GLOBALS] },
    resourceLimits: { maxOldGenerationSizeMb: CHECK_HEAP_MIB },
  });
  t.unref();
  t.on('message', (/** @type {Found & { id: number, error?: string }} */ m) => {
    const w = waiting.get(m.id);
    // An answer a thread sent before it was ended (its check was given up, or sent again to
    // another thread) is not the check's any more.
    if (w && w.thread === t) {
      waiting.delete(m.id);
      clearTimeout(w.timer);
      if (m.error !== undefined) w.resolve({ diagnostics: [], count: 0, unchecked: `the checker failed: ${m.error}` });
      else w.resolve({ diagnostics: m.diagnostics, count: m.count });
    }
    if (!timeHead(t)) t.unref();
  });
  t.on('error', (e) => giveUp(t, `the checker's thread failed: ${e.message}`));
  thread = t;
  return t;
}

/**
 * Checks `code` against `declarations`: the first diagnostics (at most five) and their count,
 * or why it was not checked (`unchecked`: code the executor refuses before reading it, a check
 * past `timeoutMs`, the checker's failure).
 * @param {string} code
 * @param {string} declarations
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<Found>}
 */
function check(code, declarations, { timeoutMs = CHECK_TIMEOUT_MS } = {}) {
  // Code past the bounds the executor reads (CODE_TOO_LARGE, NESTING_TOO_DEEP) is the run's to
  // refuse, with its own text; the compiler, which recurses per level, does not read it.
  const refused = loadNative().binding.checkProgram(code);
  if (refused) return Promise.resolve({ diagnostics: [], count: 0, unchecked: refused });
  started();
  const id = nextId++;
  return new Promise((resolve) => post({ resolve, message: { id, code, declarations }, timeoutMs, timer: undefined, thread: null }));
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

module.exports = { check, typeErrorOutcome, needCompiler, LISTED, listedPlace, CHECK_TIMEOUT_MS, CHECK_HEAP_MIB };
