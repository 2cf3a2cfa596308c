// @ts-check
'use strict';
// @supolka/codemode-executor: run model-written JavaScript in fresh V8 isolates inside
// supervised worker processes. See index.d.ts for the documented API.

const { IsolateExecutor } = require('./lib/isolate-executor');
const { ExecutorError, failures } = require('./lib/errors');
const { CodemodeExecutor } = require('./lib/codemode-executor');
const { connect } = require('./lib/connect');
const { serve } = require('./lib/serve');
const { bundleModules } = require('./lib/bundle');
const { warnIfUnsupportedNode } = require('./lib/node-support');

warnIfUnsupportedNode();

/** The failure grammar: every code with its kind, retryability, when it happens, and text. */
function failureCatalog() {
  return [...failures().values()].map((e) => ({ ...e }));
}

/**
 * Makes `cloudflare:workers` importable on Node (stand-ins in lib/cloudflare-workers.mjs), so
 * `@cloudflare/codemode` and its `/ai` entry load. Call before importing them; the same as
 * `node --import @supolka/codemode-executor/register`.
 */
function register() {
  require('./lib/cloudflare-workers-register').registerCloudflareWorkers();
}

/**
 * The MCP gateway as a library (lib/mcp/gateway.js, docs/mcp.md); the MCP SDK loads only here.
 * @param {import('./lib/mcp/gateway').GatewayOptions} options
 */
function createMcpGateway(options) {
  return require('./lib/mcp/gateway').createMcpGateway(options);
}

/**
 * The AI SDK's tools as one code-mode tool running in this executor (lib/ai-sdk/,
 * docs/ai-sdk.md); the host's own `ai` loads only here.
 * @param {unknown} tools
 * @param {unknown} options
 * @returns {import('./index').CodeModeTool}
 */
function codeModeTool(tools, options) {
  return require('./lib/ai-sdk').codeModeTool(tools, options);
}

module.exports = { IsolateExecutor, CodemodeExecutor, ExecutorError, connect, serve, failureCatalog, register, bundleModules, createMcpGateway, codeModeTool };
