// What a person is asked before a call `--approve` names runs (docs/mcp.md, Approvals): every
// leaf of the input on its own line, nothing cut, nothing that reads as something else. The
// gateway runs as `codemode-executor mcp` over stdio, driven by the real MCP SDK client with
// elicitation; its upstream is a payments server of our own (fixtures/mcp-pay-server.mjs) that
// records what reached it. A call the gateway cannot show whole is refused without asking.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const require = createRequire(import.meta.url);
const { render } = require('../lib/errors');
const { ASK_BOUNDS } = require('../lib/mcp/elicitation');

const root = path.resolve(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'codemode-executor.js');
const payServer = path.join(import.meta.dirname, 'fixtures', 'mcp-pay-server.mjs');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'codemode-mcp-ask-'));

let client;
/** The messages the person was asked, in order. */
const asked = [];
const answer = 'accept';

beforeAll(async () => {
  const config = path.join(tmp, 'servers.json');
  fs.writeFileSync(config, JSON.stringify({ mcpServers: { pay: { command: process.execPath, args: [payServer] } } }));
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp', '--config', config, '--workers', '1', '--approve', 'pay.send_payment'],
    stderr: 'pipe',
  });
  client = new Client({ name: 'test', version: '1' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: answer };
  });
  await client.connect(transport);
}, 60_000);

afterAll(async () => {
  await client?.close();
});

