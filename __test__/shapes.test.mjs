// The host-visible shapes are defined once in Rust (crates/protocol src/host.rs and messages.rs,
// src/types.rs, src/limits.rs); napi writes native.d.ts from those definitions at build time.
// index.d.ts (the public API) and docs/protocol.md (the daemon's JSON) restate some of them for
// their readers: this file fails when a restatement drifts from the definition.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const { binding } = require('../lib/native.js').loadNative();

/** @param {string} file */
function declarations(file) {
  const text = readFileSync(path.join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  /** @type {Map<string, ts.Node>} */
  const found = new Map();
  source.forEachChild((node) => {
    if ((ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && node.name) found.set(node.name.text, node);
  });
  /** @param {string} name */
  const get = (name) => {
    const node = found.get(name);
    if (!node) throw new Error(`${file} declares no ${name}`);
    return node;
  };
  return {
    /** The property names of interface `name`, sorted. @param {string} name */
    fields(name) {
      const node = get(name);
      if (!ts.isInterfaceDeclaration(node)) throw new Error(`${file}: ${name} is not an interface`);
      return node.members.map((m) => /** @type {ts.Identifier} */ (m.name).text).sort();
    },
    /** The string literals of type alias `name`, or of property `prop` of interface `name`, sorted. @param {string} name @param {string} [prop] */
    literals(name, prop) {
      const node = get(name);
      let type;
      if (prop) {
        if (!ts.isInterfaceDeclaration(node)) throw new Error(`${file}: ${name} is not an interface`);
        const member = node.members.find((m) => m.name && /** @type {ts.Identifier} */ (m.name).text === prop);
        type = member && ts.isPropertySignature(member) ? member.type : undefined;
      } else if (ts.isTypeAliasDeclaration(node)) {
        type = node.type;
      }
      if (!type) throw new Error(`${file}: no type for ${name}${prop ? `.${prop}` : ''}`);
      const members = ts.isUnionTypeNode(type) ? type.types : [type];
      return members
        .filter((t) => ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal))
        .map((t) => /** @type {ts.StringLiteral} */ (/** @type {ts.LiteralTypeNode} */ (t).literal).text)
        .sort();
    },
  };
}

const native = declarations('native.d.ts');
const index = declarations('index.d.ts');
const doc = readFileSync(path.join(root, 'docs/protocol.md'), 'utf8');

/** The text of docs/protocol.md's `### \`name\`` section under `## part`. @param {string} part @param {string} name */
function section(part, name) {
  const from = doc.indexOf(`\n## ${part}`);
  expect(from, `docs/protocol.md has "## ${part}"`).toBeGreaterThan(-1);
  const rest = doc.slice(from + 1);
  const partText = rest.slice(0, rest.indexOf('\n## ', 1) === -1 ? rest.length : rest.indexOf('\n## ', 1));
  const start = partText.indexOf(`\n### \`${name}\``);
  expect(start, `docs/protocol.md documents ${name}`).toBeGreaterThan(-1);
  const body = partText.slice(start + 1);
  const end = body.indexOf('\n### ', 1);
  return end === -1 ? body : body.slice(0, end);
}

/** The cells of the table row of `field` in `text`. @param {string} text @param {string} field */
function row(text, field) {
  const line = text.split('\n').find((l) => l.startsWith(`| \`${field}\` |`));
  if (!line) throw new Error(`no table row for \`${field}\` in:\n${text}`);
  return line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
}

/** Every `code span` of `text`, its quotes dropped. @param {string} text */
const spans = (text) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1].replace(/^"|"$/g, ''));
/** The names inside the first `{ ... }` of `text`. @param {string} text */
const braced = (text) => {
  const inner = /\{([^}]*)\}/.exec(text);
  if (!inner) throw new Error(`no { ... } in ${text}`);
  return inner[1].split(',').map((f) => f.split(':')[0].trim()).sort();
};
/** The fields a "Fields: `a`, `b` (a note), and `c`." sentence of `text` names, notes left out. @param {string} text */
function fieldsSentence(text) {
  let rest = text.slice(text.indexOf('Fields: '));
  expect(rest.startsWith('Fields: '), text).toBe(true);
  while (/\([^()]*\)/.test(rest)) rest = rest.replace(/\([^()]*\)/g, '');
  return spans(rest.split(/\.(\s|$)/)[0]);
}
/** @param {string[]} list */
const sorted = (list) => [...list].sort();

