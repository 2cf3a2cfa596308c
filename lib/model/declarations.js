// @ts-check
'use strict';
// Turns the JSON Schemas of tools into TypeScript declarations, so the model writing a program
// sees each provider as one global object of typed async functions: the MCP gateway's servers
// (the schemas they send) and codeModeTool's AI SDK tools (lib/ai-sdk/, their schemas as JSON
// Schema). Pure and dependency-free: schemaType never throws, whatever it is given.

const MAX_DEPTH = 32; // schema nesting (guards against cyclic schema objects)
const MAX_REF_DEPTH = 8; // $ref expansions inside one another
const MAX_LITERAL = 200; // a longer const or enum value is declared by its type
const PROPERTY_DOC_CHARS = 300;
const TOOL_DOC_CHARS = 1000;
const SUMMARY_CHARS = 120;

/**
 * What rendering declarations may cost (docs/mcp.md, "What rendering may cost"): one schema, one
 * server (one provider's tools) and one render (one declareServers or declareProvider, or the
 * declareTool calls of one `describe`), each within the next. `nodes` counts schemas visited,
 * `$ref` segments followed, enum, `anyOf`/`oneOf`/`allOf`, tuple and `type` entries, property
 * names and `required` entries; `work` counts the characters of type text built, at every level
 * a type is built into (so a `$ref` fan-out pays for each copy), of literals written and of
 * `$ref`s followed; `chars` counts what is written out. A schema past its own budget, or longer
 * than `schema.chars`, is `unknown`; past a server's or the render's `nodes` or `work`, every
 * later schema of that render is `unknown` at once; past `chars`, the later tools are not
 * declared at all (a comment says how many). A server whose declarations passed its or the
 * render's budget is `complete: false` (declareCatalog), and the gateway leaves it to `search`
 * and `describe`; declareCatalog gives each of N servers a server's budget or 1/N of the
 * render's, whichever is less. A render that spends its whole budget takes tens of milliseconds
 * (docs/mcp.md has the measurements).
 */
const RENDER_BUDGETS = Object.freeze({
  schema: Object.freeze({ nodes: 5_000, work: 128_000, chars: 16_000 }),
  server: Object.freeze({ nodes: 100_000, work: 2_000_000, chars: 200_000 }),
  render: Object.freeze({ nodes: 200_000, work: 4_000_000, chars: 400_000 }),
});

/** @typedef {'nodes' | 'work' | 'chars'} Cost */

/** What is left of one budget of RENDER_BUDGETS, and of those it is within. */
class Budget {
  /**
   * @param {{ nodes: number, work: number, chars?: number }} limits
   * @param {Budget | null} [within]
   */
  constructor(limits, within = null) {
    /** @type {Record<Cost, number>} */
    this.left = { nodes: limits.nodes, work: limits.work, chars: limits.chars ?? Infinity };
    this.within = within;
    /** The costs something asked for more of than was left: none is given from then on. */
    /** @type {Set<Cost>} */
    this.spent = new Set();
  }

  /**
   * Whether `cost` (by default nodes or work: what reading schemas costs) is spent here or in a
   * budget this one is within.
   * @param {Cost[]} [costs]
   */
  exhausted(costs = ['nodes', 'work']) {
    for (let b = /** @type {Budget | null} */ (this); b; b = b.within) if (costs.some((c) => b?.spent.has(c))) return true;
    return false;
  }

  /**
   * Takes `n` of `cost` from this budget and each it is within when every one has that much
   * left and none has spent it; otherwise takes nothing, marks those with too little spent, and
   * answers false. (So a server asking for more than its share spends its own budget, not the
   * others'.)
   * @param {Cost} cost
   * @param {number} n
   */
  take(cost, n) {
    let fits = true;
    for (let b = /** @type {Budget | null} */ (this); b; b = b.within) {
      if (b.spent.has(cost)) fits = false;
      else if (b.left[cost] < n) {
        b.spent.add(cost);
        fits = false;
      }
    }
    if (fits) for (let b = /** @type {Budget | null} */ (this); b; b = b.within) b.left[cost] -= n;
    return fits;
  }
}

