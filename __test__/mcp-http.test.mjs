// `codemode-executor mcp --http` (lib/mcp/cli.js, serveHttp) at the socket: its connection caps
// (in all and per address, as the daemon's), the origins it accepts (its own by default, others
// only by --allow-origin), and the SSE priming event and resumption of its POST streams. The real
// CLI process in front of a real upstream (fixtures/mcp-paged-server.mjs), driven by raw sockets,
// fetch and the MCP SDK client. Every socket is on 127.0.0.0/8.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { until } from './helpers.mjs';
import { firstLine } from './mcp-helpers.mjs';

const require = createRequire(import.meta.url);
const { limits } = require('../lib/native');

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'codemode-executor.js');
const paged = path.join(import.meta.dirname, 'fixtures', 'mcp-paged-server.mjs');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-http-'));
const config = path.join(tmp, 'servers.json');
fs.writeFileSync(config, JSON.stringify({ mcpServers: { paged: { command: process.execPath, args: [paged] } } }));
const token = 'a-token-of-sixteen-plus';
const tokenFile = path.join(tmp, 'token');
fs.writeFileSync(tokenFile, `${token}\n`);

const INIT = (version = '2025-11-25') => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'x', version: '1' } } });

/** Every gateway started, killed after the file even when a test timed out before stopping its own. */
const started = new Set();
afterAll(() => {
  for (const child of started) child.kill();
});

/** A gateway CLI on 127.0.0.1 with `flags`; `stop()` kills it. */
async function gateway(flags = []) {
  const child = spawn(process.execPath, [bin, 'mcp', '--config', config, '--http', '0', '--token-file', tokenFile, '--workers', '1', ...flags], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.add(child);
  const url = (await firstLine(child)).replace('codemode-executor mcp listening on ', '');
  return { child, url, port: Number(new URL(url).port), stop: () => child.kill() };
}

/**
 * One request on a connection of its own (no pooling), from `localAddress`, with the token
 * unless `headers` says otherwise; resolves with the status, headers and body.
 */
function request(port, { method = 'POST', headers = {}, body = INIT(), localAddress = '127.0.0.1' } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, path: '/mcp', method, localAddress, agent: false,
      // A header given as undefined is not sent.
      headers: Object.fromEntries(Object.entries({ 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers }).filter(([, v]) => v !== undefined)),
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error('no answer within 5 s')));
    req.end(body);
  });
}

/** A TCP connection from `localAddress` that sends nothing; resolves once connected. */
function silent(port, localAddress = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
    socket.on('error', reject);
  });
}

/** The JSON-RPC error message of a refusal's body. */
const message = (r) => JSON.parse(r.body).error.message;

/** The events of an SSE text: { id, retry, event, data } each. */
function events(text) {
  return text.split(/\n\n/).filter((block) => block.trim() !== '').map((block) => {
    const e = { data: '' };
    for (const line of block.split('\n')) {
      const at = line.indexOf(':');
      if (at <= 0) continue;
      const [field, value] = [line.slice(0, at), line.slice(at + 1).replace(/^ /, '')];
      if (field === 'data') e.data = e.data ? `${e.data}\n${value}` : value;
      else e[field] = value;
    }
    return e;
  });
}

