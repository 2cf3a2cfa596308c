// @ts-check
'use strict';
// CodemodeExecutor's constructor options: DynamicWorkerExecutor's (`modules`, `timeout`,
// `globalOutbound`; `loader` has no meaning here) and the native executor's budgets
// (`cpuLimit`, `toolCallLimit`, `fetchLimit`) as defaults for every call. A Fetcher as
// `globalOutbound` becomes a routed outbound policy that calls its `fetch`.

const { fault } = require('../errors');
const { reading, snapshot, describe, objectArgument } = require('../validate/fields');
const { budgets, BUDGETS } = require('../validate');

const KEYS = ['modules', 'timeout', 'globalOutbound', ...BUDGETS];
const DEFAULT_TIMEOUT = 60_000;

/**
 * @param {string} field
 * @param {unknown} value
 * @param {string} allowed
 */
function invalid(field, value, allowed) {
  return fault('INVALID_OPTION', { field, problem: `got ${describe(value)}`, allowed });
}

/**
 * The wire-shaped outbound policy for a Fetcher (`{ fetch(Request): Response | Promise<Response> }`).
 * A throw or rejection of `fetch` rejects the sandbox's fetch with its message (the routed rule).
 * @param {{ fetch: (request: Request) => unknown }} fetcher
 * @returns {import('../../index').OutboundPolicy}
 */
function fromFetcher(fetcher) {
  return async (wire) => {
    const request = new Request(wire.url, {
      method: wire.method,
      headers: wire.headers,
      body: wire.body === null ? undefined : wire.body,
      redirect: wire.redirect ?? 'follow',
    });
    const response = await fetcher.fetch(request);
    if (!(response instanceof Response)) {
      throw new TypeError(`globalOutbound.fetch answered ${describe(response)}, not a Response`);
    }
    return {
      status: response.status,
      statusText: response.statusText,
      headers: [...response.headers],
      body: response.body === null ? null : await response.arrayBuffer(),
    };
  };
}

/**
 * The defaults every call starts from: `{ timeout, budgets, modules?, outbound? }`, `outbound`
 * present only when `globalOutbound` was given (as the reference reads it, `undefined` given is
 * `null`); `budgets` holds the budgets given (checked against their ranges, as the native
 * executor's options are).
 * @param {unknown} given
 */
function constructorDefaults(given) {
  const input = snapshot('INVALID_OPTION', 'options', objectArgument('INVALID_OPTION', 'options', given, 'an object { modules?, timeout?, globalOutbound?, cpuLimit?, toolCallLimit?, fetchLimit? } or nothing'), KEYS, 'CodemodeExecutor options');
  /** @type {{ timeout: number, timeoutGiven?: boolean, budgets: import('../validate').Budgets, modules?: Record<string, string>, outbound?: unknown }} */
  const defaults = { timeout: DEFAULT_TIMEOUT, budgets: budgets('INVALID_OPTION', input) };
  if (input.timeout !== undefined) {
    defaults.timeoutGiven = true;
    const t = input.timeout;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 1) throw invalid('timeout', t, 'a whole number of ms, 1 or more');
    defaults.timeout = t;
  }
  if (input.modules !== undefined) {
    const m = input.modules;
    const entries = m !== null && typeof m === 'object' && !reading('INVALID_OPTION', 'modules', () => Array.isArray(m)) ? reading('INVALID_OPTION', 'modules', () => Object.entries(m)) : null;
    if (entries === null || entries.some(([, v]) => typeof v !== 'string')) {
      throw invalid('modules', m, 'an object mapping each specifier to its source text');
    }
    defaults.modules = Object.fromEntries(entries);
  }
  // The one field where `undefined` given is not the field left out: the reference reads it as
  // `null`, which closes the network (never opens one the native executor closed).
  if ('globalOutbound' in input) {
    const g = input.globalOutbound;
    if (g === undefined || g === null) defaults.outbound = null;
    else if (g === 'public' || g === 'native') defaults.outbound = g;
    else if (typeof g === 'function') defaults.outbound = g;
    else if (typeof g === 'object' && reading('INVALID_OPTION', 'globalOutbound', () => typeof (/** @type {{ fetch?: unknown }} */ (g)).fetch === 'function')) {
      defaults.outbound = fromFetcher(/** @type {{ fetch: (request: Request) => unknown }} */ (g));
    } else throw invalid('globalOutbound', g, "null (blocked), a Fetcher { fetch(request) }, an outbound policy function, 'public' (the executor fetches, public addresses only) or 'native' (any address)");
  }
  return defaults;
}

module.exports = { constructorDefaults, DEFAULT_TIMEOUT };
