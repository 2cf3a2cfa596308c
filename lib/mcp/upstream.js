// @ts-check
'use strict';
// One upstream MCP server of the gateway: a client over stdio or Streamable HTTP (the MCP SDK's),
// its whole tool list (every page, re-read on `notifications/tools/list_changed`), calls bounded
// in time, and a restart with backoff when the server crashes, exits, hangs up or hangs.

const { EventEmitter } = require('node:events');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport, getDefaultEnvironment } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ToolListChangedNotificationSchema, ErrorCode, McpError } = require('@modelcontextprotocol/sdk/types.js');
// Required by a name the type check does not follow: the SDK's ajv-provider.d.ts does not check
// under nodenext (it uses the namespace `Ajv` as a type).
const AJV_PROVIDER = '@modelcontextprotocol/sdk/validation/ajv';
const { render } = require('../errors');
const { toolIdentifier } = require('../model/names');

/** @typedef {import('./config').ServerSpec} ServerSpec */
/**
 * A tool as the gateway offers it: `name` is the identifier programs call, `original` the
 * server's own name for it.
 * @typedef {{ name: string, original: string, description?: string, inputSchema?: object,
 *   outputSchema?: object }} UpstreamTool
 */

/** Pages of `tools/list` read at most (a server that never stops paging is cut here). */
const MAX_PAGES = 100;
/** Tools of one server kept at most. */
const MAX_TOOLS = 10_000;
/** Restart delays: the first, doubling up to the last. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 30_000;
/** A connection that lived this long resets the backoff. */
const STABLE_MS = 10_000;
/** Bound of connecting (the initialize handshake) and of each `tools/list` page. */
const CONNECT_TIMEOUT_MS = 30_000;

/**
 * The validator the SDK's client checks tools' structured content with, compiling a tool's
 * output schema the first time a call of it is checked. The SDK compiles every output schema
 * of every `tools/list` page as it reads it (milliseconds each: a list of 10,000 tools built
 * for it held the event loop a minute, and one schema that does not compile failed the read).
 * @returns {import('@modelcontextprotocol/sdk/validation/types.js').jsonSchemaValidator}
 */
function lazyValidator() {
  /** @type {import('@modelcontextprotocol/sdk/validation/types.js').jsonSchemaValidator} */
  const ajv = new (require(AJV_PROVIDER).AjvJsonSchemaValidator)();
  return {
    getValidator(schema) {
      /** @type {import('@modelcontextprotocol/sdk/validation/types.js').JsonSchemaValidator<any> | undefined} */
      let compiled;
      return (input) => (compiled ??= ajv.getValidator(schema))(input);
    },
  };
}

/**
 * The tools of a `tools/list` answer with the names programs call: made identifiers, and a
 * name two tools would share gets `_2`, `_3`, ... (in list order).
 * @param {Array<{ name: string, description?: string, inputSchema?: object, outputSchema?: object }>} listed
 * @returns {UpstreamTool[]}
 */
function nameTools(listed) {
  const taken = new Set();
  return listed.map((t) => {
    const base = toolIdentifier(t.name);
    let name = base;
    for (let i = 2; taken.has(name); i++) name = `${base}_${i}`;
    taken.add(name);
    return { name, original: t.name, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema };
  });
}

class Upstream extends EventEmitter {
  /** @type {Client | null} */
  #client = null;
  #closed = false;
  #backoff = BACKOFF_FIRST_MS;
  /** @type {NodeJS.Timeout | null} */
  #timer = null;
  /** @type {Promise<void> | null} */
  #starting = null;
  #generation = 0;
  #refreshing = false;
  /** The client of the attempt under way, for close() to end it (a stdio server's process). */
  /** @type {Client | null} */
  #connecting = null;
  #again = false;
  /** @type {(line: string) => void} */
  #log;

  /**
   * @param {ServerSpec} spec
   * @param {{ callTimeoutMs: number, log?: (line: string) => void }} options
   */
  constructor(spec, options) {
    super();
    this.spec = spec;
    this.callTimeoutMs = options.callTimeoutMs;
    this.#log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    /** @type {UpstreamTool[]} */
    this.tools = [];
    /** @type {any[]} */
    this.listed = [];
    /** @type {Map<string, UpstreamTool>} */
    this.byName = new Map();
    /** Why it is not connected, for UPSTREAM_LOST; null while connected. */
    /** @type {string | null} */
    this.down = 'it has not connected yet';
    /** The pid of a stdio server's process while one runs. */
    /** @type {number | null} */
    this.pid = null;
    /** Connections made (the first included). */
    this.connections = 0;
  }

  get connected() {
    return this.down === null;
  }

