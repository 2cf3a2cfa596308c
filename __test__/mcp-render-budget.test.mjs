// A tool list built to stall the host: 10,000 tools, each with a small `$ref` fan-out schema
// (fixtures/mcp-fanout-server.mjs). Rendering their declarations is bounded per schema, per
// server and per render (docs/mcp.md, "Many tools"): what does not fit is `unknown`, or left to
// `search` and `describe`. First the renderer called directly, timed and compiled with the
// TypeScript compiler; then the gateway (`codemode-executor mcp` over stdio, the real MCP SDK
// client) in front of the hostile server as a real upstream. The time bounds are generous: the
// unbounded render took 10 to 20 seconds here.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { fanoutSchema } from './fixtures/mcp-fanout-server.mjs';

const require = createRequire(import.meta.url);
const ts = require('typescript');
const { declareServers, declareProvider, RENDER_BUDGETS } = require('../lib/model/declarations.js');

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'codemode-executor.js');
const fanoutServer = path.join(import.meta.dirname, 'fixtures', 'mcp-fanout-server.mjs');
const pagedServer = path.join(import.meta.dirname, 'fixtures', 'mcp-paged-server.mjs');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-budget-'));

/** A bound on one render's wall time here (a slow 2-core machine); the budgets aim at ~200 ms. */
const RENDER_MS = 1_000;
/** A bound on a client's request to the gateway: a render plus the transport. */
const REQUEST_MS = 2_000;

/**
 * `count` tools as an upstream lists them, each with a fan-out input and output schema of
 * `levels` levels (each its own object, as parsed JSON is).
 */
function hostileTools(count, levels = 10) {
  return Array.from({ length: count }, (_, i) => ({ name: `op_${i}`, original: `op_${i}`, description: `Operation ${i} on a tree.`, inputSchema: fanoutSchema(levels), outputSchema: fanoutSchema(levels) }));
}

const readFile = {
  name: 'read_file',
  original: 'read-file',
  description: 'Reads a file.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, encoding: { enum: ['utf8', 'base64'] } }, required: ['path'] },
  outputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};

