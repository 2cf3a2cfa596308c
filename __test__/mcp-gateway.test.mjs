// The MCP gateway (`codemode-executor mcp`, lib/mcp/) driven by the real MCP SDK client over
// stdio and Streamable HTTP, in front of real upstream servers from npm (server-everything,
// server-memory, server-filesystem on a temp folder) and a paginated SDK server of our own
// (fixtures/mcp-paged-server.mjs). Every socket is on 127.0.0.1.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { createRequire } from 'node:module';
import { served, connected } from './daemon-helpers.mjs';
import { until } from './helpers.mjs';
import { children, firstLine } from './mcp-helpers.mjs';
import { httpGateway } from './mcp-http-gateway.mjs';

const require = createRequire(import.meta.url);
const { render } = require('../lib/errors');
const { NO_ELICITATION } = require('../lib/mcp/elicitation');

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'codemode-executor.js');
const server = (name) => path.join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');
const paged = path.join(import.meta.dirname, 'fixtures', 'mcp-paged-server.mjs');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-'));
const files = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-files-'));
// The filesystem server reports the folder's real path (macOS and some CI temp dirs are links).
const filesReal = fs.realpathSync(files);

/** @param {object} servers @param {string} name */
function configFile(servers, name = 'servers.json') {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, JSON.stringify({ mcpServers: servers }));
  return file;
}

const SERVERS = {
  everything: { command: process.execPath, args: [server('server-everything'), 'stdio'] },
  memory: { command: process.execPath, args: [server('server-memory')], env: { MEMORY_FILE_PATH: path.join(tmp, 'memory.jsonl') } },
  filesystem: { command: process.execPath, args: [server('server-filesystem'), files] },
  paged: { command: process.execPath, args: [paged] },
};

/** A client of a gateway over stdio, started with `flags`. */
async function stdioGateway(config, flags = [], capabilities = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp', '--config', config, '--workers', '1', ...flags],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c) => { stderr += c; });
  const client = new Client({ name: 'test', version: '1' }, { capabilities });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/** Runs `code` through the `code` tool; returns its text and whether it is an error. */
async function run(client, code, options) {
  const answer = await client.callTool({ name: 'code', arguments: { code } }, undefined, options);
  return { text: answer.content.map((c) => c.text).join('\n'), isError: answer.isError === true };
}

/** ~30 ms of CPU: past a tenant's share of 1 ms a minute once the run ends (tenant tests). */
const TENANT_BURN = 'async () => { let x = 0; for (let i = 0; i < 3e7; i++) x += i % 7; return x > 0 }';

/**
 * `typecheck`'s program for server-memory: a call that would run (create_entities), then one with
 * a misnamed argument (`observation`, declared `observations`) on line 3. `fixed` is it corrected.
 */
const MISNAMED = `async () => {
  await memory.create_entities({ entities: [{ name: 'Ada', entityType: 'person', observations: [] }] });
  await memory.add_observations({ observation: [{ entityName: 'Ada', contents: ['wrote a note'] }] });
  return (await memory.read_graph({})).entities;
}`;
const TYPE_ERROR_ANSWER = /^The program failed \(TYPE_ERROR\): This program was not run and no tool was called: it does not type-check against the declared tools \(errors: 1\)\.\n- line 3, column 35: Object literal may only specify known properties, but 'observation' does not exist in type '\{ observations: \{ entityName: string; contents: string\[\]; \}\[\]; \}'/;

/**
 * Runs MISNAMED, then it fixed, through `client`, whose memory server keeps `memoryFile`: the
 * first is answered TYPE_ERROR and the server never saw a call (it wrote no file); the second runs.
 */
async function misnamedThenFixed(client, memoryFile) {
  const refused = await run(client, MISNAMED);
  expect(refused.isError, refused.text).toBe(true);
  expect(refused.text).toMatch(TYPE_ERROR_ANSWER);
  expect(fs.existsSync(memoryFile)).toBe(false);
  const fixed = await run(client, MISNAMED.replace('{ observation:', '{ observations:'));
  expect(fixed.isError, fixed.text).toBe(false);
  expect(parsed(fixed.text)).toEqual([{ name: 'Ada', entityType: 'person', observations: ['wrote a note'] }]);
  expect(fs.readFileSync(memoryFile, 'utf8')).toContain('wrote a note');
}

/** A result's value: JSON, except a string result, which the answer carries as it is. */
function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}



