// Approvals over the daemon (docs/approvals.md, docs/protocol.md): a run paused over connect()
// resumes on another daemon that holds the same key, tokens of another key or tampered with are
// refused, callback mode asks the client's decide over the connection, and the CLI takes its key
// from --approval-key-file. Real daemons on 127.0.0.1 only.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, connected, raw, served, startDaemon } from './daemon-helpers.mjs';
import { executor } from './helpers.mjs';

const KEY = 'a-shared-approval-key-of-32-bytes!';
const OTHER_KEY = 'another-approval-key-of-32-bytes!!';
const providers = [{ name: 'billing', tools: ['list', 'refund'], approve: ['refund'] }];
// Randomness and time before the pause: the replay must see the same values.
const code = `async () => {
  const r = Math.random(); const t = Date.now(); const u = crypto.randomUUID();
  const list = await billing.list();
  const refunds = await Promise.all(list.map(async (x) => {
    try { return await billing.refund({ order: x }) } catch (e) { return e.message }
  }));
  return { r, t, u, list, refunds };
}`;

/** A dispatch that counts its calls by tool. */
function counting() {
  const count = { list: 0, refund: 0 };
  const dispatch = ({ tool, args }) => {
    count[tool]++;
    return tool === 'list' ? [7, 8] : `refunded ${args[0].order}`;
  };
  return { count, dispatch };
}

/** The ExecutorError a promise rejects with. */
async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('it resolved');
}

describe('interrupt mode over connect()', () => {
  it('pauses on daemon A and resumes on daemon B with the same key; the ledger is not dispatched again', async () => {
    const [a, b] = await Promise.all([served({ approvalKey: KEY }), served({ approvalKey: Buffer.from(KEY) })]);
    expect(a.daemon).not.toBe(b.daemon);
    const remoteA = await connected(a.url);
    const { count, dispatch } = counting();
    const paused = await remoteA.execute({ code, providers, dispatch, approval: { mode: 'interrupt', expiresIn: 60_000 } });
    expect(paused.result).toBeUndefined();
    expect(paused.error).toBeUndefined();
    expect(paused.paused.token).toMatch(/^cm2\./);
    expect(paused.paused.pending.map((p) => [p.provider, p.tool, p.args])).toEqual([
      ['billing', 'refund', [{ order: 7 }]],
      ['billing', 'refund', [{ order: 8 }]],
    ]);
    expect(paused.calls.map((c) => [c.tool, c.status])).toEqual([['list', 'ok'], ['refund', 'pending'], ['refund', 'pending']]);
    expect(count).toEqual({ list: 1, refund: 0 });

    const remoteB = await connected(b.url);
    const [first, second] = paused.paused.pending;
    const next = await remoteB.resume({ token: paused.paused.token, dispatch, decisions: { [first.id]: { approved: true }, [second.id]: { approved: false, reason: 'over the limit' } } });
    expect(next.paused).toBeUndefined();
    expect(next.error).toBeUndefined();
    expect(next.result.list).toEqual([7, 8]);
    expect(next.result.refunds[0]).toBe('refunded 7');
    expect(next.result.refunds[1]).toContain('over the limit');
    expect(next.calls.map((c) => [c.tool, c.status])).toEqual([['list', 'replayed'], ['refund', 'ok'], ['refund', 'denied']]);
    // `list` was answered from the token: dispatched once over both daemons.
    expect(count).toEqual({ list: 1, refund: 1 });
  });

  it('refuses a tampered token and one of another key with typed errors', async () => {
    const [a, other] = await Promise.all([served({ approvalKey: KEY }), served({ approvalKey: OTHER_KEY })]);
    const remoteA = await connected(a.url);
    const { dispatch } = counting();
    const paused = await remoteA.execute({ code, providers, dispatch });
    const { token, pending } = paused.paused;
    const decisions = Object.fromEntries(pending.map((p) => [p.id, { approved: true }]));
    const parts = token.split('.');
    const body = parts[2];
    parts[2] = body.slice(0, 10) + (body[10] === 'A' ? 'B' : 'A') + body.slice(11);
    const tampered = await rejection(remoteA.resume({ token: parts.join('.'), dispatch, decisions }));
    expect(tampered.code).toBe('TOKEN_TAMPERED');
    const remoteOther = await connected(other.url);
    const foreign = await rejection(remoteOther.resume({ token, dispatch, decisions }));
    expect(foreign.code).toBe('TOKEN_FOREIGN_KEY');
    const invalid = await rejection(remoteA.resume({ token, dispatch, decisions: {} }));
    expect(invalid.code).toBe('DECISIONS_INVALID');
    // The connection still serves: the good token resumes.
    const next = await remoteA.resume({ token, dispatch, decisions });
    expect(next.result.refunds).toEqual(['refunded 7', 'refunded 8']);
  });

  it('holds a resumed run to the resuming daemon’s ceilings', async () => {
    const [a, strict] = await Promise.all([served({ approvalKey: KEY }), served({ approvalKey: KEY, timeout: 1000 })]);
    const { dispatch } = counting();
    const paused = await (await connected(a.url)).execute({ code, providers, dispatch, timeout: 5000 });
    const decisions = Object.fromEntries(paused.paused.pending.map((p) => [p.id, { approved: true }]));
    const e = await rejection((await connected(strict.url)).resume({ token: paused.paused.token, dispatch, decisions }));
    expect(e.code).toBe('INVALID_OPTION');
    expect(e.message).toContain('serve --timeout');
  });
});

