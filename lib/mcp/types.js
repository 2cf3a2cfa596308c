// @ts-check
'use strict';
// Turns the JSON Schemas of tools into TypeScript declarations, so the model writing a program
// sees each provider as one global object of typed async functions: the MCP gateway's servers
// (the schemas they send) and codeModeTool's AI SDK tools (lib/ai-sdk.js, their schemas as JSON
// Schema). Pure and dependency-free: schemaType never throws, whatever it is given.

const MAX_DEPTH = 32; // schema nesting (guards against cyclic schema objects)
const MAX_REF_DEPTH = 8; // $ref expansions inside one another
const MAX_NODES = 5000; // schemas rendered for one call (guards against $ref fan-out)
const MAX_CHARS = 16_000; // text rendered for one schema: a larger type is declared `unknown`
const MAX_LITERAL = 200; // a longer const or enum value is declared by its type
const PROPERTY_DOC_CHARS = 300;
const TOOL_DOC_CHARS = 1000;
const SUMMARY_CHARS = 120;

/**
 * A tool as a provider offers it: `name` is the name programs call, `original` the MCP name (a
 * doc line says it when it differs).
 * @typedef {{ name: string, original?: string, description?: string, inputSchema?: object, outputSchema?: object }} Tool
 * @typedef {{ provider: string, server: string, description?: string, tools: Tool[] }} Server
 */

/**
 * A rendered type and how tightly it binds: 0 a union, 1 an intersection, 2 anything else.
 * @typedef {{ text: string, prec: 0 | 1 | 2 }} Rendered
 * @typedef {{ root: unknown, refs: string[], depth: number, nodes: number, chars: number }} Context
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
const has = (o, key) => Object.prototype.hasOwnProperty.call(o, key);

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

/** @param {unknown} value @returns {Rendered} */
function literal(value) {
  if (typeof value === 'number' && !Number.isFinite(value)) return atom('number');
  try {
    const text = JSON.stringify(value); // JSON data written as a type is its own literal type
    if (text !== undefined && text.length > MAX_LITERAL) return typeof value === 'string' ? atom('string') : UNKNOWN;
    return text === undefined ? UNKNOWN : atom(text);
  } catch {
    return UNKNOWN;
  }
}

/** @param {string} text @returns {string} */
const escapeComment = (text) => text.replace(/\*\//g, '*\\/');

/** @param {string} text @param {number} max @returns {string} */
const cut = (text, max) => (text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text);

/** One comment line: whitespace runs become one space, `*\/` is escaped. @param {string} text @param {number} max */
const oneLine = (text, max) => escapeComment(cut(text.replace(/\s+/g, ' ').trim(), max));

/** @param {string} name @returns {string} */
const propertyName = (name) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));

/** @param {unknown} schema @param {string} indent @param {Context} ctx @returns {Rendered} */
function render(schema, indent, ctx) {
  if (schema === false) return NEVER;
  if (!isObject(schema) || ctx.depth >= MAX_DEPTH || ++ctx.nodes > MAX_NODES) return UNKNOWN;
  ctx.depth++;
  try {
    const type = renderSchema(schema, indent, ctx);
    // Every rendered text counts (a parent's includes its children's): past the budget the
    // whole schema is `unknown`, so a schema built to blow up (a $ref fan-out) stays cheap.
    ctx.chars += type.text.length;
    if (ctx.chars > MAX_CHARS * 8) throw TOO_LARGE;
    return schema.nullable === true ? union([type, atom('null')]) : type;
  } finally {
    ctx.depth--;
  }
}

/** @param {Record<string, any>} s @param {string} indent @param {Context} ctx @returns {Rendered} */
function renderSchema(s, indent, ctx) {
  if (typeof s.$ref === 'string') return renderRef(s.$ref, indent, ctx);
  if (has(s, 'const')) return literal(s.const);
  if (Array.isArray(s.enum)) return union(s.enum.map(literal));
  const parts = [];
  const base = baseType(s, indent, ctx);
  if (base) parts.push(base);
  for (const key of ['anyOf', 'oneOf']) {
    const members = s[key];
    if (Array.isArray(members) && members.length > 0) parts.push(union(members.map((m) => render(m, indent, ctx))));
  }
  if (Array.isArray(s.allOf)) for (const m of s.allOf) parts.push(render(m, indent, ctx));
  return intersection(parts);
}

