// @ts-check
'use strict';
// The catalogue: what the model learns of the upstream servers' tools. Their declarations
// (lib/model/declarations.js, made again only when a tool list changed), which servers the `code`
// tool's description declares and which it leaves to the `search` and `describe` tools, that
// description, and the answers of `search` and `describe`. docs/mcp.md, "What the model sees".

const { declareCatalog, declareTool, summaryLine, renderBudget, TOOL_DOC_CHARS } = require('../model/declarations');
const { MCP_DEFAULTS } = require('./usage');

/** @typedef {import('./upstream').Upstream} Upstream */
/** One server's declarations (declareCatalog), with its upstream. @typedef {{ up: Upstream, text: string, complete: boolean }} Declared */
/**
 * What the model learns, made once a tool list: every server's declarations, those the `code`
 * tool's description declares and those it leaves to search, and (when asked) what a program is
 * type-checked against.
 * @typedef {{ text: string, all: Declared[], declared: Declared[], searched: Declared[], checked?: string }} Plan
 */

/** Matches `search` returns at most. */
const SEARCH_LIMIT = 20;
/** Tools one `describe` declares at most. */
const DESCRIBE_LIMIT = 50;
/** The part of a `search` query read: its first characters, and words of those. */
const SEARCH_QUERY_CHARS = 1_000;
const SEARCH_WORDS = 32;

class Catalogue {
  /** @type {Upstream[]} */
  #upstreams;
  #mode;
  #maxResultChars;
  #network;
  /** @type {Plan | null} */
  #plan = null;

  /**
   * @param {Upstream[]} upstreams
   * @param {{ mode: 'auto' | 'full' | 'search', maxResultChars: number, network: boolean }} options
   */
  constructor(upstreams, { mode, maxResultChars, network }) {
    this.#upstreams = upstreams;
    this.#mode = mode;
    this.#maxResultChars = maxResultChars;
    this.#network = network;
  }

  /** A server's tool list changed: the declarations are made again when next needed. */
  changed() {
    this.#plan = null;
  }

  /** Whether the model gets (some of) the catalogue by `search` and `describe` rather than whole. */
  get searching() {
    return this.#planned().searched.length > 0;
  }

  /** Every upstream's tools as TypeScript declarations, within one render's budget. */
  declarations() {
    return this.#planned().text;
  }

  /**
   * `search` declares no server; `full` every server whose declarations fit their budget
   * (RENDER_BUDGETS), the others left to search; `auto` every server when all fit and their text
   * is at most MCP_DEFAULTS.fullCatalogChars, else none.
   * @returns {Plan}
   */
  #planned() {
    if (this.#plan) return this.#plan;
    const { text, servers } = declareCatalog(this.#upstreams.map((u) => ({ provider: u.spec.provider, server: u.spec.name, tools: u.tools })));
    const all = servers.map((d, i) => ({ up: this.#upstreams[i], text: d.text, complete: d.complete }));
    const mode = this.#mode;
    const whole = mode === 'full' || (mode === 'auto' && all.every((d) => d.complete) && text.length <= MCP_DEFAULTS.fullCatalogChars);
    const declared = whole ? all.filter((d) => d.complete) : [];
    this.#plan = { text, all, declared, searched: all.filter((d) => !declared.includes(d)) };
    return this.#plan;
  }

  /**
   * The declarations a program is type-checked against (`typecheck`, docs/typecheck.md): every
   * server's, those the `code` tool's description declares and those it leaves to `search` and
   * `describe` alike. A server whose tools are not all declared (its declarations passed their
   * budget, or it has not connected and its tools are not known) takes any other name too,
   * untyped: a call the check cannot know about is left to run, as it would without the check.
   */
  checkDeclarations() {
    const plan = this.#planned();
    plan.checked ??= plan.all.map((d) => (d.complete && d.up.tools.length > 0 ? d.text : openEnded(d.text))).join('\n\n');
    return plan.checked;
  }

  /** The `code` tool's description: what the model reads. It says whether a searched server is connected now. */
  codeDescription() {
    const { declared, searched } = this.#planned();
    const full = this.#mode === 'full';
    const catalog = [
      ...(declared.length > 0 ? [declared.map((d) => d.text).join('\n\n')] : []),
      ...(searched.length > 0
        ? [searched.map(({ up }) => `- \`${up.spec.provider}\` (MCP server "${up.spec.name}", ${up.tools.length} tools${full ? ', too many to declare here' : ''}${up.connected ? '' : ', not connected now'})`).join('\n') +
            '\n\nFind tools with the `search` tool and read their exact declarations with `describe` before you call them.']
        : []),
    ].join('\n\n');
    return [
      'Run a JavaScript or TypeScript program that calls the tools of these MCP servers, and get back what it returns.',
      'Write one async arrow function: `async () => { ... }`. Each server is a global object; each of its tools is an async method taking one object argument. Await the calls, combine their results in code, and return only what is needed (the result comes back as JSON, cut structurally past ' + this.#maxResultChars + ' characters). console.log output comes back too.',
      '',
      catalog,
      '',
      'A tool with an output type resolves to its structured content; any other resolves to its text content as a string (several parts joined by newlines), or to its content array when it holds more than text. A tool error rejects the call: catch it with try/catch.',
      this.#network ? 'The program may use fetch.' : 'The program has no network: fetch is closed; reach the outside only through the tools.',
      '',
      'Example:',
      'async () => {',
      `  const found = await ${exampleCall(this.#upstreams)};`,
      '  return found;',
      '}',
    ].join('\n');
  }

  /**
   * `search`: tools whose name or description holds the query's words, best first.
   * @param {string} query
   */
  search(query) {
    const words = query.slice(0, SEARCH_QUERY_CHARS).toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).slice(0, SEARCH_WORDS);
    /** @type {Array<{ score: number, line: string }>} */
    const hits = [];
    for (const u of this.#upstreams) {
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
    if (hits.length === 0) return `No tool matches "${query}". Try other words; the servers are ${this.#upstreams.map((u) => u.spec.provider).join(', ')}.`;
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
      const up = this.#upstreams.find((u) => u.spec.provider === full.slice(0, dot) || u.spec.name === full.slice(0, dot));
      const tool = up?.tools.find((t) => t.name === full.slice(dot + 1) || t.original === full.slice(dot + 1));
      const quoted = JSON.stringify(full.slice(0, 200));
      if (!up || !tool) return `// ${quoted}: no such tool (search first)`;
      return declareTool(up.spec.provider, tool, budget) ?? `// ${quoted}: not described: this answer reached its size budget; describe fewer tools at a time`;
    }).join('\n\n');
  }
}

/**
 * A server's declarations that also take any other tool name, untyped (an index signature).
 * @param {string} text its `declare const <provider>: { ... };`
 */
function openEnded(text) {
  return text.replace(/^declare const [^\n]*: \{$/m, (head) => `${head}\n  [tool: string]: (input?: any) => Promise<any>;`);
}

/** @param {Upstream[]} upstreams */
function exampleCall(upstreams) {
  for (const u of upstreams) {
    const t = u.tools[0];
    if (t) return `${u.spec.provider}.${t.name}({ /* its input */ })`;
  }
  return `${upstreams[0]?.spec.provider ?? 'server'}.tool({ /* its input */ })`;
}

module.exports = { Catalogue };
