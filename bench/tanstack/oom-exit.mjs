// How often the host process survives exiting right after a program ran past its memory limit:
// each try is a fresh Node 22 process that runs one such program through the driver directly
// (createContext, execute, dispose), then calls process.exit(0) (run.mjs --oom-exit). Counts
// the tries whose process ended by a signal instead of exit code 0, per driver.
//
//   node bench/tanstack/oom-exit.mjs [--tries 20]
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { dir, ensureStock } from './setup.mjs';

const { values: args } = parseArgs({ options: { tries: { type: 'string', default: '20' } } });
const tries = Number(args.tries);
const { node } = ensureStock();
for (const driver of ['stock', 'ours']) {
  const ends = new Map();
  let error;
  for (let i = 0; i < tries; i++) {
    const r = spawnSync(node, ['--no-node-snapshot', path.join(dir, 'run.mjs'), '--driver', driver, '--oom-exit'], { encoding: 'utf8', timeout: 60_000 });
    const end = r.signal ?? `exit ${r.status}`;
    ends.set(end, (ends.get(end) ?? 0) + 1);
    error ??= r.stdout.trim().split('\n')[0];
  }
  console.log(`${driver}: ${[...ends].map(([end, n]) => `${end} ${n} of ${tries}`).join(', ')}; the run answered ${error}`);
}
