// The MCP gateway's server config (lib/mcp/config.js): the `mcpServers` format of Claude Desktop
// and Cursor, every bad entry refused with MCP_CONFIG_INVALID naming it.
import { describe, it, expect } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { parseServers, readConfig } = require('../lib/mcp/config');
const { ExecutorError } = require('../lib/errors');

/** The MCP_CONFIG_INVALID text parseServers throws for `config`. */
function refusal(config) {
  try {
    parseServers(config);
  } catch (e) {
    expect(e).toBeInstanceOf(ExecutorError);
    expect(e.code).toBe('MCP_CONFIG_INVALID');
    return e.message;
  }
  throw new Error('accepted');
}

describe('the mcpServers config', () => {
  it('reads stdio and Streamable HTTP servers in order, with their globals', () => {
    const servers = parseServers({
      mcpServers: {
        'my-files': { command: 'npx', args: ['-y', 'x'], env: { A: '1' }, cwd: '/tmp' },
        github: { type: 'http', url: 'https://example.com/mcp', headers: { authorization: 'Bearer t' } },
        off: { command: 'x', disabled: true },
      },
    });
    expect(servers.map((s) => [s.name, s.provider, s.kind])).toEqual([['my-files', 'my_files', 'stdio'], ['github', 'github', 'http']]);
    expect(servers[0]).toMatchObject({ command: 'npx', args: ['-y', 'x'], env: { A: '1' }, cwd: '/tmp' });
    expect(servers[1].url.href).toBe('https://example.com/mcp');
    expect(servers[1].headers).toEqual({ authorization: 'Bearer t' });
    // A bare server map works as well as a whole config.
    expect(parseServers({ a: { command: 'x' } })[0].args).toEqual([]);
  });

  it('refuses what it cannot serve, naming the place', () => {
    expect(refusal(null)).toContain('mcpServers: must be an object keyed by server name');
    expect(refusal({ mcpServers: {} })).toContain('names no server');
    expect(refusal({ mcpServers: { a: { command: 'x', disabled: true } } })).toContain('every one is disabled');
    expect(refusal({ mcpServers: { a: 'npx' } })).toContain('mcpServers.a: must be an object');
    expect(refusal({ mcpServers: { a: {} } })).toContain('mcpServers.a: needs exactly one of `command`');
    expect(refusal({ mcpServers: { a: { command: 'x', url: 'http://127.0.0.1/' } } })).toContain('needs exactly one');
    expect(refusal({ mcpServers: { a: { command: 'x', envFile: '.env' } } })).toContain('mcpServers.a.envFile: is not a key this gateway reads');
    expect(refusal({ mcpServers: { a: { command: 'x', args: 'y' } } })).toContain('mcpServers.a.args: must be an array of strings');
    expect(refusal({ mcpServers: { a: { command: 'x', env: { A: 1 } } } })).toContain('mcpServers.a.env.A: must be a string');
    expect(refusal({ mcpServers: { a: { url: 'ftp://h/' } } })).toContain('must be http: or https:');
    expect(refusal({ mcpServers: { a: { url: 'not a url' } } })).toContain('is not a URL');
    expect(refusal({ mcpServers: { a: { type: 'sse', url: 'http://127.0.0.1/sse' } } })).toContain('the SSE transport is not supported');
    expect(refusal({ mcpServers: { a: { type: 'http', command: 'x' } } })).toContain('says HTTP, but the entry has a `command`');
    expect(refusal({ mcpServers: { a: { url: 'http://127.0.0.1/', args: [] } } })).toContain('mcpServers.a.args: belongs to a `command` server');
    expect(refusal({ mcpServers: { 'a-b': { command: 'x' }, a_b: { command: 'y' } } })).toContain('both become the global `a_b`');
    expect(refusal({ mcpServers: { JSON: { command: 'x' } } })).toContain('mcpServers.JSON: its name becomes the global `JSON`, which programs already have');
    expect(refusal({ mcpServers: { fetch: { command: 'x' } } })).toContain('becomes the global `fetch`');
    // Every text says what a good entry looks like.
    expect(refusal({ mcpServers: { a: {} } })).toContain('keyed by its name under `mcpServers`');
  });

  it('reads a file, and says when it cannot', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-config-'));
    const good = path.join(dir, 'good.json');
    fs.writeFileSync(good, JSON.stringify({ mcpServers: { a: { command: 'x' } } }));
    expect(parseServers(readConfig(good))[0].name).toBe('a');
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{ "mcpServers": ');
    expect(() => readConfig(bad)).toThrow(/bad\.json: is not JSON/);
    expect(() => readConfig(path.join(dir, 'absent.json'))).toThrow(/absent\.json: cannot be read/);
  });
});
