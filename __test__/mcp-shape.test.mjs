// The shapes the MCP gateway shows the model: TypeScript declarations written from MCP tools'
// JSON Schemas (exact text for small cases, and a compile of the whole output with the TypeScript
// compiler), and the structural truncation of tool results too large for the model's context.
// Both modules are pure; nothing here starts a worker.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const { schemaType, declareServers, declareTool, summaryLine } = require('../lib/model/declarations.js');
const { MARKER, truncateResult } = require('../lib/model/truncate.js');
const ts = require('typescript');

// Tool schemas in the forms MCP servers send them.
const createIssue = {
  name: 'create_issue',
  original: 'create-issue',
  description: 'Create a new issue in a GitHub repository.\n\nThe body is Markdown; */ ends nothing here.',
  inputSchema: {
    type: 'object',
    properties: {
      owner: { type: 'string', description: 'Repository owner' },
      repo: { type: 'string', description: 'Repository name' },
      title: { type: 'string', description: 'Issue title' },
      body: { type: 'string', description: 'Issue body.\nMarkdown; a literal */ is fine' },
      labels: { type: 'array', items: { type: 'string' } },
      milestone: { type: ['integer', 'null'] },
      state: { type: 'string', enum: ['open', 'closed'] },
    },
    required: ['owner', 'repo', 'title'],
    additionalProperties: false,
  },
  outputSchema: {
    type: 'object',
    properties: { number: { type: 'integer' }, url: { type: 'string', format: 'uri' } },
    required: ['number', 'url'],
  },
};
const getFile = {
  name: 'get_file_contents',
  original: 'get_file_contents',
  description: 'Read a file.',
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, ref: { type: 'string' } }, required: ['path'] },
};
const listRepos = { name: 'list_repos', original: 'list_repos', inputSchema: { type: 'object', properties: {} } };
const createEntities = {
  name: 'create_entities',
  original: 'create_entities',
  description: 'Create multiple new entities in the knowledge graph',
  inputSchema: {
    type: 'object',
    properties: {
      entities: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', description: 'The name of the entity' },
            entityType: { type: 'string' },
            observations: { type: 'array', items: { type: 'string' } },
          },
          required: ['name', 'entityType', 'observations'],
        },
      },
    },
    required: ['entities'],
  },
};
const route = {
  name: 'route',
  original: 'maps.route',
  description: 'Plan a route between two points.',
  inputSchema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
      Point: { type: 'object', properties: { lat: { type: 'number' }, lng: { type: 'number' } }, required: ['lat', 'lng'] },
    },
    properties: {
      from: { $ref: '#/$defs/Point' },
      to: { $ref: '#/$defs/Point' },
      mode: { anyOf: [{ const: 'car' }, { const: 'foot' }], default: 'car' },
    },
    required: ['from', 'to'],
  },
};
const servers = [
  { provider: 'github', server: 'github', description: 'GitHub issues,\n  repositories and files', tools: [createIssue, getFile, listRepos] },
  { provider: 'memory', server: 'memory', tools: [createEntities] },
  { provider: 'maps', server: 'maps "beta"', tools: [route] },
];

