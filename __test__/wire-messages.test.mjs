// The JS client held to the daemon's own samples of every executor protocol message
// (__test__/fixtures/wire-messages.json, written by crates/daemon/tests/messages_fixtures.rs from
// the daemon's ServerMsg and ClientMsg): every message the daemon sends passes
// lib/remote/messages.js' check for its type, and that check names every field of it and refuses
// it with a field missing or of the wrong type; every message connect() sends, in a conversation
// with a scripted daemon that answers with those samples, has only fields the daemon reads, of
// the types it reads them as, and every field it requires. A message or field changed on either
// side fails here or in the Rust test until both sides and the file agree.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { fakeDaemon, framed } from './fake-daemon.mjs';

const require = createRequire(import.meta.url);
const { connect, ExecutorError } = require('../index.js');
const { decode, SHAPES } = require('../lib/remote/messages.js');
const { denial } = require('../lib/errors.js');

/** @type {{ protocol: number, server: Record<string, Record<string, unknown>[]>, client: Record<string, Record<string, unknown>[]> }} */
const fixtures = JSON.parse(readFileSync(new URL('./fixtures/wire-messages.json', import.meta.url), 'utf8'));

/**
 * Fields the daemon always sends that this client still takes without them (a daemon from before
 * they were added sends none): each is checked when present.
 */
const TAKEN_MISSING = ['failed.retryable', 'fetch.redirect', 'welcome.limits.approvalTimeout', 'welcome.limits.fetchBodyBytes', 'welcome.limits.maxInFlight', 'welcome.limits.maxMessageBytes', 'welcome.limits.resultBytes'];

const serverSamples = Object.entries(fixtures.server).flatMap(([kind, samples]) => samples.map((sample, i) => /** @type {const} */ ([kind, i, sample])));

/**
 * Every field of `value` below `at`, with its path (as messages.js names it: `a.b`, `a[0]`) and
 * the keys that reach it.
 * @returns {Generator<{ path: string, keys: (string | number)[], value: unknown }>}
 */
function* fields(value, at = '', keys = []) {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const path = `${at}[${i}]`;
      yield { path, keys: [...keys, i], value: item };
      yield* fields(item, path, [...keys, i]);
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (at === '' && key === 'type') continue;
      const path = at ? `${at}.${key}` : key;
      yield { path, keys: [...keys, key], value: item };
      yield* fields(item, path, [...keys, key]);
    }
  }
}

/** `sample` with the field at `keys` set to `to`, or removed when `to` is `undefined`. */
function mutated(sample, keys, to) {
  const copy = structuredClone(sample);
  let parent = copy;
  for (const key of keys.slice(0, -1)) parent = parent[key];
  const last = keys[keys.length - 1];
  if (to === undefined) delete parent[last];
  else parent[last] = to;
  return copy;
}