/** A new render's budget (pass it to declareTool calls that make one answer). */
const renderBudget = () => new Budget(RENDER_BUDGETS.render);

/**
 * A tool as a provider offers it: `name` is the name programs call, `original` the MCP name (a
 * doc line says it when it differs).
 * @typedef {{ name: string, original?: string, description?: string, inputSchema?: object, outputSchema?: object }} Tool
 * @typedef {{ provider: string, server: string, description?: string, tools: Tool[] }} Server
 */

/**
 * A rendered type and how tightly it binds: 0 a union, 1 an intersection, 2 anything else.
 * @typedef {{ text: string, prec: 0 | 1 | 2 }} Rendered
 * @typedef {{ root: unknown, refs: string[], depth: number, budget: Budget }} Context
 */

/** @param {string} text @returns {Rendered} */
const atom = (text) => ({ text, prec: 2 });
const UNKNOWN = atom('unknown');
/** Thrown out of a render that passed the text budget. */
const TOO_LARGE = new Error('schema too large to declare');
const NEVER = atom('never');

/** @param {unknown} v @returns {v is Record<string, any>} */
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** @param {object} o @param {string} key */
const has = (o, key) => Object.hasOwn(o, key);

/** @param {Rendered[]} parts @returns {Rendered} */
function union(parts) {
  if (parts.some((p) => p.text === 'unknown')) return UNKNOWN;
  /** @type {Map<string, Rendered>} */
  const unique = new Map(parts.filter((p) => p.text !== 'never').map((p) => [p.text, p]));
  if (unique.size === 0) return NEVER;
  if (unique.size === 1) return [...unique.values()][0];
  return { text: [...unique.keys()].join(' | '), prec: 0 };
}

/** @param {Rendered[]} parts @returns {Rendered} */
function intersection(parts) {
  const known = parts.filter((p) => p.text !== 'unknown');
  if (known.length === 0) return UNKNOWN;
  if (known.length === 1) return known[0];
  return { text: known.map((p) => (p.prec === 0 ? `(${p.text})` : p.text)).join(' & '), prec: 1 };
}

/** @param {unknown} value @param {Context} ctx @returns {Rendered} */
function literal(value, ctx) {
  if (typeof value === 'number' && !Number.isFinite(value)) return atom('number');
  /** @type {string | undefined} */
  let text;
  try {
    text = JSON.stringify(value); // JSON data written as a type is its own literal type
  } catch {
    return UNKNOWN;
  }
  if (text === undefined) return UNKNOWN;
  spend(ctx, 'work', text.length);
  if (text.length > MAX_LITERAL) return typeof value === 'string' ? atom('string') : UNKNOWN;
  return atom(text);
}

/**
 * Takes `n` of `cost` from the schema's budget; false when the schema's own budget is spent
 * (what asked for it is `unknown`). Past a server's or the render's budget the whole schema is
 * `unknown`: it throws TOO_LARGE.
 * @param {Context} ctx
 * @param {Cost} cost
 * @param {number} n
 */
function spend(ctx, cost, n) {
  if (ctx.budget.take(cost, n)) return true;
  if (cost === 'work' || ctx.budget.within?.exhausted()) throw TOO_LARGE;
  return false;
}

/** @param {string} text @returns {string} */
const escapeComment = (text) => text.replace(/\*\//g, '*\\/');

/** @param {string} text @param {number} max @returns {string} */
const cut = (text, max) => (text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text);

/**
 * One comment line: whitespace runs become one space, `*\/` is escaped; only the text's start is
 * read (a long text costs no more than a short one).
 * @param {string} text @param {number} max
 */
const oneLine = (text, max) => escapeComment(cut(text.slice(0, 4 * max).replace(/\s+/g, ' ').trim(), max));

/** @param {string} name @returns {string} */
const propertyName = (name) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));

/** @param {unknown} schema @param {string} indent @param {Context} ctx @returns {Rendered} */
function render(schema, indent, ctx) {
  if (schema === false) return NEVER;
  if (!isObject(schema) || ctx.depth >= MAX_DEPTH || !spend(ctx, 'nodes', 1)) return UNKNOWN;
  ctx.depth++;
  try {
    const type = renderSchema(schema, indent, ctx);
    // Every rendered text counts (a parent's includes its children's): past the budget the
    // whole schema is `unknown`, so a schema built to blow up (a $ref fan-out) stays cheap.
    spend(ctx, 'work', type.text.length);
    return schema.nullable === true ? union([type, atom('null')]) : type;
  } finally {
    ctx.depth--;
  }
}

