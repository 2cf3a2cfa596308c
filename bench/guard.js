'use strict';
// The regression guard: this run's headline figures against those committed in
// docs/benchmarks.md (kept there in a comment, `<!-- figures {...} -->`; read from git's HEAD,
// or from the file outside a checkout), each with the noise the
// run measured for it: the spread between its first and its second half. A figure has moved
// when it differs from the committed one by more than twice the larger noise of the two runs,
// and by more than 5% (this machine's speed drifts by about that between runs). It reports; it
// never fails a build (timing goals live here, not in tests).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const MARK = /<!-- figures (\{.*\}) -->/;
const DOC = path.join(__dirname, '..', 'docs', 'benchmarks.md');

/** docs/benchmarks.md as committed (HEAD), else as it is on disk, else empty. */
function committedDoc() {
  try {
    return execFileSync('git', ['show', 'HEAD:docs/benchmarks.md'], { cwd: path.dirname(DOC), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return fs.existsSync(DOC) ? fs.readFileSync(DOC, 'utf8') : '';
  }
}
const FLOOR = 0.05;

/**
 * A figure: its value, its noise (the spread between the run's halves), its unit, and which
 * way is better.
 * @typedef {{ label: string, value: number, noise: number, unit: string, better: 'lower' | 'higher' }} Figure
 */

/** The figures committed in `doc`, or null. @param {string} doc */
function committed(doc) {
  const m = MARK.exec(doc);
  if (!m) return null;
  try {
    return /** @type {Record<string, Figure>} */ (JSON.parse(m[1]));
  } catch {
    return null;
  }
}

/** A figure from a value and its two halves' values. */
function figure(label, value, halves, unit, better = 'lower') {
  return { label, value, noise: Math.abs(halves[0] - halves[1]), unit, better };
}

/**
 * Each figure of `now` beside the committed one: whether it moved, and which way.
 * @param {Record<string, Figure> | null} before
 * @param {Record<string, Figure>} now
 */
function compare(before, now) {
  return Object.entries(now).map(([key, f]) => {
    const b = before?.[key];
    if (!b) return { key, ...f, before: null, verdict: 'new' };
    const allowed = Math.max(2 * Math.max(f.noise, b.noise), FLOOR * b.value);
    const delta = f.value - b.value;
    const better = f.better === 'lower' ? delta < 0 : delta > 0;
    const verdict = Math.abs(delta) <= allowed ? 'within noise' : better ? '**better**' : '**worse**';
    return { key, ...f, before: b.value, allowed, verdict };
  });
}

/** The comment that keeps `now` in the document for the next run. */
const block = (now) => `<!-- figures ${JSON.stringify(now)} -->`;

module.exports = { committedDoc, committed, compare, figure, block };