/** The field a refusal names (`a \`done\` message whose \`logs[0].level\` ...`). */
function named(decoded) {
  expect(decoded).not.toHaveProperty('msg');
  return /whose `([^`]+)`/.exec(decoded.problem)?.[1];
}

/** The paths SHAPES does not name in `value` (a kind such as `headers` covers all below it). */
function unnamed(value, shape, at = '') {
  if (typeof shape === 'string') return [];
  if (Array.isArray(shape)) return Array.isArray(value) ? value.flatMap((item, i) => unnamed(item, shape[0], `${at}[${i}]`)) : [];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => {
    if (at === '' && key === 'type') return [];
    const path = at ? `${at}.${key}` : key;
    return key !== '?' && Object.hasOwn(shape, key) ? unnamed(item, shape[key], path) : [path];
  });
}

/**
 * The fields (paths with `[]` for any index) present in every object that could hold them, over
 * all `samples`: those a sender always sends.
 */
function alwaysPresent(samples) {
  const objects = new Map();
  const present = new Map();
  const bump = (map, key) => map.set(key, (map.get(key) ?? 0) + 1);
  const walk = (value, at) => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item, `${at}[]`);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    bump(objects, at);
    for (const [key, item] of Object.entries(value)) {
      if (at === '' && key === 'type') continue;
      const path = at ? `${at}.${key}` : key;
      bump(present, JSON.stringify([at, path]));
      walk(item, path);
    }
  };
  for (const sample of samples) walk(sample, '');
  return new Set([...present].filter(([k, n]) => n === objects.get(JSON.parse(k)[0])).map(([k]) => JSON.parse(k)[1]));
}

describe("lib/remote/messages.js takes the daemon's messages as the daemon sends them", () => {
  it('checks exactly the message types the daemon sends', () => {
    expect(Object.keys(SHAPES).sort()).toEqual(Object.keys(fixtures.server).sort());
    expect(fixtures.protocol).toBe(require('../lib/remote/channel.js').protocolVersion());
  });

  it.each(serverSamples)('passes the daemon\'s %s (sample %i), as text and as a binary message', (kind, _i, sample) => {
    const text = decode(JSON.stringify(sample));
    expect(text).toEqual({ msg: sample, payload: undefined });
    const payload = Buffer.from([1, 2, 3]);
    const binary = decode(framed(sample, payload));
    expect(binary.msg).toEqual(sample);
    expect(binary.payload).toEqual(payload);
    expect(binary.msg.type).toBe(kind);
  });

  it.each(serverSamples)("names every field of the daemon's %s (sample %i)", (kind, _i, sample) => {
    expect(unnamed(sample, SHAPES[kind])).toEqual([]);
  });

  it.each(serverSamples)('refuses the daemon\'s %s (sample %i) with any field of the wrong type, naming it', (kind, _i, sample) => {
    let tried = 0;
    for (const { path, keys, value } of fields(sample)) {
      const wrong = typeof value === 'string' ? 7 : 'x';
      const field = named(decode(JSON.stringify(mutated(sample, keys, wrong))));
      // A field checked as a whole (`headers`, `grant.handles`) is named for what is inside it.
      expect(path === field || path.startsWith(`${field}[`) || path.startsWith(`${field}.`), `${kind}.${path} as ${JSON.stringify(wrong)}: named ${field}`).toBe(true);
      tried++;
    }
    expect(tried).toBeGreaterThan(0);
  });

  it.each(Object.entries(fixtures.server))('refuses a %s without a field the daemon always sends, but for the ones it takes missing', (kind, samples) => {
    const always = alwaysPresent(samples);
    for (const sample of samples) {
      for (const { path, keys } of fields(sample)) {
        const general = path.replace(/\[\d+\]/g, '[]');
        if (typeof keys[keys.length - 1] !== 'string' || !always.has(general)) continue;
        const decoded = decode(JSON.stringify(mutated(sample, keys, undefined)));
        if (TAKEN_MISSING.includes(`${kind}.${general}`)) expect(decoded, `${kind}.${path}`).toHaveProperty('msg');
        else expect(named(decoded), `${kind}.${path}`).toBe(path);
      }
    }
  });

  it('takes missing only fields the daemon always sends', () => {
    const always = Object.entries(fixtures.server).flatMap(([kind, samples]) => [...alwaysPresent(samples)].map((p) => `${kind}.${p}`));
    for (const field of TAKEN_MISSING) expect(always).toContain(field);
  });

  it('refuses a mutated sample: the check can fail', () => {
    const [done] = fixtures.server.done;
    expect(decode(JSON.stringify({ ...done, stats: { ...done.stats, workerPid: 'x' } })).problem).toBe('a `done` message whose `stats.workerPid` is not a count');
    const { hasResult: _gone, ...partial } = done;
    expect(decode(JSON.stringify(partial))).toEqual({ problem: 'a `done` message whose `hasResult` missing', id: done.id });
    expect(decode(JSON.stringify({ ...fixtures.server.log[0], level: 'shout' })).problem).toBe("a `log` message whose `level` is not one of 'log', 'info', 'warn', 'error', 'debug'");
  });
});

// --- connect() against a daemon that answers with the samples ---------------------------------

/** The JSON type of `v`, as a schema names it. */
const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/**
 * What the daemon reads of one kind of message, learned from its samples: the JSON types each
 * field takes, and which fields every sample has (the daemon requires them).
 * @typedef {{ types: Set<string>, objects: number, fields: Map<string, { count: number, schema: Schema }>, items?: Schema }} Schema
 */
function schemaOf(samples) {
  /** @returns {Schema} */
  const empty = () => ({ types: new Set(), objects: 0, fields: new Map() });
  /** @param {Schema} schema */
  const learn = (schema, value) => {
    schema.types.add(typeOf(value));
    if (Array.isArray(value)) for (const item of value) learn((schema.items ??= empty()), item);
    else if (value !== null && typeof value === 'object') {
      schema.objects++;
      for (const [key, item] of Object.entries(value)) {
        const field = schema.fields.get(key) ?? { count: 0, schema: empty() };
        schema.fields.set(key, field);
        field.count++;
        learn(field.schema, item);
      }
    }
  };
  const schema = empty();
  for (const sample of samples) learn(schema, sample);
  return schema;
}

/** What is wrong with `value` as `schema` reads it, field by field. @param {Schema} schema */
function against(value, schema, at = '') {
  const type = typeOf(value);
  if (!schema.types.has(type)) return [`\`${at}\` is ${type}; the daemon reads ${[...schema.types].join(' or ')}`];
  if (type === 'array') {
    if (value.length && !schema.items) return [`\`${at}\` has items; the daemon's samples have none`];
    return value.flatMap((item, i) => against(item, /** @type {Schema} */ (schema.items), `${at}[${i}]`));
  }
  if (type !== 'object' || !schema.fields.size) return [];
  const wrong = Object.entries(value).flatMap(([key, item]) => {
    const field = schema.fields.get(key);
    const path = at ? `${at}.${key}` : key;
    return field ? against(item, field.schema, path) : [`\`${path}\` is a field the daemon does not read`];
  });
  for (const [key, field] of schema.fields) if (field.count === schema.objects && !Object.hasOwn(value, key)) wrong.push(`\`${at ? `${at}.` : ''}${key}\` missing`);
  return wrong;
}

