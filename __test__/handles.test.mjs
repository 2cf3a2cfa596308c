// Retained handles, sentence by sentence (docs/handles.md; the handles chapter of the contract).
// One file for one chapter: it follows docs/handles.md in order, a describe per section, all of
// them on the same executor setup and the same handler programs; split by section, each part
// would repeat them and the chapter could no longer be read against the file top to bottom.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ExecutorError, IsolateExecutor, executor, rejection, sleep, until } from './helpers.mjs';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const enc = new TextEncoder();
const dec = new TextDecoder();

const closedText = (id) =>
  `Execution "${id}" holds no handles: they were closed, expired at the idle bound, or never granted. Execute again with retainHandles to get a fresh executionId.`;

/** A WireRequest. */
function req(url = 'https://app.internal/', { method = 'GET', headers = [], body = null } = {}) {
  return { method, url, headers, body };
}

const text = (response) => (response.body === null ? '' : dec.decode(response.body));
const json = (response) => JSON.parse(text(response));
/** The body text of a plain GET to retained execution `executionId`'s fetch handle. */
const fetched = async (ex, executionId) => text(await ex.invokeHandle(executionId, 'fetch', req()));

const catalogue = [
  { id: '42', name: 'hat' },
  { id: '7', name: 'scarf' },
];

/** An executor whose handle closes are recorded, closed after the file. */
function recorded(options = {}) {
  const closes = [];
  const ex = executor({ workers: 2, ...options, onHandlesClosed: (event) => closes.push(event) });
  return { ex, closes };
}



async function grant(ex, code, extra = {}) {
  const outcome = await ex.execute({ code, retainHandles: true, ...extra });
  expect(outcome.error).toBeUndefined();
  expect(outcome.executionId).toMatch(UUID_V4);
  return outcome;
}

/** A recorded() executor (`ex`, `closes`), and the outcome of its execute of `code`, granted handles. */
async function granted(code, extra = {}) {
  const { ex, closes } = recorded();
  return { ex, closes, ...(await grant(ex, code, extra)) };
}