/** @param {Record<string, any>} s @param {string} indent @param {Context} ctx @returns {Rendered} */
function renderSchema(s, indent, ctx) {
  if (typeof s.$ref === 'string') return renderRef(s.$ref, indent, ctx);
  if (has(s, 'const')) return literal(s.const, ctx);
  if (Array.isArray(s.enum)) return spend(ctx, 'nodes', s.enum.length) ? union(s.enum.map((v) => literal(v, ctx))) : UNKNOWN;
  const parts = [];
  const base = baseType(s, indent, ctx);
  if (base) parts.push(base);
  for (const key of ['anyOf', 'oneOf']) {
    const members = s[key];
    if (Array.isArray(members) && members.length > 0) parts.push(spend(ctx, 'nodes', members.length) ? union(members.map((m) => render(m, indent, ctx))) : UNKNOWN);
  }
  if (Array.isArray(s.allOf) && spend(ctx, 'nodes', s.allOf.length)) for (const m of s.allOf) parts.push(render(m, indent, ctx));
  return intersection(parts);
}

/** The type from `type` (or implied by object/array keywords); null when the schema names none. */
/** @param {Record<string, any>} s @param {string} indent @param {Context} ctx @returns {Rendered | null} */
function baseType(s, indent, ctx) {
  /** @type {unknown[]} */
  let types;
  if (typeof s.type === 'string') types = [s.type];
  else if (Array.isArray(s.type)) types = spend(ctx, 'nodes', s.type.length) ? s.type : [];
  else if (isObject(s.properties) || s.additionalProperties !== undefined) types = ['object'];
  else if (s.items !== undefined || Array.isArray(s.prefixItems)) types = ['array'];
  else return null;
  return union(
    types.map((t) => {
      switch (t) {
        case 'string':
        case 'boolean':
        case 'null':
        case 'number':
          return atom(t);
        case 'integer':
          return atom('number');
        case 'array':
          return arrayType(s, indent, ctx);
        case 'object':
          return objectType(s, indent, ctx);
        default:
          return UNKNOWN;
      }
    }),
  );
}

/** @param {Record<string, any>} s @param {string} indent @param {Context} ctx @returns {Rendered} */
function arrayType(s, indent, ctx) {
  const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : null;
  if (tuple) return spend(ctx, 'nodes', tuple.length) ? atom(`[${tuple.map((m) => render(m, indent, ctx).text).join(', ')}]`) : UNKNOWN;
  if (s.items === undefined || s.items === true) return atom('unknown[]');
  const item = render(s.items, indent, ctx);
  return atom(`${item.prec < 2 ? `(${item.text})` : item.text}[]`);
}

/** @param {Record<string, any>} s @param {string} indent @param {Context} ctx @returns {Rendered} */
function objectType(s, indent, ctx) {
  const properties = isObject(s.properties) ? s.properties : {};
  const names = Object.keys(properties);
  if (names.length === 0) {
    const extra = s.additionalProperties;
    return atom(`Record<string, ${isObject(extra) ? render(extra, indent, ctx).text : 'unknown'}>`);
  }
  const listed = Array.isArray(s.required) ? s.required : [];
  if (!spend(ctx, 'nodes', names.length + listed.length)) return UNKNOWN;
  const required = new Set(listed);
  const inner = `${indent}  `;
  const lines = ['{'];
  for (const name of names) {
    const prop = properties[name];
    const doc = isObject(prop) && typeof prop.description === 'string' ? oneLine(prop.description, PROPERTY_DOC_CHARS) : '';
    if (doc) lines.push(`${inner}/** ${doc} */`);
    lines.push(`${inner}${propertyName(name)}${required.has(name) ? '' : '?'}: ${render(prop, inner, ctx).text};`);
  }
  lines.push(`${indent}}`);
  return atom(lines.join('\n'));
}