describe('schemaType', () => {
  it.each([
    [{ type: 'string' }, 'string'],
    [{ type: 'integer' }, 'number'],
    [{ type: ['string', 'null'] }, 'string | null'],
    [{ type: 'string', nullable: true }, 'string | null'],
    [{ enum: ['a', 1, null, true] }, '"a" | 1 | null | true'],
    [{ const: 'x"y' }, '"x\\"y"'],
    [{ oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'number' } }] }, 'string | number[]'],
    [{ allOf: [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, { enum: [1, 2] }] }, '(string | number) & (1 | 2)'],
    [{ type: 'array', items: { type: ['string', 'number'] } }, '(string | number)[]'],
    [{ type: 'array', prefixItems: [{ type: 'string' }, { type: 'boolean' }] }, '[string, boolean]'],
    [{ type: 'array' }, 'unknown[]'],
    [{ type: 'object' }, 'Record<string, unknown>'],
    [{ type: 'object', additionalProperties: { type: 'integer' } }, 'Record<string, number>'],
    [{ type: 'object', additionalProperties: true }, 'Record<string, unknown>'],
    [{ $ref: 'https://example.com/schema.json' }, 'unknown'],
    [{ $ref: '#/$defs/missing' }, 'unknown'],
    [{}, 'unknown'],
    [true, 'unknown'],
    [false, 'never'],
    [null, 'unknown'],
    [42, 'unknown'],
    ['string', 'unknown'],
  ])('%j → %s', (schema, expected) => {
    expect(schemaType(schema)).toBe(expected);
  });

  it('writes objects one property a line, with descriptions, optional marks and quoted names', () => {
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'integer', description: 'The id.\nNever */ reused.' },
        'content-type': { type: 'string' },
        tags: { type: 'array', items: { type: 'object', properties: { k: { type: 'string' } }, required: ['k'] } },
      },
      required: ['id'],
    };
    expect(schemaType(schema, '  ')).toBe(
      [
        '{',
        '    /** The id. Never *\\/ reused. */',
        '    id: number;',
        '    "content-type"?: string;',
        '    tags?: {',
        '      k: string;',
        '    }[];',
        '  }',
      ].join('\n'),
    );
  });

  it('cuts a long property description to 300 characters', () => {
    const text = schemaType({ type: 'object', properties: { a: { type: 'string', description: 'x'.repeat(1000) } } });
    const doc = text.split('\n')[1];
    expect(doc).toBe(`  /** ${'x'.repeat(299)}… */`);
  });

  it('inlines $defs and definitions refs against the root, and stops at a cycle', () => {
    const tree = {
      definitions: { Node: { type: 'object', properties: { value: { type: 'string' }, children: { type: 'array', items: { $ref: '#/definitions/Node' } } } } },
      $ref: '#/definitions/Node',
    };
    expect(schemaType(tree)).toBe(['{', '  value?: string;', '  children?: unknown[];', '}'].join('\n'));
    const chain = { $defs: {}, $ref: '#/$defs/d0' };
    for (let i = 0; i < 20; i++) chain.$defs[`d${i}`] = { type: 'array', items: { $ref: `#/$defs/d${i + 1}` } };
    chain.$defs.d20 = { type: 'string' };
    expect(schemaType(chain)).toBe(`${'unknown'}${'[]'.repeat(8)}`);
    // An inherited name is no definition.
    expect(schemaType({ $defs: {}, $ref: '#/$defs/constructor' })).toBe('unknown');
  });

  it('never throws, on cyclic schemas and hostile objects too', () => {
    const cyclic = { type: 'object', properties: {} };
    cyclic.properties.self = cyclic;
    cyclic.properties.list = { type: 'array', items: cyclic };
    expect(typeof schemaType(cyclic)).toBe('string');
    const hostile = new Proxy({}, { get() { throw new Error('no'); } });
    expect(schemaType(hostile)).toBe('unknown');
    expect(schemaType({ type: 'object', properties: { a: hostile } })).toBe('unknown');
  });
});

describe('declareServers', () => {
  it('writes one declared object per server, with tool docs and MCP names', () => {
    const tools = [
      { name: 'echo', original: 'echo', description: 'Echo the input.\nTwice.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
      { name: 'get_time', original: 'get-time', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { iso: { type: 'string' } } } },
      { name: 'ping', original: 'ping' },
    ];
    expect(declareServers([{ provider: 'everything', server: 'everything', description: 'Test\nserver */', tools }, { provider: 'empty', server: 'empty', tools: [] }])).toBe(
      [
        '/** MCP server "everything": Test server *\\/ */',
        'declare const everything: {',
        '  /**',
        '   * Echo the input.',
        '   * Twice.',
        '   */',
        '  echo(input: {',
        '    text: string;',
        '  }): Promise<string>;',
        '  /** MCP tool "get-time" */',
        '  get_time(input?: Record<string, unknown>): Promise<{',
        '    iso?: string;',
        '  }>;',
        '  ping(input?: Record<string, unknown>): Promise<string>;',
        '};',
        '',
        '/** MCP server "empty" */',
        'declare const empty: {',
        '};',
      ].join('\n'),
    );
  });

  it('cuts a tool description to 1,000 characters', () => {
    const text = declareServers([{ provider: 'p', server: 'p', tools: [{ name: 't', original: 't', description: 'y'.repeat(5000) }] }]);
    expect(text).toContain(`  /** ${'y'.repeat(999)}… */`);
  });

  it('compiles as TypeScript and types the calls', () => {
    const usage = [
      'async function main(): Promise<void> {',
      "  const issue = await github.create_issue({ owner: 'o', repo: 'r', title: 't', labels: ['bug'], milestone: null, state: 'open' });",
      '  const n: number = issue.number;',
      "  const text: string = await github.get_file_contents({ path: 'README.md' });",
      '  await github.list_repos();',
      "  await memory.create_entities({ entities: [{ name: 'a', entityType: 'person', observations: ['x'] }] });",
      "  await maps.route({ from: { lat: 1, lng: 2 }, to: { lat: 3, lng: 4 }, mode: 'foot' });",
      '  // @ts-expect-error a title is a string',
      "  await github.create_issue({ owner: 'o', repo: 'r', title: 42 });",
      '  // @ts-expect-error no such state',
      "  await github.create_issue({ owner: 'o', repo: 'r', title: 't', state: 'merged' });",
      '  // @ts-expect-error a point needs lng',
      '  await maps.route({ from: { lat: 1 }, to: { lat: 3, lng: 4 } });',
      '  void n, text;',
      '}',
      'void main;',
    ].join('\n');
    expect(compile(declareServers(servers), usage)).toEqual([]);
    // The check itself can fail: a wrong call with no @ts-expect-error is reported.
    const wrong = compile(declareServers(servers), "void github.get_file_contents({ path: 1 });");
    expect(wrong.join('\n')).toMatch(/not assignable to type 'string'/);
  });

  it('writes the whole sample as expected around one tool', () => {
    const text = declareServers(servers);
    expect(text.startsWith('/** MCP server "github": GitHub issues, repositories and files */\ndeclare const github: {\n  /**\n')).toBe(true);
    expect(text).toContain('   * The body is Markdown; *\\/ ends nothing here.\n   * MCP tool "create-issue"\n   */\n');
    expect(text).toContain('\n};\n\n/** MCP server "memory" */\ndeclare const memory: {\n');
    expect(text).toContain('/** MCP server "maps \\"beta\\"" */');
    expect(text).not.toMatch(/\*\/[^\n]/); // every comment ends its line: no `*/` escaped badly
  });
});

