// @ts-check
'use strict';
// OpenTelemetry spans for executions, their tool calls and routed fetches, and handle
// invocations (docs/operations.md). `@opentelemetry/api` is an optional peer: it is looked up once,
// lazily, and when the host has not installed it every function here returns at once (a null
// trace), so a run pays one comparison. With the API but no SDK registered, its tracer is the
// API's no-op one.

/**
 * @typedef {import('@opentelemetry/api').Span} Span
 * @typedef {import('@opentelemetry/api').SpanContext} SpanContext
 * @typedef {import('@opentelemetry/api').Context} Context
 *
 * A run's span and the context its children are parented under.
 * @typedef {{ span: Span, context: Context, ended: boolean }} RunTrace
 * @typedef {{ span: Span, ended: boolean }} InvokeTrace
 */

const TRACER = 'codemode-executor';

/** @type {typeof import('@opentelemetry/api') | null | undefined} */
let api;

/** The OpenTelemetry API when the host installed it, else null (looked up once). */
function otel() {
  if (api === undefined) {
    try {
      api = require('@opentelemetry/api');
    } catch {
      api = null;
    }
  }
  return api;
}

/** @type {import('@opentelemetry/api').Tracer | null} */
let cached = null;

/** The tracer (the API's proxy one: it follows a provider registered later). */
function tracer() {
  if (!cached) cached = /** @type {typeof import('@opentelemetry/api')} */ (api).trace.getTracer(TRACER);
  return cached;
}

/** The attribute naming the tenant a run or invocation is for, when its request named one. */
const TENANT = 'codemode.tenant';

/**
 * Starts the span of an execution (a run or a resume), a child of the caller's active context.
 * @param {string} [tenant] whom the run is for, when its request named one (docs/tenants.md)
 * @returns {RunTrace | null}
 */
function startRun(tenant) {
  const o = otel();
  if (!o) return null;
  const parent = o.context.active();
  const attributes = tenant === undefined ? undefined : { [TENANT]: tenant };
  const span = tracer().startSpan('codemode.execute', { kind: o.SpanKind.INTERNAL, attributes }, parent);
  return { span, context: o.trace.setSpan(parent, span), ended: false };
}

/**
 * @param {Span} span
 * @param {unknown} error
 */
function failed(span, error) {
  const o = /** @type {typeof import('@opentelemetry/api')} */ (api);
  const message = error instanceof Error ? error.message : String(error);
  const code = error !== null && typeof error === 'object' && 'code' in error ? String(error.code) : undefined;
  if (code) span.setAttribute('codemode.outcome.code', code);
  span.setStatus({ code: o.SpanStatusCode.ERROR, message });
}

/**
 * Ends a run's span with its outcome or the fault it rejected with.
 * @param {RunTrace | null} trace
 * @param {import('../index').Outcome | undefined} outcome
 * @param {unknown} error
 */
function endRun(trace, outcome, error) {
  if (!trace || trace.ended) return;
  trace.ended = true;
  const { span } = trace;
  if (outcome) {
    const s = outcome.stats;
    span.setAttributes({
      'codemode.outcome.code': outcome.error?.code ?? 'OK',
      'codemode.wall_ms': s.wallMs,
      'codemode.cpu_ms': s.cpuMs,
      'codemode.heap_peak_bytes': s.heapPeakBytes,
      'codemode.tool_calls': s.toolCalls,
      'codemode.worker.pid': s.workerPid,
    });
    if (outcome.executionId) span.setAttribute('codemode.execution_id', outcome.executionId);
    if (outcome.error) {
      const o = /** @type {typeof import('@opentelemetry/api')} */ (api);
      span.setStatus({ code: o.SpanStatusCode.ERROR, message: outcome.error.message });
    }
  } else {
    failed(span, error);
  }
  span.end();
}

/**
 * Ends a trace that never reached the pool, and rejects with `error`.
 * @template T
 * @param {RunTrace | InvokeTrace | null} trace
 * @param {unknown} error
 * @returns {Promise<T>}
 */
