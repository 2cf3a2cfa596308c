// @ts-check
'use strict';
// The MCP gateway: upstream MCP servers offered to a client as one `code` tool (and `search` /
// `describe` when the catalogue is large). Each client (a stdio connection, an HTTP session) gets
// an MCP SDK `McpServer` with the three tools registered (`registerTool`, the SDK checking their
// input); when the catalogue changes, each server's `code` description is updated and `search`
// and `describe` enabled or disabled, the SDK telling the client (`list_changed`). The program
// runs in an executor (run.js), a call that needs a yes is asked through elicitation
// (elicitation.js), and the catalogue is catalogue.js's. docs/mcp.md.

const { createRequire } = require('node:module');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { toJsonSchemaCompat } = require('@modelcontextprotocol/sdk/server/zod-json-schema-compat.js');
const { Upstream } = require('./upstream');
const { gatewayOptions } = require('./options');
const { Catalogue } = require('./catalogue');
const { Runner, textAnswer } = require('./run');
const { ask } = require('./elicitation');

/** @typedef {import('./options').GatewayOptions} GatewayOptions */
/** @typedef {import('@modelcontextprotocol/sdk/server/mcp.js').RegisteredTool} RegisteredTool */
/** One client's server and the tools registered on it. @typedef {{ mcp: McpServer, code: RegisteredTool, search: RegisteredTool, describe: RegisteredTool }} Client */

/**
 * zod as the SDK requires it (zod is the SDK's dependency, not this package's): `registerTool`
 * takes zod schemas, which the SDK converts to JSON Schema for `tools/list` and checks each
 * call's arguments with, so they are made with the zod it reads.
 * @type {typeof import('zod/v4')}
 */
const z = createRequire(require.resolve('@modelcontextprotocol/sdk/server/mcp.js'))('zod/v4');

/**
 * A tool's input schema: an object of `shape`. zod heads the JSON Schema it writes with
 * `$schema` (draft-07); the meta's `$schema: undefined` overrides that (zod copies meta onto the
 * root, and an undefined key is left out when written), so clients are listed the schemas the
 * gateway always listed (__test__/mcp-gateway.test.mjs holds them).
 * @template {import('zod/v4').ZodRawShape} T
 * @param {T} shape
 */
const inputOf = (shape) => z.object(shape).meta({ $schema: undefined });

/** The tools, but `code`'s description (the catalogue's). Each refusal of an argument says what it takes. */
const TOOLS = {
  code: {
    inputSchema: inputOf({
      code: z.string({ error: 'The `code` argument must be a string holding the program.' })
        .describe('The program: one async arrow function, e.g. `async () => { return await server.tool({}) }`.'),
    }),
  },
  search: {
    description: 'Find tools of the MCP servers the `code` tool can call, by keywords. Answers one line per tool: `server.tool: what it does`.',
    inputSchema: inputOf({ query: z.string({ error: 'The `query` argument must be a string of keywords.' }).describe('Keywords, e.g. "create issue"') }),
    annotations: { readOnlyHint: true },
  },
  describe: {
    description: 'The exact TypeScript declarations of tools found with `search` (names as `server.tool`), to call them from the `code` tool.',
    inputSchema: inputOf({
      tools: z.array(z.string({ error: 'The `tools` argument must be an array of names such as "server.tool".' }), { error: 'The `tools` argument must be an array of names such as "server.tool".' })
        .describe('e.g. ["github.create_issue"]'),
    }),
    annotations: { readOnlyHint: true },
  },
};
/** What `registerTool` says of every tool it registers (`tools/list` carries it). */
const EXECUTION = { taskSupport: /** @type {const} */ ('forbidden') };

class McpGateway {
  /** @type {Upstream[]} */
  upstreams;
  /** What the model learns of the tools. @type {Catalogue} */
  catalogue;
  /** @type {Set<Client>} */
  #clients = new Set();
  #options;
  #runner;
  #closed = false;