describe('asking for a handle', () => {
  it('walks the sequence: run with dispatch live, grant, invoke per request, close', async () => {
    const { ex, closes } = recorded();
    const calls = [];
    const outcome = await ex.execute({
      code: `async () => {
        const catalogue = await store.listProducts()
        let hits = 0
        console.log('loaded', catalogue.length)
        return {
          fetch: async (request) => {
            hits += 1
            const id = new URL(request.url).searchParams.get('id')
            return Response.json({ hits, item: catalogue.find((item) => item.id === id) ?? null })
          },
        }
      }`,
      providers: [{ name: 'store', tools: ['listProducts'] }],
      dispatch: (call) => {
        calls.push(call.tool);
        return catalogue;
      },
      retainHandles: true,
    });
    expect(Object.keys(outcome).sort()).toEqual(['calls', 'executionId', 'handles', 'logs', 'result', 'stats']);
    expect(outcome.result).toBeUndefined();
    expect(outcome.executionId).toMatch(UUID_V4);
    expect(outcome.handles).toEqual(['fetch']);
    expect(outcome.logs).toEqual([{ level: 'log', message: 'loaded 2' }]);
    expect(calls).toEqual(['listProducts']);

    const answer = await ex.invokeHandle(outcome.executionId, 'fetch', req('https://catalogue.internal/item?id=42'));
    expect(Object.keys(answer).sort()).toEqual(['body', 'headers', 'status', 'statusText']);
    expect(answer.status).toBe(200);
    expect(answer.statusText).toBe('');
    expect(answer.headers).toEqual([['content-type', 'application/json']]);
    expect(answer.body).toBeInstanceOf(ArrayBuffer);
    expect(text(answer)).toBe('{"hits":1,"item":{"id":"42","name":"hat"}}');
    const second = await ex.invokeHandle(outcome.executionId, 'fetch', req('https://catalogue.internal/item?id=9'));
    expect(text(second)).toBe('{"hits":2,"item":null}');

    await ex.closeHandles(outcome.executionId);
    expect(closes).toEqual([{ executionId: outcome.executionId, reason: 'closed' }]);
    const after = await rejection(ex.invokeHandle(outcome.executionId, 'fetch', req()));
    expect(after).toBeInstanceOf(ExecutorError);
    expect(after.code).toBe('HANDLES_CLOSED');
    expect(after.retryable).toBe(false);
    expect(after.message).toBe(closedText(outcome.executionId));
    const again = await rejection(ex.closeHandles(outcome.executionId));
    expect(again.code).toBe('HANDLES_CLOSED');
    expect(again.message).toBe(closedText(outcome.executionId));
  });

  it('retains a bare function exactly like an object with a fetch method', async () => {
    const { ex } = recorded();
    const outcome = await grant(ex, `async () => async (request) => new Response('hello ' + request.method)`);
    expect(outcome.handles).toEqual(['fetch']);
    expect(outcome.result).toBeUndefined();
    const answer = await ex.invokeHandle(outcome.executionId, 'fetch', req('https://x/', { method: 'PUT' }));
    expect(answer.status).toBe(200);
    expect(text(answer)).toBe('hello PUT');
    expect(answer.headers).toEqual([['content-type', 'text/plain;charset=UTF-8']]);
    await ex.closeHandles(outcome.executionId);
  });

  it('mints a fresh random id for every grant', async () => {
    const { ex } = recorded();
    const a = await grant(ex, 'async () => () => new Response("a")');
    const b = await grant(ex, 'async () => () => new Response("b")');
    expect(a.executionId).not.toBe(b.executionId);
    expect(text(await ex.invokeHandle(a.executionId, 'fetch', req()))).toBe('a');
    expect(text(await ex.invokeHandle(b.executionId, 'fetch', req()))).toBe('b');
    await Promise.all([ex.closeHandles(a.executionId), ex.closeHandles(b.executionId)]);
  });

  it.each([
    ['a number', 'async () => 42', 42],
    ['a plain object', 'async () => ({ fetch: "not a function", n: 1 })', { fetch: 'not a function', n: 1 }],
    ['undefined', 'async () => {}', undefined],
    ['an array', 'async () => [1, 2]', [1, 2]],
  ])('a result of another shape (%s) returns as usual and retains nothing', async (_, code, expected) => {
    const { ex } = recorded();
    const outcome = await ex.execute({ code, retainHandles: true });
    expect('executionId' in outcome).toBe(false);
    expect('handles' in outcome).toBe(false);
    expect(outcome.result).toEqual(expected);
  });

  it('a failed run retains nothing, and a function result without retainHandles is not cloneable as before', async () => {
    const { ex } = recorded();
    const failed = await ex.execute({ code: 'async () => { throw new Error("setup failed") }', retainHandles: true });
    expect('executionId' in failed).toBe(false);
    expect(failed.error).toEqual({ code: 'PROGRAM_ERROR', message: 'Error: setup failed (line 1, column 21)', line: 1, column: 21 });
    const plain = await ex.execute({ code: 'async () => () => new Response("x")' });
    expect('executionId' in plain).toBe(false);
    expect(plain.error?.code).toBe('RESULT_NOT_CLONEABLE');
    const off = await ex.execute({ code: 'async () => () => new Response("x")', retainHandles: false });
    expect('executionId' in off).toBe(false);
    expect(off.error?.code).toBe('RESULT_NOT_CLONEABLE');
  });
});

