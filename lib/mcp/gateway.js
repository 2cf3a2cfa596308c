// @ts-check
'use strict';
// The MCP gateway: upstream MCP servers offered to a client as one `code` tool (and `search` /
// `describe` when the catalog is large). The model's program runs in an executor; each upstream
// server is a provider global, each call a `tools/call` on it. docs/mcp.md.

const { Server } = require('@modelcontextprotocol/sdk/server/index.js');
const { ListToolsRequestSchema, CallToolRequestSchema } = require('@modelcontextprotocol/sdk/types.js');
const { Upstream } = require('./upstream');
const { parseServers } = require('./config');
const { declareCatalog, declareTool, summaryLine, renderBudget, TOOL_DOC_CHARS } = require('../model/declarations');
const { truncateResult, RESULT_CHARS, consoleText, truncatedNote } = require('../model/truncate');
const { fault, render } = require('../errors');
const { limits } = require('../native');
const { MCP_DEFAULTS } = require('./usage');

/** @typedef {import('./config').ServerSpec} ServerSpec */
/** @typedef {import('./upstream').UpstreamTool} UpstreamTool */
/** @typedef {import('../../index').Outcome} Outcome */
/** @typedef {import('../../index').ProviderDeclaration} ProviderDeclaration */
/** @typedef {{ execute(request: import('../../index').ExecuteRequest): Promise<Outcome> }} Executor */
/**
 * One run's view of the tools: its providers, what each name meant at its start (per provider),
 * and the server tool each name was put to a person as.
 * @typedef {{ providers: ProviderDeclaration[], names: Map<string, Map<string, UpstreamTool>>,
 *   pinned: Map<string, string>, asked: number }} Run
 */
/** One server's declarations (declareCatalog), with its upstream. @typedef {{ up: Upstream, text: string, complete: boolean }} Declared */

/** Matches `search` returns at most. */
const SEARCH_LIMIT = 20;
/** Tools one `describe` declares at most. */
const DESCRIBE_LIMIT = 50;
/** The part of a `search` query read: its first characters, and words of those. */
const SEARCH_QUERY_CHARS = 1_000;
const SEARCH_WORDS = 32;
/**
 * What one approval question shows at most (docs/mcp.md, Approvals). It shows a call's input
 * whole, one line a leaf (`options.amount: 9999999`), or it is not asked: a call whose input
 * passes any of these bounds is refused, saying which, since a view with anything cut or left
 * out could hide the part that matters.
 */
const ASK_BOUNDS = Object.freeze({
  /** Leaves of the input (values that are not a non-empty object or array), one line each. */
  leaves: 40,
  /** Characters of one value as shown: its JSON, escapes included. */
  valueChars: 500,
  /** Characters of one key as shown (quoted and escaped when it is not an identifier). */
  keyChars: 100,
  /** Characters of one leaf's path as shown (`items[0].id`): bounds how deep the input nests. */
  pathChars: 200,
});
/** How much of a key or path a refusal's reason quotes. */
const ASK_QUOTE_CHARS = 60;
/** Questions one run may put to a person; later calls that need a yes are refused. */
const ASKS_PER_RUN = 16;
/** A denial's reason when the client cannot ask a person. */
const NO_ELICITATION = 'the MCP client cannot ask a person: it does not support elicitation, so calls that need approval are refused; use a client that supports it, or run the gateway without --approve for this tool';

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
 * @property {(line: string) => void} [log] the gateway's diagnostics (default: stderr)
 */

class McpGateway {
  /** @type {Upstream[]} */
  upstreams;
  /** @type {Set<Server>} */
  #servers = new Set();
  #options;
  /** @type {Array<{ server: string, tool: string }>} */
  #approve;
  #closed = false;
  /**
   * The declarations of every upstream's tools (made again only when a tool list changed), and
   * which servers the `code` tool's description declares or leaves to `search` and `describe`.
   * @type {{ text: string, declared: Declared[], searched: Declared[] } | null}
   */
  #catalog = null;

