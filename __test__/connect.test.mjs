// connect() against a scripted daemon: a WebSocket class (the `websocket` option) whose peer
// answers from a script, no socket opened. What a daemon sends is checked before it is read: a
// message that breaks the protocol is a typed PROTOCOL_ERROR for every request that waited on
// that connection, and the next request opens a new one.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { connect, ExecutorError } from './daemon-helpers.mjs';
import { fakeDaemon, framed } from './fake-daemon.mjs';

// The arguments as the package writes values (V8's format on any host: lib/clone.js).
const { serialize } = createRequire(import.meta.url)('../lib/clone.js');

const stats = { wallMs: 1, cpuMs: 1, heapPeakBytes: 1, buffersPeakBytes: 0, toolCalls: 0, workerPid: 1, cpuBudgetMs: 0, fetches: 0 };
const welcome = { type: 'welcome', protocol: 2, daemon: 'd-1', name: 'test', limits: { timeout: 30_000, memoryLimit: 128, outbound: 'public', cpuLimit: null, toolCallLimit: 7, fetchLimit: null, toolPayloadBytes: 16 << 20, maxMessageBytes: 20 << 20 } };

/**
 * A WebSocket class whose daemon side is `script(message, reply)`: each client message (its JSON
 * header) is handed to it, and `reply(data)` delivers `data` to the client as a message event.
 * `sockets` lists every socket made, with the close each got.
 */
function scripted(script, { hello = (reply) => reply(JSON.stringify(welcome)) } = {}) {
  return fakeDaemon((msg, socket) => {
    const reply = (out) => socket.deliver(out);
    if (msg.type === 'hello') hello(reply);
    else script(msg, reply);
  });
}

const GRANTED = '0b7e3c52-8d4f-4e0a-9a51-6f2d8c1e4b7a';
const done = (id, fields = {}) => JSON.stringify({ type: 'done', id, hasResult: false, logs: [], stats, calls: [], ...fields });

async function protocolError(promise) {
  const e = await promise.then(
    () => null,
    (err) => err,
  );
  expect(e).toBeInstanceOf(ExecutorError);
  expect(e.code).toBe('PROTOCOL_ERROR');
  expect(e.retryable).toBe(false);
  return e;
}