describe('state the handler keeps', () => {
  const counters = [
    ['the arrow body', 'async () => { let served = 0; return { fetch: async () => Response.json({ served: ++served }) } }', {}],
    [
      'an imported module',
      `import { bump } from './counter.js'

async () => ({ fetch: async () => Response.json({ served: bump() }) })`,
      { modules: { './counter.js': 'let served = 0\nexport const bump = () => (served += 1)' } },
    ],
  ];
  for (const [where, code, extra] of counters) {
    it(`keeps state in ${where}`, async () => {
      const { ex, executionId } = await granted(code, extra);
      expect(await fetched(ex, executionId)).toBe('{"served":1}');
      expect(await fetched(ex, executionId)).toBe('{"served":2}');
      await ex.closeHandles(executionId);
    });
  }

  it('keeps timers running while nobody calls: a setInterval counter climbs', async () => {
    const { ex, executionId } = await granted(
      'async () => { let ticks = 0; setInterval(() => { ticks += 1 }, 10); return { fetch: () => Response.json({ ticks }) } }',
    );
    const first = json(await ex.invokeHandle(executionId, 'fetch', req())).ticks;
    await sleep(300);
    const second = json(await ex.invokeHandle(executionId, 'fetch', req())).ticks;
    expect(second - first).toBeGreaterThanOrEqual(10);
    await ex.closeHandles(executionId);
  });

  it('an isolate that fills its heap between invocations reports the memory text on the next one', async () => {
    const { ex, closes } = recorded({ memoryLimit: 32 });
    const { executionId } = await grant(
      ex,
      `async () => {
        const hoard = []
        setTimeout(function grow() { for (let i = 0; i < 1e5; i++) hoard.push({ i, s: 'x'.repeat(16) + i }); setTimeout(grow, 0) }, 0)
        return { fetch: () => new Response(String(hoard.length)) }
      }`,
    );
    await sleep(1500);
    expect(closes).toEqual([]);
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req()));
    expect(failure.code).toBe('MEMORY_LIMIT');
    expect(failure.message).toBe(
      'The program ran out of memory: it needed more than its limit of 32 MiB and was stopped. Work in smaller pieces: process data in batches, keep fewer items in memory at once, and return a summary instead of the whole data set.',
    );
    expect(closes).toEqual([{ executionId, reason: 'memory' }]);
    expect((await rejection(ex.invokeHandle(executionId, 'fetch', req()))).code).toBe('HANDLES_CLOSED');
    // The worker went back to rotation with a fresh isolate.
    expect((await ex.execute({ code: 'async () => "fresh"' })).result).toBe('fresh');
  });
});

