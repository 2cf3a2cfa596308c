// @ts-check
'use strict';
// Reading a caller's input for validation (lib/validate.js, lib/validate/, and every adapter:
// lib/ai-sdk/, lib/tanstack.js, lib/mcp/, lib/codemode/): each object read once into plain data
// (a getter or proxy cannot answer one thing to the check and another to the pool), a read
// that throws made the field's fault, and the checks several entry points share. A refusal is an
// INVALID_OPTION / INVALID_REQUEST fault that names the field, what was wrong and what is
// allowed, and keeps the field for fieldOf (the CLI maps it to its flag).

const errors = require('../errors');
const { limits } = require('../native');

const { ExecutorError } = errors;

/**
 * @typedef {import('../../index').OutboundPolicy} OutboundPolicy
 * @typedef {import('../../index').Outbound} Outbound
 * @typedef {'INVALID_OPTION' | 'INVALID_REQUEST'} Kind
 */

/** Where a fault from lib/validate/ keeps the field it names (see fieldOf). */
const FIELD = Symbol('field');

/**
 * The INVALID_OPTION / INVALID_REQUEST fault for `vars.field`, which it keeps for fieldOf.
 * @param {Kind} kind
 * @param {{ field: string, problem: string, allowed: string }} vars
 */
function fault(kind, vars) {
  const e = errors.fault(kind, vars);
  Object.defineProperty(e, FIELD, { value: vars.field });
  return e;
}

/**
 * The option or request field a fault from lib/validate/ names (as the caller spelled it, e.g.
 * `port` or `providers[0].name`), or undefined for any other error.
 * @param {unknown} e
 * @returns {string | undefined}
 */
function fieldOf(e) {
  return e instanceof ExecutorError ? /** @type {{ [FIELD]?: string }} */ (e)[FIELD] : undefined;
}

/** @param {unknown} v */
function isArray(v) {
  try {
    return Array.isArray(v);
  } catch {
    return false; // a revoked proxy
  }
}

/**
 * What a refused value was, for a fault's `got ...`: `null`, `undefined`, `an array`,
 * `an object`, `a function`, `NaN`, `the string "..."` (at most 40 characters shown), or the
 * type and the value (`number 5`, `boolean true`, `bigint 1`, `symbol Symbol(s)`).
 * @param {unknown} v
 */