describe('the gateway over stdio, four upstream servers', () => {
  let gw;
  beforeAll(async () => {
    gw = await stdioGateway(configFile(SERVERS), ['--call-timeout', '1500']);
  }, 60_000);
  afterAll(async () => {
    await gw?.client.close();
  });

  it('offers one code tool declaring every server’s tools, every page, as TypeScript', async () => {
    const { tools } = await gw.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['code']);
    const d = tools[0].description;
    expect(d).toContain('declare const everything: {');
    expect(d).toMatch(/get_structured_content\(input: \{[\s\S]*location: "New York" \| "Chicago" \| "Los Angeles"/);
    expect(d).toMatch(/get_structured_content\([^)]*\): Promise<\{[\s\S]*temperature: number/);
    expect(d).toContain('declare const memory: {');
    expect(d).toContain('create_entities(');
    expect(d).toContain('declare const filesystem: {');
    expect(d).toContain('read_text_file(');
    // The paginated server's last page, and the names made identifiers (the mapping stated).
    expect(d).toContain('filler_4(');
    expect(d).toContain('MCP tool "weird-name.v2"');
    expect(d).toContain('weird_name_v2_2(');
    expect(d).toContain('no network');
  });

  it('one program calls tools of three servers and gets structured content as values', async () => {
    const code = `async () => {
      await filesystem.write_file({ path: ${JSON.stringify(path.join(filesReal, 'a.txt'))}, content: 'hello from the sandbox' });
      const text = await filesystem.read_text_file({ path: ${JSON.stringify(path.join(filesReal, 'a.txt'))} });
      await memory.create_entities({ entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote a note'] }] });
      const graph = await memory.read_graph({});
      const weather = await everything.get_structured_content({ location: 'Chicago' });
      const doubled = await paged.double({ n: 21 });
      console.log('done');
      return { text, people: graph.entities.map((e) => e.name), weather, doubled };
    }`;
    const { text, isError } = await run(gw.client, code);
    expect(isError, text).toBe(false);
    const [json, logs] = text.split('\n\nConsole:\n');
    const value = parsed(json);
    expect(JSON.stringify(value.text)).toContain('hello from the sandbox');
    expect(value.people).toEqual(['Ada']);
    expect(value.weather).toEqual({ temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 });
    expect(value.doubled).toEqual({ value: 42 });
    expect(logs).toBe('[log] done');
    expect(fs.readFileSync(path.join(files, 'a.txt'), 'utf8')).toBe('hello from the sandbox');
  });

  it('an upstream error rejects the call and the program catches it', async () => {
    const { text, isError } = await run(gw.client, `async () => {
      const caught = [];
      try { await paged.fail({}) } catch (e) { caught.push(e.message) }
      try { await filesystem.read_text_file({ path: ${JSON.stringify(path.join(filesReal, 'missing.txt'))} }) } catch (e) { caught.push('fs: ' + e.message) }
      return caught;
    }`);
    expect(isError).toBe(false);
    const [fail, missing] = parsed(text);
    expect(fail).toBe('fail: this tool always fails');
    expect(missing).toMatch(/^fs: .*(ENOENT|no such file|not found)/i);
  });

  it('a name that is not an identifier reaches its own tool', async () => {
    const { text } = await run(gw.client, 'async () => [await paged.weird_name_v2({}), await paged.weird_name_v2_2({})]');
    expect(parsed(text)).toEqual(['dotted', 'underscored']);
  });

  it('an unfinished program fails with its text and isError', async () => {
    const { text, isError } = await run(gw.client, 'async () => { throw new Error("boom") }');
    expect(isError).toBe(true);
    expect(text).toContain('The program failed (PROGRAM_ERROR)');
    expect(text).toContain('boom');
  });

  it('a hung upstream: the call rejects with UPSTREAM_TIMEOUT and the server is restarted', async () => {
    const { text } = await run(gw.client, 'async () => { try { await paged.hang({}) } catch (e) { return e.message } }');
    expect(parsed(text)).toBe(render('UPSTREAM_TIMEOUT', { server: 'paged', tool: 'hang', ms: 1500 }));
    const again = await until(async () => {
      const r = await run(gw.client, 'async () => paged.double({ n: 2 })');
      return r.isError || r.text.includes('not connected') ? null : r.text;
    }, 15_000);
    expect(parsed(again)).toEqual({ value: 4 });
  });

  it('an upstream killed mid-run: the call rejects, the others keep serving, it comes back', async () => {
    const gatewayPid = gw.transport.pid;
    const [pid] = children(gatewayPid, 'server-everything');
    expect(pid).toBeGreaterThan(0);
    const pending = run(gw.client, `async () => {
      const others = await paged.double({ n: 5 });
      try {
        await everything.trigger_long_running_operation({ duration: 20, steps: 20 });
        return 'finished';
      } catch (e) {
        return { caught: e.message, others, after: await paged.double({ n: 6 }) };
      }
    }`);
    await new Promise((r) => setTimeout(r, 1000));
    process.kill(pid, 'SIGKILL');
    const { text } = await pending;
    const value = parsed(text);
    expect(value.caught).toMatch(/^The call to everything\.trigger_long_running_operation was not answered: the MCP server "everything" is not connected/);
    expect(value.others).toEqual({ value: 10 });
    expect(value.after).toEqual({ value: 12 });
    const back = await until(async () => {
      const r = await run(gw.client, 'async () => everything.echo({ message: "back" })');
      return r.text.includes('not connected') ? null : r.text;
    }, 15_000);
    expect(back).toContain('back');
    const [again] = children(gatewayPid, 'server-everything');
    expect(again).toBeGreaterThan(0);
    expect(again).not.toBe(pid);
  }, 60_000);

  it('a crashing upstream rejects the call it took down', async () => {
    const { text } = await run(gw.client, 'async () => { try { await paged.crash({}) } catch (e) { return e.message } }');
    expect(parsed(text)).toMatch(/^The call to paged\.crash was not answered: the MCP server "paged" is not connected/);
    expect(await until(async () => !(await run(gw.client, 'async () => paged.double({ n: 1 })')).text.includes('not connected'), 15_000)).toBe(true);
  });

  it('a storm of list_changed costs two reads of the list, not one per notification', async () => {
    const lists = async () => Number((await run(gw.client, 'async () => paged.lists({})')).text);
    const before = await lists();
    await run(gw.client, 'async () => paged.storm({ n: 300 })');
    // Settled: two reads 500 ms apart agree.
    let last = -1;
    const after = await until(async () => {
      await new Promise((r) => setTimeout(r, 500));
      const now = await lists();
      const settled = now === last;
      last = now;
      return settled ? now : null;
    }, 15_000);
    // A read is every page (five of three tools); two reads at most, the notification's and one after.
    expect(after - before).toBeGreaterThan(0);
    expect(after - before).toBeLessThanOrEqual(2 * Math.ceil(14 / 3));
  });

  it("a failure's text is cut like a result", async () => {
    const { text, isError } = await run(gw.client, 'async () => { throw new Error("x".repeat(100000)) }');
    expect(isError).toBe(true);
    expect(text.length).toBeLessThan(24_000 + 200);
    expect(text).toMatch(/x… \(\d+ more characters\)$/);
  });

  it('tools/list_changed upstream refreshes the declarations and tells the client', async () => {
    let told = 0;
    gw.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told++; });
    await run(gw.client, 'async () => paged.add_tool({ name: "late_tool" })');
    expect(await until(() => told > 0, 15_000)).toBe(true);
    const { tools } = await gw.client.listTools();
    expect(tools[0].description).toContain('late_tool(');
    const { text } = await run(gw.client, 'async () => paged.late_tool({})');
    expect(parsed(text)).toBe('ran late_tool');
  });
});