describe('invoking a handle', () => {
  it('carries POST bodies both ways as ArrayBuffers', async () => {
    const { ex, executionId } = await granted(
      `async () => ({
        fetch: async (request) => {
          if (request.method === 'PUT') return new Response(await request.arrayBuffer(), { status: 201, statusText: 'Stored', headers: { 'x-size': String(request.headers.get('content-length') ?? '') } })
          return Response.json({ method: request.method, type: request.headers.get('content-type'), body: await request.json() })
        },
      })`,
    );
    const answer = await ex.invokeHandle(
      executionId,
      'fetch',
      req('https://host/items', {
        method: 'POST',
        headers: [['content-type', 'application/json']],
        body: enc.encode('{"id":7}').buffer,
      }),
    );
    expect(text(answer)).toBe('{"method":"POST","type":"application/json","body":{"id":7}}');
    const bytes = new Uint8Array([0, 1, 2, 254, 255]);
    const stored = await ex.invokeHandle(executionId, 'fetch', req('https://host/blob', { method: 'PUT', body: bytes.buffer }));
    expect(stored.status).toBe(201);
    expect(stored.statusText).toBe('Stored');
    expect(new Uint8Array(stored.body)).toEqual(bytes);
    await ex.closeHandles(executionId);
  });

  it('answers a null body as null, and discards what the handler writes to console', async () => {
    const { ex, executionId } = await granted(
      'async () => ({ fetch: () => { console.log("inside the handler"); console.error("loud"); return new Response(null, { status: 204 }) } })',
    );
    const answer = await ex.invokeHandle(executionId, 'fetch', req());
    expect(answer).toEqual({ status: 204, statusText: '', headers: [], body: null });
    await ex.closeHandles(executionId);
  });

  it('the handler receives a real Request', async () => {
    const { ex, executionId } = await granted(
      `async () => ({ fetch: (request) => Response.json({
        isRequest: request instanceof Request,
        url: request.url,
        method: request.method,
        header: request.headers.get('x-one'),
        signal: request.signal instanceof AbortSignal,
      }) })`,
    );
    const answer = json(
      await ex.invokeHandle(executionId, 'fetch', req('https://app.internal/a/b?c=d', { method: 'DELETE', headers: [['X-One', '1']] })),
    );
    expect(answer).toEqual({ isRequest: true, url: 'https://app.internal/a/b?c=d', method: 'DELETE', header: '1', signal: true });
    await ex.closeHandles(executionId);
  });

  it('refuses a value that is not a Response, even when the program redefines Response; the handles stay open', async () => {
    const { ex, executionId } = await granted(
      `async () => {
        let calls = 0
        return {
          fetch: async (request) => {
            calls += 1
            const kind = new URL(request.url).pathname
            if (kind === '/plain') return { status: 200, body: 'hi' }
            if (kind === '/fake') {
              globalThis.Response = class Response { constructor() { this.status = 200; this.headers = []; this.body = null } }
              return new Response()
            }
            return Response.json({ calls })
          },
        }
      }`,
    );
    const notResponse = 'The fetch handle answered with a value that is not a Response.';
    const plain = await rejection(ex.invokeHandle(executionId, 'fetch', req('https://x/plain')));
    expect(plain).toBeInstanceOf(ExecutorError);
    expect(plain.message).toBe(notResponse);
    expect(plain.retryable).toBe(false);
    expect(text(await ex.invokeHandle(executionId, 'fetch', req('https://x/other')))).toBe('{"calls":2}');
    const fake = await rejection(ex.invokeHandle(executionId, 'fetch', req('https://x/fake')));
    expect(fake.message).toBe(notResponse);
    expect(fake.code).toBe(plain.code);
    expect(plain.code).toBe('HANDLE_NOT_RESPONSE');
    await ex.closeHandles(executionId);
  });

  it('refuses a Response outside the wire shape (Response.error() has status 0)', async () => {
    const { ex, executionId } = await granted(
      'async () => ({ fetch: (request) => request.url.endsWith("/error") ? Response.error() : new Response("ok") })',
    );
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req('https://x/error')));
    expect(failure).toBeInstanceOf(ExecutorError);
    expect(failure.code).toBe('HANDLE_RESPONSE_INVALID');
    expect(failure.message).toBe('The fetch handle answered outside the response wire shape.');
    expect(text(await ex.invokeHandle(executionId, 'fetch', req('https://x/ok')))).toBe('ok');
    await ex.closeHandles(executionId);
  });

  it('runs invocations of one execution one at a time, in arrival order', async () => {
    const { ex, executionId } = await granted(
      `async () => {
        let active = 0, peak = 0
        const order = []
        return {
          fetch: async (request) => {
            const n = Number(new URL(request.url).searchParams.get('n'))
            active += 1
            peak = Math.max(peak, active)
            order.push(n)
            await new Promise((resolve) => setTimeout(resolve, 30 - n * 5))
            active -= 1
            return Response.json({ n, peak, order })
          },
        }
      }`,
    );
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((n) => ex.invokeHandle(executionId, 'fetch', req(`https://x/?n=${n}`))),
    );
    const bodies = answers.map(json);
    expect(bodies.map((b) => b.n)).toEqual([0, 1, 2, 3, 4]);
    expect(bodies[4].peak).toBe(1);
    expect(bodies[4].order).toEqual([0, 1, 2, 3, 4]);
    await ex.closeHandles(executionId);
  });

  it('refuses a name outside the granted list without entering the handler, and leaves the handles open', async () => {
    const { ex, closes, executionId } = await granted('async () => { let hits = 0; return { fetch: () => Response.json({ hits: ++hits }) } }');
    const failure = await rejection(ex.invokeHandle(executionId, 'scheduled', req()));
    expect(failure).toBeInstanceOf(ExecutorError);
    expect(failure.code).toBe('HANDLE_NOT_FOUND');
    expect(failure.retryable).toBe(false);
    expect(failure.message).toBe(`Execution "${executionId}" has no handle named "scheduled". The granted handles are: fetch.`);
    expect(await fetched(ex, executionId)).toBe('{"hits":1}');
    expect(closes).toEqual([]);
    await ex.closeHandles(executionId);
  });

  it("rejects one invocation with the handler's own message when it throws; the next request still runs", async () => {
    const { ex, closes, executionId } = await granted(
      `async () => { let n = 0; return { fetch: async () => { n += 1; if (n === 1) throw new Error('catalogue unavailable'); return new Response('second ' + n) } } }`,
    );
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req()));
    expect(failure).toBeInstanceOf(ExecutorError);
    expect(failure.code).toBe('HANDLER_ERROR');
    expect(failure.message).toBe('catalogue unavailable');
    expect(await fetched(ex, executionId)).toBe('second 2');
    expect(closes).toEqual([]);
    await ex.closeHandles(executionId);
  });
});