/** The type from `type` (or implied by object/array keywords); null when the schema names none. */
/** @param {Record<string, any>} s @param {string} indent @param {Context} ctx @returns {Rendered | null} */
function baseType(s, indent, ctx) {
  /** @type {unknown[]} */
  let types;
  if (typeof s.type === 'string') types = [s.type];
  else if (Array.isArray(s.type)) types = s.type;
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
  if (tuple) return atom(`[${tuple.map((m) => render(m, indent, ctx).text).join(', ')}]`);
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
  const required = new Set(Array.isArray(s.required) ? s.required : []);
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
  /** @type {unknown} */
  let target = ctx.root;
  for (const segment of [match[1], ...match[2].split('/')]) {
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
 * The TypeScript type for a JSON Schema; multi-line object types close at `indent`.
 * @param {unknown} schema
 * @param {string} [indent]
 * @returns {string}
 */
function schemaType(schema, indent = '') {
  try {
    const text = render(schema, String(indent), { root: schema, refs: [], depth: 0, nodes: 0, chars: 0 }).text;
    return text.length > MAX_CHARS ? 'unknown' : text;
  } catch {
    return 'unknown'; // past the text budget, or a Proxy or getter that throws
  }
}

/** The jsdoc and signature lines of one tool, indented as inside its server's block. */
/**
 * @param {Tool} tool
 * @param {string} head what precedes `(input…)`
 * @param {string} [untyped] what a tool without an output schema resolves to
 * @returns {string[]}
 */
function toolLines(tool, head, untyped = 'string') {
  const doc = [];
  const description = typeof tool.description === 'string' ? tool.description.trim() : '';
  if (description) for (const line of cut(description, TOOL_DOC_CHARS).split(/\r\n?|\n/)) doc.push(escapeComment(line.trimEnd()));
  if (typeof tool.original === 'string' && tool.original !== tool.name) doc.push(`MCP tool ${escapeComment(JSON.stringify(tool.original))}`);
  // One line when it fits on one: every line costs the model tokens on every turn.
  const lines = doc.length === 1 ? [`  /** ${doc[0]} */`] : doc.length > 1 ? ['  /**', ...doc.map((l) => (l ? `   * ${l}` : '   *')), '   */'] : [];
  const input = tool.inputSchema ?? { type: 'object' };
  const required = isObject(input) && Array.isArray(input.required) && input.required.length > 0;
  const output = tool.outputSchema ? schemaType(tool.outputSchema, '  ') : untyped;
  lines.push(`  ${head}(input${required ? '' : '?'}: ${schemaType(input, '  ')}): Promise<${output}>;`);
  return lines;
}

/**
 * The declarations of MCP servers, one `declare const <provider>` each, separated by a blank line.
 * @param {Server[]} servers
 * @returns {string}
 */
function declareServers(servers) {
  return servers
    .map((s) => {
      const about = typeof s.description === 'string' ? oneLine(s.description, PROPERTY_DOC_CHARS) : '';
      return declareProvider(s.provider, s.tools, { doc: `MCP server ${escapeComment(JSON.stringify(s.server))}${about ? `: ${about}` : ''}`, untyped: 'string' });
    })
    .join('\n\n');
}

/**
 * One provider global as TypeScript: `declare const <provider>: { … };`, each tool a method
 * taking its input and resolving to its output type (`untyped`, default `unknown`, when it
 * declares no output schema), under an optional one-line `doc` comment.
 * @param {string} provider
 * @param {Tool[]} tools
 * @param {{ doc?: string, untyped?: string }} [options]
 * @returns {string}
 */
function declareProvider(provider, tools, { doc, untyped = 'unknown' } = {}) {
  const body = tools.flatMap((t) => toolLines(t, propertyName(t.name), untyped));
  return [...(doc ? [`/** ${doc} */`] : []), `declare const ${provider}: {`, ...body, '};'].join('\n');
}

/**
 * One tool's jsdoc and signature, written `<provider>.<name>(…)` so it reads on its own.
 * @param {string} provider
 * @param {Tool} tool
 * @returns {string}
 */
function declareTool(provider, tool) {
  const name = propertyName(tool.name);
  return toolLines(tool, name === tool.name ? `${provider}.${name}` : `${provider}[${name}]`).join('\n');
}

/**
 * `<name>: <first sentence of the description>`, for search results.
 * @param {Tool} tool
 * @returns {string}
 */
function summaryLine(tool) {
  const description = typeof tool.description === 'string' ? tool.description.trim() : '';
  const paragraph = description.split(/\r?\n\s*\r?\n/)[0].replace(/\s+/g, ' ');
  const sentence = /^.*?[.!?](?=\s|$)/.exec(paragraph)?.[0] ?? paragraph;
  return sentence ? `${tool.name}: ${cut(sentence, SUMMARY_CHARS)}` : tool.name;
}

module.exports = { schemaType, declareServers, declareProvider, declareTool, summaryLine };