describe('the gateway over Streamable HTTP', () => {
  let child;
  let url;
  const token = 'a-token-of-sixteen-plus';
  beforeAll(async () => {
    const upstream = spawn(process.execPath, [paged, '--http'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const upstreamUrl = await firstLine(upstream);
    const config = configFile({ everything: SERVERS.everything, remote: { url: upstreamUrl } }, 'http.json');
    ({ child, url } = await httpGateway(config, { file: path.join(tmp, 'token'), text: `${token}\n` }));
    child.upstream = upstream;
  }, 60_000);
  afterAll(() => {
    child?.kill();
    child?.upstream.kill();
  });

  it('serves the SDK client with the token, one program over a stdio and an HTTP upstream', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    const { tools } = await client.listTools();
    expect(tools[0].description).toContain('declare const remote: {');
    const { text, isError } = await run(client, 'async () => ({ a: await remote.double({ n: 4 }), b: await everything.echo({ message: "hi" }) })');
    expect(isError, text).toBe(false);
    expect(parsed(text)).toEqual({ a: { value: 8 }, b: 'Echo: hi' });
    await client.close();
  });

  it('refuses a request without the token, from another Host, or from a web page', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const post = (headers) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: `Bearer ${token}x` })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${token}`, origin: 'https://evil.example' })).status).toBe(403);
    const rebound = await new Promise((resolve) => {
      const u = new URL(url);
      const req = require('node:http').request({ host: u.hostname, port: u.port, path: '/mcp', method: 'POST', headers: { host: `attacker.example:${u.port}`, authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => { res.resume(); resolve(res.statusCode); });
      req.end(JSON.stringify(init));
    });
    expect(rebound).toBe(403);
    expect((await post({ authorization: `Bearer ${token}` })).status).toBe(200);
  });
});

describe('HTTP without --token-file, and its bounds', () => {
  it('makes a random token and prints it with the URL: on loopback too, nothing runs without it', async () => {
    const child = spawn(process.execPath, [bin, 'mcp', '--config', configFile({ paged: SERVERS.paged }, 'gen.json'), '--http', '0', '--workers', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const line = await firstLine(child);
      const [, url, token] = /^codemode-executor mcp listening on (\S+) \(send "Authorization: Bearer ([A-Za-z0-9_-]{32})"/.exec(line);
      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
      const post = (headers) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
      expect((await post({})).status).toBe(401);
      expect((await post({ authorization: `Bearer ${token}` })).status).toBe(200);
    } finally {
      child.kill();
    }
  });

  it('a refused initialize leaves no session behind; off loopback any Host with the token', async () => {
    const { McpGateway } = require('../lib/mcp/gateway');
    const { serveHttp } = require('../lib/mcp/http');
    const gateway = new McpGateway({ servers: { paged: SERVERS.paged }, executor: { execute: async () => ({}) }, log: () => {} });
    await gateway.start();
    try {
      // An address the loopback check does not know (a v4-mapped loopback): served as if off
      // loopback, so the token guards it and the Host is not checked.
      const url = await serveHttp(gateway, { host: '::ffff:127.0.0.1', port: 0, token: 'a-token-of-sixteen-plus', origins: [] });
      const port = new URL(url).port;
      const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
      const post = (accept) => fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept, authorization: 'Bearer a-token-of-sixteen-plus' }, body: init });
      for (let i = 0; i < 20; i++) expect((await post('application/json')).status).toBe(406);
      expect(gateway.clients).toBe(0);
      expect((await post('application/json, text/event-stream')).status).toBe(200);
      expect(gateway.clients).toBe(1);
    } finally {
      await gateway.close();
    }
  });

  it('an upstream closed while it connects does not outlive the gateway', async () => {
    const { McpGateway } = require('../lib/mcp/gateway');
    const slow = { ...SERVERS.paged, env: { SLOW_START_MS: '3000' } };
    const gateway = new McpGateway({ servers: { slow }, executor: { execute: async () => ({}) }, log: () => {} });
    const started = gateway.start();
    const pid = await until(() => children(process.pid, 'mcp-paged-server')[0], 15_000);
    expect(pid).toBeGreaterThan(0);
    await gateway.close();
    await started;
    expect(await until(() => children(process.pid, 'mcp-paged-server').length === 0, 2_000)).toBe(true);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('approvals through MCP elicitation', () => {
  const config = () => configFile({ paged: SERVERS.paged }, 'approve.json');

  it('a yes runs the call, a no rejects it inside the program', async () => {
    let answer = 'accept';
    const asked = [];
    const gw = await stdioGateway(config(), ['--approve', 'paged.double'], { elicitation: {} });
    gw.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return { action: answer };
    });
    try {
      const yes = await run(gw.client, 'async () => paged.double({ n: 3 })');
      expect(parsed(yes.text)).toEqual({ value: 6 });
      expect(asked[0]).toContain('"paged" tool "double"');
      expect(asked[0]).toContain('- n: 3');
      answer = 'decline';
      const no = await run(gw.client, 'async () => { try { return await paged.double({ n: 4 }) } catch (e) { return e.message } }');
      expect(parsed(no.text)).toBe(render('APPROVAL_DENIED', { provider: 'paged', tool: 'double', reason: 'the person declined it' }));
      // The program can tell a no by its code; uncaught, the answer says the run ended on it.
      const code = await run(gw.client, 'async () => { try { return await paged.double({ n: 4 }) } catch (e) { return e.code } }');
      expect(parsed(code.text)).toBe('APPROVAL_DENIED');
      const uncaught = await run(gw.client, 'async () => paged.double({ n: 4 })');
      expect(uncaught.text).toContain('The program failed (DENIAL_UNCAUGHT): ');
      asked.splice(1, 2);
      // Every value is shown whole, one a line: a long first one cannot push the next out of
      // view (mcp-approval-prompt.test.mjs tests the question's bounds and escapes).
      answer = 'accept';
      await run(gw.client, 'async () => paged.double({ filler: "y".repeat(400), n: 5 })');
      expect(asked[2]).toContain('with this input (2 values):');
      expect(asked[2]).toContain(`- filler: "${'y'.repeat(400)}"`);
      expect(asked[2]).toContain('- n: 5');
      // Characters that reorder how text reads are shown as escapes.
      await run(gw.client, 'async () => paged.double({ n: 1, note: "\\u202e\\u2028" })');
      expect(asked[3]).toContain('\\u202e\\u2028');
      expect(asked[3]).not.toMatch(/[\u202e\u2028]/);
      // Tools not named by --approve are not asked about.
      await run(gw.client, 'async () => paged.filler_0({})');
      expect(asked).toHaveLength(4);
      // One run puts at most 16 questions to the person; the calls after are refused.
      const many = await run(gw.client, 'async () => { const out = []; for (let i = 0; i < 20; i++) { try { out.push((await paged.double({ n: i })).value) } catch (e) { out.push(e.message) } } return out }');
      const answers = parsed(many.text);
      expect(answers.slice(0, 16)).toEqual([...Array(16).keys()].map((i) => 2 * i));
      expect(answers[16]).toBe(render('APPROVAL_DENIED', { provider: 'paged', tool: 'double', reason: 'the run has asked 16 times already, the most one run may ask; ask for fewer approvals in one run' }));
      expect(asked).toHaveLength(4 + 16);
    } finally {
      await gw.client.close();
    }
  }, 60_000);

  it('a client without elicitation: the call is refused with a text saying why', async () => {
    const gw = await stdioGateway(config(), ['--approve', 'paged.*']);
    try {
      const { text } = await run(gw.client, 'async () => { try { return await paged.double({ n: 4 }) } catch (e) { return e.message } }');
      expect(parsed(text)).toBe(render('APPROVAL_DENIED', { provider: 'paged', tool: 'double', reason: NO_ELICITATION }));
    } finally {
      await gw.client.close();
    }
  }, 60_000);
});

describe('search mode and the command line', () => {
  it('--catalog search offers search and describe instead of the whole catalog', async () => {
    const gw = await stdioGateway(configFile({ everything: SERVERS.everything }, 'search.json'), ['--catalog', 'search']);
    try {
      const { tools } = await gw.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['code', 'search', 'describe']);
      expect(tools[0].description).not.toContain('declare const');
      expect(tools[0].description).toContain('`everything` (MCP server "everything"');
      const found = await gw.client.callTool({ name: 'search', arguments: { query: 'structured content' } });
      expect(found.content[0].text.split('\n')[0]).toMatch(/^everything\.get_structured_content: /);
      // The first 32 words of a query count, no more.
      const long = await gw.client.callTool({ name: 'search', arguments: { query: `${'zzz '.repeat(32)}structured` } });
      expect(long.content[0].text).toMatch(/^No tool matches/);
      const described = await gw.client.callTool({ name: 'describe', arguments: { tools: ['everything.get_structured_content'] } });
      expect(described.content[0].text).toMatch(/everything\.get_structured_content\(input: \{/);
      const { text } = await run(gw.client, 'async () => (await everything.get_structured_content({ location: "New York" })).temperature');
      expect(text).toBe('33');
    } finally {
      await gw.client.close();
    }
  }, 60_000);

  it('--tenant NAME: every run the command starts names it; a bad name is refused before anything starts', async () => {
    // The command, run through a script that gives its executor a tenant `mcp-cli` with a CPU
    // share of 1 ms a minute.
    const share = path.join(import.meta.dirname, 'fixtures', 'mcp-tenant-share.cjs');
    const config = configFile({ paged: SERVERS.paged }, 'tenant.json');
    const start = async (flags) => {
      const transport = new StdioClientTransport({ command: process.execPath, args: [share, 'mcp', '--config', config, '--workers', '1', ...flags], stderr: 'pipe' });
      const client = new Client({ name: 'test', version: '1' });
      await client.connect(transport);
      return client;
    };
    const named = await start(['--tenant', 'mcp-cli']);
    const unnamed = await start([]);
    try {
      expect(await run(named, TENANT_BURN)).toEqual({ text: 'true', isError: false });
      const refused = await run(named, TENANT_BURN);
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/^The program could not be run \(TENANT_CPU_LIMIT\): Tenant "mcp-cli" has spent/);
      // Without --tenant the same executor options hold no run to mcp-cli's share.
      for (let i = 0; i < 2; i++) expect(await run(unnamed, TENANT_BURN)).toEqual({ text: 'true', isError: false });
    } finally {
      await Promise.all([named.close(), unnamed.close()]);
    }
    for (const bad of ['a b', '', 'x'.repeat(65)]) {
      let failed = null;
      try {
        execFileSync(process.execPath, [bin, 'mcp', '--config', config, '--tenant', bad], { stdio: 'pipe' });
      } catch (e) {
        failed = { status: e.status, stderr: String(e.stderr) };
      }
      expect(failed?.status, JSON.stringify(bad)).toBe(2);
      expect(failed.stderr).toContain('Invalid option `tenant`');
      expect(failed.stderr).toContain('1 to 64 of A-Z a-z 0-9 . _ -');
      expect(failed.stderr).toContain('Usage: codemode-executor mcp');
    }
    expect(execFileSync(process.execPath, [bin, 'mcp', '--help'], { encoding: 'utf8' })).toMatch(/--tenant NAME +whom every program runs for/);
  }, 10_000);

  it('--typecheck: a wrong call is TYPE_ERROR with its line against the whole catalogue, search mode too; fixed, it runs', async () => {
    const memoryFile = path.join(tmp, 'typecheck-cli-memory.jsonl');
    const config = configFile({ memory: { ...SERVERS.memory, env: { MEMORY_FILE_PATH: memoryFile } } }, 'typecheck.json');
    const gw = await stdioGateway(config, ['--typecheck', '--catalog', 'search']);
    try {
      // The model is shown no declarations here (it would `describe` them): the check has them all.
      expect((await gw.client.listTools()).tools[0].description).not.toContain('declare const');
      await misnamedThenFixed(gw.client, memoryFile);
    } finally {
      await gw.client.close();
    }
    expect(execFileSync(process.execPath, [bin, 'mcp', '--help'], { encoding: 'utf8' })).toMatch(/--typecheck +type-check each program/);
  }, 10_000);

  it('refuses a bad config, and HTTP off loopback without a token, before starting anything', () => {
    const fail = (args) => {
      try {
        execFileSync(process.execPath, [bin, 'mcp', ...args], { stdio: 'pipe' });
        return null;
      } catch (e) {
        return { status: e.status, stderr: String(e.stderr) };
      }
    };
    const bad = configFile({ x: { command: 'a', url: 'http://127.0.0.1:1/mcp' } }, 'bad.json');
    const r1 = fail(['--config', bad]);
    expect(r1.status).toBe(2);
    expect(r1.stderr).toContain('The MCP server configuration is invalid: mcpServers.x: needs exactly one of `command`');
    const r2 = fail(['--config', configFile(SERVERS, 'ok.json'), '--http', '0', '--host', '0.0.0.0']);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toContain(render('TOKEN_REQUIRED', { address: '0.0.0.0' }));
    const r3 = fail(['--config', configFile(SERVERS, 'ok.json'), '--approve', 'nosuch.tool']);
    expect(r3.status).toBe(2);
    expect(r3.stderr).toContain('"nosuch.tool" names no configured server\'s tool');
    expect(fail(['--config', path.join(tmp, 'absent.json')]).stderr).toContain('cannot be read');
    const help = execFileSync(process.execPath, [bin, 'mcp', '--help'], { encoding: 'utf8' });
    expect(help).toContain('Usage: codemode-executor mcp --config FILE');
    expect(help).toMatch(new RegExp(`--memory-limit MIB +a program's memory \\(default ${require('../lib/native').limits().defaults.memoryLimit}\\)`));
  });
});