describe('declareTool and summaryLine', () => {
  it('declares one tool to be read alone', () => {
    expect(declareTool('github', getFile)).toBe(
      ['  /** Read a file. */', '  github.get_file_contents(input: {', '    path: string;', '    ref?: string;', '  }): Promise<string>;'].join('\n'),
    );
    expect(declareTool('github', listRepos)).toBe('  github.list_repos(input?: Record<string, unknown>): Promise<string>;');
  });

  it('summarizes a tool with the first sentence of its description', () => {
    expect(summaryLine(createIssue)).toBe('create_issue: Create a new issue in a GitHub repository.');
    expect(summaryLine({ name: 'a', original: 'a', description: 'Reads the\nfile at a path. Then more.' })).toBe('a: Reads the file at a path.');
    expect(summaryLine({ name: 'b', original: 'b', description: 'z'.repeat(500) })).toBe(`b: ${'z'.repeat(119)}…`);
    expect(summaryLine(listRepos)).toBe('list_repos');
  });
});

/**
 * Type-checks declarations plus a usage snippet in strict mode; returns the diagnostics' texts.
 * @param {string} declarations
 * @param {string} usage
 */
function compile(declarations, usage) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-shape-'));
  try {
    const files = [join(dir, 'servers.d.ts'), join(dir, 'usage.ts')];
    writeFileSync(files[0], declarations);
    writeFileSync(files[1], usage);
    const program = ts.createProgram(files, { noEmit: true, strict: true, target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], types: [] });
    return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The checks every truncated result passes. */
function expectCut(result, maxChars) {
  const text = JSON.stringify(result.value);
  expect(text.length).toBeLessThanOrEqual(maxChars);
  expect(text).toContain(MARKER);
  expect(JSON.parse(text)).toEqual(result.value);
  expect(result.truncated).toBe(true);
  return result.value;
}