describe('callback mode over connect()', () => {
  it('asks decide in this process: approved calls are dispatched, denied ones reject inside the sandbox', async () => {
    const server = await served({ approvalKey: KEY });
    const remote = await connected(server.url);
    const { count, dispatch } = counting();
    const asked = [];
    const decide = ({ provider, tool, args }) => {
      asked.push([provider, tool, args]);
      return args[0].order === 7 ? { approved: true } : { approved: false, reason: 'not this one' };
    };
    const outcome = await remote.execute({ code, providers, dispatch, approval: { mode: 'callback', decide } });
    expect(outcome.error).toBeUndefined();
    expect(outcome.result.refunds[0]).toBe('refunded 7');
    expect(outcome.result.refunds[1]).toContain('not this one');
    expect(asked).toEqual([
      ['billing', 'refund', [{ order: 7 }]],
      ['billing', 'refund', [{ order: 8 }]],
    ]);
    expect(count).toEqual({ list: 1, refund: 1 });
    expect(outcome.calls.map((c) => c.status)).toEqual(['ok', 'ok', 'denied']);
  });

  it('lets decide outlast the run’s timeout without a TIMEOUT', async () => {
    const server = await served({ approvalKey: KEY });
    const remote = await connected(server.url);
    const { dispatch } = counting();
    const decide = () => new Promise((resolve) => setTimeout(() => resolve({ approved: true }), 1200));
    const started = Date.now();
    const outcome = await remote.execute({ code, providers, dispatch, timeout: 500, approval: { mode: 'callback', decide, timeout: 10_000 } });
    expect(Date.now() - started).toBeGreaterThan(1000);
    expect(outcome.error).toBeUndefined();
    expect(outcome.result.refunds).toEqual(['refunded 7', 'refunded 8']);
  });
});

describe('the protocol’s approve and decision', () => {
  it('drops a decision for a call that is not waiting, and ends a run whose connection goes while it waits', async () => {
    const server = await served({ approvalKey: KEY });
    const client = await raw(server.url);
    const execute = { type: 'execute', id: 1, code: 'async () => { await p.t(1); return 2 }', providers: [{ name: 'p', tools: ['t'], approve: true }], approval: { mode: 'callback' } };
    client.send(execute);
    const approve = await client.next((m) => m.type === 'approve');
    expect(approve).toMatchObject({ id: 1, provider: 'p', tool: 't' });
    expect(approve.payload.length).toBeGreaterThan(0);
    // Invented call ids, another run's id: dropped without an error.
    client.send({ type: 'decision', id: 1, callId: approve.callId + 100, approved: true });
    client.send({ type: 'decision', id: 2, callId: approve.callId, approved: true });
    client.send({ type: 'stats', id: 3 });
    await client.next((m) => m.type === 'stats');
    expect(client.received.filter((m) => m.type === 'error' || m.type === 'toolCall')).toEqual([]);
    client.send({ type: 'decision', id: 1, callId: approve.callId, approved: false, reason: 'not approved here' });
    const done = await client.next((m) => m.type === 'done');
    // The denial rejects inside the sandbox; uncaught, it ends the run as a denial, not a bug.
    expect(done.error.code).toBe('DENIAL_UNCAUGHT');
    expect(done.error.message).toContain('not approved here');
    expect(done.calls).toEqual([{ provider: 'p', tool: 't', status: 'denied', ms: expect.any(Number) }]);
    // A connection that goes while its run waits for a decision: the run ends.
    client.send({ ...execute, id: 4 });
    await client.next((m) => m.type === 'approve');
    expect(server.stats().running).toBe(1);
    client.socket.close();
    await expect.poll(() => server.stats().running, { timeout: 5000 }).toBe(0);
  });
});