function rejected(trace, error) {
  if (trace && !trace.ended) {
    trace.ended = true;
    failed(trace.span, error);
    trace.span.end();
  }
  return Promise.reject(error);
}

/**
 * @param {RunTrace | null} trace
 * @param {string} name
 * @param {import('@opentelemetry/api').Attributes} attributes
 * @param {import('@opentelemetry/api').SpanKind} [kind]
 * @returns {Span | null}
 */
function child(trace, name, attributes, kind) {
  if (!trace || trace.ended) return null;
  return tracer().startSpan(name, { attributes, kind }, trace.context);
}

/**
 * A tool call's span, under its run's.
 * @param {RunTrace | null} trace
 * @param {string} provider
 * @param {string} tool
 */
function startToolCall(trace, provider, tool) {
  if (!trace) return null;
  return child(trace, 'codemode.tool_call', { 'codemode.tool.provider': provider, 'codemode.tool.name': tool });
}

/**
 * A routed fetch's span, under its run's.
 * @param {RunTrace | null} trace
 * @param {string} method
 * @param {string} url
 */
function startFetch(trace, method, url) {
  if (!trace) return null;
  const o = /** @type {typeof import('@opentelemetry/api')} */ (api);
  return child(trace, 'codemode.fetch', { 'http.request.method': method, 'url.full': url }, o.SpanKind.CLIENT);
}

/**
 * Runs `fn` with `span` as the active span (the host's own spans nest under it).
 * @template T
 * @param {Span | null} span
 * @param {() => T} fn
 * @returns {T}
 */
function within(span, fn) {
  if (!span) return fn();
  const o = /** @type {typeof import('@opentelemetry/api')} */ (api);
  return o.context.with(o.trace.setSpan(o.context.active(), span), fn);
}

/**
 * Ends a tool call's or fetch's span.
 * @param {Span | null} span
 * @param {unknown} error the rejection, or undefined
 * @param {number} [status] a fetch's response status
 */
function endChild(span, error, status) {
  if (!span) return;
  if (status !== undefined) span.setAttribute('http.response.status_code', status);
  if (error !== undefined) failed(span, error);
  span.end();
}

/**
 * The span context of a run, for the links of its handles' invocations.
 * @param {RunTrace | null} trace
 * @returns {SpanContext | undefined}
 */
function spanContext(trace) {
  return trace ? trace.span.spanContext() : undefined;
}

/**
 * An invocation's span: a child of the caller's active context, linked to the granting run.
 * @param {string} executionId
 * @param {string} handle
 * @param {unknown} granted the granting run's span context, when this host saw the grant
 * @param {string} [tenant] whom the invocation is for, when it named one (docs/tenants.md)
 * @returns {InvokeTrace | null}
 */
function startInvoke(executionId, handle, granted, tenant) {
  const o = otel();
  if (!o) return null;
  const links = granted ? [{ context: /** @type {SpanContext} */ (granted) }] : [];
  /** @type {import('@opentelemetry/api').Attributes} */
  const attributes = { 'codemode.execution_id': executionId, 'codemode.handle': handle };
  if (tenant !== undefined) attributes[TENANT] = tenant;
  const span = tracer().startSpan('codemode.invoke', { kind: o.SpanKind.INTERNAL, attributes, links }, o.context.active());
  return { span, ended: false };
}

/**
 * @param {InvokeTrace | null} trace
 * @param {number | undefined} status the handler's response status
 * @param {unknown} error
 */
function endInvoke(trace, status, error) {
  if (!trace || trace.ended) return;
  trace.ended = true;
  if (status !== undefined) trace.span.setAttribute('http.response.status_code', status);
  else failed(trace.span, error);
  trace.span.end();
}

module.exports = { startRun, endRun, rejected, startToolCall, startFetch, within, endChild, spanContext, startInvoke, endInvoke };