  /** @param {GatewayOptions} options */
  constructor(options) {
    if (typeof options !== 'object' || options === null) throw fault('INVALID_OPTION', { field: 'options', problem: 'must be an object', allowed: '{ servers, executor, ... }' });
    const specs = parseServers(options.servers);
    if (!options.executor || typeof options.executor.execute !== 'function') {
      throw fault('INVALID_OPTION', { field: 'executor', problem: 'must be an executor', allowed: 'an IsolateExecutor or what connect() returns' });
    }
    const catalog = options.catalog ?? 'auto';
    if (!['auto', 'full', 'search'].includes(catalog)) throw fault('INVALID_OPTION', { field: 'catalog', problem: `${JSON.stringify(catalog)} is not a mode`, allowed: "'auto', 'full' or 'search'" });
    const callTimeoutMs = positive('callTimeout', options.callTimeout, MCP_DEFAULTS.callTimeout);
    this.#options = {
      executor: options.executor,
      catalog,
      callTimeoutMs,
      approvalTimeout: positive('approvalTimeout', options.approvalTimeout, limits().approval.defaultTimeout, limits().approval.timeout[1]),
      maxResultChars: positive('maxResultChars', options.maxResultChars, RESULT_CHARS),
      network: options.network === true,
      log: options.log ?? ((/** @type {string} */ line) => process.stderr.write(`${line}\n`)),
    };
    this.#approve = (options.approve ?? []).map((pattern) => {
      const dot = typeof pattern === 'string' ? pattern.lastIndexOf('.') : -1;
      const server = dot > 0 ? pattern.slice(0, dot) : '';
      if (!specs.some((s) => s.name === server) || dot === pattern.length - 1) {
        throw fault('INVALID_OPTION', { field: 'approve', problem: `${JSON.stringify(pattern)} names no configured server's tool`, allowed: `server.tool or server.* with a server of ${specs.map((s) => s.name).join(', ')}` });
      }
      return { server, tool: pattern.slice(dot + 1) };
    });
    this.upstreams = specs.map((spec) => new Upstream(spec, { callTimeoutMs, log: this.#options.log }));
    for (const up of this.upstreams) up.on('tools', () => this.#toolsChanged());
  }

  /** Connects every upstream (each first attempt ended; a failed one keeps retrying). */
  async start() {
    await Promise.all(this.upstreams.map((u) => u.start()));
  }

  /** The MCP server objects live now (one per stdio connection or HTTP session). */
  get clients() {
    return this.#servers.size;
  }

  /** Whether the model gets (some of) the catalog by `search` and `describe` rather than whole. */
  get searching() {
    return this.#plan().searched.length > 0;
  }

  /** Every upstream's tools as TypeScript declarations, within one render's budget. */
  declarations() {
    return this.#plan().text;
  }

  /**
   * The catalog: `--catalog search` declares no server; `full` every server whose declarations
   * fit their budget (types.js RENDER_BUDGETS), the others left to search; `auto` every server
   * when all fit and their text is at most MCP_DEFAULTS.fullCatalogChars, else none.
   */
  #plan() {
    if (this.#catalog) return this.#catalog;
    const { text, servers } = declareCatalog(this.upstreams.map((u) => ({ provider: u.spec.provider, server: u.spec.name, tools: u.tools })));
    const all = servers.map((d, i) => ({ up: this.upstreams[i], text: d.text, complete: d.complete }));
    const mode = this.#options.catalog;
    const whole = mode === 'full' || (mode === 'auto' && all.every((d) => d.complete) && text.length <= MCP_DEFAULTS.fullCatalogChars);
    const declared = whole ? all.filter((d) => d.complete) : [];
    this.#catalog = { text, declared, searched: all.filter((d) => !declared.includes(d)) };
    return this.#catalog;
  }

  /** The `code` tool's description: what the model reads. */
  codeDescription() {
    const { declared, searched } = this.#plan();
    const full = this.#options.catalog === 'full';
    const catalog = [
      ...(declared.length > 0 ? [declared.map((d) => d.text).join('\n\n')] : []),
      ...(searched.length > 0
        ? [searched.map(({ up }) => `- \`${up.spec.provider}\` (MCP server "${up.spec.name}", ${up.tools.length} tools${full ? ', too many to declare here' : ''}${up.connected ? '' : ', not connected now'})`).join('\n') +
            '\n\nFind tools with the `search` tool and read their exact declarations with `describe` before you call them.']
        : []),
    ].join('\n\n');
    return [
      'Run a JavaScript or TypeScript program that calls the tools of these MCP servers, and get back what it returns.',
      'Write one async arrow function: `async () => { ... }`. Each server is a global object; each of its tools is an async method taking one object argument. Await the calls, combine their results in code, and return only what is needed (the result comes back as JSON, cut structurally past ' + this.#options.maxResultChars + ' characters). console.log output comes back too.',
      '',
      catalog,
      '',
      'A tool with an output type resolves to its structured content; any other resolves to its text content as a string (several parts joined by newlines), or to its content array when it holds more than text. A tool error rejects the call: catch it with try/catch.',
      this.#options.network ? 'The program may use fetch.' : 'The program has no network: fetch is closed; reach the outside only through the tools.',
      '',
      'Example:',
      'async () => {',
      `  const found = await ${exampleCall(this.upstreams)};`,
      '  return found;',
      '}',
    ].join('\n');
  }

  /** The tools this gateway offers to a client. */
  listTools() {
    /** @type {Array<{ name: string, description: string, inputSchema: any, annotations?: any }>} */
    const tools = [{
      name: 'code',
      description: this.codeDescription(),
      inputSchema: {
        type: 'object',
        properties: { code: { type: 'string', description: 'The program: one async arrow function, e.g. `async () => { return await server.tool({}) }`.' } },
        required: ['code'],
      },
    }];
    if (this.searching) {
      tools.push({
        name: 'search',
        description: 'Find tools of the MCP servers the `code` tool can call, by keywords. Answers one line per tool: `server.tool: what it does`.',
        inputSchema: { type: 'object', properties: { query: { type: 'string', description: 'Keywords, e.g. "create issue"' } }, required: ['query'] },
        annotations: { readOnlyHint: true },
      });
      tools.push({
        name: 'describe',
        description: 'The exact TypeScript declarations of tools found with `search` (names as `server.tool`), to call them from the `code` tool.',
        inputSchema: { type: 'object', properties: { tools: { type: 'array', items: { type: 'string' }, description: 'e.g. ["github.create_issue"]' } }, required: ['tools'] },
        annotations: { readOnlyHint: true },
      });
    }
    return tools;
  }

  /**
   * A new MCP server object for one client (a stdio connection, or one HTTP session), sharing
   * this gateway's upstreams.
   * @param {{ name?: string, version?: string }} [info]
   */
  createServer(info = {}) {
    const server = new Server(
      { name: info.name ?? 'codemode-executor', version: info.version ?? '1' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: this.listTools() }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = request.params.arguments ?? {};
      switch (request.params.name) {
        case 'code':
          if (typeof args.code !== 'string') return textAnswer('The `code` argument must be a string holding the program.', true);
          return this.#run(server, args.code, extra);
        case 'search':
          if (this.searching) return textAnswer(this.search(String(args.query ?? '')), false);
          break;
        case 'describe':
          if (this.searching && Array.isArray(args.tools)) return textAnswer(this.describe(args.tools.map(String)), false);
          if (this.searching) return textAnswer('The `tools` argument must be an array of names such as "server.tool".', true);
          break;
      }
      return textAnswer(`There is no tool "${request.params.name}" here; the tools are ${this.listTools().map((t) => t.name).join(', ')}.`, true);
    });
    this.#servers.add(server);
    server.onclose = () => { this.#servers.delete(server); };
    return server;
  }

  /**
   * `search`: tools whose name or description holds the query's words, best first.
   * @param {string} query
   */
  search(query) {
    const words = query.slice(0, SEARCH_QUERY_CHARS).toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).slice(0, SEARCH_WORDS);
    /** @type {Array<{ score: number, line: string }>} */
    const hits = [];
    for (const u of this.upstreams) {
      for (const t of u.tools) {
        const name = `${u.spec.provider}.${t.name} ${t.original}`.toLowerCase();
        // What the model could read of the description (declarations cut it there too).
        const text = (typeof t.description === 'string' ? t.description.slice(0, TOOL_DOC_CHARS) : '').toLowerCase();
        let score = 0;
        for (const w of words) score += (name.includes(w) ? 3 : 0) + (text.includes(w) ? 1 : 0);
        if (score > 0 || words.length === 0) hits.push({ score, line: `${u.spec.provider}.${summaryLine(t)}` });
      }
    }
    hits.sort((a, b) => b.score - a.score);
    if (hits.length === 0) return `No tool matches "${query}". Try other words; the servers are ${this.upstreams.map((u) => u.spec.provider).join(', ')}.`;
    const shown = hits.slice(0, SEARCH_LIMIT).map((h) => h.line);
    if (hits.length > SEARCH_LIMIT) shown.push(`(${hits.length - SEARCH_LIMIT} more; use more specific words)`);
    return shown.join('\n');
  }

  /**
   * `describe`: the declarations of `names` (`server.tool`).
   * @param {string[]} names
   */
  describe(names) {
    // One answer is one render: past its budget a schema is `unknown`, and a tool is not described.
    const budget = renderBudget();
    return names.slice(0, DESCRIBE_LIMIT).map((full) => {
      const dot = full.indexOf('.');
      const up = this.upstreams.find((u) => u.spec.provider === full.slice(0, dot) || u.spec.name === full.slice(0, dot));
      const tool = up?.tools.find((t) => t.name === full.slice(dot + 1) || t.original === full.slice(dot + 1));
      const quoted = JSON.stringify(full.slice(0, 200));
      if (!up || !tool) return `// ${quoted}: no such tool (search first)`;
      return declareTool(up.spec.provider, tool, budget) ?? `// ${quoted}: not described: this answer reached its size budget; describe fewer tools at a time`;
    }).join('\n\n');
  }

  /**
   * Whether `--approve` names `tool` of `up`.
   * @param {Upstream} up
   * @param {UpstreamTool} tool
   */
  #needsYes(up, tool) {
    return this.#approve.some((r) => r.server === up.spec.name && (r.tool === '*' || r.tool === tool.name || r.tool === tool.original));
  }

  /** The run's providers, from the tools known now. */
  #providers() {
    return this.upstreams.map((u) => {
      const known = u.tools.length > 0;
      /** @type {ProviderDeclaration} */
      const p = { name: u.spec.provider, tools: known ? u.tools.map((t) => t.name) : '*' };
      const rules = this.#approve.filter((a) => a.server === u.spec.name);
      if (rules.length > 0) {
        // A server whose tools are not known yet (not connected) may come up during the run:
        // every call to it then waits for a yes.
        if (!known || rules.some((r) => r.tool === '*')) p.approve = true;
        else {
          const names = u.tools.filter((t) => this.#needsYes(u, t)).map((t) => t.name);
          if (names.length > 0) p.approve = names;
        }
      }
      return p;
    });
  }

  /**
   * Runs one program for `server`'s client.
   * @param {Server} server
   * @param {string} code
   * @param {any} extra the request's context (its abort signal, its id)
   */
  async #run(server, code, extra) {
    const providers = this.#providers();
    // What each name meant when the run started: a tool list that changes during the run does
    // not move a name onto another tool. `pinned` holds what a person was asked about.
    /** @type {Run} */
    const run = {
      providers,
      names: new Map(this.upstreams.map((u) => [u.spec.provider, new Map(u.byName)])),
      pinned: new Map(),
      asked: 0,
    };
    const gated = providers.some((p) => p.approve);
    /** @type {Outcome} */
    let outcome;
    try {
      outcome = await this.#options.executor.execute({
        code,
        providers,
        dispatch: (call) => this.#dispatch(call, run, extra.signal),
        signal: extra.signal,
        ...(gated ? { approval: { mode: 'callback', timeout: this.#options.approvalTimeout, decide: (call) => this.#ask(server, call, run, extra) } } : {}),
      });
    } catch (e) {
      const err = /** @type {{ code?: string, message?: string }} */ (e);
      return textAnswer(`The program could not be run (${err.code ?? 'ERROR'}): ${err.message}`, true);
    }
    return this.#answer(outcome);
  }

  /**
   * A program's tool call: `tools/call` on its upstream.
   * @param {{ provider: string, tool: string, args: unknown[] }} call
   * @param {Run} run
   * @param {AbortSignal} [signal]
   */
  async #dispatch(call, run, signal) {
    const up = this.upstreams.find((u) => u.spec.provider === call.provider);
    if (!up) throw new Error(render('TOOL_NOT_FOUND', { tool: `${call.provider}.${call.tool}` }));
    // A server unknown at the start has no names of the run's: they resolve now.
    const names = run.names.get(call.provider);
    const tool = names && names.size > 0 ? names.get(call.tool) : up.byName.get(call.tool);
    if (!tool) {
      if (!up.connected) throw new Error(render('UPSTREAM_LOST', { server: up.spec.name, tool: call.tool, detail: up.down }));
      throw new Error(render('TOOL_NOT_FOUND', { tool: `${call.provider}.${call.tool}` }));
    }
    // The tool list may have changed since the run started (the names, or the server came up):
    // a call the run did not put to a person, to a tool that needs a yes, is refused.
    const gate = run.providers.find((p) => p.name === call.provider)?.approve;
    const asked = run.pinned.get(`${call.provider}.${call.tool}`);
    if ((this.#needsYes(up, tool) && gate !== true && !(gate ?? []).includes(call.tool)) || (asked !== undefined && asked !== tool.original)) {
      throw new Error(render('APPROVAL_DENIED', { provider: call.provider, tool: call.tool, reason: 'the server changed its tool list during this run, so the call was not put to a person; run the program again' }));
    }
    const input = callInput(call);
    if (!input) throw new TypeError(notOneObject(call));
    const result = await up.call(tool, input, signal);
    const content = Array.isArray(result.content) ? result.content : [];
    const allText = content.every((/** @type {any} */ c) => c.type === 'text');
    const text = content.filter((/** @type {any} */ c) => c.type === 'text').map((/** @type {any} */ c) => c.text).join('\n');
    if (result.isError) throw new Error(text || `${call.provider}.${call.tool} reported an error`);
    if (result.structuredContent !== undefined) return result.structuredContent;
    return allText ? text : content;
  }

  /**
   * Asks the person behind `server`'s client whether a call may run (MCP elicitation). The
   * question names the server's own tool and shows the input whole, one line a leaf, so the
   * program cannot push the part that matters out of view; a call that cannot be shown whole
   * (askView) is refused without asking.
   * @param {Server} server
   * @param {{ provider: string, tool: string, args: unknown[] }} call
   * @param {Run} run
   * @param {any} extra
   */
  async #ask(server, call, run, extra) {
    if (!server.getClientCapabilities()?.elicitation) return { approved: false, reason: NO_ELICITATION };
    const up = this.upstreams.find((u) => u.spec.provider === call.provider);
    const names = run.names.get(call.provider);
    const tool = (names && names.size > 0 ? names : up?.byName)?.get(call.tool);
    const original = tool?.original ?? call.tool;
    run.pinned.set(`${call.provider}.${call.tool}`, original);
    const input = callInput(call);
    if (!input) return { approved: false, reason: `it was not put to a person: ${notOneObject(call)}` };
    const view = askView(input);
    if ('refusal' in view) return { approved: false, reason: `it was not put to a person: ${view.refusal}` };
    const [serverName, toolName] = [up?.spec.name ?? call.provider, original].map((n) => visible(JSON.stringify(n)));
    if (toolName.length > ASK_BOUNDS.keyChars) {
      return { approved: false, reason: `it was not put to a person: the server's name for the tool is ${toolName.length} characters long as shown, more than the ${ASK_BOUNDS.keyChars} a question shows of a name; the server must use a shorter name` };
    }
    if (++run.asked > ASKS_PER_RUN) {
      return { approved: false, reason: `the run has asked ${ASKS_PER_RUN} times already, the most one run may ask; ask for fewer approvals in one run` };
    }
    const n = view.lines.length;
    const answer = await server.elicitInput(
      {
        message: [
          `The program wants to call ${serverName} tool ${toolName} with ${n === 0 ? 'an empty input ({}).' : `this input (${n} ${n === 1 ? 'value' : 'values'}):`}`,
          ...view.lines,
          'Allow this call?',
        ].join('\n'),
        requestedSchema: { type: 'object', properties: {} },
      },
      { relatedRequestId: extra.requestId, timeout: this.#options.approvalTimeout },
    );
    if (answer.action === 'accept') return { approved: true };
    return { approved: false, reason: answer.action === 'decline' ? 'the person declined it' : 'the person dismissed the question' };
  }

  /**
   * The answer to a `code` call: the result (cut structurally), the program's failure, and
   * its console lines.
   * @param {Outcome} outcome
   */
  #answer(outcome) {
    /** @type {string[]} */
    const parts = [];
    const max = this.#options.maxResultChars;
    if (outcome.error) {
      parts.push(`The program failed (${outcome.error.code}): ${clip(outcome.error.message, max)}`);
    } else if (outcome.result === undefined) {
      parts.push('The program returned nothing (undefined).');
    } else {
      const { value, truncated } = truncateResult(outcome.result, max);
      if (typeof value === 'string') parts.push(value);
      else {
        const pretty = JSON.stringify(value, null, 2);
        parts.push(pretty.length <= max ? pretty : JSON.stringify(value));
      }
      if (truncated) parts.push(`(${truncatedNote(max)})`);
    }
    if (outcome.logs.length > 0) {
      parts.push(`Console:\n${consoleText(outcome.logs)}`);
    }
    return textAnswer(parts.join('\n\n'), Boolean(outcome.error));
  }

  #toolsChanged() {
    this.#catalog = null;
    for (const server of this.#servers) server.sendToolListChanged().catch(() => {});
  }

  /** Closes every client's server and every upstream (stdio servers' processes end). */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    const servers = [...this.#servers];
    this.#servers.clear();
    await Promise.all(servers.map((s) => s.close().catch(() => {})));
    await Promise.all(this.upstreams.map((u) => u.close()));
  }
}