describe('one set of approval rules', () => {
  // The addon (validate.request, through readApproval) and the daemon's wire ask the same rules
  // (codemode_pool::read_approval): the same request is refused with the same text by both.
  // (A fractional bound never reaches the daemon's rules: its wire reads integers, and refuses
  // other numbers as a malformed message.)
  const open = (approve) => [{ name: 'p', tools: null, approve }];
  const cases = [
    ['a tool outside the closed list', { providers: [{ name: 'p', tools: ['a'], approve: ['b'] }] }],
    ['an approval with nothing marked', { providers: [{ name: 'p', tools: ['a'] }], approval: { mode: 'interrupt' } }],
    ['an expiry of 0', { providers: open(true), approval: { mode: 'interrupt', expiresIn: 0 } }],
    ['a timeout past its range', { providers: open(['t']), approval: { mode: 'callback', timeout: 3_600_001 } }],
    ['approvals with retained handles', { providers: open(true), retainHandles: true }],
    ['approve: false', { providers: open(false) }],
  ];

  /** One daemon and one executor for every case (refusals start no run). */
  let both;
  const shared = () => (both ??= (async () => ({ server: await served({ approvalKey: KEY, workers: 1 }), local: executor({ workers: 1, approvalKey: KEY }) }))());
  afterAll(async () => (await both)?.local.close());

  it.each(cases)('%s: the same refusal in process and at the daemon', async (_, request) => {
    const { server, local } = await shared();
    const client = await raw(server.url);
    try {
      client.send({ type: 'execute', id: 1, code: 'async () => 1', ...request });
      const failed = await client.next((m) => m.id === 1);
      const inProcess = {
        ...request,
        code: 'async () => 1',
        providers: request.providers.map((p) => ({ ...p, tools: p.tools ?? '*' })),
        dispatch: () => null,
        approval: request.approval?.mode === 'callback' ? { ...request.approval, decide: () => ({ approved: true }) } : request.approval,
      };
      const refused = await local.execute(inProcess).then(() => null, (e) => e);
      expect(failed.type).toBe('failed');
      expect(refused?.code).toBe('INVALID_REQUEST');
      expect([failed.code, failed.message]).toEqual([refused.code, refused.message]);
    } finally {
      client.socket.close();
    }
  });
});

describe('serve --approval-key-file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'approval-key-'));

  it('refuses a key shorter than the bound, saying how to make one', () => {
    const file = path.join(dir, 'short');
    fs.writeFileSync(file, 'too-short\n');
    const run = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--approval-key-file', file], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`--approval-key-file ${file} holds 9 bytes; an approval key needs at least 32`);
    expect(run.stderr).toContain('openssl rand -hex 32');
    const missing = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--approval-key-file', path.join(dir, 'nope')], { encoding: 'utf8', timeout: 30_000 });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('cannot be read');
  });

  it('signs with the file’s bytes less one trailing newline: a token of serve() with that key resumes', async () => {
    const hex = 'ab12'.repeat(16); // as `openssl rand -hex 32` writes it, with its newline
    const file = path.join(dir, 'key');
    fs.writeFileSync(file, `${hex}\n`, { mode: 0o600 });
    const [cli, inProcess] = await Promise.all([startDaemon(['--approval-key-file', file]), served({ approvalKey: hex })]);
    const { count, dispatch } = counting();
    const paused = await (await connected(inProcess.url)).execute({ code, providers, dispatch });
    const decisions = Object.fromEntries(paused.paused.pending.map((p) => [p.id, { approved: true }]));
    const next = await (await connected(cli.url)).resume({ token: paused.paused.token, dispatch, decisions });
    expect(next.error).toBeUndefined();
    expect(next.result.refunds).toEqual(['refunded 7', 'refunded 8']);
    expect(count).toEqual({ list: 1, refund: 2 });
  });
});
