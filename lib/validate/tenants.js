// @ts-check
'use strict';
// Validation of tenants (docs/tenants.md): a request's `tenant`, the executor's `tenants` and
// `defaultTenant`, and serve()'s `tenants` (the same, each with the token its connections
// present). The name rule is the pool's (crates/pool `tenants::check_name`, through the addon);
// the ranges are `limits().options`; the tokens are checked by the daemon at start.

const { fault, describe, snapshot, integerIn, reading } = require('./fields');
const { loadNative, limits } = require('../native');

/**
 * @typedef {import('../../native').NativeTenant} NativeTenant
 * @typedef {import('../../native').NativeTenantLimits} NativeTenantLimits
 */

const NAME_ALLOWED = 'a tenant name: 1 to 64 of A-Z a-z 0-9 . _ -';
const LIMIT_KEYS = /** @type {const} */ (['maxRunning', 'maxQueued', 'cpuPerMinute']);
/** @type {Record<typeof LIMIT_KEYS[number], string>} */
const UNITS = { maxRunning: ' (runs)', maxQueued: ' (runs)', cpuPerMinute: ' (CPU ms a minute)' };

/**
 * A tenant's name, or a fault naming `field`.
 * @param {'INVALID_OPTION' | 'INVALID_REQUEST'} kind
 * @param {string} field
 * @param {unknown} value
 * @returns {string}
 */
function tenantName(kind, field, value) {
  if (typeof value !== 'string') throw fault(kind, { field, problem: `got ${describe(value)}`, allowed: NAME_ALLOWED });
  const problem = loadNative().binding.tenantProblem(value);
  if (problem) throw fault(kind, { field, problem, allowed: NAME_ALLOWED });
  return value;
}

/**
 * A request's optional `tenant`.
 * @param {'INVALID_OPTION' | 'INVALID_REQUEST'} kind
 * @param {unknown} value
 * @param {string} [field]
 * @returns {string | undefined}
 */
function optionalTenant(kind, value, field = 'tenant') {
  return value === undefined ? undefined : tenantName(kind, field, value);
}

/**
 * What a value of a tenants table is, never what it holds: an entry or a token given in the
 * wrong shape may be the secret itself, and the text reaches logs and stderr.
 * @param {unknown} v
 */
function kindOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a value of type ${typeof v}`;
}

/**
 * One tenant's bounds (`extra`: more keys the caller reads itself, e.g. serve()'s `token`).
 * @param {string} field
 * @param {unknown} given
 * @param {readonly string[]} [extra]
 * @returns {{ limits: NativeTenantLimits, input: Record<string, unknown> }}
 */
function tenantLimits(field, given, extra = []) {
  const kind = 'INVALID_OPTION';
  const allowed = `{ ${[...LIMIT_KEYS, ...extra].map((k) => `${k}?`).join(', ')} }`;
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    throw fault(kind, { field, problem: `got ${kindOf(given)}`, allowed });
  }
  const input = snapshot(kind, field, given, [...LIMIT_KEYS, ...extra], `${field}`);
  const { tenantOptions: options } = limits();
  /** @type {NativeTenantLimits} */
  const out = {};
  for (const key of LIMIT_KEYS) {
    if (input[key] === undefined) continue;
    const [min, max] = options[key];
    out[key] = integerIn(kind, `${field}.${key}`, input[key], [Number(min), Number(max)], UNITS[key]);
  }
  return { limits: out, input };
}

/**
 * The executor's `tenants` (a record by name) and the limits of each; with `tokens`, each entry
 * must carry the `token` its connections present (serve()).
 * @param {unknown} given
 * @param {boolean} tokens
 * @returns {{ tenants: NativeTenant[], tokens: { name: string, token: string }[] }}
 */
function tenantTable(given, tokens) {
  const kind = 'INVALID_OPTION';
  const allowed = tokens ? '{ [name]: { token, maxRunning?, maxQueued?, cpuPerMinute? } }' : '{ [name]: { maxRunning?, maxQueued?, cpuPerMinute? } }';
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    throw fault(kind, { field: 'tenants', problem: `got ${describe(given)}`, allowed });
  }
  const entries = reading(kind, 'tenants', () => Object.entries(given));
  /** @type {NativeTenant[]} */
  const tenants = [];
  /** @type {{ name: string, token: string }[]} */
  const pairs = [];
  for (const [name, entry] of entries) {
    const field = `tenants[${JSON.stringify(name)}]`;
    tenantName(kind, field, name);
    const { limits: bounds, input } = tenantLimits(field, entry, tokens ? ['token'] : []);
    if (tokens) {
      if (typeof input.token !== 'string') {
        throw fault(kind, { field: `${field}.token`, problem: `got ${kindOf(input.token)}`, allowed: "the shared secret (16+ characters, a string) this tenant's connections present" });
      }
      pairs.push({ name, token: input.token });
    }
    tenants.push({ name, limits: bounds });
  }
  return { tenants, tokens: pairs };
}

module.exports = { tenantName, optionalTenant, tenantLimits, tenantTable };
