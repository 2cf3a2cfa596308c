// lib/validate.js and lib/validate/ on their own: the rules it takes from the addon (crates/protocol `limits`), and
// the field a refusal names, which the CLI maps back to its flag. No worker is started.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { BIN } from './daemon-helpers.mjs';
import { ExecutorError, thrown } from './helpers.mjs';

const require = createRequire(import.meta.url);
const validate = { ...require('../lib/validate'), ...require('../lib/validate/remote'), ...require('../lib/validate/fields') };
const { limits } = require('../lib/native.js');

const provider = (name) => ({ code: 'async () => 1', providers: [{ name, tools: ['t'] }], dispatch: () => 1 });

describe('provider names', () => {
  it('refuses every global the runtime installs, as the addon names them', () => {
    const { runtimeGlobals } = limits();
    // The runtime's own, beyond the language's: the drift the JS list had.
    expect(runtimeGlobals).toEqual(expect.arrayContaining(['self', 'Crypto', 'caches', 'ReadableStream', 'CompressionStream']));
    for (const name of runtimeGlobals) {
      const e = thrown(() => validate.request(provider(name), undefined));
      expect(e, name).toBeInstanceOf(ExecutorError);
      expect(e.code).toBe('INVALID_REQUEST');
      expect(validate.fieldOf(e)).toBe('providers[0].name');
    }
  });

  it("refuses the language's globals and takes any other identifier", () => {
    for (const name of ['globalThis', 'Object', 'Promise', 'JSON', 'eval']) {
      expect(thrown(() => validate.request(provider(name), undefined)).code, name).toBe('INVALID_REQUEST');
    }
    expect(validate.request(provider('store'), undefined).providers).toEqual([{ name: 'store', tools: ['t'] }]);
  });

  it("refuses the worker's V8 15.2 globals whatever this Node's V8 has, and those it removes", () => {
    // Node 20's realm has none of the first six; the worker's has all (__test__/providers.test.mjs
    // holds the list to the worker's own), and WebAssembly and SharedArrayBuffer it deletes.
    for (const name of ['Temporal', 'Iterator', 'DisposableStack', 'AsyncDisposableStack', 'SuppressedError', 'Float16Array', 'WebAssembly', 'SharedArrayBuffer']) {
      expect(validate.reservedNames().has(name), name).toBe(true);
      expect(thrown(() => validate.request(provider(name), undefined)).code, name).toBe('INVALID_REQUEST');
    }
    // The MCP gateway refuses a server whose global would be one, from the same list.
    const { parseServers } = require('../lib/mcp/config');
    expect(thrown(() => parseServers({ mcpServers: { Temporal: { command: 'x' } } })).message).toContain('becomes the global `Temporal`, which programs already have');
  });

  it("covers every global of this Node's own realm: a newer Node's V8 adds none the list lacks", () => {
    const realm = require('node:vm').runInNewContext('Object.getOwnPropertyNames(globalThis)');
    expect(realm.filter((name) => !validate.reservedNames().has(name))).toEqual([]);
  });
});

describe('option ranges and defaults', () => {
  it('gives an omitted option the default the addon names, and holds each to its range', () => {
    const { options, defaults } = limits();
    const o = validate.options({}, '/nonexistent/codemode-worker');
    expect({ queueBound: o.queueBound, timeout: o.timeout, memoryLimit: o.memoryLimit, handlesIdleTimeout: o.handlesIdleTimeout }).toEqual(defaults);
    expect(o.workers).toBeLessThanOrEqual(options.workers[1]);
    // A budget option is kept with the others (`budgets`), the default of each request.
    const read = (o, key) => (validate.BUDGETS.includes(key) ? o.budgets[key] : o[key]);
    for (const [key, [min, max]] of Object.entries(options)) {
      expect(read(validate.options({ [key]: min }, '/w'), key)).toBe(min);
      expect(read(validate.options({ [key]: max }, '/w'), key)).toBe(max);
      for (const bad of [min - 1, max + 1]) {
        const e = thrown(() => validate.options({ [key]: bad }, '/w'));
        expect(e.code).toBe('INVALID_OPTION');
        expect(validate.fieldOf(e)).toBe(key);
        expect(e.message).toContain(`from ${min} to ${max}`);
      }
    }
  });

  it('prints those defaults in the CLI usage', () => {
    const { defaults } = limits();
    const help = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    const flat = help.stdout.replace(/\s+/g, ' ');
    expect(flat).toContain(`ask for (default ${defaults.memoryLimit})`);
    expect(flat).toContain(`may ask for (default ${defaults.timeout})`);
    expect(flat).toContain(`retained execution (default ${defaults.queueBound})`);
    expect(flat).toContain(`lives unused (default ${defaults.handlesIdleTimeout})`);
  });
});

describe('a routed response', () => {
  it('takes a status in the range the addon names, and refuses one outside it', () => {
    const [min, max] = limits().responseStatus;
    expect([min, max]).toEqual([200, 599]);
    for (const status of [min, max]) expect(validate.wireResponse({ status })).toMatchObject({ status, statusText: '', headers: [] });
    for (const status of [100, min - 1, max + 1, 1.5, '200']) {
      expect(validate.wireResponse({ status })).toBe(`\`status\` must be an integer from ${min} to ${max}`);
    }
    expect(validate.wireResponse({ status: 200, headers: [['a']] })).toContain('`headers`');
    expect(validate.wireResponse({ status: 200, body: 'text' })).toContain('`body`');
    expect(validate.wireResponse(null)).toBe('got null, not an object');
  });
});

describe('what a refusal says it got', () => {
  it('names the value in words: an object, a function, undefined, the type and value otherwise', () => {
    const got = (v) => validate.describe(v);
    expect([{}, () => 1, undefined, null, [], Number.NaN, 5, true, 1n, 'x'].map(got)).toEqual([
      'an object', 'a function', 'undefined', 'null', 'an array', 'NaN', 'number 5', 'boolean true', 'bigint 1', 'the string "x"',
    ]);
    expect(thrown(() => validate.request({ code: {} }, undefined)).message).toContain('`code`: got an object.');
    expect(thrown(() => validate.request({ code: 'async () => 1', providers: [{ name: 'p', tools: ['t'] }] }, undefined)).message).toContain('got undefined while providers are declared');
  });
});

describe('the field a refusal names', () => {
  it('is the field, not a substring of the message', () => {
    // The given value quotes another option's name: the flag is still the one that was wrong.
    const e = thrown(() => validate.serveOptions({ outbound: '`port`' }, '/w'));
    expect(e.message).toContain('`port`');
    expect(validate.fieldOf(e)).toBe('outbound');
    expect(validate.fieldOf(new ExecutorError('INVALID_OPTION', 'Invalid option `port`'))).toBeUndefined();
    expect(validate.fieldOf(new Error('x'))).toBeUndefined();
  });

  it('names the flag on the command line', () => {
    for (const [flag, value] of [['outbound', '`port`'], ['host', '']]) {
      const r = spawnSync(process.execPath, [BIN, 'serve', `--${flag}`, value], { encoding: 'utf8' });
      expect(r.status, flag).toBe(2);
      expect(r.stderr).toContain(`codemode-executor: --${flag}: Invalid option \`${flag}\``);
    }
  });
});