describe('createMcpGateway, in process', () => {
  const { IsolateExecutor, createMcpGateway, ExecutorError } = require('..');
  const { InMemoryTransport } = require('@modelcontextprotocol/sdk/inMemory.js');

  /** createMcpGateway(`options`), serving an SDK client in this process: the server and the client. */
  async function inProcess(options) {
    const server = await createMcpGateway(options);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(b);
    return { server, client };
  }

  it('serves an SDK client in the same process; closing it ends the upstreams', async () => {
    const executor = new IsolateExecutor({ workers: 1, outbound: null });
    const lines = [];
    const { server, client } = await inProcess({ servers: { paged: SERVERS.paged }, executor, log: (l) => lines.push(l) });
    try {
      const { text } = await run(client, 'async () => (await paged.double({ n: 20 })).value + 2');
      expect(text).toBe('42');
      const pid = children(process.pid, 'mcp-paged-server')[0];
      expect(pid).toBeGreaterThan(0);
      await server.close();
      expect(await until(() => children(process.pid, 'mcp-paged-server').length === 0, 15_000)).toBe(true);
    } finally {
      await executor.close();
    }
  }, 60_000);

  it('runs programs on a daemon through connect(), the upstreams staying here', async () => {
    const daemon = await served({ workers: 1 });
    const remote = await connected(daemon.url);
    const { server, client } = await inProcess({ servers: { paged: SERVERS.paged }, executor: remote, log: () => {} });
    try {
      const { text } = await run(client, 'async () => { console.log("on the daemon"); return (await paged.double({ n: 8 })).value }');
      expect(text).toBe('16\n\nConsole:\n[log] on the daemon');
    } finally {
      await server.close();
    }
  }, 60_000);

  it('refuses bad options with typed errors, starting nothing', async () => {
    const executor = { execute: async () => ({}) };
    const code = async (options) => {
      try {
        await createMcpGateway(options);
      } catch (e) {
        expect(e).toBeInstanceOf(ExecutorError);
        return `${e.code}: ${e.message}`;
      }
      throw new Error('accepted');
    };
    expect(await code({ servers: {}, executor })).toMatch(/^MCP_CONFIG_INVALID: .*names no server/);
    expect(await code({ servers: { paged: SERVERS.paged } })).toMatch(/^INVALID_OPTION: Invalid option `executor`/);
    expect(await code({ servers: { paged: SERVERS.paged }, executor, catalog: 'all' })).toMatch(/^INVALID_OPTION: Invalid option `catalog`/);
    expect(await code({ servers: { paged: SERVERS.paged }, executor, approve: ['paged'] })).toMatch(/^INVALID_OPTION: Invalid option `approve`: "paged" names no configured server's tool/);
    expect(await code({ servers: { paged: SERVERS.paged }, executor, callTimeout: 0 })).toMatch(/^INVALID_OPTION: Invalid option `callTimeout`/);
    expect(await code({ servers: { paged: SERVERS.paged }, executor, typecheck: 'yes' })).toMatch(/^INVALID_OPTION: Invalid option `typecheck`/);
    expect(await code({ servers: { paged: SERVERS.paged }, executor, approvalTimeout: 3_600_001 })).toMatch(/^INVALID_OPTION: Invalid option `approvalTimeout`: got number 3600001\. Allowed: an integer from 1 to 3600000 \(ms\)/);
  });

  it("every run names the gateway's tenant: its CPU share refuses its next run, and only its own", async () => {
    const executor = new IsolateExecutor({ workers: 1, outbound: null, tenants: { 'mcp-acme': { cpuPerMinute: 1 } } });
    const gateways = [];
    const client = async (options) => {
      const g = await inProcess({ servers: { paged: SERVERS.paged }, executor, log: () => {}, ...options });
      gateways.push(g.server);
      return g.client;
    };
    try {
      const acme = await client({ tenant: 'mcp-acme' });
      expect(await run(acme, TENANT_BURN)).toEqual({ text: 'true', isError: false });
      const refused = await run(acme, TENANT_BURN);
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/^The program could not be run \(TENANT_CPU_LIMIT\): Tenant "mcp-acme" has spent/);
      // A gateway naming no tenant, or another, on the same executor is not held to it.
      for (const other of [await client({}), await client({ tenant: 'mcp-other' })]) {
        expect(await run(other, TENANT_BURN)).toEqual({ text: 'true', isError: false });
      }
    } finally {
      await Promise.all(gateways.map((g) => g.close()));
      await executor.close();
    }
  }, 10_000);

  it('typecheck: a wrong call is TYPE_ERROR with its line and the upstream sees no call; fixed, it runs; an unknown server is left to run', async () => {
    const executor = new IsolateExecutor({ workers: 1, outbound: null });
    const memoryFile = path.join(tmp, 'typecheck-memory.jsonl');
    // A port nothing listens on: `down` never connects, its tools unknown.
    const port = await new Promise((resolve) => {
      const probe = require('node:net').createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address();
        probe.close(() => resolve(port));
      });
    });
    const servers = { memory: { ...SERVERS.memory, env: { MEMORY_FILE_PATH: memoryFile } }, down: { url: `http://127.0.0.1:${port}/mcp` } };
    const { server, client } = await inProcess({ servers, executor, typecheck: true, log: () => {} });
    try {
      await misnamedThenFixed(client, memoryFile);
      // A server whose tools are not known takes any name: the call runs, and fails as it would unchecked.
      const { text, isError } = await run(client, 'async () => { try { return await down.anything({ x: 1 }) } catch (e) { return e.message } }');
      expect(isError, text).toBe(false);
      expect(text).toMatch(/^The call to down.anything was not answered: the MCP server "down" is not connected/);
    } finally {
      await server.close();
      await executor.close();
    }
  }, 10_000);

  it('refuses a bad tenant with INVALID_OPTION', async () => {
    const executor = { execute: async () => ({}) };
    for (const tenant of ['a b', '', 'x'.repeat(65), 'ä', 1, null]) {
      const e = await createMcpGateway({ servers: { paged: SERVERS.paged }, executor, tenant }).then(() => null, (err) => err);
      expect(e, JSON.stringify(tenant)).toBeInstanceOf(ExecutorError);
      expect(`${e.code}: ${e.message}`).toMatch(/^INVALID_OPTION: Invalid option `tenant`: .*Allowed: .*1 to 64 of A-Z a-z 0-9 \. _ -/);
    }
  });

  it('a server not connected yet: every call to it needs a yes (it may come up during the run)', async () => {
    const executor = new IsolateExecutor({ workers: 1, outbound: null });
    // A port nothing listens on (bound, then released): the upstream cannot connect.
    const port = await new Promise((resolve) => {
      const probe = require('node:net').createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address();
        probe.close(() => resolve(port));
      });
    });
    const { server, client } = await inProcess({ servers: { remote: { url: `http://127.0.0.1:${port}/mcp` } }, executor, approve: ['remote.double'], log: () => {} });
    try {
      const { text } = await run(client, 'async () => { try { return await remote.anything({}) } catch (e) { return e.message } }');
      expect(text).toBe(render('APPROVAL_DENIED', { provider: 'remote', tool: 'anything', reason: NO_ELICITATION }));
    } finally {
      await server.close();
      await executor.close();
    }
  }, 60_000);
});

