// @ts-check
'use strict';
// Where an execute's time goes (the executor's `hops` option; docs/benchmarks.md, "Where an
// execute's time goes"): the steps this host records around the pool's and the worker's, each
// named once here with what it marks. Every time is read from the machine's monotonic clock
// (`process.hrtime`, CLOCK_MONOTONIC: the clock the pool and the worker read too), and the
// outcome reports each step in milliseconds since `entry`.

/** Each step of the run path, in order, with what it marks. */
const STEPS = /** @type {const} */ ([
  ['entry', 'execute() was called'],
  ['validated', 'the request was validated'],
  ['encoded', 'the pool encoded the request into its frame'],
  ['written', "the pool wrote the frame to the worker's stdin"],
  ['submitted', 'execute() handed the run to the pool and returned to the caller'],
  ['workerRead', 'the worker read and decoded the frame'],
  ['isolateReady', "the worker had the run's isolate in hand (prepared while it was idle)"],
  ['parsed', "the worker parsed the program and rewrote it into a module"],
  ['evaluated', 'the worker compiled, linked and evaluated the module'],
  ['settled', "the program's promise settled"],
  ['answered', 'the worker built the outcome (the value serialized), about to write it'],
  ['answerRead', "the pool read the outcome's frame"],
  ['reported', "the pool handed the outcome to this process's callback"],
  ['delivered', 'the callback ran on the JavaScript thread'],
  ['decoded', 'the result was deserialized and the outcome built, about to resolve the promise'],
]);

/** The monotonic clock now, in nanoseconds. */
function now() {
  return Number(process.hrtime.bigint());
}

/**
 * The steps of one run as the outcome reports them: each recorded one (a run that failed
 * before the worker ran it has no worker steps) in the order of STEPS, in ms since `entry`.
 * @param {Record<string, number>} host the steps this process recorded (ns)
 * @param {[string, number][] | null | undefined} native the pool's and the worker's (ns)
 * @returns {{ hop: string, ms: number }[]}
 */
function report(host, native) {
  /** @type {Record<string, number>} */
  const at = { ...host };
  for (const [name, ns] of native ?? []) if (ns > 0) at[name] = ns;
  const entry = at.entry;
  /** @type {{ hop: string, ms: number }[]} */
  const out = [];
  for (const [hop] of STEPS) if (at[hop] !== undefined) out.push({ hop, ms: (at[hop] - entry) / 1e6 });
  return out;
}

module.exports = { STEPS, now, report };