/** Inlines a `#/$defs/…` or `#/definitions/…` reference, resolved against the root schema. */
/** @param {string} ref @param {string} indent @param {Context} ctx @returns {Rendered} */
function renderRef(ref, indent, ctx) {
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  if (!match || ctx.refs.includes(ref) || ctx.refs.length >= MAX_REF_DEPTH) return UNKNOWN;
  const segments = match[2].split('/');
  spend(ctx, 'work', ref.length);
  if (!spend(ctx, 'nodes', segments.length)) return UNKNOWN;
  /** @type {unknown} */
  let target = ctx.root;
  for (const segment of [match[1], ...segments]) {
    let key = segment;
    try {
      key = decodeURIComponent(segment);
    } catch {}
    key = key.replace(/~1/g, '/').replace(/~0/g, '~');
    if (target === null || typeof target !== 'object' || !has(target, key)) return UNKNOWN;
    target = /** @type {Record<string, unknown>} */ (target)[key];
  }
  ctx.refs.push(ref);
  try {
    return render(target, indent, ctx);
  } finally {
    ctx.refs.pop();
  }
}

/**
 * The TypeScript type for a JSON Schema; multi-line object types close at `indent`. `within` is
 * the server's (or render's) budget the schema's is within: `unknown` at once when it is spent.
 * @param {unknown} schema
 * @param {string} [indent]
 * @param {Budget} [within]
 * @returns {string}
 */
function schemaType(schema, indent = '', within = new Budget(RENDER_BUDGETS.render)) {
  if (within.exhausted()) return 'unknown';
  try {
    const text = render(schema, String(indent), { root: schema, refs: [], depth: 0, budget: new Budget(RENDER_BUDGETS.schema, within) }).text;
    return text.length > RENDER_BUDGETS.schema.chars ? 'unknown' : text;
  } catch {
    return 'unknown'; // past a budget, or a Proxy or getter that throws
  }
}

/** The jsdoc and signature lines of one tool, indented as inside its server's block. */
/**
 * @param {Tool} tool
 * @param {string} head what precedes `(input…)`
 * @param {Budget} budget the server's (or render's) budget
 * @param {string} [untyped] what a tool without an output schema resolves to
 * @returns {string[]}
 */
function toolLines(tool, head, budget, untyped = 'string') {
  const doc = [];
  const description = typeof tool.description === 'string' ? tool.description.slice(0, 2 * TOOL_DOC_CHARS).trim() : '';
  if (description) for (const line of cut(description, TOOL_DOC_CHARS).split(/\r\n?|\n/)) doc.push(escapeComment(line.trimEnd()));
  if (typeof tool.original === 'string' && tool.original !== tool.name) doc.push(`MCP tool ${escapeComment(JSON.stringify(tool.original))}`);
  // One line when it fits on one: every line costs the model tokens on every turn.
  const lines = doc.length === 1 ? [`  /** ${doc[0]} */`] : doc.length > 1 ? ['  /**', ...doc.map((l) => (l ? `   * ${l}` : '   *')), '   */'] : [];
  const input = tool.inputSchema ?? { type: 'object' };
  const required = isObject(input) && Array.isArray(input.required) && input.required.length > 0;
  const output = tool.outputSchema ? schemaType(tool.outputSchema, '  ', budget) : untyped;
  lines.push(`  ${head}(input${required ? '' : '?'}: ${schemaType(input, '  ', budget)}): Promise<${output}>;`);
  return lines;
}

/**
 * One provider's body lines, its tools in order within `budget`: the first typed, then (past
 * its nodes or work) `unknown`, then (past its chars) not declared, a comment saying how many.
 * @param {Tool[]} tools
 * @param {Budget} budget
 * @param {string} untyped
 * @returns {string[]}
 */
function providerBody(tools, budget, untyped) {
  /** @type {string[]} */
  const body = [];
  for (let i = 0; i < tools.length; i++) {
    const lines = toolLines(tools[i], propertyName(tools[i].name), budget, untyped);
    if (!budget.take('chars', lines.reduce((n, l) => n + l.length + 1, 0))) {
      body.push(`  // …and ${tools.length - i} more tools are not declared here: the declarations passed their size budget.`);
      break;
    }
    body.push(...lines);
  }
  return body;
}

