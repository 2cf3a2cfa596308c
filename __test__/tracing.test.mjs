// OpenTelemetry (docs/operations.md, "Traces"), with a real SDK and its in-memory exporter: a
// run with two tool calls and a routed fetch is a `codemode.execute` span under the test's own
// span, with a child per tool call and per fetch; a handle invocation has a span of its own,
// linked to the run that granted it. In process and over connect().
import { createRequire } from 'node:module';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { executor, rejection } from './helpers.mjs';
import { connected, served } from './daemon-helpers.mjs';

const require = createRequire(import.meta.url);
const otel = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  otel.context.setGlobalContextManager(contextManager.enable());
  otel.trace.setGlobalTracerProvider(provider);
});

afterAll(() => {
  otel.trace.disable();
  otel.context.disable();
});

beforeEach(() => exporter.reset());

const parentOf = (span) => span.parentSpanContext?.spanId ?? span.parentSpanId;
const named = (name) => exporter.getFinishedSpans().filter((s) => s.name === name);

const carriers = [
  ['in process', async () => executor({ workers: 1 })],
  ['over connect()', async () => connected((await served({ workers: 1 })).url)],
];

describe.each(carriers)('spans (%s)', (_name, make) => {
  it('a run with two tool calls and a fetch: its span under the caller, one child each', async () => {
    const ex = await make();
    const tracer = otel.trace.getTracer('test');
    let inner = null;
    const outcome = await tracer.startActiveSpan('agent-turn', async (turn) => {
      try {
        return await ex.execute({
          code: `async () => {
            const a = await db.get('a');
            const b = await db.put('b');
            const r = await fetch('https://api.example/items?x=1', { method: 'POST', body: 'hi' });
            return [a, b, r.status] }`,
          providers: [{ name: 'db', tools: ['get', 'put'] }],
          dispatch: ({ tool }) => {
            // The dispatch runs inside its tool call's span.
            if (tool === 'get') inner = otel.trace.getActiveSpan()?.spanContext().spanId;
            return tool;
          },
          outbound: async () => ({ status: 201, statusText: 'Created', headers: [], body: null }),
        });
      } finally {
        turn.end();
      }
    });
    expect(outcome.result).toEqual(['get', 'put', 201]);
    const [turn] = named('agent-turn');
    const [run] = named('codemode.execute');
    expect(run).toBeDefined();
    expect(parentOf(run)).toBe(turn.spanContext().spanId);
    expect(run.spanContext().traceId).toBe(turn.spanContext().traceId);
    expect(run.attributes).toMatchObject({
      'codemode.outcome.code': 'OK',
      'codemode.tool_calls': 2,
      'codemode.worker.pid': outcome.stats.workerPid,
    });
    expect(outcome.stats.workerPid).toBeGreaterThan(0);
    for (const key of ['codemode.wall_ms', 'codemode.cpu_ms', 'codemode.heap_peak_bytes']) expect(run.attributes[key]).toBeGreaterThan(0);
    const calls = named('codemode.tool_call');
    expect(calls.map((s) => s.attributes['codemode.tool.name'])).toEqual(['get', 'put']);
    for (const c of calls) {
      expect(parentOf(c)).toBe(run.spanContext().spanId);
      expect(c.attributes['codemode.tool.provider']).toBe('db');
    }
    expect(inner).toBe(calls[0].spanContext().spanId);
    const [f] = named('codemode.fetch');
    expect(parentOf(f)).toBe(run.spanContext().spanId);
    expect(f.attributes).toMatchObject({ 'http.request.method': 'POST', 'url.full': 'https://api.example/items?x=1', 'http.response.status_code': 201 });
    expect(f.kind).toBe(otel.SpanKind.CLIENT);
    // Each child ends before its run does. OpenTelemetry makes each [s, ns] time from a float
    // millisecond clock, which drifts by a few hundred ns; compared exactly, within 1 us.
    const ns = ([sec, nano]) => BigInt(sec) * 1_000_000_000n + BigInt(nano);
    for (const s of [...calls, f]) expect(ns(s.endTime) <= ns(run.endTime) + 1000n).toBe(true);
  });

  it('failures mark the span: a program error, a rejected tool call, an abort', async () => {
    const ex = await make();
    const out = await ex.execute({
      code: 'async () => { try { await t.x() } catch {} ; throw new Error("boom") }',
      providers: [{ name: 't', tools: ['x'] }],
      dispatch: () => {
        throw new Error('tool down');
      },
    });
    expect(out.error.code).toBe('PROGRAM_ERROR');
    const [run] = named('codemode.execute');
    expect(run.attributes['codemode.outcome.code']).toBe('PROGRAM_ERROR');
    expect(run.status.code).toBe(otel.SpanStatusCode.ERROR);
    const [call] = named('codemode.tool_call');
    expect(call.status).toMatchObject({ code: otel.SpanStatusCode.ERROR, message: 'tool down' });
    exporter.reset();
    expect((await rejection(ex.execute({ code: 'async () => 1', signal: AbortSignal.abort() }))).code).toBe('ABORTED');
    const [aborted] = named('codemode.execute');
    expect(aborted.attributes['codemode.outcome.code']).toBe('ABORTED');
    expect(aborted.status.code).toBe(otel.SpanStatusCode.ERROR);
  });

  it('a handle invocation has a span of its own, linked to the granting run', async () => {
    const ex = await make();
    const granted = await ex.execute({ code: 'async () => (request) => new Response("hi", { status: 202 })', retainHandles: true });
    const [run] = named('codemode.execute');
    expect(run.attributes['codemode.execution_id']).toBe(granted.executionId);
    const tracer = otel.trace.getTracer('test');
    await tracer.startActiveSpan('later', async (later) => {
      const response = await ex.invokeHandle(granted.executionId, 'fetch', { method: 'GET', url: 'https://app.internal/', headers: [], body: null });
      expect(response.status).toBe(202);
      later.end();
    });
    await ex.closeHandles(granted.executionId);
    const [invoke] = named('codemode.invoke');
    const [later] = named('later');
    expect(parentOf(invoke)).toBe(later.spanContext().spanId);
    expect(invoke.links.map((l) => l.context.spanId)).toEqual([run.spanContext().spanId]);
    expect(invoke.attributes).toMatchObject({ 'codemode.execution_id': granted.executionId, 'codemode.handle': 'fetch', 'http.response.status_code': 202 });
  });

  it('runs, a retained run and its invocation that name a tenant carry it as codemode.tenant; a run that names none does not', async () => {
    const ex = await make();
    const plain = await ex.execute({ code: 'async () => 1' });
    expect(plain.result).toBe(1);
    const [unnamed] = named('codemode.execute');
    expect(unnamed.attributes).not.toHaveProperty('codemode.tenant');
    exporter.reset();
    const failed = await ex.execute({ code: 'async () => { throw new Error("x") }', tenant: 'acme-1' });
    expect(failed.error.code).toBe('PROGRAM_ERROR');
    const granted = await ex.execute({ code: 'async () => () => new Response("t")', retainHandles: true, tenant: 'acme-1' });
    const response = await ex.invokeHandle(granted.executionId, 'fetch', { method: 'GET', url: 'https://app.internal/', headers: [], body: null }, { tenant: 'acme-1' });
    expect(response.status).toBe(200);
    await ex.closeHandles(granted.executionId, { tenant: 'acme-1' });
    const runs = named('codemode.execute');
    expect(runs.map((s) => s.attributes['codemode.tenant'])).toEqual(['acme-1', 'acme-1']);
    expect(runs.map((s) => s.attributes['codemode.outcome.code'])).toEqual(['PROGRAM_ERROR', 'OK']);
    const [invoke] = named('codemode.invoke');
    expect(invoke.attributes).toMatchObject({ 'codemode.tenant': 'acme-1', 'codemode.handle': 'fetch', 'http.response.status_code': 200 });
    // A request refused before it reaches the pool has a span too, with the tenant it named.
    exporter.reset();
    expect((await rejection(ex.execute({ code: 'async () => 1', tenant: 'acme-1', signal: AbortSignal.abort() }))).code).toBe('ABORTED');
    expect(named('codemode.execute').map((s) => s.attributes['codemode.tenant'])).toEqual(['acme-1']);
  });
});