function describe(v) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (isArray(v)) return 'an array';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)}`;
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'function') return 'a function';
  return `${typeof v} ${String(v)}`;
}

/**
 * Reads the caller's input; a throw (a getter's, a proxy trap's, a revoked proxy's) is the
 * field's fault.
 * @template T
 * @param {Kind} kind
 * @param {string} field
 * @param {() => T} read
 * @returns {T}
 */
function reading(kind, field, read) {
  try {
    return read();
  } catch (e) {
    if (e instanceof ExecutorError) throw e;
    let what = 'a non-Error';
    try {
      what = e instanceof Error ? `${e.name}: ${e.message}` : describe(e);
    } catch { /* an error that throws when read */ }
    throw fault(kind, { field, problem: `reading it threw (${what})`, allowed: 'plain data, without getters or proxies that throw' });
  }
}

/**
 * The caller's object as plain data: its own keys checked against `known`, then each known
 * field read once (own or inherited), absent ones left out.
 * @param {Kind} kind
 * @param {string} field
 * @param {object} given
 * @param {string[]} known
 * @param {string} what
 * @returns {Record<string, unknown>}
 */
function snapshot(kind, field, given, known, what) {
  unknownKeys(kind, reading(kind, field, () => Object.keys(given)), known, what);
  /** @type {Record<string, unknown>} */
  const out = Object.create(null);
  for (const key of known) {
    if (reading(kind, key, () => key in given)) out[key] = reading(kind, key, () => /** @type {Record<string, unknown>} */ (given)[key]);
  }
  return out;
}

/**
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} value
 * @param {[number, number]} range
 * @param {string} [unit]
 * @returns {number}
 */
function integerIn(kind, field, value, [min, max], unit = '') {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw fault(kind, {
      field,
      problem: `got ${describe(value)}`,
      allowed: `an integer from ${min} to ${max}${unit}`,
    });
  }
  return value;
}

/**
 * A boolean option or field, or undefined when it was left out.
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} value
 * @returns {boolean | undefined}
 */
function optionalBoolean(kind, field, value) {
  if (value !== undefined && typeof value !== 'boolean') {
    throw fault(kind, { field, problem: `got ${describe(value)}`, allowed: 'true, false or omitted' });
  }
  return value;
}

/**
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} value
 * @returns {Outbound | undefined}
 */
function checkOutbound(kind, field, value) {
  if (value === undefined || value === null || value === 'public' || value === 'native') return value;
  if (typeof value === 'function') return /** @type {OutboundPolicy} */ (value);
  throw fault(kind, {
    field,
    problem: `got ${describe(value)}`,
    allowed: "omitted or 'public' (native, to public addresses only), 'native' (any address the host can reach), null (blocked), or a function (routed)",
  });
}

/**
 * @param {Kind} kind
 * @param {string[]} keys
 * @param {string[]} known
 * @param {string} what
 */
function unknownKeys(kind, keys, known, what) {
  for (const key of keys) {
    if (!known.includes(key)) {
      throw fault(kind, {
        field: key,
        problem: `${what} has no such field`,
        allowed: known.join(', '),
      });
    }
  }
}

/**
 * A run's `timeout` (ms) and `memoryLimit` (MiB) as `input` (an adapter's options, or a TanStack
 * context's config) gives them, each within its range (crates/protocol `limits::options`, through
 * the addon); one left out is undefined.
 * @param {Kind} kind
 * @param {Record<string, unknown>} input
 * @returns {{ timeout: number | undefined, memoryLimit: number | undefined }}
 */
function runBounds(kind, input) {
  /** @param {'timeout' | 'memoryLimit'} key @param {string} unit */
  const bound = (key, unit) => {
    if (input[key] === undefined) return undefined;
    const [min, max] = limits().options[key];
    return integerIn(kind, key, input[key], [Number(min), Number(max)], unit);
  };
  return { timeout: bound('timeout', ' (ms)'), memoryLimit: bound('memoryLimit', ' (MiB)') };
}

/** What an adapter's `executor` may be: the `allowed` of a fault that names it. */
const EXECUTOR_ALLOWED = 'an IsolateExecutor, or the executor connect() resolves to';

/**
 * The executor an adapter (codeModeTool, the TanStack driver, the MCP gateway) runs programs on:
 * an object with an `execute` method, read once, else the fault naming `field`.
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} value
 * @returns {{ execute(request: import('../../index').ExecuteRequest): Promise<import('../../index').Outcome>, resume?(request: import('../../index').ResumeRequest): Promise<import('../../index').Outcome> }}
 */
function checkExecutor(kind, field, value) {
  if (value === null || typeof value !== 'object' || reading(kind, field, () => typeof (/** @type {{ execute?: unknown }} */ (value)).execute !== 'function')) {
    throw fault(kind, { field, problem: `got ${describe(value)}`, allowed: EXECUTOR_ALLOWED });
  }
  return /** @type {any} */ (value);
}

/**
 * The caller's argument `field` as an object (not an array): `{}` for one left out when
 * `optional`, else the INVALID_OPTION / INVALID_REQUEST fault naming what is `allowed`.
 * @param {Kind} kind
 * @param {string} field
 * @param {unknown} given
 * @param {string} allowed
 * @param {boolean} [optional]
 * @returns {object}
 */
function objectArgument(kind, field, given, allowed, optional = true) {
  if (given === undefined && optional) return {};
  if (given === null || typeof given !== 'object' || reading(kind, field, () => Array.isArray(given))) {
    throw fault(kind, { field, problem: `got ${describe(given)}`, allowed });
  }
  return given;
}

/**
 * An AbortSignal (or one from another realm or a polyfill: `aborted`, `reason` and
 * `addEventListener`), or undefined.
 * @param {'INVALID_REQUEST'} kind
 * @param {string} field
 * @param {unknown} signal
 * @returns {AbortSignal | undefined}
 */
function checkSignal(kind, field, signal) {
  if (signal === undefined) return undefined;
  const ok =
    signal !== null &&
    typeof signal === 'object' &&
    reading(kind, field, () => {
      if (signal instanceof AbortSignal) return true;
      const s = /** @type {Record<string, unknown>} */ (signal);
      return typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function' && typeof s.removeEventListener === 'function';
    });
  if (!ok) throw fault(kind, { field, problem: `got ${describe(signal)}`, allowed: 'an AbortSignal or omitted' });
  return /** @type {AbortSignal} */ (signal);
}

/**
 * An array of [name, value] string pairs: a wire request's or response's headers.
 * @param {unknown} headers
 * @returns {headers is [string, string][]}
 */
function isHeaderPairs(headers) {
  return Array.isArray(headers) && headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string');
}

/**
 * A status a response may carry (crates/protocol `RESPONSE_STATUS`, through the addon).
 * @param {unknown} status
 * @returns {status is number}
 */
function isResponseStatus(status) {
  const [min, max] = limits().responseStatus;
  return typeof status === 'number' && Number.isInteger(status) && status >= min && status <= max;
}

/**
 * The mode an outbound policy (checked by `checkOutbound`, or none named) runs with: none is
 * `public`; `null` is `blocked`; a function is `routed`.
 * @param {unknown} policy
 * @returns {import('../../native').Outbound}
 */
function outboundMode(policy) {
  return policy === undefined || policy === 'public' ? 'public' : policy === 'native' ? 'native' : policy === null ? 'blocked' : 'routed';
}

module.exports = { fault, fieldOf, describe, reading, snapshot, unknownKeys, integerIn, optionalBoolean, checkOutbound, outboundMode, checkSignal, objectArgument, runBounds, checkExecutor, EXECUTOR_ALLOWED, isHeaderPairs, isResponseStatus };