describe('HTTP connection caps', () => {
  it('past --max-connections-per-address, a connection from that address is refused 503 with the reason; service resumes when they close', async () => {
    const gw = await gateway(['--max-connections-per-address', '3']);
    const held = [];
    try {
      for (let i = 0; i < 3; i++) held.push(await silent(gw.port));
      const refused = await request(gw.port);
      expect(refused.status).toBe(503);
      expect(refused.headers.connection).toBe('close');
      expect(message(refused)).toBe('3 connections from 127.0.0.1 are open, the most the gateway takes from one address (--max-connections-per-address). Close idle connections or reuse one.');
      // Another address is not counted against this one's cap.
      expect((await request(gw.port, { localAddress: '127.0.0.2' })).status).toBe(200);
      for (const s of held) s.destroy();
      expect(await until(async () => (await request(gw.port)).status === 200, 5_000)).toBe(true);
    } finally {
      for (const s of held) s.destroy();
      gw.stop();
    }
  });

  it('past --max-connections, a connection from any address is refused; service resumes when they close', async () => {
    const gw = await gateway(['--max-connections', '4', '--max-connections-per-address', '2']);
    const held = [];
    try {
      held.push(await silent(gw.port, '127.0.0.1'), await silent(gw.port, '127.0.0.1'));
      held.push(await silent(gw.port, '127.0.0.2'), await silent(gw.port, '127.0.0.2'));
      const refused = await request(gw.port, { localAddress: '127.0.0.3' });
      expect(refused.status).toBe(503);
      expect(message(refused)).toBe('4 connections are open, the most the gateway takes (--max-connections). Close idle connections or reuse one.');
      held.pop().destroy();
      expect(await until(async () => (await request(gw.port, { localAddress: '127.0.0.3' })).status === 200, 5_000)).toBe(true);
      // The per-address cap still holds for 127.0.0.1 with room in all.
      const perAddress = await request(gw.port);
      expect(perAddress.status).toBe(503);
      expect(message(perAddress)).toContain('--max-connections-per-address');
    } finally {
      for (const s of held) s.destroy();
      gw.stop();
    }
  });

  it('a connection that sends no request is closed after 10 s, and its slot is free again', async () => {
    const gw = await gateway(['--max-connections-per-address', '1']);
    try {
      const start = Date.now();
      const held = await silent(gw.port);
      const closed = new Promise((resolve) => held.once('close', () => resolve(Date.now() - start)));
      expect((await request(gw.port)).status).toBe(503);
      const after = await closed;
      expect(after).toBeGreaterThanOrEqual(9_000);
      expect(after).toBeLessThan(13_000);
      expect(await until(async () => (await request(gw.port)).status === 200, 2_000)).toBe(true);
    } finally {
      gw.stop();
    }
  }, 20_000);

  it('the SDK client works within the default caps, which are the daemon’s', async () => {
    const gw = await gateway();
    try {
      const client = new Client({ name: 'test', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['code']);
      await client.close();
    } finally {
      gw.stop();
    }
    const help = spawnSync(process.execPath, [bin, 'mcp', '--help'], { encoding: 'utf8' }).stdout;
    const { maxConnections, maxConnectionsPerAddress } = limits().serveDefaults;
    expect(help).toMatch(new RegExp(`--max-connections N +connections open at once \\(default ${maxConnections}\\)`));
    expect(help).toMatch(new RegExp(`connections open at once from one address \\(default ${maxConnectionsPerAddress}\\)`));
    const doc = fs.readFileSync(path.join(root, 'docs', 'mcp.md'), 'utf8');
    expect(doc).toContain(`| \`--max-connections N\` | ${maxConnections} |`);
    expect(doc).toContain(`| \`--max-connections-per-address N\` | ${maxConnectionsPerAddress} |`);
  });

  it('refuses a cap outside its range before starting, saying the range', () => {
    for (const [flag, value] of [['--max-connections', '0'], ['--max-connections-per-address', '0'], ['--max-connections', '1000001']]) {
      const r = spawnSync(process.execPath, [bin, 'mcp', '--config', config, '--http', '0', flag, value], { encoding: 'utf8', timeout: 20_000 });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`codemode-executor mcp: ${flag} takes an integer from 1 to 1000000, got ${value}`);
    }
    const stdio = spawnSync(process.execPath, [bin, 'mcp', '--config', config, '--max-connections', '5'], { encoding: 'utf8', timeout: 20_000 });
    expect(stdio.status).toBe(2);
    expect(stdio.stderr).toContain('go with --http');
  });
});

