// @ts-check
'use strict';
// The gateway's options (createMcpGateway's, and those `codemode-executor mcp` makes of its
// flags), checked whole before anything starts with the field checks every adapter shares
// (lib/validate/fields.js): the object read once, an unknown key refused, each bad field an
// INVALID_OPTION fault naming it. The server list is config.js's (MCP_CONFIG_INVALID).

const { fault, describe, reading, snapshot, objectArgument, integerIn, optionalBoolean, checkExecutor } = require('../validate/fields');
const { parseServers } = require('./config');
const { RESULT_CHARS } = require('../model/truncate');
const { limits } = require('../native');
const { MCP_DEFAULTS } = require('./usage');
const { optionalTenant } = require('../validate/tenants');
const { needTypescript } = require('../model/type-errors');

/** @typedef {import('./config').ServerSpec} ServerSpec */
/** @typedef {{ execute(request: import('../../index').ExecuteRequest): Promise<import('../../index').Outcome> }} Executor */
/** A call `--approve` names: a configured server's name, and its tool's name or `*`. @typedef {{ server: string, tool: string }} ApproveRule */

/**
 * @typedef {object} GatewayOptions
 * @property {unknown} servers the `mcpServers` object (or a whole config holding one)
 * @property {Executor} executor runs the programs (an IsolateExecutor, or connect()'s)
 * @property {'auto' | 'full' | 'search'} [catalog] how the model learns the tools (default auto)
 * @property {string[]} [approve] `server.tool` (or `server.*`) calls that need a person's yes
 * @property {number} [approvalTimeout] ms a call waits for that yes (default 300,000)
 * @property {number} [callTimeout] ms a call waits for its upstream (default 60,000)
 * @property {number} [maxResultChars] the answer's text bound (default 24,000)
 * @property {boolean} [network] whether programs may fetch (only says so to the model)
 * @property {string} [tenant] whom every program runs for (the executor's `tenant`)
 * @property {boolean} [typecheck] type-check each program against the catalogue's declarations
 *   before it runs (docs/typecheck.md)
 * @property {(line: string) => void} [log] the gateway's diagnostics (default: stderr)
 */

/**
 * The options checked, defaults filled in.
 * @typedef {{ specs: ServerSpec[], executor: Executor, catalog: 'auto' | 'full' | 'search',
 *   approve: ApproveRule[], approvalTimeout: number, callTimeoutMs: number, maxResultChars: number,
 *   network: boolean, tenant: string | undefined, typecheck: boolean, log: (line: string) => void }} Options
 */

const KIND = 'INVALID_OPTION';
const KEYS = ['servers', 'executor', 'catalog', 'approve', 'approvalTimeout', 'callTimeout', 'maxResultChars', 'network', 'tenant', 'typecheck', 'log'];
const CATALOGS = ['auto', 'full', 'search'];
/** The bound of the integer options without one of their own (an int32, as the addon's). */
const MAX_INTEGER = 2_147_483_647;

/**
 * @param {unknown} given
 * @returns {Options}
 */
function gatewayOptions(given) {
  const input = snapshot(KIND, 'options', objectArgument(KIND, 'options', given, '{ servers, executor, ... }', false), KEYS, 'the gateway options');
  const specs = parseServers(input.servers);
  const executor = checkExecutor(KIND, 'executor', input.executor);
  const catalog = input.catalog ?? 'auto';
  if (typeof catalog !== 'string' || !CATALOGS.includes(catalog)) {
    throw fault(KIND, { field: 'catalog', problem: `${JSON.stringify(catalog)} is not a mode`, allowed: "'auto', 'full' or 'search'" });
  }
  const log = input.log ?? ((/** @type {string} */ line) => void process.stderr.write(`${line}\n`));
  if (typeof log !== 'function') throw fault(KIND, { field: 'log', problem: `got ${describe(log)}`, allowed: 'a function taking one line, or omitted' });
  /** @param {string} field @param {number} fallback @param {number} max */
  const integer = (field, fallback, max) => (input[field] === undefined ? fallback : integerIn(KIND, field, input[field], [1, max], field === 'maxResultChars' ? ' (characters)' : ' (ms)'));
  const typecheck = optionalBoolean(KIND, 'typecheck', input.typecheck) === true;
  if (typecheck) needTypescript("the MCP gateway's typecheck (--typecheck)");
  return {
    specs,
    executor,
    catalog: /** @type {Options['catalog']} */ (catalog),
    approve: approveRules(input.approve, specs),
    approvalTimeout: integer('approvalTimeout', limits().approval.defaultTimeout, limits().approval.timeout[1]),
    callTimeoutMs: integer('callTimeout', MCP_DEFAULTS.callTimeout, MAX_INTEGER),
    maxResultChars: integer('maxResultChars', RESULT_CHARS, MAX_INTEGER),
    network: optionalBoolean(KIND, 'network', input.network) === true,
    tenant: optionalTenant(KIND, input.tenant),
    typecheck,
    log: /** @type {(line: string) => void} */ (log),
  };
}

/**
 * `approve`'s patterns, each `server.tool` or `server.*` with a configured server.
 * @param {unknown} given
 * @param {ServerSpec[]} specs
 * @returns {ApproveRule[]}
 */
function approveRules(given, specs) {
  if (given === undefined) return [];
  const patterns = reading(KIND, 'approve', () => (Array.isArray(given) ? [...given] : null));
  if (patterns === null) throw fault(KIND, { field: 'approve', problem: `got ${describe(given)}`, allowed: 'an array of server.tool or server.* patterns' });
  return patterns.map((pattern) => {
    const dot = typeof pattern === 'string' ? pattern.lastIndexOf('.') : -1;
    const server = dot > 0 ? pattern.slice(0, dot) : '';
    if (!specs.some((s) => s.name === server) || dot === pattern.length - 1) {
      throw fault(KIND, { field: 'approve', problem: `${JSON.stringify(pattern)} names no configured server's tool`, allowed: `server.tool or server.* with a server of ${specs.map((s) => s.name).join(', ')}` });
    }
    return { server, tool: pattern.slice(dot + 1) };
  });
}

module.exports = { gatewayOptions };