/** Runs `code` through the `code` tool; its result parsed as JSON (or the text when it is not). */
async function run(code) {
  const reply = await client.callTool({ name: 'code', arguments: { code } });
  const text = reply.content.map((c) => c.text).join('\n');
  expect(reply.isError, text).not.toBe(true);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Calls `pay.send_payment(input)` (`input` a JS expression); its result or its rejection's message. */
const send = (input) => run(`async () => { try { return await pay.send_payment(${input}) } catch (e) { return 'REJECTED: ' + e.message } }`);
/** Every input that reached the upstream so far. */
const received = async () => (await run('async () => pay.received({})')).calls;

/** The APPROVAL_DENIED text of a refusal whose reason matches `pattern`, as a RegExp. */
function denial(pattern) {
  const [before, after] = render('APPROVAL_DENIED', { provider: 'pay', tool: 'send_payment', reason: '\u0000' }).split('\u0000');
  const quote = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^REJECTED: ${quote(before)}${pattern.source}${quote(after)}$`, 's');
}

describe('the approval question shows every leaf of the input', () => {
  it('a long first value cannot hide the amount and a second recipient nested after it', async () => {
    const before = (await received()).length;
    const memo = 'Invoice …'.repeat(40);
    const input = { to: 'alice', options: { memo, amount: 9999999, bcc_to: 'mallory' } };
    expect(await send(JSON.stringify(input))).toBe('sent');
    const message = asked.at(-1);
    const lines = message.split('\n');
    expect(lines).toContain('- to: "alice"');
    expect(lines).toContain(`- options.memo: ${JSON.stringify(memo)}`);
    expect(lines).toContain('- options.amount: 9999999');
    expect(lines).toContain('- options.bcc_to: "mallory"');
    expect(message).toContain('(4 values)');
    expect(message).not.toContain('more characters');
    // What the person accepted is what the server got, nothing more.
    const got = await received();
    expect(got).toHaveLength(before + 1);
    expect(got.at(-1)).toEqual(input);
  }, 60_000);

  it('arrays and keys that are not identifiers are written unambiguously', async () => {
    const input = { items: [{ id: 1 }, { id: 2, tags: ['a'] }], options: { 'a.b': true, 'c': { 'd': null } }, 'x y': '', empty: {}, none: [] };
    expect(await send(JSON.stringify(input))).toBe('sent');
    const lines = asked.at(-1).split('\n');
    for (const line of [
      '- items[0].id: 1',
      '- items[1].id: 2',
      '- items[1].tags[0]: "a"',
      '- options["a.b"]: true',
      '- options.c.d: null',
      '- ["x y"]: ""',
      '- empty: {}',
      '- none: []',
    ]) expect(lines).toContain(line);
    // The flattened `a.b` and the key "a.b" do not read alike.
    expect(lines.filter((l) => l.startsWith('- options.a'))).toEqual([]);
  }, 60_000);

  it('shows what the server receives: values JSON cannot carry as the JSON they become', async () => {
    expect(await send('{ when: new Date(0), n: NaN, gone: undefined, big: [1, , 3] }')).toBe('sent');
    const lines = asked.at(-1).split('\n');
    expect(lines).toContain('- when: "1970-01-01T00:00:00.000Z"');
    expect(lines).toContain('- n: null');
    expect(lines).toContain('- big[1]: null');
    expect(lines.some((l) => l.startsWith('- gone'))).toBe(false);
    expect((await received()).at(-1)).toEqual({ when: '1970-01-01T00:00:00.000Z', n: null, big: [1, null, 3] });
  }, 60_000);
});

describe('characters that change how the question reads are escapes', () => {
  const deceiving = {
    'zero width space': '\u200b',
    'zero width joiner': '\u200d',
    'byte order mark': '\ufeff',
    'next line (NEL)': '\u0085',
    'line separator': '\u2028',
    'paragraph separator': '\u2029',
    'right-to-left override': '\u202e',
    'left-to-right isolate': '\u2066',
    'left double quotation mark': '\u201c',
    'right double quotation mark': '\u201d',
    'fullwidth quotation mark': '\uff02',
    'double prime': '\u2033',
    'modifier letter double prime': '\u02ba',
    'no-break space': '\u00a0',
    'tag character': '\u{e0041}',
  };
  const chars = Object.values(deceiving).join('');
  const escapes = [...chars].map((c) => `\\u${c.length === 2 ? `{${c.codePointAt(0).toString(16)}}` : c.charCodeAt(0).toString(16).padStart(4, '0')}`);

  it('in keys and in values, with every one named', async () => {
    const input = { [`to${chars}`]: 'alice', options: { [`am${chars}t`]: `1${chars}`, memo: 'ok\u0085- options.amount: 1', note: 'x\u201d, amount: 5, y: \u201c' } };
    expect(await send(JSON.stringify(input))).toBe('sent');
    const message = asked.at(-1);
    for (const [name, c] of Object.entries(deceiving)) expect(message.includes(c), name).toBe(false);
    const lines = message.split('\n');
    expect(lines).toContain(`- ["to${escapes.join('')}"]: "alice"`);
    expect(lines).toContain(`- options["am${escapes.join('')}t"]: "1${escapes.join('')}"`);
    expect(lines).toContain('- options.memo: "ok\\u0085- options.amount: 1"');
    expect(lines).toContain('- options.note: "x\\u201d, amount: 5, y: \\u201c"');
    // Nothing breaks a line or starts a fake one: one line a leaf, between the header and the question.
    expect(lines.filter((l) => l.startsWith('- '))).toHaveLength(4);
    expect((await received()).at(-1)).toEqual(input);
  }, 60_000);
});

describe('a call that cannot be shown whole is refused without asking', () => {
  /** Sends `input`; expects a refusal matching `reason` with nobody asked and nothing sent. */
  async function refused(input, reason) {
    const questions = asked.length;
    const before = (await received()).length;
    const result = await send(input);
    expect(result).toMatch(denial(reason));
    expect(asked).toHaveLength(questions);
    expect(await received()).toHaveLength(before);
    return result;
  }

  it('a value too long to show: the issue’s memo grown past the bound', async () => {
    const text = await refused(`{ to: 'alice', options: { memo: 'Invoice …'.repeat(400), amount: 9999999, bcc_to: 'mallory' } }`, /.*options\.memo.*/);
    expect(text).toContain(`${ASK_BOUNDS.valueChars}`);
  }, 60_000);

  it('too many leaves, however they nest', async () => {
    const n = ASK_BOUNDS.leaves + 1;
    const text = await refused(`{ to: 'alice', items: Array.from({ length: ${n - 1} }, (_, i) => ({ id: i })) }`, /.*/);
    expect(text).toContain(`${n} values`);
    expect(text).toContain(`${ASK_BOUNDS.leaves}`);
    // At the bound it is asked.
    expect(await send(`{ to: 'alice', items: Array.from({ length: ${n - 2} }, (_, i) => ({ id: i })) }`)).toBe('sent');
    expect(asked.at(-1).split('\n').filter((l) => l.startsWith('- '))).toHaveLength(ASK_BOUNDS.leaves);
  }, 60_000);

  it('a key too long to show, and a path nested too deep', async () => {
    const key = await refused(`{ to: 'alice', options: { ['k'.repeat(${ASK_BOUNDS.keyChars + 1})]: 1 } }`, /.*/);
    expect(key).toContain(`${ASK_BOUNDS.keyChars}`);
    const deep = await refused(`{ to: 'alice', options: JSON.parse('{"a":'.repeat(${ASK_BOUNDS.pathChars}) + '1' + '}'.repeat(${ASK_BOUNDS.pathChars})) }`, /.*/);
    expect(deep).toContain(`${ASK_BOUNDS.pathChars}`);
  }, 60_000);

  it('a value at the bound is asked; one character more, written as an escape, is not', async () => {
    const fits = ASK_BOUNDS.valueChars - 2; // the quotes count
    expect(await send(`{ memo: 'x'.repeat(${fits}) }`)).toBe('sent');
    expect(asked.at(-1).split('\n')).toContain(`- memo: "${'x'.repeat(fits)}"`);
    await refused(`{ memo: 'x'.repeat(${fits - 5}) + '\\u200b' }`, /.*memo.*/);
  }, 60_000);

  it('an input that is not one object', async () => {
    await refused(`'alice'`, /.*one object.*/);
  }, 60_000);
});