describe("connect() checks each of the daemon's messages", () => {
  it('rejects the waiting executions with PROTOCOL_ERROR for a frame that is not JSON, and opens a new connection next', async () => {
    let garbage = true;
    const { FakeSocket, sockets } = scripted((msg, reply) => {
      if (msg.type !== 'execute') return;
      if (garbage) reply('{not json');
      else reply(done(msg.id, { logs: [{ level: 'log', message: 'after' }] }));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const e = await protocolError(Promise.all([remote.execute({ code: 'async () => 1' }), remote.execute({ code: 'async () => 2' })]));
    expect(e.message).toContain('ws://127.0.0.1:1');
    expect(e.message).toContain('a message that is not JSON');
    expect(sockets[0].closed).toEqual({ code: 1002, reason: 'protocol error' });
    garbage = false;
    const outcome = await remote.execute({ code: 'async () => 3' });
    expect(outcome.logs).toEqual([{ level: 'log', message: 'after' }]);
    expect(sockets).toHaveLength(2);
    await remote.close();
  });

  it('names the field of a message whose field has the wrong type, and the request it named', async () => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'execute') reply(done(msg.id, { logs: 'not a list' }));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const e = await protocolError(remote.execute({ code: 'async () => 1' }));
    expect(e.message).toContain('a `done` message whose `logs` is not an array (request 1)');
    await remote.close();
  });

  it('checks nested fields: a grant without its handles', async () => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'execute') reply(done(msg.id, { grant: { executionId: GRANTED } }));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const e = await protocolError(remote.execute({ code: 'async () => 1', retainHandles: true }));
    expect(e.message).toContain('`grant.handles` missing');
    await remote.close();
  });

  it('checks the approvals fields: calls, paused and its arguments, approve', async () => {
    const replies = [
      (id) => done(id, { calls: undefined }),
      (id) => done(id, { calls: [{ provider: 'p', tool: 't', status: 'maybe', ms: 0 }] }),
      (id) => done(id, { paused: { token: 't', pending: [{ id: '0', provider: 'p', tool: 't', argsBytes: 3 }] } }),
      (id) => JSON.stringify({ type: 'approve', id, callId: -1, provider: 'p', tool: 't' }),
    ];
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'execute') reply(/** @type {(id: number) => string} */ (replies.shift())(msg.id));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const request = { code: 'async () => 1' };
    expect((await protocolError(remote.execute(request))).message).toContain('a `done` message whose `calls` is not an array');
    expect((await protocolError(remote.execute(request))).message).toContain("`calls[0].status` is not one of 'ok', 'error', 'denied', 'pending', 'replayed'");
    expect((await protocolError(remote.execute(request))).message).toContain("paused calls' argsBytes do not add up to its payload");
    expect((await protocolError(remote.execute(request))).message).toContain('a `approve` message whose `callId` is not a request id');
    await remote.close();
  });

  it('sends resume and its decisions, and a decision for each approve, as the protocol spells them', async () => {
    const sent = [];
    const { FakeSocket } = scripted((msg, reply) => {
      sent.push(msg);
      if (msg.type === 'resume') reply(done(msg.id, { calls: [{ provider: 'p', tool: 't', status: 'replayed', ms: 0 }] }));
      if (msg.type === 'execute') reply(framed({ type: 'approve', id: msg.id, callId: 4, provider: 'p', tool: 't' }, serialize([{ order: 7 }])));
      if (msg.type === 'decision') reply(done(msg.id));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const resumed = await remote.resume({ token: 'cm1.x', decisions: { 0: { approved: false, reason: 'no' } }, dispatch: () => 1 });
    expect(resumed.calls).toEqual([{ provider: 'p', tool: 't', status: 'replayed', ms: 0 }]);
    const asked = [];
    const decide = (call) => {
      asked.push(call);
      return { approved: false, reason: 'later' };
    };
    await remote.execute({ code: 'async () => 1', providers: [{ name: 'p', tools: ['t', 'u'], approve: ['t'] }], dispatch: () => 1, approval: { mode: 'callback', decide, timeout: 5000 } });
    expect(sent).toEqual([
      { type: 'resume', id: 1, token: 'cm1.x', decisions: [{ id: '0', approved: false, reason: 'no' }] },
      expect.objectContaining({ type: 'execute', id: 2, providers: [{ name: 'p', tools: ['t', 'u'], approve: ['t'] }], approval: { mode: 'callback', timeout: 5000 } }),
      { type: 'decision', id: 2, callId: 4, approved: false, reason: 'later' },
    ]);
    expect(asked).toEqual([{ provider: 'p', tool: 't', args: [{ order: 7 }] }]);
    await remote.close();
  });

  it.each([
    ['rejects stats() and invocations waiting on the connection too', (id) => ({ type: 'stats', id, workers: -1, idle: 0, running: 0, queued: 0, retained: 0, connections: 1 }), '`workers` is not a count'],
    ['refuses an answer of the wrong type for its request: an ack to stats()', (id) => ({ type: 'ack', id }), 'an `ack` answering a stats request (request 1)'],
  ])('%s', async (_title, answer, expected) => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'stats') reply(JSON.stringify(answer(msg.id)));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const e = await protocolError(remote.stats());
    expect(e.message).toContain(expected);
    await remote.close();
  });

  it("holds an invocation's answer to the response status rule, as the pool does in process", async () => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'execute') reply(done(msg.id, { grant: { executionId: GRANTED, handles: ['fetch'] } }));
      if (msg.type === 'invoke') reply(JSON.stringify({ type: 'invoked', id: msg.id, status: 0, statusText: '', headers: [], hasBody: false }));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const outcome = await remote.execute({ code: 'async () => ({ fetch() {} })', retainHandles: true });
    expect(outcome.executionId).toBe(GRANTED);
    const e = await protocolError(remote.invokeHandle(GRANTED, 'fetch', { method: 'GET', url: 'https://x.internal/', headers: [], body: null }));
    expect(e.message).toContain('`status` is not a response status from 200 to 599');
    await remote.close();
  });

  it('refuses a grant whose execution id is not the UUID a pool mints', async () => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type === 'execute') reply(done(msg.id, { grant: { executionId: '../another', handles: ['fetch'] } }));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const e = await protocolError(remote.execute({ code: 'async () => 1', retainHandles: true }));
    expect(e.message).toContain('`grant.executionId` is not an execution id');
    await remote.close();
  });

  it('passes over a message type it does not know (a newer daemon) and reads the next', async () => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type !== 'execute') return;
      reply(JSON.stringify({ type: 'somethingNew', id: msg.id }));
      reply(done(msg.id));
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const outcome = await remote.execute({ code: 'async () => 1' });
    expect(outcome.logs).toEqual([]);
    expect(outcome.stats.wallMs).toBe(1);
    await remote.close();
  });

  it('reads the budget ceilings of the welcome (null: none), and refuses one that is not a count or null', async () => {
    const { FakeSocket } = scripted(() => {});
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    expect(remote.ceilings).toEqual({ timeout: 30_000, memoryLimit: 128, outbound: 'public', cpuLimit: null, toolCallLimit: 7, fetchLimit: null, approvalTimeout: null });
    await remote.close();
    for (const [field, value, problem] of [['cpuLimit', '50', 'is not a count or null'], ['fetchLimit', -1, 'is not a count or null'], ['toolCallLimit', undefined, 'missing']]) {
      const limits = { ...welcome.limits, [field]: value };
      const { FakeSocket: Bad } = scripted(() => {}, { hello: (reply) => reply(JSON.stringify({ ...welcome, limits })) });
      const e = await protocolError(connect('ws://127.0.0.1:1', { websocket: Bad }));
      expect(e.message).toContain(`a \`welcome\` message whose \`limits.${field}\` ${problem}`);
    }
  });

  it("refuses a done whose stats lack the budget's counts", async () => {
    for (const field of ['cpuBudgetMs', 'fetches']) {
      const { [field]: _left, ...partial } = stats;
      const { FakeSocket } = scripted((msg, reply) => {
        if (msg.type === 'execute') reply(done(msg.id, { stats: partial }));
      });
      const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
      const e = await protocolError(remote.execute({ code: 'async () => 1' }));
      expect(e.message).toContain(`\`stats.${field}\` missing`);
      await remote.close();
    }
  });

  it('refuses a welcome without its daemon id', async () => {
    const { FakeSocket } = scripted(() => {}, { hello: (reply) => reply(JSON.stringify({ ...welcome, daemon: 7 })) });
    const e = await protocolError(connect('ws://127.0.0.1:1', { websocket: FakeSocket }));
    expect(e.message).toContain('a `welcome` message whose `daemon` is not a string');
  });

  it('refuses a binary message whose header length passes its end', async () => {
    const { FakeSocket } = scripted((msg, reply) => {
      if (msg.type !== 'execute') return;
      const bytes = new Uint8Array([0, 0, 1, 0, 123]);
      reply(bytes.buffer);
    });
    const remote = await connect('ws://127.0.0.1:1', { websocket: FakeSocket });
    const e = await protocolError(remote.execute({ code: 'async () => 1' }));
    expect(e.message).toContain('header length 256 passes its end');
    await remote.close();
  });
});
