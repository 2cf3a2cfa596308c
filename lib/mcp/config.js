// @ts-check
'use strict';
// The MCP gateway's server list: the `mcpServers` format Claude Desktop and Cursor read (a
// `command` with `args`/`env`/`cwd` for a stdio server, a `url` with `headers` for a Streamable
// HTTP one), checked whole before anything starts. A bad entry is MCP_CONFIG_INVALID naming it.

const fs = require('node:fs');
const { fault } = require('../errors');
const { sanitizeToolName } = require('../model/names');
const { reservedNames } = require('../validate');

/**
 * @typedef {{ kind: 'stdio', name: string, provider: string, command: string, args: string[],
 *   env: Record<string, string> | undefined, cwd: string | undefined }} StdioServer
 * @typedef {{ kind: 'http', name: string, provider: string, url: URL,
 *   headers: Record<string, string> }} HttpServer
 * @typedef {StdioServer | HttpServer} ServerSpec
 */

/** The keys an entry may have; any other is refused (a key we ignored could carry a secret's path). */
const KEYS = new Set(['command', 'args', 'env', 'cwd', 'url', 'headers', 'type', 'disabled', 'description']);
/** `type` as the clients spell it. SSE (the transport MCP deprecated) is not among them. */
const TYPES = new Set(['stdio', 'http', 'streamable-http', 'streamableHttp']);

/**
 * @param {string} where
 * @param {string} problem
 */
function invalid(where, problem) {
  return fault('MCP_CONFIG_INVALID', { where, problem });
}

/** @param {unknown} v @returns {v is Record<string, unknown>} */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * @param {unknown} v
 * @param {string} where
 * @returns {Record<string, string> | undefined}
 */
function stringMap(v, where) {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw invalid(where, 'must be an object of strings');
  /** @type {Record<string, string>} */
  const out = {};
  for (const [k, value] of Object.entries(v)) {
    if (typeof value !== 'string') throw invalid(`${where}.${k}`, `must be a string, not ${typeof value}`);
    out[k] = value;
  }
  return out;
}

/**
 * One server's entry.
 * @param {string} name
 * @param {unknown} entry
 * @returns {ServerSpec | null} null for a disabled one
 */
function parseEntry(name, entry) {
  const at = `mcpServers.${name}`;
  if (!isObject(entry)) throw invalid(at, 'must be an object');
  for (const key of Object.keys(entry)) {
    if (!KEYS.has(key)) throw invalid(`${at}.${key}`, `is not a key this gateway reads (it reads ${[...KEYS].join(', ')})`);
  }
  if (entry.disabled === true) return null;
  if (entry.disabled !== undefined && typeof entry.disabled !== 'boolean') throw invalid(`${at}.disabled`, 'must be a boolean');
  if (entry.type !== undefined && (typeof entry.type !== 'string' || !TYPES.has(entry.type))) {
    throw invalid(`${at}.type`, `must be "stdio" or "http" (Streamable HTTP), not ${JSON.stringify(entry.type)}; the SSE transport is not supported`);
  }
  const provider = sanitizeToolName(name);
  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  if (hasCommand === hasUrl) throw invalid(at, 'needs exactly one of `command` (a stdio server) and `url` (a Streamable HTTP server)');
  if (hasCommand) {
    if (entry.type !== undefined && entry.type !== 'stdio') throw invalid(`${at}.type`, 'says HTTP, but the entry has a `command`');
    if (typeof entry.command !== 'string' || entry.command === '') throw invalid(`${at}.command`, 'must be a non-empty string');
    if (entry.headers !== undefined) throw invalid(`${at}.headers`, 'belongs to a `url` server');
    const args = entry.args ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) throw invalid(`${at}.args`, 'must be an array of strings');
    if (entry.cwd !== undefined && typeof entry.cwd !== 'string') throw invalid(`${at}.cwd`, 'must be a string');
    return {
      kind: 'stdio', name, provider, command: entry.command, args: /** @type {string[]} */ (args),
      env: stringMap(entry.env, `${at}.env`), cwd: /** @type {string | undefined} */ (entry.cwd),
    };
  }
  if (entry.type === 'stdio') throw invalid(`${at}.type`, 'says stdio, but the entry has a `url`');
  for (const key of ['args', 'env', 'cwd']) {
    if (entry[key] !== undefined) throw invalid(`${at}.${key}`, 'belongs to a `command` server');
  }
  if (typeof entry.url !== 'string') throw invalid(`${at}.url`, 'must be a string');
  /** @type {URL} */
  let url;
  try {
    url = new URL(entry.url);
  } catch {
    throw invalid(`${at}.url`, `${JSON.stringify(entry.url)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`${at}.url`, `must be http: or https:, not ${url.protocol}`);
  return { kind: 'http', name, provider, url, headers: stringMap(entry.headers, `${at}.headers`) ?? {} };
}

/**
 * The servers of an `mcpServers` object (or a whole config holding one), in their order.
 * Disabled entries are left out; two names that become the same global are refused.
 * @param {unknown} config
 * @returns {ServerSpec[]}
 */
function parseServers(config) {
  const servers = isObject(config) && 'mcpServers' in config ? config.mcpServers : config;
  if (!isObject(servers)) throw invalid('mcpServers', 'must be an object keyed by server name');
  /** @type {ServerSpec[]} */
  const out = [];
  /** @type {Map<string, string>} */
  const byProvider = new Map();
  for (const [name, entry] of Object.entries(servers)) {
    if (name === '') throw invalid('mcpServers', 'a server name is empty');
    const spec = parseEntry(name, entry);
    if (!spec) continue;
    if (reservedNames().has(spec.provider)) {
      throw invalid(`mcpServers.${name}`, `its name becomes the global \`${spec.provider}\`, which programs already have (a language or runtime global); rename it`);
    }
    const other = byProvider.get(spec.provider);
    if (other !== undefined) {
      throw invalid(`mcpServers.${name}`, `its name and "${other}"'s both become the global \`${spec.provider}\` in programs; rename one`);
    }
    byProvider.set(spec.provider, name);
    out.push(spec);
  }
  if (out.length === 0) throw invalid('mcpServers', 'names no server (or every one is disabled)');
  return out;
}

/**
 * Reads a config file: its JSON, whose servers `parseServers` checks.
 * @param {string} path
 * @returns {unknown}
 */
function readConfig(path) {
  /** @type {string} */
  let text;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw invalid(path, `cannot be read (${/** @type {Error} */ (e).message})`);
  }
  /** @type {unknown} */
  let json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw invalid(path, `is not JSON (${/** @type {Error} */ (e).message})`);
  }
  return json;
}

module.exports = { parseServers, readConfig };
