'use strict';
// What the latency benches share: percentiles, and sequential sampling with an idle gap.

const now = () => process.hrtime.bigint();
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** p50 and p99 of `samples`. */
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
  return { p50: at(50), p99: at(99) };
}

/** Runs `once` `n` times, `gapMs` apart after a warm-up, and returns the p50/p99 in ms. */
async function measure(once, n, gapMs) {
  for (let i = 0; i < Math.min(200, n / 4); i++) await once(i);
  const samples = [];
  for (let i = 0; i < n; i++) {
    await pause(gapMs);
    const t0 = now();
    await once(i);
    samples.push(Number(now() - t0) / 1e6);
  }
  return stats(samples);
}

module.exports = { stats, measure };