describe('index.d.ts states the shapes as the addon defines them', () => {
  it('a program failure', () => expect(index.fields('ProgramError')).toEqual(native.fields('FailureReport')));
  // `hops` is this host's (lib/hops.js), added when the executor records them.
  it("a run's stats", () => expect(index.fields('RunStats')).toEqual(sorted([...native.fields('RunUsage'), 'hops'])));
  it('a log entry and its levels', () => {
    expect(index.fields('LogEntry')).toEqual(native.fields('LogEntry'));
    expect(index.literals('LogEntry', 'level')).toEqual(native.literals('LogLevel'));
  });
  it("a retained execution's end", () => expect(index.literals('HandlesClosedReason')).toEqual(native.literals('HandlesClosedReason')));
  it("a metric's kind", () => expect(index.literals('Metric', 'kind')).toEqual(native.literals('MetricKind')));
  it("a request's redirect mode", () => expect(index.literals('WireRequest', 'redirect')).toEqual(native.literals('Redirect')));
  it('the outbound modes (null: blocked, a policy function: routed)', () => {
    expect(sorted([...index.literals('Outbound'), 'blocked', 'routed'])).toEqual(native.literals('Outbound'));
  });
});

describe('docs/protocol.md states the JSON as the shared definitions serialize it', () => {
  const daemon = 'Messages: daemon to client';
  const client = 'Messages: client to daemon';
  it("done's error, logs, stats and grant", () => {
    const done = section(daemon, 'done');
    expect(braced(row(done, 'error')[1])).toEqual(native.fields('FailureReport'));
    const logs = row(done, 'logs');
    expect(braced(logs[1])).toEqual(native.fields('LogEntry'));
    expect(sorted(spans(logs[2]).filter((s) => s !== 'level'))).toEqual(native.literals('LogLevel'));
    expect(sorted(spans(row(done, 'stats')[2]))).toEqual(native.fields('RunUsage'));
    expect(braced(row(done, 'grant')[1])).toEqual(native.fields('Grant'));
  });
  it("handlesClosed's reasons", () => {
    const text = section(daemon, 'handlesClosed');
    const reasons = /`reason` \(([^)]*)\)/.exec(text);
    expect(reasons, text).not.toBeNull();
    expect(sorted(spans(/** @type {RegExpExecArray} */ (reasons)[1]))).toEqual(native.literals('HandlesClosedReason'));
  });
  it("log's fields", () => {
    const fields = fieldsSentence(section(daemon, 'log'));
    expect(sorted(fields.filter((f) => f !== 'id'))).toEqual(native.fields('LogEntry'));
  });
  it("stats' counts", () => {
    const fields = fieldsSentence(section(daemon, 'stats'));
    expect(sorted(fields.filter((f) => f !== 'id'))).toEqual(native.fields('DaemonCounts'));
  });
  it("fetch's redirect modes", () => {
    const modes = /`redirect` \(([^:]*):/.exec(section(daemon, 'fetch'));
    expect(sorted(spans(/** @type {RegExpExecArray} */ (modes)[1]))).toEqual(native.literals('Redirect'));
  });
  it("execute's outbound modes and ranges", () => {
    const execute = section(client, 'execute');
    expect(sorted(spans(row(execute, 'outbound')[1]))).toEqual(native.literals('Outbound'));
    const { options } = binding.limits();
    const [t0, t1] = options.timeout;
    const [m0, m1] = options.memoryLimit;
    expect(execute).toContain(`\`timeout\` ${t0}-${t1}, \`memoryLimit\` ${m0}-${m1}`);
  });
  it("fetchResult's status range", () => {
    const [lo, hi] = binding.limits().responseStatus;
    const text = section(client, 'fetchResult');
    expect(row(text, 'status')[2]).toBe(`${lo}-${hi}`);
    const stated = [...text.matchAll(/(\d{3})-(\d{3})/g)].map((m) => `${m[1]}-${m[2]}`);
    expect(new Set(stated)).toEqual(new Set([`${lo}-${hi}`]));
  });
});

describe('limits() reads the protocol crate', () => {
  it('has every option with its range, and a default inside each range', () => {
    const { options, defaults, responseStatus, runtimeGlobals } = binding.limits();
    expect(Object.keys(options).sort()).toEqual(['cpuLimit', 'fetchLimit', 'handlesIdleTimeout', 'memoryLimit', 'queueBound', 'timeout', 'toolCallLimit', 'workers']);
    expect(Object.keys(defaults).sort()).toEqual(['handlesIdleTimeout', 'memoryLimit', 'queueBound', 'timeout']);
    for (const [name, value] of Object.entries(defaults)) {
      const [min, max] = options[name];
      expect(value).toBeGreaterThanOrEqual(min);
      expect(value).toBeLessThanOrEqual(max);
    }
    expect(responseStatus).toEqual([200, 599]);
    expect(runtimeGlobals).toContain('fetch');
    expect(new Set(runtimeGlobals).size).toBe(runtimeGlobals.length);
  });
});
