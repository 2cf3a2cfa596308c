// @ts-check
'use strict';
// Which JavaScript runtime hosts the package: Node, Bun or Deno. Each loads the same addon
// (N-API); they differ in what the addon may take from them: only Node's event loop is libuv's,
// which the addon reads the workers' output on (src/uv.rs). Elsewhere each worker is read on a
// thread of its own and its frames reach JavaScript through N-API's threadsafe functions alone.

/** @typedef {'node' | 'bun' | 'deno'} Runtime */

/** @returns {Runtime} */
function runtime() {
  if (typeof process.versions.bun === 'string') return 'bun';
  if (typeof (/** @type {{ Deno?: unknown }} */ (globalThis).Deno) !== 'undefined') return 'deno';
  return 'node';
}

/**
 * Whether the addon may drive the workers' pipes with the host's libuv loop: on Node, unless
 * CODEMODE_READER_THREADS=1 asks for the reader threads every other host uses (the suite runs
 * them on Node too).
 */
function hostLoop() {
  return runtime() === 'node' && process.env.CODEMODE_READER_THREADS !== '1';
}

module.exports = { runtime, hostLoop };