describe('HTTP origins', () => {
  let gw;
  beforeAll(async () => {
    gw = await gateway(['--allow-origin', 'https://app.example']);
  }, 30_000);
  afterAll(() => gw?.stop());

  it('accepts the gateway’s own origin (its address, or localhost, on its port), and a listed one', async () => {
    for (const origin of [`http://127.0.0.1:${gw.port}`, `http://localhost:${gw.port}`, 'https://app.example']) {
      expect((await request(gw.port, { headers: { origin } })).status, origin).toBe(200);
    }
    // As a page loaded from http://localhost:PORT sends it.
    const local = `localhost:${gw.port}`;
    expect((await request(gw.port, { headers: { origin: `http://${local}`, host: local } })).status).toBe(200);
  });

  it('refuses every other origin 403 (the SDK transport\'s check), in a session too', async () => {
    const others = [`http://[::1]:${gw.port}`, `http://127.0.0.1:${gw.port + 1}`, `https://127.0.0.1:${gw.port}`, `http://localhost:${gw.port}.evil.example`, 'null', 'https://app.example.evil', 'http://app.example'];
    for (const origin of others) {
      const r = await request(gw.port, { headers: { origin } });
      expect(r.status, origin).toBe(403);
      expect(message(r)).toBe(`Invalid Origin header: ${origin}`);
    }
    // A session begun from an allowed page takes no request from another.
    const init = await request(gw.port, { headers: { origin: 'https://app.example' } });
    const session = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    for (const origin of others) {
      const r = await request(gw.port, { headers: { ...session, origin }, body: list });
      expect(r.status, origin).toBe(403);
    }
    expect((await request(gw.port, { headers: { ...session, origin: 'https://app.example' }, body: list })).status).toBe(200);
  });

  it('refuses an --allow-origin that is not an origin, before starting', () => {
    const r = spawnSync(process.execPath, [bin, 'mcp', '--config', config, '--http', '0', '--allow-origin', 'https://app.example/'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('codemode-executor mcp: --allow-origin takes an origin as a browser sends it (scheme://host[:port], no path), got "https://app.example/"; did you mean "https://app.example"?');
  });
});

describe('HTTP: the bearer token, and the Host on loopback', () => {
  let gw;
  beforeAll(async () => {
    gw = await gateway();
  }, 30_000);
  afterAll(() => gw?.stop());

  it('refuses a request without the token, with another, or in another scheme: 401 as the SDK’s bearerAuth answers', async () => {
    const refused = [undefined, '', `Bearer ${token}x`, `Bearer ${token.slice(1)}`, `Bearer ${token} ${token}`, 'Bearer ', token, `Basic ${Buffer.from(`x:${token}`).toString('base64')}`, `Token ${token}`];
    for (const authorization of refused) {
      const r = await request(gw.port, { headers: { authorization } });
      expect(r.status, String(authorization)).toBe(401);
      expect(r.headers['www-authenticate'], String(authorization)).toMatch(/^Bearer error="invalid_token", error_description="[^"]+"$/);
      expect(JSON.parse(r.body).error).toBe('invalid_token');
    }
    // The scheme is case-insensitive (RFC 7235); the token is not.
    expect((await request(gw.port, { headers: { authorization: `bearer ${token}` } })).status).toBe(200);
    expect((await request(gw.port, { headers: { authorization: `Bearer ${token.toUpperCase()}` } })).status).toBe(401);
  });

  it('on loopback the Host must name the gateway, in a session too (the SDK transport’s check)', async () => {
    const foreign = [`attacker.example:${gw.port}`, `127.0.0.1:${gw.port + 1}`, `[::1]:${gw.port}`, 'localhost', `127.0.0.2:${gw.port}`];
    for (const host of foreign) {
      const r = await request(gw.port, { headers: { host } });
      expect(r.status, host).toBe(403);
      expect(message(r)).toBe(`Invalid Host header: ${host}`);
    }
    const init = await request(gw.port, { headers: { host: `localhost:${gw.port}` } });
    expect(init.status).toBe(200);
    const session = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    for (const host of foreign) expect((await request(gw.port, { headers: { ...session, host }, body: list })).status, host).toBe(403);
    expect((await request(gw.port, { headers: session, body: list })).status).toBe(200);
  });

  it('the protection given to the SDK transport, per address listened on', async () => {
    const { rebindingProtection } = require('../lib/mcp/http');
    const v4 = rebindingProtection({ address: '127.0.0.1', family: 'IPv4', port: 8931 }, '127.0.0.1', ['https://app.example']);
    expect(v4).toEqual({
      url: 'http://127.0.0.1:8931/mcp',
      transport: { enableDnsRebindingProtection: true, allowedHosts: ['127.0.0.1:8931', 'localhost:8931'], allowedOrigins: ['http://127.0.0.1:8931', 'http://localhost:8931', 'https://app.example'] },
    });
    const v6 = rebindingProtection({ address: '::1', family: 'IPv6', port: 8931 }, '::1', []);
    expect(v6.transport.allowedHosts).toEqual(['[::1]:8931', 'localhost:8931']);
    // Off loopback no Host is checked (the token guards it; clients use names of their own).
    expect(rebindingProtection({ address: '192.0.2.7', family: 'IPv4', port: 8931 }, '192.0.2.7', []).transport).toEqual({
      enableDnsRebindingProtection: true, allowedHosts: undefined, allowedOrigins: ['http://192.0.2.7:8931'],
    });
    // Every interface is no page's origin: with no --allow-origin the SDK gets a list no Origin
    // matches (it checks none against an empty one), and refuses every page.
    const any = rebindingProtection({ address: '0.0.0.0', family: 'IPv4', port: 8931 }, '0.0.0.0', []);
    expect(any.transport).toEqual({ enableDnsRebindingProtection: true, allowedHosts: undefined, allowedOrigins: [''] });
    const { WebStandardStreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
    for (const origin of ['https://evil.example', 'null', 'http://0.0.0.0:8931']) {
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 'id', ...any.transport });
      const r = await transport.handleRequest(new Request('http://192.0.2.7:8931/mcp', { method: 'POST', headers: { origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: INIT() }));
      expect(r.status, origin).toBe(403);
    }
  });
});

describe('HTTP resumability: the priming event, retry and a resumed stream', () => {
  let gw;
  let session;
  const post = (body, version = '2025-11-25') => request(gw.port, { headers: { 'mcp-session-id': session, 'mcp-protocol-version': version }, body: JSON.stringify(body) });
  beforeAll(async () => {
    gw = await gateway();
    const init = await request(gw.port);
    session = init.headers['mcp-session-id'];
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  }, 30_000);
  afterAll(() => gw?.stop());

  it('a POST stream opens with an event id, a retry and empty data, then the answer with its own id', async () => {
    const r = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(r.headers['content-type']).toBe('text/event-stream');
    const [priming, answer, ...rest] = events(r.body);
    expect(priming.id).toMatch(/\S/);
    expect(priming.retry).toBe('1000');
    expect(priming.data).toBe('');
    expect(answer.id).toMatch(/\S/);
    expect(answer.id).not.toBe(priming.id);
    expect(JSON.parse(answer.data).result.tools[0].name).toBe('code');
    expect(rest).toEqual([]);
  });

  it('a client that lost the stream after the priming event gets the answer by resuming from it', async () => {
    const r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'code', arguments: { code: 'async () => 6 * 7' } } });
    const [priming, answer] = events(r.body);
    const resumed = await fetch(gw.url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', 'last-event-id': priming.id } });
    expect(resumed.status).toBe(200);
    const reader = resumed.body.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('\n\n')) text += (await reader.read()).value;
    await reader.cancel();
    const [replayed] = events(text);
    expect(replayed.id).toBe(answer.id);
    expect(JSON.parse(replayed.data)).toEqual(JSON.parse(answer.data));
    expect(JSON.parse(replayed.data).result.content[0].text).toBe('42');
  });

  it('a client of an older protocol gets no priming event (its SDK cannot read empty data)', async () => {
    const r = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list' }, '2025-06-18');
    const [first] = events(r.body);
    expect(JSON.parse(first.data).id).toBe(4);
  });

  it('the events kept for resumption are bounded: past the bound an old id cannot resume, and says so', async () => {
    const first = events((await post({ jsonrpc: '2.0', id: 5, method: 'tools/list' })).body)[0];
    // Answers of ~23,000 characters until the events sent since pass the 256 KiB a session keeps.
    let sent = 0;
    for (let i = 0; sent <= 256 * 1024; i++) {
      expect(i).toBeLessThan(100);
      const r = await post({ jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'code', arguments: { code: 'async () => "x".repeat(23000)' } } });
      expect(r.status).toBe(200);
      sent += events(r.body).reduce((n, e) => n + e.data.length, 0);
    }
    const resumed = await fetch(gw.url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', 'last-event-id': first.id } });
    expect(resumed.status).toBe(400);
    expect((await resumed.json()).error.message).toBe(`Last-Event-ID ${JSON.stringify(first.id)} cannot be resumed: the events after it were dropped (a session keeps its last 262144 bytes of events). Open a new stream without Last-Event-ID; answers sent since are lost`);
    const unknown = await fetch(gw.url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', 'last-event-id': 'nonsense' } });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error.message).toBe('Last-Event-ID "nonsense" is not an event of this session. Open a new stream without Last-Event-ID');
  });
});
