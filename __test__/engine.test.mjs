// The engine the workers run programs on is reported where an operator looks: the worker's
// `--version`, `executor.stats().engine`, and a daemon's `/healthz` and `stats`.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { executor, until } from './helpers.mjs';
import { connected, httpGet, served } from './daemon-helpers.mjs';

const WORKER = fileURLToPath(new URL('../codemode-worker', import.meta.url));
const V8 = /^15\.2\.\d+\.\d+(-rusty)?$/;

describe('the engine', () => {
  it('the worker names it with --version', () => {
    const out = execFileSync(WORKER, ['--version'], { encoding: 'utf8' }).trim();
    const m = /^codemode-worker (\S+) \(protocol (\d+), V8 (\S+), heap sandbox (on|off)\)$/.exec(out);
    expect(m, out).not.toBeNull();
    expect(m[3]).toMatch(V8);
    expect(m[4]).toBe('on');
  });

  it('executor.stats() names it once a worker has started', async () => {
    const ex = executor({ workers: 1 });
    expect((await ex.execute({ code: 'async () => 1' })).result).toBe(1);
    await until(() => ex.stats().engine !== undefined);
    const { engine } = ex.stats();
    expect(Object.keys(engine).sort()).toEqual(['sandbox', 'v8']);
    expect(engine.v8).toMatch(V8);
    expect(engine.sandbox).toBe(true);
  });

  it("a daemon's /healthz and stats name it", async () => {
    const server = await served({ workers: 1 });
    const remote = await connected(server.url);
    expect((await remote.execute({ code: 'async () => 2' })).result).toBe(2);
    const health = await httpGet(server.port, '/healthz');
    expect(health.status).toBe(200);
    expect(health.body.engine.v8).toMatch(V8);
    expect(health.body.engine.sandbox).toBe(true);
    const stats = await remote.stats();
    expect(stats.engine).toEqual(health.body.engine);
  });
});
