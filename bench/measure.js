'use strict';
// What the benches share: percentiles, medians and means, sequential sampling with an idle gap, and a
// process's resident memory and CPU time (Linux /proc).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');

const now = () => process.hrtime.bigint();
const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** p50 and p99 of `samples`, and their count. */
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
  return { p50: at(50), p99: at(99), n: s.length };
}

/**
 * p50/p99 of `samples`, and the p50s of their first and second halves (the regression guard's
 * noise, bench/guard.js).
 */
function withHalves(samples) {
  const mid = samples.length >> 1;
  return { ...stats(samples), halves: [stats(samples.slice(0, mid)).p50, stats(samples.slice(mid)).p50] };
}

/** The median of `xs` (the upper one of an even count). */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The mean of `xs`. */
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

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

/**
 * A field of /proc/<pid>/status in MiB.
 * @param {number} pid
 * @param {'VmRSS' | 'VmHWM'} field the resident set now, or its peak over the process's life
 */
function rssMiB(pid, field = 'VmRSS') {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** The proportional set size of `pid` in MiB (shared pages split among their users). */
function pssMiB(pid) {
  const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  return Number(/^Pss:\s+(\d+) kB$/m.exec(rollup)?.[1] ?? NaN) / 1024;
}

let clockTicks = 0;
/** CPU time (user + system) `pid` has used so far, in ms (/proc/<pid>/stat, clock-tick resolution). */
function cpuMs(pid) {
  if (!clockTicks) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
}

module.exports = { now, pause, stats, withHalves, median, mean, measure, rssMiB, pssMiB, cpuMs };