const EXECUTION_ID = fixtures.server.done.find((d) => d.grant)?.grant.executionId;

/**
 * A WebSocket class whose daemon side is `script(header, reply, socket)`: each client message is
 * recorded in `sent` and handed to it; `reply(header, payload?)` delivers a message to the client.
 */
function scripted(script) {
  /** @type {Record<string, unknown>[]} */
  const sent = [];
  const { FakeSocket } = fakeDaemon((header, socket) => {
    sent.push(header);
    script(header, (out, payload) => socket.deliver(payload ? framed(out, payload) : JSON.stringify(out)), socket);
  });
  return { FakeSocket, sent };
}

/** Sample `i` of the daemon's `kind`, with `fields` over it. */
const sample = (kind, i, fields = {}) => ({ ...structuredClone(fixtures.server[kind][i]), ...fields });

describe("connect() sends the client's messages as the daemon reads them, and reads the daemon's", () => {
  it('holds a conversation of every message to the samples', async () => {
    const args = serialize([{ id: 1 }]);
    const abort = new AbortController();
    /** @type {Map<number, Set<string>>} run id -> the answers still awaited */
    const awaited = new Map();
    const { FakeSocket, sent } = scripted((msg, reply) => {
      const { id } = msg;
      switch (msg.type) {
        case 'hello':
          return reply(sample('welcome', 0));
        case 'execute':
          switch (/\/\/ (\w+)$/.exec(msg.code)?.[1]) {
            case 'calls':
              awaited.set(id, new Set(['toolResult 1', 'toolResult 2', 'toolResult 3', 'fetchResult 4', 'fetchResult 5', 'decision 6']));
              reply(sample('toolCall', 0, { id, callId: 1 }), args);
              reply(sample('toolCall', 0, { id, callId: 2, tool: 'fail' }), args);
              reply(sample('toolCall', 0, { id, callId: 3, tool: 'deny' }), args);
              reply(sample('fetch', 0, { id, callId: 4 }), Buffer.from('{"id":1}'));
              reply(sample('fetch', 1, { id, callId: 5 }));
              reply(sample('approve', 0, { id, callId: 6 }), args);
              return reply(sample('log', 0, { id }));
            case 'retained':
              return reply(sample('done', 3, { id }));
            case 'paused': {
              const paused = sample('done', 4, { id });
              paused.paused.pending[0].argsBytes = args.length;
              return reply(paused, args);
            }
            case 'failed':
              return reply(sample('failed', 0, { id }));
            case 'aborted':
              return setTimeout(() => abort.abort(), 0);
            default:
              return reply(sample('done', 2, { id }));
          }
        case 'toolResult':
        case 'fetchResult':
        case 'decision': {
          const waiting = awaited.get(id);
          waiting?.delete(`${msg.type} ${msg.callId}`);
          if (waiting?.size === 0) reply(sample('done', 0, { id }), serialize(42));
          return;
        }
        case 'resume':
          return reply(sample('done', 1, { id }));
        case 'invoke':
          if (msg.hasBody) return reply(sample('invoked', 0, { id }), Buffer.from('made'));
          reply(sample('invoked', 1, { id }));
          return reply(sample('handlesClosed', 0));
        case 'closeHandles':
          return reply(sample('ack', 0, { id }));
        case 'stats': {
          const asked = sent.filter((m) => m.type === 'stats').length;
          if (asked === 1) return reply(sample('stats', 0, { id }));
          if (asked === 2) return reply(sample('stats', 1, { id }));
          reply(sample('error', 1));
          return reply(sample('error', 0, { id }));
        }
        case 'abort':
          return reply(sample('failed', 0, { id, code: 'ABORTED', message: 'aborted', retryable: false }));
      }
    });
    const closed = [];
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket, cpuLimit: 1000, toolCallLimit: 10, fetchLimit: 5, onHandlesClosed: (e) => closed.push(e) });
    const { limits } = fixtures.server.welcome[0];
    expect(remote.daemon).toBe(fixtures.server.welcome[0].daemon);
    expect(remote.ceilings).toEqual({ timeout: limits.timeout, memoryLimit: limits.memoryLimit, outbound: limits.outbound, cpuLimit: limits.cpuLimit, toolCallLimit: limits.toolCallLimit, fetchLimit: limits.fetchLimit, approvalTimeout: limits.approvalTimeout });

    // Tool calls answered, failed and denied; routed fetches answered and failed; a call put to
    // decide; a live log entry; a result.
    const logged = [];
    const asked = [];
    const dispatch = ({ tool }) => {
      if (tool === 'fail') throw new Error('no such order');
      if (tool === 'deny') throw denial('orders', 'deny', 'not here');
      return { found: true };
    };
    const route = (request) => {
      if (request.method !== 'POST') throw new Error('blocked by policy');
      return { status: 200, statusText: 'OK', headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{}').buffer };
    };
    const calls = await remote.execute({
      code: 'async () => 1 // calls',
      modules: { './orders.js': 'export const n = 1;' },
      providers: [
        { name: 'orders', tools: ['lookup', 'cancel', 'fail', 'deny'], approve: ['cancel'] },
        { name: 'search', tools: '*', approve: true },
        { name: 'clock', tools: [] },
      ],
      dispatch,
      timeout: 5000,
      memoryLimit: 64,
      outbound: route,
      approval: { mode: 'callback', timeout: 60_000, decide: (call) => {
        asked.push(call);
        return { approved: false, reason: 'too large' };
      } },
      onLog: (entry) => logged.push(entry),
    });
    const ran = fixtures.server.done[0];
    expect(calls).toEqual({ result: 42, logs: ran.logs, stats: ran.stats, calls: ran.calls });
    expect(logged).toEqual([{ level: fixtures.server.log[0].level, message: fixtures.server.log[0].message }]);
    expect(asked).toEqual([{ provider: 'orders', tool: 'cancel', args: [{ id: 1 }] }]);

    // A retained handler: invoked with and without a body, closed by the daemon; retained again
    // and closed by the client.
    const retained = await remote.execute({ code: 'async () => ({ fetch: () => new Response("ok") }) // retained', retainHandles: true, outbound: 'native' });
    expect(retained).toMatchObject({ executionId: EXECUTION_ID, handles: ['fetch'] });
    const made = await remote.invokeHandle(EXECUTION_ID, 'fetch', { method: 'POST', url: 'https://handler.internal/orders', headers: [['content-type', 'text/plain']], body: new TextEncoder().encode('order').buffer });
    expect({ ...made, body: Buffer.from(made.body).toString() }).toEqual({ status: 201, statusText: 'Created', headers: [['content-type', 'text/plain']], body: 'made' });
    const empty = await remote.invokeHandle(EXECUTION_ID, 'fetch', { method: 'GET', url: 'https://handler.internal/', headers: [], body: null });
    expect(empty).toEqual({ status: 204, statusText: '', headers: [], body: null });
    await expect.poll(() => closed).toEqual([{ executionId: EXECUTION_ID, reason: 'idle' }]);
    await remote.execute({ code: 'async () => ({ fetch: () => new Response("ok") }) // retained', retainHandles: true });
    await remote.closeHandles(EXECUTION_ID);

    // Paused for approval, then resumed.
    const paused = await remote.execute({ code: 'async () => 1 // paused', providers: [{ name: 'orders', tools: ['cancel'], approve: true }], dispatch, approval: { mode: 'interrupt', expiresIn: 3_600_000 } });
    const pending = fixtures.server.done[4].paused.pending[0];
    expect(paused.paused).toEqual({ token: fixtures.server.done[4].paused.token, pending: [{ id: pending.id, provider: pending.provider, tool: pending.tool, args: deserialize(args) }] });
    const resumed = await remote.resume({ token: paused.paused.token, decisions: { [pending.id]: { approved: false, reason: 'not today' } }, dispatch, outbound: route });
    expect(resumed.error).toEqual(fixtures.server.done[1].error);

    // A program failure without a place; an executor fault; an abort.
    expect((await remote.execute({ code: 'async () => 1' })).error).toEqual(fixtures.server.done[2].error);
    const failed = await remote.execute({ code: 'async () => 1 // failed' }).catch((e) => e);
    expect(failed).toBeInstanceOf(ExecutorError);
    expect([failed.code, failed.message, failed.retryable]).toEqual([fixtures.server.failed[0].code, fixtures.server.failed[0].message, fixtures.server.failed[0].retryable]);
    const aborted = await remote.execute({ code: 'async () => 1 // aborted', signal: abort.signal }).catch((e) => e);
    expect(aborted.code).toBe('ABORTED');

    // stats(): with the engine, without it, and refused with an error naming the request (an
    // error naming none before it is passed over).
    const [withEngine, without] = fixtures.server.stats;
    expect(await remote.stats()).toEqual({ workers: withEngine.workers, idle: withEngine.idle, running: withEngine.running, queued: withEngine.queued, retained: withEngine.retained, connections: withEngine.connections, engine: withEngine.engine });
    expect(await remote.stats()).toEqual({ workers: without.workers, idle: without.idle, running: without.running, queued: without.queued, retained: without.retained, connections: without.connections });
    const refused = await remote.stats().catch((e) => e);
    expect([refused.code, refused.message]).toEqual([fixtures.server.error[0].code, fixtures.server.error[0].message]);
    await remote.close();

    // Every message connect() sent is one the daemon reads, and it sent every kind there is.
    const schemas = Object.fromEntries(Object.entries(fixtures.client).map(([kind, samples]) => [kind, schemaOf(samples)]));
    const problems = sent.flatMap((m) => (schemas[m.type] ? against(m, schemas[m.type]).map((p) => `${m.type}: ${p}`) : [`${m.type}: a message the daemon does not read`]));
    expect(problems).toEqual([]);
    expect([...new Set(sent.map((m) => m.type))].sort()).toEqual(Object.keys(fixtures.client).sort());
  });

  it('takes a welcome without ceilings, and a refusal', async () => {
    const { FakeSocket } = scripted((msg, reply) => msg.type === 'hello' && reply(sample('welcome', 1)));
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const { limits } = fixtures.server.welcome[1];
    expect(remote.ceilings).toEqual({ timeout: limits.timeout, memoryLimit: limits.memoryLimit, outbound: limits.outbound, cpuLimit: null, toolCallLimit: null, fetchLimit: null, approvalTimeout: limits.approvalTimeout });
    await remote.close();

    const { FakeSocket: Refusing } = scripted((_msg, reply, socket) => {
      reply(sample('refused', 0));
      setTimeout(() => socket.close(4001, ''), 5);
    });
    const e = await connect('ws://127.0.0.1:1', { websocket: Refusing }).catch((err) => err);
    expect(e).toBeInstanceOf(ExecutorError);
    expect([e.code, e.message]).toEqual([fixtures.server.refused[0].code, fixtures.server.refused[0].message]);
  });

  it("refuses a message the client sends with a field the daemon's samples do not have, or missing one", () => {
    const schema = schemaOf(fixtures.client.execute);
    expect(against({ type: 'execute', id: 1, code: 'x', liveLog: true }, schema)).toEqual(['`liveLog` is a field the daemon does not read']);
    expect(against({ type: 'execute', id: 1 }, schema)).toEqual(['`code` missing']);
    expect(against({ type: 'execute', id: 1, code: 'x', providers: [{ name: 'p', tools: '*' }] }, schema)).toEqual(['`providers[0].tools` is string; the daemon reads array or null']);
  });
});

describe('connect() with a malformed message from the daemon', () => {
  it.each([
    ['a field missing', (id) => { const { stats: _s, ...m } = sample('done', 0, { id }); return m; }, '`stats` missing'],
    ['a field of the wrong type', (id) => sample('log', 0, { id, level: 7 }), "a `log` message whose `level` is not one of"],
  ])('fails the executions waiting on the connection with PROTOCOL_ERROR: %s', async (_what, bad, problem) => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'hello') reply(sample('welcome', 0));
      if (msg.type === 'execute' && msg.code.endsWith('bad')) reply(bad(msg.id));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const waiting = remote.execute({ code: 'async () => 1 // waits' }).catch((e) => e);
    const e = await remote.execute({ code: 'async () => 1 // bad', onLog: () => {} }).catch((err) => err);
    for (const err of [e, await waiting]) {
      expect(err).toBeInstanceOf(ExecutorError);
      expect(err.code).toBe('PROTOCOL_ERROR');
      expect(err.message).toContain(problem);
    }
    await remote.close();
  });
});
