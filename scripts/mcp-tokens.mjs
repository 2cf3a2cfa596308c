// Measures what the MCP gateway saves in the model's context: the tokens of the upstream tools'
// definitions as a client lists them (name, description, input and output schema), against the
// gateway's `code` tool, for the npm servers docs/mcp.md names. Tokens are counted with
// gpt-tokenizer (o200k_base, the encoding of current OpenAI models). Prints the markdown table
// docs/mcp.md holds; `--check` exits 1 when the doc's table differs (the tests run it).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { countTokens } = require('gpt-tokenizer');
const { McpGateway } = require('../lib/mcp/gateway.js');

const root = path.resolve(import.meta.dirname, '..');
const server = (name) => path.join(root, 'node_modules', '@modelcontextprotocol', name, 'dist', 'index.js');
const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-tokens-'));
const SERVERS = {
  everything: { command: process.execPath, args: [server('server-everything'), 'stdio'] },
  memory: { command: process.execPath, args: [server('server-memory')], env: { MEMORY_FILE_PATH: path.join(folder, 'memory.jsonl') } },
  filesystem: { command: process.execPath, args: [server('server-filesystem'), folder] },
};

const gateway = new McpGateway({ servers: SERVERS, executor: { execute: () => Promise.reject(new Error('not used')) }, catalog: 'full', log: () => {} });
await gateway.start();
/** A tool definition as tools/list sends it, as the client puts it in the model's context. */
const size = (tool) => countTokens(JSON.stringify(tool));
const rows = [];
let upstreamTotal = 0;
for (const u of gateway.upstreams) {
  if (!u.connected) throw new Error(`${u.spec.name} did not connect: ${u.down}`);
  const listed = u.listed;
  const tokens = listed.reduce((sum, t) => sum + size(t), 0);
  upstreamTotal += tokens;
  rows.push(`| ${u.spec.name} | ${listed.length} | ${tokens} |`);
}
const [code] = gateway.listTools();
const codeTokens = size(code);
await gateway.close();
fs.rmSync(folder, { recursive: true, force: true });

const table = [
  '| upstream server | tools | tokens of its tool definitions |',
  '| --- | ---: | ---: |',
  ...rows,
  `| **all three, as a client lists them** | ${gateway.upstreams.reduce((n, u) => n + u.tools.length, 0)} | **${upstreamTotal}** |`,
  `| **the gateway's \`code\` tool** (every tool declared in TypeScript) | 1 | **${codeTokens}** |`,
].join('\n');
const saved = `The \`code\` tool takes ${Math.round((1 - codeTokens / upstreamTotal) * 100)}% fewer tokens than the tool definitions it replaces.`;
const out = `${table}\n\n${saved}\n`;

if (process.argv.includes('--check')) {
  const doc = fs.readFileSync(path.join(root, 'docs', 'mcp.md'), 'utf8');
  if (!doc.includes(out)) {
    process.stderr.write(`docs/mcp.md does not hold the measured table; run node scripts/mcp-tokens.mjs and paste:\n\n${out}`);
    process.exit(1);
  }
}
process.stdout.write(out);