/** The input schemas the gateway lists, as it always listed them. */
const SCHEMAS = {
  code: { type: 'object', properties: { code: { type: 'string', description: 'The program: one async arrow function, e.g. `async () => { return await server.tool({}) }`.' } }, required: ['code'] },
  search: { type: 'object', properties: { query: { type: 'string', description: 'Keywords, e.g. "create issue"' } }, required: ['query'] },
  describe: { type: 'object', properties: { tools: { type: 'array', items: { type: 'string' }, description: 'e.g. ["github.create_issue"]' } }, required: ['tools'] },
};

/**
 * An upstream over Streamable HTTP on 127.0.0.1 whose tools `set(names)` replaces (an SDK
 * McpServer per session, each telling its client with one list_changed); each tool's description
 * is long, so 40 of them pass the 32,000 characters `--catalog auto` declares whole.
 */
async function growingUpstream(names) {
  const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
  const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { z } = require('zod/v4');
  const live = new Set();
  const session = () => {
    const mcp = new McpServer({ name: 'grow', version: '1' }, { capabilities: { tools: { listChanged: true } }, debouncedNotificationMethods: ['notifications/tools/list_changed'] });
    const registered = new Map();
    const sync = () => {
      for (const name of names) {
        if (!registered.has(name)) registered.set(name, mcp.registerTool(name, { description: `${name}: ${'a long description '.repeat(50)}`, inputSchema: { x: z.string() } }, async () => ({ content: [{ type: 'text', text: name }] })));
      }
      for (const [name, tool] of registered) {
        if (!names.includes(name)) {
          tool.remove();
          registered.delete(name);
        }
      }
    };
    sync();
    live.add(sync);
    return mcp;
  };
  const transports = new Map();
  const server = require('node:http').createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? transports.get(id) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID(), onsessioninitialized: (sid) => transports.set(sid, transport) });
      await session().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    set(next) {
      names = next;
      for (const sync of live) sync();
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

describe('the tools as the MCP SDK lists and checks them (McpServer, registerTool)', () => {
  const { McpGateway } = require('../lib/mcp/gateway');
  const { InMemoryTransport } = require('@modelcontextprotocol/sdk/inMemory.js');

  it('listed as always; search and describe enabled and disabled with the catalogue, one list_changed each time', async () => {
    const up = await growingUpstream(['one']);
    const gateway = new McpGateway({ servers: { grow: { url: up.url } }, executor: { execute: async () => ({}) }, log: () => {} });
    await gateway.start();
    const mcp = gateway.createServer();
    const [a, b] = InMemoryTransport.createLinkedPair();
    await mcp.connect(a);
    const client = new Client({ name: 'test', version: '1' });
    let told = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { told++; });
    await client.connect(b);
    /** What listTools() says, as it goes over the wire. */
    const listed = () => JSON.parse(JSON.stringify(gateway.listTools()));
    try {
      const small = (await client.listTools()).tools;
      expect(small.map((t) => t.name)).toEqual(['code']);
      expect(small[0].inputSchema).toStrictEqual(SCHEMAS.code);
      expect(small).toEqual(listed());
      const off = await client.callTool({ name: 'search', arguments: { query: 'one' } });
      expect(off.isError).toBe(true);
      expect(off.content[0].text).toContain('Tool search disabled');

      // The catalogue passes what is declared whole: search and describe appear.
      up.set(Array.from({ length: 40 }, (_, i) => `tool_${i}`));
      expect(await until(() => told > 0, 15_000)).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(told).toBe(1);
      const large = (await client.listTools()).tools;
      expect(large.map((t) => t.name)).toEqual(['code', 'search', 'describe']);
      expect(large[0].description).toContain('- `grow` (MCP server "grow", 40 tools)');
      expect(large[0].description).not.toContain('declare const grow');
      for (const [i, name] of [[1, 'search'], [2, 'describe']]) {
        expect(large[i].inputSchema).toStrictEqual(SCHEMAS[name]);
        expect(large[i].annotations).toStrictEqual({ readOnlyHint: true });
      }
      expect(large).toEqual(listed());
      const found = await client.callTool({ name: 'search', arguments: { query: 'tool_7' } });
      expect(found.content[0].text.split('\n')[0]).toMatch(/^grow\.tool_7: /);
      const described = await client.callTool({ name: 'describe', arguments: { tools: ['grow.tool_7'] } });
      expect(described.content[0].text).toContain('tool_7(input: {');

      // Arguments a schema refuses: the SDK answers, in the gateway's words.
      const code = 'The `code` argument must be a string holding the program.';
      const tools = 'The `tools` argument must be an array of names such as "server.tool".';
      for (const [name, args, words] of [['code', { code: 1 }, code], ['code', {}, code], ['search', { query: ['x'] }, 'The `query` argument must be a string of keywords.'], ['describe', { tools: 'grow.tool_1' }, tools], ['describe', { tools: [1] }, tools]]) {
        const r = await client.callTool({ name, arguments: args });
        expect(r.isError, name).toBe(true);
        expect(r.content[0].text, name).toContain(`Input validation error: Invalid arguments for tool ${name}: ${words}`);
      }
      const unknown = await client.callTool({ name: 'nope', arguments: {} });
      expect(unknown.isError).toBe(true);
      expect(unknown.content[0].text).toContain('Tool nope not found');

      // Back under the bound: they go again.
      told = 0;
      up.set(['one']);
      expect(await until(() => told > 0, 15_000)).toBe(true);
      const again = (await client.listTools()).tools;
      expect(again.map((t) => t.name)).toEqual(['code']);
      expect(again[0].description).toContain('declare const grow');
      expect(again).toEqual(listed());
      const gone = await client.callTool({ name: 'describe', arguments: { tools: ['grow.one'] } });
      expect(gone.isError).toBe(true);
      expect(gone.content[0].text).toContain('Tool describe disabled');
    } finally {
      await client.close();
      await gateway.close();
      await up.close();
    }
  }, 60_000);
});

describe('docs/mcp.md', () => {
  it('states the token sizes scripts/mcp-tokens.mjs measures, and the code tool is the smaller', () => {
    const out = execFileSync(process.execPath, [path.join(root, 'scripts', 'mcp-tokens.mjs'), '--check'], { encoding: 'utf8' });
    const [, upstream] = /all three, as a client lists them\*\* \| \d+ \| \*\*(\d+)\*\*/.exec(out);
    const [, code] = /the gateway's `code` tool\*\* .* \| 1 \| \*\*(\d+)\*\*/.exec(out);
    expect(Number(code)).toBeLessThan(Number(upstream));
  }, 60_000);
});

