// Metrics (docs/operations.md): the daemon's GET /metrics, scraped and read with a Prometheus
// text-format parser, and IsolateExecutor.metrics(), both moving as runs happen, under the names
// docs/operations.md lists (one table of definitions in the pool core serves both).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { executor, rejection } from './helpers.mjs';
import { connected, served } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
const parse = require('parse-prometheus-text-format');

/** The parsed families by name. */
function byName(text) {
  return new Map(parse(text).map((f) => [f.name, f]));
}

/** The value of the sample of `family` whose labels include `labels` (0 when there is none). */
function value(families, family, labels = {}) {
  const f = families.get(family);
  expect(f, family).toBeDefined();
  const m = f.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  if (!m) return 0;
  return Number(m.value ?? m.count);
}

const tools = {
  code: 'async () => { await t.a(); await t.b(); return 1 }',
  providers: [{ name: 't', tools: ['a', 'b'] }],
  dispatch: () => 'ok',
};

/** Runs that move every counter: two OK with two tool calls each, a program error, a timeout. */
async function traffic(ex) {
  await ex.execute(tools);
  await ex.execute(tools);
  const failed = await ex.execute({ code: 'async () => { throw new Error("no") }' });
  expect(failed.error.code).toBe('PROGRAM_ERROR');
  const timed = await ex.execute({ code: 'async () => { for (;;) {} }', timeout: 100 });
  expect(timed.error.code).toBe('TIMEOUT');
}

function expectMoved(before, after) {
  expect(value(after, 'codemode_executions_total', { code: 'OK' }) - value(before, 'codemode_executions_total', { code: 'OK' })).toBe(2);
  expect(value(after, 'codemode_executions_total', { code: 'PROGRAM_ERROR' }) - value(before, 'codemode_executions_total', { code: 'PROGRAM_ERROR' })).toBe(1);
  expect(value(after, 'codemode_executions_total', { code: 'TIMEOUT' }) - value(before, 'codemode_executions_total', { code: 'TIMEOUT' })).toBe(1);
  expect(value(after, 'codemode_execution_duration_seconds') - value(before, 'codemode_execution_duration_seconds')).toBe(4);
  expect(value(after, 'codemode_tool_call_duration_seconds') - value(before, 'codemode_tool_call_duration_seconds')).toBe(4);
  expect(value(after, 'codemode_worker_bytes_total', { direction: 'in' })).toBeGreaterThan(value(before, 'codemode_worker_bytes_total', { direction: 'in' }));
  expect(value(after, 'codemode_worker_bytes_total', { direction: 'out' })).toBeGreaterThan(value(before, 'codemode_worker_bytes_total', { direction: 'out' }));
  const hist = after.get('codemode_execution_duration_seconds');
  expect(hist.type).toBe('HISTOGRAM');
  const buckets = hist.metrics[0].buckets;
  expect(Number(buckets['+Inf'])).toBe(Number(hist.metrics[0].count));
  // Cumulative: each bucket holds at least what the one below it does.
  const ordered = Object.entries(buckets).filter(([le]) => le !== '+Inf').sort((a, b) => Number(a[0]) - Number(b[0]));
  for (let i = 1; i < ordered.length; i++) expect(Number(ordered[i][1])).toBeGreaterThanOrEqual(Number(ordered[i - 1][1]));
  expect(Number(ordered.at(-1)[1])).toBeLessThanOrEqual(Number(buckets['+Inf']));
}

describe('GET /metrics on a running daemon', () => {
  it('serves the Prometheus text format, and its counters move as runs happen', async () => {
    const server = await served({ workers: 2 });
    const scrape = async () => {
      const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain; version=0.0.4');
      return byName(await response.text());
    };
    const before = await scrape();
    expect(value(before, 'codemode_daemon_connections')).toBe(0);
    const ex = await connected(server.url);
    await traffic(ex);
    const after = await scrape();
    expectMoved(before, after);
    expect(value(after, 'codemode_daemon_connections')).toBe(1);
    expect(value(after, 'codemode_daemon_bytes_total', { direction: 'in' })).toBeGreaterThan(0);
    expect(value(after, 'codemode_daemon_bytes_total', { direction: 'out' })).toBeGreaterThan(0);
    expect(value(after, 'codemode_queue_depth')).toBe(0);
    const workers = ['busy', 'idle', 'retained', 'starting'].map((state) => value(after, 'codemode_workers', { state }));
    expect(workers.reduce((a, b) => a + b)).toBe(2);
    expect(value(after, 'codemode_worker_restarts_total', { cause: 'exit' })).toBe(0);

    // An abort, and a lost worker, show up too.
    const ac = new AbortController();
    const run = ex.execute({ code: 'async () => { for (;;) {} }', signal: ac.signal });
    await new Promise((r) => setTimeout(r, 100));
    ac.abort();
    expect((await rejection(run)).code).toBe('ABORTED');
    const killed = ex.execute({ code: 'async () => { for (;;) {} }' });
    await new Promise((r) => setTimeout(r, 100));
    for (const pid of server.workerPids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    expect((await rejection(killed)).code).toBe('WORKER_LOST');
    // The idle worker's death is read on its own reader thread, in its own time: wait for
    // both restarts (bounded), then check every figure.
    let later = await scrape();
    for (let i = 0; i < 100 && value(later, 'codemode_worker_restarts_total', { cause: 'signal' }) < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
      later = await scrape();
    }
    expect(value(later, 'codemode_aborts_total', { what: 'execution' })).toBe(1);
    expect(value(later, 'codemode_executions_total', { code: 'ABORTED' })).toBe(1);
    expect(value(later, 'codemode_executions_total', { code: 'WORKER_LOST' })).toBe(1);
    expect(value(later, 'codemode_worker_restarts_total', { cause: 'signal' })).toBe(2);

    const head = await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });
});

describe('IsolateExecutor.metrics()', () => {
  it('the same figures under the same names, structured and as text', async () => {
    const ex = executor({ workers: 1 });
    const before = byName(ex.metrics('prometheus'));
    await traffic(ex);
    const text = ex.metrics('prometheus');
    expectMoved(before, byName(text));
    const structured = ex.metrics();
    expect(structured.map((m) => m.name)).toEqual([...byName(text).keys()]);
    const executions = structured.find((m) => m.name === 'codemode_executions_total');
    expect(executions.kind).toBe('counter');
    expect(executions.help).toMatch(/outcome code/);
    expect(executions.samples.find((s) => s.labels.code === 'TIMEOUT').value).toBe(1);
    expect(() => ex.metrics('json')).toThrow(/format/);
  });

  it('every metric is listed in docs/operations.md', () => {
    const doc = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const names = executor({ workers: 1 }).metrics().map((m) => m.name);
    for (const name of [...names, 'codemode_daemon_connections', 'codemode_daemon_bytes_total']) expect(doc).toContain(`\`${name}\``);
  });
});