  /** Connects; resolves when the first attempt has ended (connected or not: a failure schedules a retry). */
  start() {
    if (!this.#starting) this.#starting = this.#connect().finally(() => { this.#starting = null; });
    return this.#starting;
  }

  async #connect() {
    if (this.#closed) return;
    const generation = ++this.#generation;
    const spec = this.spec;
    const client = new Client({ name: 'codemode-executor-mcp-gateway', version: '1' }, { capabilities: {}, jsonSchemaValidator: lazyValidator() });
    /** @type {import('@modelcontextprotocol/sdk/shared/transport.js').Transport} */
    let transport;
    if (spec.kind === 'stdio') {
      const stdio = new StdioClientTransport({
        command: spec.command,
        args: spec.args,
        env: { ...getDefaultEnvironment(), ...spec.env },
        cwd: spec.cwd,
        stderr: 'pipe',
      });
      stdio.stderr?.on('data', (chunk) => {
        for (const line of String(chunk).split('\n')) if (line.trim()) this.#log(`[${spec.name}] ${line}`);
      });
      transport = stdio;
    } else {
      transport = new StreamableHTTPClientTransport(spec.url, { requestInit: { headers: spec.headers } });
    }
    const since = Date.now();
    client.onclose = () => {
      if (generation !== this.#generation) return;
      this.#lost(Date.now() - since >= STABLE_MS ? 'its connection ended' : 'it stopped right after connecting');
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (generation === this.#generation) this.#changed(client);
    });
    this.#connecting = client;
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
      if (this.#closed || generation !== this.#generation) {
        // Closed (or lost and restarted) while it connected: this client is nobody's.
        await client.close().catch(() => {});
        return;
      }
      this.#client = client;
      this.#connecting = null;
      this.pid = transport instanceof StdioClientTransport ? transport.pid : null;
      await this.#refresh(client);
    } catch (e) {
      if (this.#connecting === client) this.#connecting = null;
      if (this.#closed) return;
      // The transport's end may have been reported first (as a loss): say what failed.
      if (generation !== this.#generation) return void this.#log(`[${spec.name}] connecting failed: ${/** @type {Error} */ (e).message}`);
      this.#client = null;
      await client.close().catch(() => {});
      this.#lost(`connecting failed: ${/** @type {Error} */ (e).message}`);
      return;
    }
    if (generation !== this.#generation || this.#closed) return;
    this.down = null;
    this.connections++;
    // Connected for a while: the next loss restarts at the first delay again.
    setTimeout(() => {
      if (generation === this.#generation && this.connected) this.#backoff = BACKOFF_FIRST_MS;
    }, STABLE_MS).unref();
    this.emit('connected');
  }

  /**
   * `notifications/tools/list_changed`: one read of the list at a time, and one more after it
   * when notifications came meanwhile (a storm of them costs two reads, and the last read
   * started is the one kept).
   * @param {Client} client
   */
  #changed(client) {
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    this.#refreshing = true;
    this.#refresh(client)
      .catch((e) => this.#log(`[${this.spec.name}] tools/list failed: ${e.message}`))
      .finally(() => {
        this.#refreshing = false;
        if (this.#again && client === this.#client) {
          this.#again = false;
          this.#changed(client);
        }
      });
  }

  /**
   * Reads every page of the tool list and emits `tools` when it changed.
   * @param {Client} client
   */
  async #refresh(client) {
    /** @type {Array<any>} */
    const listed = [];
    /** @type {string | undefined} */
    let cursor;
    const seen = new Set();
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: CONNECT_TIMEOUT_MS });
      listed.push(...answer.tools);
      cursor = answer.nextCursor;
      if (cursor === undefined || seen.has(cursor) || listed.length >= MAX_TOOLS) break;
      seen.add(cursor);
    }
    if (this.#client !== null && client !== this.#client) return; // a lost connection's list
    /** The definitions as the server listed them (what a client would show the model). */
    this.listed = listed.slice(0, MAX_TOOLS);
    const tools = nameTools(this.listed);
    const changed = JSON.stringify(tools) !== JSON.stringify(this.tools);
    this.tools = tools;
    this.byName = new Map(tools.map((t) => [t.name, t]));
    if (changed) this.emit('tools', tools);
  }

  /** @param {string} why */
  #lost(why) {
    if (this.#closed) return;
    const client = this.#client;
    this.#client = null;
    this.pid = null;
    this.#generation++;
    this.down = why;
    if (client) client.close().catch(() => {});
    this.emit('lost', why);
    if (this.#timer) return;
    const delay = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, BACKOFF_MAX_MS);
    this.#log(`[${this.spec.name}] ${why}; restarting in ${delay} ms`);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.start();
    }, delay);
    this.#timer.unref();
  }

  /**
   * Calls tool `name` (the program's name for it). Resolves with the server's `CallToolResult`;
   * rejects with the UPSTREAM_LOST or UPSTREAM_TIMEOUT text (a hung server is restarted).
   * @param {UpstreamTool} tool
   * @param {Record<string, unknown>} args
   * @param {AbortSignal} [signal]
   */
  async call(tool, args, signal) {
    const vars = { server: this.spec.name, tool: tool.name };
    const client = this.#client;
    if (!client || this.down !== null) throw new Error(render('UPSTREAM_LOST', { ...vars, detail: this.down ?? 'it is restarting' }));
    try {
      return await client.callTool({ name: tool.original, arguments: args }, undefined, { timeout: this.callTimeoutMs, signal });
    } catch (e) {
      if (e instanceof McpError && e.code === ErrorCode.RequestTimeout && !signal?.aborted) {
        if (client === this.#client) this.#lost(`it did not answer ${tool.name} within ${this.callTimeoutMs} ms`);
        throw new Error(render('UPSTREAM_TIMEOUT', { ...vars, ms: this.callTimeoutMs }));
      }
      if (e instanceof McpError && e.code === ErrorCode.ConnectionClosed) {
        throw new Error(render('UPSTREAM_LOST', { ...vars, detail: this.down ?? 'its connection ended during the call' }));
      }
      throw e;
    }
  }

  /** Stops it for good: no restart, the client closed (a stdio server's process ends). */
  async close() {
    this.#closed = true;
    this.#generation++;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const clients = [this.#client, this.#connecting];
    this.#client = null;
    this.#connecting = null;
    this.down = 'the gateway is closing';
    await Promise.all(clients.map((c) => c?.close().catch(() => {})));
  }
}

module.exports = { Upstream, nameTools };
