// The MCP gateway through a client nobody here wrote: @modelcontextprotocol/inspector-cli (its
// CLI mode), over stdio and Streamable HTTP, in front of real upstream servers from npm and the
// paginated fixture. Every socket is on 127.0.0.1.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { until } from './helpers.mjs';
import { httpGateway } from './mcp-http-gateway.mjs';
import { upstreamOf } from './mcp-helpers.mjs';

const require = createRequire(import.meta.url);
const { render } = require('../lib/errors');

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'codemode-executor.js');
const server = (name) => path.join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');
// The inspector finds its own package.json relative to the working directory: run it from its
// build folder.
const inspectorDir = path.join(root, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-inspector-'));
const config = path.join(tmp, 'servers.json');
fs.writeFileSync(config, JSON.stringify({
  mcpServers: {
    everything: { command: process.execPath, args: [server('server-everything'), 'stdio'] },
    memory: { command: process.execPath, args: [server('server-memory')], env: { MEMORY_FILE_PATH: path.join(tmp, 'memory.jsonl') } },
    filesystem: { command: process.execPath, args: [server('server-filesystem'), tmp] },
    paged: { command: process.execPath, args: [path.join(import.meta.dirname, 'fixtures', 'mcp-paged-server.mjs')] },
  },
}));

/**
 * Runs the inspector with `options` against `target`: a URL, or `{ command, flags }` (a command
 * and its flags, which the inspector takes after `--`). Resolves with its parsed JSON output.
 */
function inspector(options, target) {
  const args = typeof target === 'string' ? ['index.js', target, ...options] : ['index.js', ...target.command, ...options, '--', ...target.flags];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: inspectorDir, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${error.message}\n${stderr}`));
      resolve(JSON.parse(stdout));
    });
  });
}

const stdio = { command: [process.execPath, bin, 'mcp'], flags: ['--config', config, '--workers', '1', '--call-timeout', '20000'] };
/** A `code` call's text. */
const code = async (program, target = stdio, extra = []) => {
  const answer = await inspector(['--method', 'tools/call', '--tool-name', 'code', '--tool-arg', `code=${program}`, ...extra], target);
  return { text: answer.content.map((c) => c.text).join('\n'), isError: answer.isError === true };
};

describe('the gateway through the MCP inspector CLI', () => {
  it('tools/list: one code tool declaring four servers, every page of the paginated one', async () => {
    const { tools } = await inspector(['--method', 'tools/list'], stdio);
    expect(tools.map((t) => t.name)).toEqual(['code']);
    for (const s of ['everything', 'memory', 'filesystem', 'paged']) expect(tools[0].description).toContain(`declare const ${s}: {`);
    expect(tools[0].description).toContain('filler_4(');
  });

  it('tools/call: one program over two servers, structured content, an upstream error caught', async () => {
    const { text, isError } = await code(`async () => {
      const weather = await everything.get_structured_content({ location: 'Los Angeles' });
      await memory.create_entities({ entities: [{ name: 'Grace', entityType: 'person', observations: ['compiler'] }] });
      const graph = await memory.read_graph({});
      let caught;
      try { await paged.fail({}) } catch (e) { caught = e.message }
      return { weather, people: graph.entities.map((e) => e.name), caught, last: await paged.filler_4({}) };
    }`);
    expect(isError, text).toBe(false);
    expect(JSON.parse(text)).toEqual({
      weather: { temperature: 73, conditions: 'Sunny / Clear', humidity: 48 },
      people: ['Grace'],
      caught: 'fail: this tool always fails',
      last: 'ran filler_4',
    });
  });

  it('tools/call: an upstream killed mid-run rejects inside the program', async () => {
    const pending = code(`async () => {
      try { await everything.trigger_long_running_operation({ duration: 20, steps: 20 }); return 'finished' }
      catch (e) { return { caught: e.message, others: await paged.double({ n: 7 }) } }
    }`);
    // The everything server under this test's gateway: its parent's command line names the config.
    const pid = await until(() => upstreamOf(config, 'server-everything'), 30_000);
    expect(pid).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1000));
    process.kill(pid, 'SIGKILL');
    const { text } = await pending;
    const value = JSON.parse(text);
    expect(value.caught).toMatch(/^The call to everything\.trigger_long_running_operation was not answered: the MCP server "everything" is not connected/);
    expect(value.others).toEqual({ value: 14 });
  }, 60_000);

  describe('over Streamable HTTP', () => {
    let child;
    let url;
    const token = 'inspector-token-0123456789';
    beforeAll(async () => {
      ({ child, url } = await httpGateway(config, { file: path.join(tmp, 'token'), text: token }));
    }, 60_000);
    afterAll(() => child?.kill());

    it('lists and runs with the bearer token, and is refused without it', async () => {
      const auth = ['--transport', 'http', '--header', `Authorization: Bearer ${token}`];
      const { tools } = await inspector(['--method', 'tools/list', ...auth], url);
      expect(tools[0].name).toBe('code');
      const { text } = await code('async () => ({ sum: await everything.get_sum({ a: 2, b: 40 }), d: await paged.double({ n: 1 }) })', url, auth);
      expect(JSON.parse(text)).toEqual({ sum: 'The sum of 2 and 40 is 42.', d: { value: 2 } });
      await expect(inspector(['--method', 'tools/list', '--transport', 'http'], url)).rejects.toThrow(/401|Unauthorized/);
    });
  });

  it('the texts the program sees are the declared ones', () => {
    expect(render('UPSTREAM_LOST', { server: 's', tool: 't', detail: 'd' })).toMatch(/^The call to s\.t was not answered: the MCP server "s" is not connected \(d\)\./);
  });
});