describe('limits an invocation runs under', () => {
  it('a tool call from a handler answers the completion text and the dispatch never runs', async () => {
    const { ex } = recorded();
    let dispatched = 0;
    const { executionId } = await grant(
      ex,
      `async () => ({ fetch: async () => { try { await store.listProducts() } catch (failure) { return new Response(failure.message) } return new Response('reached') } })`,
      {
        providers: [{ name: 'store', tools: ['listProducts'] }],
        dispatch: () => {
          dispatched += 1;
          return [];
        },
      },
    );
    expect(await fetched(ex, executionId)).toBe('Execution has already completed.');
    expect(dispatched).toBe(0);
    await ex.closeHandles(executionId);
  });

  it('each invocation starts the time bound again, under the execution’s own timeout', async () => {
    const { ex, closes, executionId } = await granted(
      'async () => ({ fetch: async () => { await new Promise((r) => setTimeout(r, 200)); return new Response("slow but in time") } })',
      { timeout: 400 },
    );
    for (let i = 0; i < 3; i++) {
      expect(await fetched(ex, executionId)).toBe('slow but in time');
    }
    expect(closes).toEqual([]);
    await ex.closeHandles(executionId);
  });

  it('outbound stays as the request chose: routed through the host function', async () => {
    const { ex } = recorded();
    const seen = [];
    const { executionId } = await grant(
      ex,
      'async () => ({ fetch: async () => { const r = await fetch("https://upstream.internal/data"); return new Response("upstream said " + await r.text()) } })',
      {
        outbound: (request) => {
          seen.push(request.url);
          return { status: 200, statusText: 'OK', headers: [], body: enc.encode('hello').buffer };
        },
      },
    );
    expect(await fetched(ex, executionId)).toBe('upstream said hello');
    expect(seen).toEqual(['https://upstream.internal/data']);
    await ex.closeHandles(executionId);
  });

  it('outbound stays as the request chose: blocked', async () => {
    const { ex, executionId } = await granted(
      'async () => ({ fetch: async () => { try { await fetch("https://upstream.internal/") } catch (e) { return new Response(e.message) } return new Response("reached") } })',
      { outbound: null },
    );
    expect(await fetched(ex, executionId)).toBe(
      'fetch is closed in this sandbox: the host allows no network access from programs. Ask for the data through a tool call instead.',
    );
    await ex.closeHandles(executionId);
  });
});

