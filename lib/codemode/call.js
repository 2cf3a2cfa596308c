// @ts-check
'use strict';
// CodemodeExecutor.execute's arguments, read once into plain data. The dialect's own refusals
// (a provider name that is reserved, not an identifier, or declared twice) stay outcomes, as the
// reference returns them; what cannot be read at all (a getter or proxy that throws, a
// connector list that is not a list) is INVALID_REQUEST naming the field.

const { fault } = require('../errors');
const { reading, describe } = require('../validate/fields');
const { BUDGETS } = require('../validate');
const { optionalTenant } = require('../validate/tenants');

const KIND = 'INVALID_REQUEST';

/**
 * A provider or connector name: primitives as the reference coerces them, nothing else.
 * @param {string} field
 * @param {unknown} name
 */
function nameOf(field, name) {
  if (name !== null && (typeof name === 'object' || typeof name === 'function' || typeof name === 'symbol')) {
    throw fault(KIND, { field, problem: `got ${describe(name)}`, allowed: 'a JavaScript identifier' });
  }
  return name;
}

/**
 * @param {unknown} code
 * @param {unknown} providersOrFns
 * @param {unknown} options
 * @returns {{ code: string, legacy: boolean, providers: Array<{ name: unknown, fns: [string, unknown][], prelude: unknown }>,
 *   connectors: Array<{ name: unknown, binding: unknown }>, options: Record<string, unknown> }}
 */
function callArguments(code, providersOrFns, options) {
  const text = reading(KIND, 'code', () => String(code));
  const given = providersOrFns ?? [];
  const legacy = !reading(KIND, 'providers', () => Array.isArray(given));
  const providers = legacy
    ? [{ name: 'codemode', fns: reading(KIND, 'providers', () => Object.entries(given)), prelude: undefined }]
    : reading(KIND, 'providers', () => Array.from(/** @type {unknown[]} */ (given))).map((p, i) => {
        const field = `providers[${i}]`;
        if (p === null || typeof p !== 'object') throw fault(KIND, { field, problem: `got ${describe(p)}`, allowed: '{ name, fns, prelude? }' });
        const { name, fns, prelude } = reading(KIND, field, () => {
          const { name, fns, prelude } = /** @type {{ name?: unknown, fns?: unknown, prelude?: unknown }} */ (p);
          return { name, fns, prelude };
        });
        return { name: nameOf(`${field}.name`, name), fns: reading(KIND, `${field}.fns`, () => Object.entries(/** @type {object} */ (fns ?? {}))), prelude };
      });
  if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function') {
    throw fault(KIND, { field: 'options', problem: `got ${describe(options)}`, allowed: 'an object { connectors?, modules?, timeout?, outbound?, signal?, tenant?, cpuLimit?, toolCallLimit?, fetchLimit? } or nothing' });
  }
  // Other keys are left alone, as the reference leaves them.
  const opts = Object.create(null);
  if (options != null) {
    for (const key of ['connectors', 'modules', 'timeout', 'outbound', 'signal', 'tenant', ...BUDGETS]) {
      if (reading(KIND, `options.${key}`, () => key in /** @type {object} */ (options))) opts[key] = reading(KIND, `options.${key}`, () => /** @type {Record<string, unknown>} */ (options)[key]);
    }
  }
  // Whom the run is for (the native executor's `tenant`): a name the pool would refuse is
  // refused here, before anything runs; undefined is the option left out.
  if (opts.tenant !== undefined) opts.tenant = optionalTenant(KIND, opts.tenant, 'options.tenant');
  const list = opts.connectors ?? [];
  if (!reading(KIND, 'options.connectors', () => Array.isArray(list))) {
    throw fault(KIND, { field: 'options.connectors', problem: `got ${describe(list)}`, allowed: 'an array of { name, binding }' });
  }
  const connectors = reading(KIND, 'options.connectors', () => Array.from(list)).map((c, i) => {
    const field = `options.connectors[${i}]`;
    if (c === null || typeof c !== 'object') throw fault(KIND, { field, problem: `got ${describe(c)}`, allowed: '{ name, binding }' });
    const { name, binding } = reading(KIND, field, () => ({ name: c.name, binding: c.binding }));
    return { name: nameOf(`${field}.name`, name), binding };
  });
  return { code: text, legacy, providers, connectors, options: opts };
}

module.exports = { callArguments };
