// @ts-check
'use strict';
// Makes `cloudflare:workers` importable on Node: a module resolution hook sends it to the
// stand-ins in cloudflare-workers.mjs. Where Node has `module.registerHooks()` (22.15+, 23.5+),
// the hook runs in-thread through it; on older Nodes through `module.register()`, which loads
// cloudflare-workers-hooks.mjs (this `resolve`) on the loader thread. Node 26 deprecates
// `module.register()` (DEP0205), so it is used only where `registerHooks` is missing. Deno runs
// Node's hooks as they are; Bun has none, and a runtime plugin (`Bun.plugin`) serves the same
// stand-ins as a virtual module there (`bun --preload @supolka/codemode-executor/register`).

const nodeModule = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { warnIfUnsupportedNode } = require('./node-support');

const STANDIN = pathToFileURL(path.join(__dirname, 'cloudflare-workers.mjs')).href;

/**
 * @typedef {{ url: string, shortCircuit?: boolean, format?: string | null }} ResolveResult
 * @typedef {(specifier: string, context?: object) => ResolveResult} NextResolve
 */

/**
 * The resolve hook, synchronous so that both `registerHooks` and `register` take it:
 * `cloudflare:workers` resolves to the stand-ins, everything else to what Node resolves.
 * @param {string} specifier
 * @param {object} context
 * @param {NextResolve} nextResolve
 * @returns {ResolveResult}
 */
function resolve(specifier, context, nextResolve) {
  if (specifier === 'cloudflare:workers') return { url: STANDIN, shortCircuit: true };
  return nextResolve(specifier, context);
}

let registered = false;

/** Registers the hook once per process (`register()`, `--import …/register`). */
function registerCloudflareWorkers() {
  warnIfUnsupportedNode();
  if (registered) return;
  registered = true;
  // Bun has no module hooks; its runtime plugins serve a virtual module instead.
  const bun = /** @type {{ Bun?: { plugin: (p: { name: string, setup: (b: { module: (name: string, load: () => { exports: unknown, loader: string }) => void }) => void }) => void } }} */ (/** @type {unknown} */ (globalThis)).Bun;
  if (bun) {
    const standIns = path.join(__dirname, 'cloudflare-workers.mjs');
    bun.plugin({ name: 'cloudflare:workers', setup: (b) => b.module('cloudflare:workers', () => ({ exports: require(standIns), loader: 'object' })) });
    return;
  }
  // `registerHooks` is newer than the @types/node the package is checked against (20).
  const { registerHooks } = /** @type {{ registerHooks?: (hooks: { resolve: typeof resolve }) => unknown }} */ (/** @type {unknown} */ (nodeModule));
  if (typeof registerHooks === 'function') registerHooks({ resolve });
  else nodeModule.register(pathToFileURL(path.join(__dirname, 'cloudflare-workers-hooks.mjs')));
}

module.exports = { resolve, registerCloudflareWorkers };