describe('ways a retained isolate ends', () => {
  it('the idle bound closes an execution nobody invokes, and publishes it', async () => {
    const { ex, closes } = recorded({ handlesIdleTimeout: 300 });
    const { executionId } = await grant(ex, 'async () => () => new Response("x")');
    expect(await fetched(ex, executionId)).toBe('x');
    expect(await until(() => closes.length === 1, 5000)).toBe(true);
    expect(closes).toEqual([{ executionId, reason: 'idle' }]);
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req()));
    expect(failure.code).toBe('HANDLES_CLOSED');
    expect(failure.message).toBe(closedText(executionId));
  });

  it('an invocation that outlives its timeout rejects with the time text and ends the execution', async () => {
    const { ex, closes, executionId } = await granted(
      'async () => ({ fetch: (request) => { if (request.url.endsWith("/spin")) for (;;) {} return new Response("ok") } })',
      { timeout: 300 },
    );
    expect(text(await ex.invokeHandle(executionId, 'fetch', req('https://x/ok')))).toBe('ok');
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req('https://x/spin')));
    expect(failure).toBeInstanceOf(ExecutorError);
    expect(failure.code).toBe('TIMEOUT');
    expect(failure.message).toBe(
      'The program ran longer than its time bound of 300 ms and was stopped. Do less work in one run: split the task into smaller runs, or avoid loops that never finish.',
    );
    expect(closes).toEqual([{ executionId, reason: 'timeout' }]);
    expect((await rejection(ex.invokeHandle(executionId, 'fetch', req()))).code).toBe('HANDLES_CLOSED');
    expect((await ex.execute({ code: 'async () => 1' })).result).toBe(1);
  });

  it('an invocation that fills its memory limit rejects with the memory text and ends the execution', async () => {
    const { ex, closes } = recorded({ memoryLimit: 32 });
    const { executionId } = await grant(
      ex,
      'async () => ({ fetch: () => { const a = []; for (;;) a.push({ x: Math.random() }) } })',
    );
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req()));
    expect(failure.code).toBe('MEMORY_LIMIT');
    expect(closes).toEqual([{ executionId, reason: 'memory' }]);
    expect((await rejection(ex.invokeHandle(executionId, 'fetch', req()))).code).toBe('HANDLES_CLOSED');
  });

  it('a worker killed while holding a retained execution publishes worker-lost and is replaced', async () => {
    const { ex, closes } = recorded({ workers: 1 });
    const { executionId } = await grant(ex, 'async () => () => new Response("alive")');
    const [pid] = ex.workerPids();
    process.kill(pid, 'SIGKILL');
    expect(await until(() => closes.length === 1)).toBe(true);
    expect(closes).toEqual([{ executionId, reason: 'worker-lost' }]);
    const failure = await rejection(ex.invokeHandle(executionId, 'fetch', req()));
    expect(failure.code).toBe('HANDLES_CLOSED');
    expect((await ex.execute({ code: 'async () => "replaced"' })).result).toBe('replaced');
    expect(ex.workerPids()).not.toContain(pid);
  });

  it('closing the pool publishes pool-closed for every retained execution', async () => {
    const closes = [];
    const ex = new IsolateExecutor({ workers: 2, onHandlesClosed: (e) => closes.push(e) });
    const a = await grant(ex, 'async () => () => new Response("a")');
    const b = await grant(ex, 'async () => () => new Response("b")');
    await ex.close();
    expect(closes.sort((x, y) => x.executionId.localeCompare(y.executionId))).toEqual(
      [a.executionId, b.executionId].sort().map((executionId) => ({ executionId, reason: 'pool-closed' })),
    );
    const failure = await rejection(ex.invokeHandle(a.executionId, 'fetch', req()));
    expect(['HANDLES_CLOSED', 'CLOSED']).toContain(failure.code);
  });

  it('an id nobody granted gets the same fault as a closed one', async () => {
    const { ex } = recorded();
    const invented = '6f1c2a9e-1b7d-4c3e-9f00-0123456789ab';
    const invoke = await rejection(ex.invokeHandle(invented, 'fetch', req()));
    expect(invoke).toBeInstanceOf(ExecutorError);
    expect(invoke.code).toBe('HANDLES_CLOSED');
    expect(invoke.retryable).toBe(false);
    expect(invoke.message).toBe(closedText(invented));
    const close = await rejection(ex.closeHandles(invented));
    expect(close.code).toBe('HANDLES_CLOSED');
    expect(close.message).toBe(closedText(invented));
  });
});