/**
 * One provider global as TypeScript: `declare const <provider>: { … };`.
 * @param {string} provider
 * @param {string[]} body
 * @param {string} [doc]
 */
const providerBlock = (provider, body, doc) => [...(doc ? [`/** ${doc} */`] : []), `declare const ${provider}: {`, ...body, '};'].join('\n');

/**
 * The declarations of MCP servers within one render's budget, each server within its own:
 * each server's `declare const <provider>` and whether it is `complete` (no tool of it left
 * `unknown` or undeclared by a budget), and all of them as one text, separated by blank lines.
 * @param {Server[]} servers
 * @returns {{ text: string, servers: Array<{ provider: string, text: string, complete: boolean }> }}
 */
function declareCatalog(servers) {
  const render = renderBudget();
  // Each server's budget is a server's, or its share of the render's when that is less: a server
  // listed first cannot spend what the others need.
  /** @param {Cost} cost */
  const share = (cost) => Math.min(RENDER_BUDGETS.server[cost], Math.floor(RENDER_BUDGETS.render[cost] / Math.max(1, servers.length)));
  const declared = servers.map((s) => {
    const budget = new Budget({ nodes: share('nodes'), work: share('work'), chars: share('chars') }, render);
    const about = typeof s.description === 'string' ? oneLine(s.description, PROPERTY_DOC_CHARS) : '';
    const text = providerBlock(s.provider, providerBody(s.tools, budget, 'string'), `MCP server ${escapeComment(JSON.stringify(s.server))}${about ? `: ${about}` : ''}`);
    return { provider: s.provider, text, complete: !budget.exhausted(['nodes', 'work', 'chars']) };
  });
  return { text: declared.map((d) => d.text).join('\n\n'), servers: declared };
}

/**
 * The declarations of MCP servers, one `declare const <provider>` each, separated by a blank line.
 * @param {Server[]} servers
 * @returns {string}
 */
function declareServers(servers) {
  return declareCatalog(servers).text;
}

/**
 * One provider global as TypeScript: `declare const <provider>: { … };`, each tool a method
 * taking its input and resolving to its output type (`untyped`, default `unknown`, when it
 * declares no output schema), under an optional one-line `doc` comment; one render's budget.
 * @param {string} provider
 * @param {Tool[]} tools
 * @param {{ doc?: string, untyped?: string }} [options]
 * @returns {string}
 */
function declareProvider(provider, tools, { doc, untyped = 'unknown' } = {}) {
  return providerBlock(provider, providerBody(tools, new Budget(RENDER_BUDGETS.server, renderBudget()), untyped), doc);
}

/**
 * One tool's jsdoc and signature, written `<provider>.<name>(…)` so it reads on its own; null
 * when `budget` (one render's, shared by the tools of one answer) has no room left for it.
 * @param {string} provider
 * @param {Tool} tool
 * @param {Budget} [budget]
 * @returns {string | null}
 */
function declareTool(provider, tool, budget = renderBudget()) {
  if (budget.exhausted(['chars'])) return null;
  const name = propertyName(tool.name);
  const text = toolLines(tool, name === tool.name ? `${provider}.${name}` : `${provider}[${name}]`, budget).join('\n');
  return budget.take('chars', text.length) ? text : null;
}

/**
 * `<name>: <first sentence of the description>`, for search results.
 * @param {Tool} tool
 * @returns {string}
 */
function summaryLine(tool) {
  const description = typeof tool.description === 'string' ? tool.description.slice(0, TOOL_DOC_CHARS).trim() : '';
  const paragraph = description.split(/\r?\n\s*\r?\n/)[0].replace(/\s+/g, ' ');
  const sentence = /^.*?[.!?](?=\s|$)/.exec(paragraph)?.[0] ?? paragraph;
  return sentence ? `${tool.name}: ${cut(sentence, SUMMARY_CHARS)}` : tool.name;
}

module.exports = { schemaType, declareCatalog, declareServers, declareProvider, declareTool, summaryLine, renderBudget, RENDER_BUDGETS, TOOL_DOC_CHARS };