/**
 * @param {string} field
 * @param {unknown} value
 * @param {number} fallback
 * @param {number} [max]
 */
function positive(field, value, fallback, max = 2_147_483_647) {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw fault('INVALID_OPTION', { field, problem: `${JSON.stringify(value)} is not a whole number from 1 to ${max}`, allowed: `1 to ${max}` });
  }
  return value;
}

/**
 * `text` cut to its first `max` characters, saying how many more there were.
 * @param {string} text
 * @param {number} max
 */
function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/**
 * Characters that can make a question read as something it is not: controls (NEL among them),
 * format characters (zero-width, bidirectional controls, tags), line and paragraph separators,
 * spaces other than U+0020, characters drawn as nothing (default ignorable), and look-alikes of
 * the quotes around keys and strings.
 */
const DECEIVING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Default_Ignorable_Code_Point}\u00ab\u00bb\u02b9-\u02bc\u02c8\u02dd\u02ee\u05f3\u05f4\u2018-\u201f\u2032-\u2037\u2039\u203a\u275b-\u2760\u301d-\u301f\uff02\uff07]/gu;

/**
 * `text` with every DECEIVING character written as an escape (`\u200b`, `\u{e0041}`).
 * @param {string} text
 */
function visible(text) {
  return text.replace(DECEIVING, (c) => {
    if (c === ' ') return c;
    const code = /** @type {number} */ (c.codePointAt(0));
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * A call's input when it is one plain object (or nothing), else null.
 * @param {{ args: unknown[] }} call
 * @returns {Record<string, unknown> | null}
 */
function callInput(call) {
  const input = call.args[0] ?? {};
  if (typeof input !== 'object' || input === null || Array.isArray(input) || call.args.length > 1) return null;
  return /** @type {Record<string, unknown>} */ (input);
}

/** @param {{ provider: string, tool: string }} call */
function notOneObject(call) {
  return `${call.provider}.${call.tool} takes one object argument (its input), e.g. ${call.provider}.${call.tool}({ ... })`;
}

/** Keys written bare in a path; any other is quoted: `options["a.b"]`. */
const BARE_KEY = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * What a person is shown of a call's input: one line a leaf, `- path: value`, written from the
 * JSON its server receives (a Date as its string, NaN as null, undefined left out), every
 * DECEIVING character an escape; or why it cannot be shown whole within ASK_BOUNDS.
 * @param {Record<string, unknown>} input
 * @returns {{ lines: string[] } | { refusal: string }}
 */
function askView(input) {
  /** @type {unknown} */
  let wire;
  try {
    wire = JSON.parse(JSON.stringify(input));
  } catch (e) {
    return { refusal: `its input cannot be written as JSON, the form its server receives (${/** @type {Error} */ (e).message}); pass plain data` };
  }
  /** @type {string[]} */
  const lines = [];
  let leaves = 0;
  // Depth first, in key order; `path` is null once past the leaf bound (only counting then).
  /** @type {Array<[string | null, unknown]>} */
  const stack = [['', wire]];
  while (stack.length > 0) {
    const [path, value] = /** @type {[string | null, unknown]} */ (stack.pop());
    const children = value !== null && typeof value === 'object' ? Object.entries(value) : [];
    if (path === null) {
      if (children.length === 0) leaves++;
      for (let i = children.length - 1; i >= 0; i--) stack.push([null, children[i][1]]);
      continue;
    }
    if (children.length === 0) {
      if (path === '') break; // the empty input: no lines
      if (++leaves > ASK_BOUNDS.leaves) continue;
      const shown = visible(JSON.stringify(value));
      if (shown.length > ASK_BOUNDS.valueChars) {
        return { refusal: `the value at ${path} is ${shown.length} characters long as shown, more than the ${ASK_BOUNDS.valueChars} a question shows of one value; pass a shorter value` };
      }
      lines.push(`- ${path}: ${shown}`);
      continue;
    }
    const array = Array.isArray(value);
    for (let i = children.length - 1; i >= 0; i--) {
      if (leaves >= ASK_BOUNDS.leaves) {
        stack.push([null, children[i][1]]);
        continue;
      }
      const key = children[i][0];
      const bare = !array && BARE_KEY.test(key);
      const shownKey = array ? key : bare ? key : visible(JSON.stringify(key));
      if (shownKey.length > ASK_BOUNDS.keyChars) {
        return { refusal: `a key in ${path === '' ? 'the input' : path} is ${shownKey.length} characters long as shown (${clip(shownKey, ASK_QUOTE_CHARS)}), more than the ${ASK_BOUNDS.keyChars} a question shows of one key; use shorter keys` };
      }
      const child = array || !bare ? `${path}[${shownKey}]` : path === '' ? key : `${path}.${key}`;
      if (child.length > ASK_BOUNDS.pathChars) {
        return { refusal: `its input nests too deep to show: the path ${clip(child, ASK_QUOTE_CHARS)} is longer than the ${ASK_BOUNDS.pathChars} characters a question shows of one path; nest less deeply` };
      }
      stack.push([child, children[i][1]]);
    }
  }
  if (leaves > ASK_BOUNDS.leaves) {
    return { refusal: `its input has ${leaves} values, more than the ${ASK_BOUNDS.leaves} one question shows (one a line); make calls of fewer values each` };
  }
  return { lines };
}

/**
 * @param {string} text
 * @param {boolean} isError
 */
function textAnswer(text, isError) {
  return { content: [{ type: /** @type {const} */ ('text'), text }], isError };
}

/** @param {Upstream[]} upstreams */
function exampleCall(upstreams) {
  for (const u of upstreams) {
    const t = u.tools[0];
    if (t) return `${u.spec.provider}.${t.name}({ /* its input */ })`;
  }
  return `${upstreams[0]?.spec.provider ?? 'server'}.tool({ /* its input */ })`;
}

/**
 * Starts a gateway and returns the MCP server object for one client; closing it closes the
 * gateway's upstreams too. `executor` stays the caller's to close.
 * @param {GatewayOptions} options
 */
async function createMcpGateway(options) {
  const gateway = new McpGateway(options);
  await gateway.start();
  const server = gateway.createServer();
  const close = server.close.bind(server);
  server.close = async () => {
    await close();
    await gateway.close();
  };
  return server;
}

module.exports = { McpGateway, createMcpGateway, NO_ELICITATION, ASK_BOUNDS };