/** The TypeScript compiler's diagnostics for `declarations` (a .d.ts) used by `usage`. */
function compile(declarations, usage) {
  const dir = fs.mkdtempSync(path.join(tmp, 'ts-'));
  const files = [path.join(dir, 'servers.d.ts'), path.join(dir, 'usage.ts')];
  fs.writeFileSync(files[0], declarations);
  fs.writeFileSync(files[1], usage);
  const program = ts.createProgram(files, { noEmit: true, strict: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: [] });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

/** `fn`'s result and the milliseconds it took. */
function timed(fn) {
  const start = performance.now();
  const value = fn();
  return { value, ms: performance.now() - start };
}

/** `promise`'s value and the milliseconds it took to settle. */
async function timedAsync(promise) {
  const start = performance.now();
  const value = await promise;
  return { value, ms: performance.now() - start };
}

describe('the renderer, called directly', () => {
  it('declares 10,000 fan-out tools and a normal server within the bound, bounded in size, as valid TypeScript', () => {
    // Ten levels (the schema): each is past its own budget, and costs that budget to find
    // out. Three levels: each fits its own budget (typed), but 10,000 of them do not fit a server's.
    const servers = [
      { provider: 'hostile', server: 'hostile', tools: hostileTools(10_000) },
      { provider: 'large', server: 'large', tools: hostileTools(10_000, 3) },
      { provider: 'files', server: 'files', tools: [readFile] },
    ];
    const { value: text, ms } = timed(() => declareServers(servers));
    console.log(`declareServers, 2 servers of 10,000 fan-out tools (10 and 3 levels) and one of 1: ${ms.toFixed(0)} ms, ${text.length} characters`);
    expect(ms).toBeLessThan(RENDER_MS);
    expect(text.length).toBeLessThanOrEqual(RENDER_BUDGETS.render.chars + 1_000);
    const [hostile, large] = text.split('\n\n');
    // Past the server's nodes or work a tool is `unknown`; past its characters, not declared.
    expect(hostile).toMatch(/\n {2}op_0\(input: unknown\): Promise<unknown>;\n/);
    expect(hostile).toMatch(/\n {2}\/\/ …and \d+ more tools are not declared here: the declarations passed their size budget\.\n\};$/);
    // The first tools are typed.
    expect(large).toMatch(/\n {2}op_0\(input: \{\n {4}tree: \{\n {6}left\?: \{\n/);
    expect(large).toMatch(/\n {2}\/\/ …and \d+ more tools are not declared here/);
    // A server after the hostile one keeps its own budget: typed in full.
    expect(text).toContain('  read_file(input: {\n    path: string;\n    encoding?: "utf8" | "base64";\n  }): Promise<{\n    text: string;\n  }>;');
    const usage = [
      'async function main(): Promise<void> {',
      "  const file = await files.read_file({ path: 'a' });",
      '  const t: string = file.text;',
      "  await hostile.op_0({ tree: { left: { middle: { right: {} } } } });",
      '  // @ts-expect-error a path is a string',
      '  await files.read_file({ path: 1 });',
      '  void t;',
      '}',
      'void main;',
    ].join('\n');
    expect(compile(text, usage)).toEqual([]);
  }, 120_000);

  it('codeModeTool’s path (declareProvider): 10,000 fan-out tools within the bound', () => {
    // Ten levels: each schema is past its own budget, and costs that budget to find out.
    const { value: text, ms } = timed(() => declareProvider('tools', hostileTools(10_000)));
    console.log(`declareProvider, 10,000 fan-out tools: ${ms.toFixed(0)} ms, ${text.length} characters`);
    expect(ms).toBeLessThan(RENDER_MS);
    expect(text.length).toBeLessThanOrEqual(RENDER_BUDGETS.render.chars + 1_000);
    expect(compile(text, 'void tools.op_0;')).toEqual([]);
  }, 120_000);

  it('many hostile servers share one render’s budget', () => {
    const servers = Array.from({ length: 8 }, (_, i) => ({ provider: `hostile${i}`, server: `hostile${i}`, tools: hostileTools(2_000) }));
    const { value: text, ms } = timed(() => declareServers(servers));
    console.log(`declareServers, 8 servers of 2,000 fan-out tools: ${ms.toFixed(0)} ms, ${text.length} characters`);
    expect(ms).toBeLessThan(RENDER_MS);
    expect(text.length).toBeLessThanOrEqual(RENDER_BUDGETS.render.chars + 8_000);
    // Every server still has its global (its tools not declared past the budget).
    for (let i = 0; i < 8; i++) expect(text).toContain(`declare const hostile${i}: {`);
    expect(compile(text, 'void hostile7;')).toEqual([]);
  }, 120_000);
});

/** A client of `codemode-executor mcp` over stdio in front of `servers`, started with `flags`. */
async function gateway(servers, flags = []) {
  const config = path.join(tmp, `servers-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(config, JSON.stringify({ mcpServers: servers }));
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp', '--config', config, '--workers', '1', ...flags], stderr: 'pipe' });
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(transport);
  return client;
}

/** Runs `code`; its text. */
async function run(client, code) {
  const reply = await client.callTool({ name: 'code', arguments: { code } });
  const text = reply.content.map((c) => c.text).join('\n');
  expect(reply.isError, text).not.toBe(true);
  return text;
}

const fanout = (env = {}) => ({ command: process.execPath, args: [fanoutServer], env });
const paged = { command: process.execPath, args: [pagedServer] };

describe('the gateway in front of a server listing 9,999 fan-out tools', () => {
  let client;
  beforeAll(async () => {
    // One short of the 10,000 a server's list is read to, so that one more is read too.
    client = await gateway({ fanout: fanout({ FANOUT_TOOLS: '9999' }), paged });
  }, 120_000);
  afterAll(async () => {
    await client?.close();
  });

  it('tools/list and a `code` call answer within the bound (--catalog auto: search)', async () => {
    const both = await timedAsync(Promise.all([timedAsync(client.listTools()), timedAsync(run(client, 'async () => (await paged.double({ n: 21 })).value')) ]));
    const [{ value: { tools }, ms: listMs }, { value: text, ms: codeMs }] = both.value;
    console.log(`gateway, 9,999 fan-out tools: tools/list ${listMs.toFixed(0)} ms, a code call at the same time ${codeMs.toFixed(0)} ms`);
    expect(listMs).toBeLessThan(REQUEST_MS);
    expect(codeMs).toBeLessThan(REQUEST_MS);
    expect(text).toBe('42');
    expect(tools.map((t) => t.name)).toEqual(['code', 'search', 'describe']);
    expect(tools[0].description).toContain('`fanout` (MCP server "fanout", 9999 tools');
    // Again, the declarations already made: as quick.
    expect((await timedAsync(client.listTools())).ms).toBeLessThan(REQUEST_MS);
  }, 60_000);

  it('search and describe of its tools answer within the bound, the answer bounded', async () => {
    const found = await timedAsync(client.callTool({ name: 'search', arguments: { query: 'operation tree 4242' } }));
    console.log(`gateway: search ${found.ms.toFixed(0)} ms`);
    expect(found.ms).toBeLessThan(REQUEST_MS);
    expect(found.value.content[0].text.split('\n')[0]).toBe('fanout.op_4242: Operation 4242 on a tree.');
    // The most words a query is read for, none matching: every tool's name and description read for each.
    const none = await timedAsync(client.callTool({ name: 'search', arguments: { query: Array.from({ length: 32 }, (_, i) => `nothing${i}`).join(' ') } }));
    console.log(`gateway: search of 32 words matching nothing ${none.ms.toFixed(0)} ms`);
    expect(none.ms).toBeLessThan(REQUEST_MS);
    expect(none.value.content[0].text).toMatch(/^No tool matches/);
    const names = Array.from({ length: 50 }, (_, i) => `fanout.op_${i * 100}`);
    const described = await timedAsync(client.callTool({ name: 'describe', arguments: { tools: names } }));
    const text = described.value.content[0].text;
    console.log(`gateway: describe of 50 fan-out tools ${described.ms.toFixed(0)} ms, ${text.length} characters`);
    expect(described.ms).toBeLessThan(REQUEST_MS);
    // Each schema past its own budget: `unknown`, each of the 50 described.
    expect(text.split('\n\n')).toHaveLength(50);
    expect(text).toMatch(/^ {2}\/\*\* Operation 0 on a tree\. \*\/\n {2}fanout\.op_0\(input: unknown\): Promise<string>;\n/);
  }, 60_000);

  it('after list_changed the list is read again, and tools/list stays within the bound', async () => {
    const changed = new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, resolve));
    expect(await run(client, 'async () => fanout.churn({})')).toBe('churned');
    await changed;
    const again = await timedAsync(client.listTools());
    console.log(`gateway: tools/list after list_changed ${again.ms.toFixed(0)} ms`);
    expect(again.ms).toBeLessThan(REQUEST_MS);
    expect(again.value.tools[0].description).toContain('10000 tools');
  }, 120_000);
});

describe('--catalog full with a server too large to declare', () => {
  it('declares the servers that fit and leaves the hostile one to search and describe, each answer bounded', async () => {
    // Three levels, with output schemas: each tool's declaration fits its own budget, about 12,000 characters.
    const client = await gateway({ fanout: fanout({ FANOUT_TOOLS: '1000', FANOUT_LEVELS: '3', FANOUT_OUTPUT: '1' }), paged }, ['--catalog', 'full']);
    try {
      const { value: { tools }, ms } = await timedAsync(client.listTools());
      console.log(`gateway --catalog full, 1,000 fan-out tools: tools/list ${ms.toFixed(0)} ms, description ${tools[0].description.length} characters`);
      expect(ms).toBeLessThan(REQUEST_MS);
      expect(tools.map((t) => t.name)).toEqual(['code', 'search', 'describe']);
      const description = tools[0].description;
      expect(description).toContain('declare const paged: {');
      expect(description).not.toContain('declare const fanout');
      expect(description).toMatch(/`fanout` \(MCP server "fanout", 1000 tools, too many to declare here\)/);
      expect(await run(client, 'async () => fanout.echo({ text: "still callable" })')).toBe('still callable');
      // One describe is one render: past its budget a tool is not described, and says so.
      const names = Array.from({ length: 50 }, (_, i) => `fanout.op_${i}`);
      const described = await timedAsync(client.callTool({ name: 'describe', arguments: { tools: names } }));
      const parts = described.value.content[0].text.split('\n\n');
      console.log(`gateway: describe of 50 typed fan-out tools ${described.ms.toFixed(0)} ms, ${described.value.content[0].text.length} characters`);
      expect(described.ms).toBeLessThan(REQUEST_MS);
      expect(described.value.content[0].text.length).toBeLessThanOrEqual(RENDER_BUDGETS.render.chars + 50 * 200);
      expect(parts).toHaveLength(50);
      expect(parts[0]).toMatch(/^ {2}\/\*\* Operation 0 on a tree\. \*\/\n {2}fanout\.op_0\(input: \{\n {4}tree: \{\n {6}left\?: \{/);
      expect(parts.at(-1)).toBe('// "fanout.op_49": not described: this answer reached its size budget; describe fewer tools at a time');
    } finally {
      await client.close();
    }
  }, 120_000);
});

describe('a server whose 1,000 tools each have a fan-out output schema', () => {
  it('a `code` call answers within the bound while the gateway reads the list again', async () => {
    const client = await gateway({ fanout: fanout({ FANOUT_TOOLS: '1000', FANOUT_PAGE: '1000', FANOUT_OUTPUT: '1' }), paged });
    try {
      // The output schema still checks the result (the SDK validates structured content; it
      // keeps the validators of the last page it read, here the only one).
      expect(await run(client, 'async () => JSON.stringify(await fanout.op_7({ tree: {} }))')).toBe('{"tree":{}}');
      expect(await run(client, 'async () => { try { return await fanout.op_7({ tree: {}, invalid: true }) } catch (e) { return e.message } }')).toMatch(/does not match the tool's output schema/);
      let changed = false;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed = true; });
      expect(await run(client, 'async () => fanout.churn({})')).toBe('churned');
      // Calls one after another until the gateway has read the new list: none may wait long.
      const times = [];
      while (!changed || times.length === 0) times.push((await timedAsync(run(client, 'async () => 1'))).ms);
      console.log(`gateway, 1,000 fan-out output schemas read again: ${times.length} code calls meanwhile, the slowest ${Math.max(...times).toFixed(0)} ms`);
      expect(Math.max(...times)).toBeLessThan(REQUEST_MS);
    } finally {
      await client.close();
    }
  }, 180_000);
});