describe('cost of a retained execution', () => {
  it('occupies its worker slot: with every worker retained, new runs meet the queue bound', async () => {
    const { ex } = recorded({ workers: 1, queueBound: 0 });
    const { executionId } = await grant(ex, 'async () => () => new Response("held")');
    expect(ex.stats().retained).toBe(1);
    const full = await rejection(ex.execute({ code: 'async () => 1' }));
    expect(full.code).toBe('QUEUE_FULL');
    await ex.closeHandles(executionId);
    expect(ex.stats().retained).toBe(0);
    // Returned to rotation (after its next isolate is ready).
    expect(await until(async () => {
      try {
        return (await ex.execute({ code: 'async () => 2' })).result === 2;
      } catch {
        return false;
      }
    })).toBe(true);
  });

  it('a queued run waits for the retained execution to end, then runs', async () => {
    const { ex } = recorded({ workers: 1, queueBound: 4 });
    const { executionId } = await grant(ex, 'async () => () => new Response("held")');
    let ran = false;
    const queued = ex.execute({ code: 'async () => "after"' }).then((o) => {
      ran = true;
      return o;
    });
    await sleep(200);
    expect(ran).toBe(false);
    await ex.closeHandles(executionId);
    expect((await queued).result).toBe('after');
  });
});

describe('the API surface', () => {
  it('validates invokeHandle and closeHandles input', async () => {
    const { ex, executionId } = await granted('async () => () => new Response("x")');
    const badId = await rejection(ex.invokeHandle(42, 'fetch', req()));
    expect(badId.code).toBe('INVALID_REQUEST');
    const badName = await rejection(ex.invokeHandle(executionId, 7, req()));
    expect(badName.code).toBe('INVALID_REQUEST');
    const badRequest = await rejection(ex.invokeHandle(executionId, 'fetch', { method: 'GET', url: 'https://x/', headers: 'nope', body: null }));
    expect(badRequest.code).toBe('INVALID_REQUEST');
    expect(badRequest.message).toContain('headers');
    const badBody = await rejection(ex.invokeHandle(executionId, 'fetch', req('https://x/', { body: 'text' })));
    expect(badBody.code).toBe('INVALID_REQUEST');
    const badClose = await rejection(ex.closeHandles(null));
    expect(badClose.code).toBe('INVALID_REQUEST');
    expect(await fetched(ex, executionId)).toBe('x');
    await ex.closeHandles(executionId);
  });

  it('CodemodeExecutor keeps the dialect: it never asks for handles', async () => {
    const { CodemodeExecutor } = await import('../index.js').then((m) => m.default ?? m);
    const { ex } = recorded();
    const codemode = new CodemodeExecutor(ex);
    expect('invokeHandle' in codemode).toBe(false);
    const out = await codemode.execute('async () => ({ fetch: () => new Response("x") })', []);
    expect(out.result).toBeUndefined();
    expect(typeof out.error).toBe('string');
    expect(ex.stats().retained).toBe(0);
  });

  it('refuses onHandlesClosed that is not a function', () => {
    expect(() => new IsolateExecutor({ onHandlesClosed: 5 })).toThrow(ExecutorError);
  });

  it('the failure grammar holds the handle texts', async () => {
    const { failureCatalog } = await import('./helpers.mjs');
    const codes = new Map(failureCatalog().map((e) => [e.code, e]));
    for (const code of ['HANDLES_CLOSED', 'HANDLE_NOT_FOUND', 'HANDLE_NOT_GRANTED', 'HANDLE_NOT_RESPONSE', 'HANDLE_RESPONSE_INVALID', 'HANDLER_ERROR', 'EXECUTION_COMPLETED']) {
      expect(codes.has(code), code).toBe(true);
    }
    expect(codes.get('EXECUTION_COMPLETED').text).toBe('Execution has already completed.');
    const docs = readFileSync(new URL('../docs/failures.md', import.meta.url), 'utf8');
    expect(docs).toContain('HANDLES_CLOSED');
    expect(existsSync(new URL('../docs/handles.md', import.meta.url))).toBe(true);
  });
});