  /** @param {GatewayOptions} options */
  constructor(options) {
    const o = gatewayOptions(options);
    this.#options = o;
    this.upstreams = o.specs.map((spec) => new Upstream(spec, { callTimeoutMs: o.callTimeoutMs, log: o.log }));
    this.catalogue = new Catalogue(this.upstreams, { mode: o.catalog, maxResultChars: o.maxResultChars, network: o.network });
    // With `typecheck`, a program is checked against every server's declarations, those the
    // `code` tool's description leaves to `search` and `describe` too.
    const declarations = o.typecheck ? () => this.catalogue.checkDeclarations() : undefined;
    this.#runner = new Runner({ upstreams: this.upstreams, executor: o.executor, approve: o.approve, approvalTimeout: o.approvalTimeout, maxResultChars: o.maxResultChars, tenant: o.tenant, declarations });
    for (const up of this.upstreams) {
      up.on('tools', () => {
        this.catalogue.changed();
        this.#refresh();
      });
      // A server left to search is listed as connected or not.
      up.on('connected', () => this.#refresh());
      up.on('lost', () => this.#refresh());
    }
  }

  /** Connects every upstream (each first attempt ended; a failed one keeps retrying). */
  async start() {
    await Promise.all(this.upstreams.map((u) => u.start()));
  }

  /** The MCP servers live now (one per stdio connection or HTTP session). */
  get clients() {
    return this.#clients.size;
  }

  /** What a client's tool list says now: the `code` tool's description, and whether `search` and `describe` are offered. */
  #surface() {
    return { description: this.catalogue.codeDescription(), searching: this.catalogue.searching };
  }

  /**
   * The tools a client is offered now, as `tools/list` lists them (each input schema written by
   * the SDK's conversion, with the options its `tools/list` uses).
   */
  listTools() {
    const { description, searching } = this.#surface();
    /** @type {Array<{ name: string, description: string, inputSchema: import('zod/v4').ZodObject, annotations?: { readOnlyHint: boolean } }>} */
    const tools = [{ name: 'code', description, ...TOOLS.code }];
    if (searching) tools.push({ name: 'search', ...TOOLS.search }, { name: 'describe', ...TOOLS.describe });
    return tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: toJsonSchemaCompat(t.inputSchema, { strictUnions: true, pipeStrategy: 'input' }),
      ...(t.annotations ? { annotations: t.annotations } : {}),
      execution: EXECUTION,
    }));
  }

  /**
   * A new MCP server for one client (a stdio connection, or one HTTP session), sharing this
   * gateway's upstreams.
   * @param {{ name?: string, version?: string }} [info]
   */
  createServer(info = {}) {
    const mcp = new McpServer(
      { name: info.name ?? 'codemode-executor', version: info.version ?? '1' },
      // One catalogue change updates up to three tools: their list_changed go as one.
      { capabilities: { tools: { listChanged: true } }, debouncedNotificationMethods: ['notifications/tools/list_changed'] },
    );
    const { description, searching } = this.#surface();
    const { approvalTimeout } = this.#options;
    /** @type {Client} */
    const client = {
      mcp,
      code: mcp.registerTool('code', { description, ...TOOLS.code }, ({ code }, extra) =>
        this.#runner.run(code, extra.signal, (call, run) => ask(mcp.server, call, run, { upstreams: this.upstreams, timeout: approvalTimeout, requestId: extra.requestId }))),
      search: mcp.registerTool('search', TOOLS.search, async ({ query }) => textAnswer(this.catalogue.search(query), false)),
      describe: mcp.registerTool('describe', TOOLS.describe, async ({ tools }) => textAnswer(this.catalogue.describe(tools), false)),
    };
    if (!searching) {
      client.search.disable();
      client.describe.disable();
    }
    this.#clients.add(client);
    mcp.server.onclose = () => void this.#clients.delete(client);
    return mcp;
  }

  /** The catalogue (or a server's connection) changed: each client's tools follow. */
  #refresh() {
    if (this.#clients.size === 0) return;
    const { description, searching } = this.#surface();
    for (const { code, search, describe } of this.#clients) {
      if (code.description !== description) code.update({ description });
      for (const tool of [search, describe]) {
        if (tool.enabled === searching) continue;
        if (searching) tool.enable();
        else tool.disable();
      }
    }
  }

  /** Closes every client's server and every upstream (stdio servers' processes end). */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const clients = [...this.#clients];
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.mcp.close().catch(() => {})));
    await Promise.all(this.upstreams.map((u) => u.close()));
  }
}

/**
 * Starts a gateway and returns the MCP SDK `Server` for one client (its `McpServer`'s); closing
 * it closes the gateway's upstreams too. `executor` stays the caller's to close.
 * @param {GatewayOptions} options
 */
async function createMcpGateway(options) {
  const gateway = new McpGateway(options);
  await gateway.start();
  const { server } = gateway.createServer();
  const close = server.close.bind(server);
  server.close = async () => {
    await close();
    await gateway.close();
  };
  return server;
}

module.exports = { McpGateway, createMcpGateway };