describe('truncateResult', () => {
  it('returns values that fit unchanged', () => {
    for (const value of [{ a: [1, 2, 'x'] }, [1, 2], 'short', 42, null, undefined]) {
      const result = truncateResult(value, 100);
      expect(result.value).toBe(value);
      expect(result.truncated).toBe(false);
    }
  });

  it('cuts a 100k-character string to fit, keeping its start', () => {
    const value = 'abcdefghij'.repeat(10_000);
    const out = expectCut(truncateResult(value, 1000), 1000);
    expect(out.startsWith('abcdefghij'.repeat(90))).toBe(true);
    expect(out).toMatch(/ --- TRUNCATED --- \(\d+ more characters\)$/);
  });

  it('keeps the first items of an array of 10,000 objects', () => {
    const value = Array.from({ length: 10_000 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] }));
    const out = expectCut(truncateResult(value, 4000), 4000);
    expect(out.slice(0, 3)).toEqual(value.slice(0, 3));
    expect(out.at(-1)).toBe(`${MARKER} ${10_000 - (out.length - 1)} more items`);
  });

  it('keeps the first keys of an object of 5,000 keys and names some of the rest', () => {
    const value = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`key${i}`, { n: i }]));
    const out = expectCut(truncateResult(value, 2000), 2000);
    const keys = Object.keys(out);
    expect(keys.slice(0, 3)).toEqual(['key0', 'key1', 'key2']);
    expect(out.key0).toEqual({ n: 0 });
    expect(keys.at(-1)).toBe(MARKER);
    const kept = keys.length - 1;
    expect(out[MARKER]).toMatch(new RegExp(`^${MARKER} ${5000 - kept} more keys: key${kept}, key${kept + 1}, `));
  });

  it('cuts deep nesting at 32 levels', () => {
    let value = { level: 100_000 };
    for (let i = 99_999; i >= 0; i--) value = { level: i, child: value }; // too deep for JSON.stringify
    const out = expectCut(truncateResult(value, 3000), 3000);
    expect(out.level).toBe(0);
    expect(out.child.child.level).toBe(2);
    expect(JSON.stringify(out)).toContain(`${MARKER} nested too deeply`);
  });

  it('replaces a cycle', () => {
    const value = { name: 'root', items: [1] };
    value.items.push(value);
    value.self = value;
    const out = expectCut(truncateResult(value, 1000), 1000);
    expect(out).toEqual({ name: 'root', items: [1, `${MARKER} circular`], self: `${MARKER} circular` });
  });

  it('writes BigInts as strings', () => {
    expect(truncateResult(12n, 100)).toEqual({ value: '12', truncated: false });
    expect(truncateResult({ big: 2n ** 64n }, 100)).toEqual({ value: { big: '18446744073709551616' }, truncated: false });
    const value = { big: 2n ** 64n, list: Array.from({ length: 5000 }, (_, i) => BigInt(i)) };
    const out = expectCut(truncateResult(value, 1000), 1000);
    expect(out.big).toBe('18446744073709551616');
    expect(out.list.slice(0, 3)).toEqual(['0', '1', '2']);
  });

  it('falls back to cut JSON text when no level fits', () => {
    const value = { ['k'.repeat(5000)]: 1 }; // keys are not shortened, so only the text cut fits
    const out = expectCut(truncateResult(value, 300), 300);
    expect(out.startsWith(`{"${'k'.repeat(100)}`)).toBe(true);
    expect(out).toMatch(/… --- TRUNCATED --- \(\d+ more characters of JSON\)$/);
  });

  it('keeps any JSON value within the limit (property)', () => {
    let cut = 0;
    const values = fc.oneof(
      fc.jsonValue(),
      fc.array(fc.jsonValue(), { maxLength: 300, size: 'large' }),
      fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 300, size: 'large' }),
      fc.string({ maxLength: 6000, size: 'large' }),
    );
    fc.assert(
      fc.property(values, fc.integer({ min: 200, max: 5000 }), (value, maxChars) => {
        const result = truncateResult(value, maxChars);
        const text = JSON.stringify(result.value);
        expect(text.length).toBeLessThanOrEqual(maxChars);
        if (JSON.stringify(value).length <= maxChars) {
          // Unchanged, so as JSON-safe as the input (fast-check's JSON values include -0).
          expect(result.value).toBe(value);
          expect(result.truncated).toBe(false);
        } else {
          expect(JSON.parse(text)).toEqual(result.value); // plain JSON data, -0 written as 0
          expect(result.truncated).toBe(true);
          cut++;
        }
      }),
      { numRuns: 300 },
    );
    expect(cut).toBeGreaterThan(20); // the property exercised the cutting, not only the fast path
  });
});

describe('schemas built to blow up', () => {
  it('a $ref fan-out and a huge literal stay small and quick', () => {
    // Each level refers to the next three times: 3^10 copies of the last if inlined.
    const $defs = {};
    for (let i = 0; i < 10; i++) $defs[`d${i}`] = { type: 'object', properties: { a: { $ref: `#/$defs/d${i + 1}` }, b: { $ref: `#/$defs/d${i + 1}` }, c: { $ref: `#/$defs/d${i + 1}` } } };
    $defs.d10 = { const: 'z'.repeat(150) };
    const text = schemaType({ $ref: '#/$defs/d0', $defs });
    expect(text.length).toBeLessThanOrEqual(16_000);
    expect(schemaType({ const: 'q'.repeat(10_000) })).toBe('string');
    expect(schemaType({ enum: ['short', 'q'.repeat(10_000)] })).toBe('"short" | string');
  });
});

describe('results built to blow up', () => {
  it('a sparse array of 2^32 - 1 slots (and a BigInt, so JSON cannot write it) is cut at once', () => {
    const a = [];
    a.length = 2 ** 32 - 1;
    a[0] = 1n;
    const { value, truncated } = truncateResult(a, 2_000);
    expect(truncated).toBe(true);
    expect(JSON.stringify(value).length).toBeLessThanOrEqual(2_000);
    expect(value[0]).toBe('1');
  });
});
