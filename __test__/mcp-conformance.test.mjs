// The MCP conformance suite (@modelcontextprotocol/conformance, its server scenarios, every suite)
// against `codemode-executor mcp --http` fronting @modelcontextprotocol/server-everything, all on
// 127.0.0.1. The runner has no option for a header, and the gateway's HTTP always wants a token:
// fixtures/conformance-bearer.mjs, loaded into the runner with --import, adds
// `Authorization: Bearer TOKEN` to its requests to the gateway and changes nothing else. The
// scenarios that apply must pass; the others are the ones docs/mcp.md lists with the reason, and
// every scenario the runner has is one or the other.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { firstLine } from './mcp-helpers.mjs';
import { nodeBinary } from '../scripts/node-build.mjs';

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'codemode-executor.js');
const runner = path.join(root, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const bearer = path.join(import.meta.dirname, 'fixtures', 'conformance-bearer.mjs');
const everything = path.join(root, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-conformance-'));

/** The scenarios a one-tool gateway answers as any server must; each must pass whole. */
const APPLIES = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

/** The scenarios docs/mcp.md says do not apply (its "Conformance" table). */
function notApplicable() {
  const doc = fs.readFileSync(path.join(root, 'docs', 'mcp.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Conformance'));
  const table = section.slice(0, section.search(/\n#{2,3} (?!Conformance)/));
  return [...table.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]);
}

describe('the MCP conformance suite against the gateway over HTTP', () => {
  /** @type {Map<string, { id: string, status: string, errorMessage?: string }[]>} */
  const results = new Map();
  let child;
  let output = '';
  beforeAll(async () => {
    const token = 'a-token-of-sixteen-plus';
    fs.writeFileSync(path.join(tmp, 'token'), `${token}\n`);
    fs.writeFileSync(path.join(tmp, 'servers.json'), JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [everything, 'stdio'] } } }));
    child = spawn(process.execPath, [bin, 'mcp', '--config', path.join(tmp, 'servers.json'), '--http', '0', '--token-file', path.join(tmp, 'token'), '--workers', '1'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const url = (await firstLine(child)).replace('codemode-executor mcp listening on ', '');
    // The runner needs Node 22+ (fs.globSync): this Node, or Node 26 (scripts/node-build.mjs,
    // fetched once from the npm registry, as scripts/test.sh does for its second run).
    const node = Number(process.versions.node.split('.')[0]) >= 22 ? process.execPath : nodeBinary('26');
    const out = path.join(tmp, 'results');
    const run = spawnSync(node, ['--import', bearer, runner, 'server', '--url', url, '--suite', 'all', '-o', out], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, CONFORMANCE_ORIGIN: new URL(url).origin, CONFORMANCE_TOKEN: token },
    });
    output = `${run.stdout}${run.stderr}`;
    if (run.error) throw new Error(`the conformance runner did not finish: ${run.error.message}\n${output}`);
    for (const dir of fs.readdirSync(out)) {
      const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(dir)?.[1];
      if (scenario) results.set(scenario, JSON.parse(fs.readFileSync(path.join(out, dir, 'checks.json'), 'utf8')));
    }
  }, 120_000);
  afterAll(() => {
    child?.kill();
  });

  it('every scenario that applies to a one-tool gateway passes, DNS rebinding protection included', () => {
    for (const scenario of APPLIES) {
      const checks = results.get(scenario);
      expect(checks, `${scenario} did not run:\n${output}`).toBeDefined();
      const failed = checks.filter((c) => !['SUCCESS', 'INFO'].includes(c.status));
      expect(failed, scenario).toEqual([]);
      expect(checks.some((c) => c.status === 'SUCCESS'), scenario).toBe(true);
    }
    expect(results.get('dns-rebinding-protection').map((c) => [c.id, c.status])).toEqual([
      ['localhost-host-rebinding-rejected', 'SUCCESS'],
      ['localhost-host-valid-accepted', 'SUCCESS'],
    ]);
  });

  it('every other scenario is one docs/mcp.md lists as not applying, and none is both', () => {
    const listed = notApplicable();
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.filter((s) => APPLIES.includes(s))).toEqual([]);
    expect([...results.keys()].sort()).toEqual([...APPLIES, ...listed].sort());
  });
});
