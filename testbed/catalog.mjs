// The provider functions and connector bindings every testbed case draws from. The same module
// runs inside the workerd host worker (for DynamicWorkerExecutor) and in Node (for
// CodemodeExecutor), so both executors call identical host code.
import { RpcTarget } from 'cloudflare:workers';

const fns = {
  tools: {
    echo: async (...args) => args,
    add: async (a, b) => a + b,
    count: async (...args) => args.length,
    fail: async () => {
      throw new Error('tool failed');
    },
    failString: async () => {
      throw 'plain string';
    },
    failObject: async () => {
      throw { code: 1 };
    },
    failEmpty: async () => {
      throw new Error('');
    },
    bytes: async () => new Uint8Array([1, 2, 3]),
    buffer: async () => new Uint8Array([4, 5]).buffer,
    view: async () => new Uint16Array([7]),
    map: async () => new Map([[1, 2]]),
    date: async () => new Date(0),
    big: async () => 10n,
    undef: async () => undefined,
    nested: async () => ({ a: [1, { b: 'c' }], n: null }),
    slow: async (ms) => new Promise((resolve) => setTimeout(() => resolve('slow done'), ms)),
    'my-tool': async () => 'my-tool called',
    '3d.render': async () => '3d called',
    delete: async () => 'delete called',
    'foo@bar!': async () => 'foobar called',
  },
  billing: {
    invoices: async (account) => [{ id: 'i1', account }, { id: 'i2', account }],
  },
  collide: {
    'x-y': async () => 1,
    'x.y': async () => 2,
  },
  empty: {},
};

class TestConnector extends RpcTarget {
  async callTool(method, args) {
    if (method === 'explode') throw new Error('connector exploded');
    if (method === 'pause') return { __codemode_control__: 'pause' };
    if (method === 'deny') return { __codemode_control__: 'error', message: 'connector denied' };
    return { method, args, when: new Date(0), tags: new Map([['k', 'v']]) };
  }
}

/** Providers as a case describes them: [{ name, from, prelude? }], or a legacy record. */
export function buildProviders(spec) {
  if (spec.legacy) return { ...fns[spec.legacy] };
  return (spec.providers ?? []).map((p) => ({ name: p.name, fns: { ...fns[p.from] }, ...(p.prelude ? { prelude: p.prelude } : {}) }));
}

/** The outbound service a case names as `globalOutbound: 'echo'`: answers with what it was sent. */
export async function echoFetch(request) {
  const body = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.text();
  const seen = { method: request.method, url: request.url, k: request.headers.get('x-k'), body };
  return new Response(JSON.stringify(seen), { status: 201, headers: { 'x-echo': 'yes', 'content-type': 'application/json' } });
}

/** The host an echo request goes to. */
export const ECHO_HOST = 'echo.test';

export function buildConnectors(spec) {
  return (spec.connectors ?? []).map((c) => ({ name: c.name, binding: new TestConnector() }));
}
