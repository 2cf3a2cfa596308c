// The project's testbed catalog: the provider function sets its cases name with `from` (and
// `legacy`), and the connector binding a bare `{ name }` connector gets. The engine
// (lib/testbed/engine.mjs) bundles it into the workerd host worker (for DynamicWorkerExecutor)
// and imports it in Node (for CodemodeExecutor), so both executors call identical host code.
import { RpcTarget } from 'cloudflare:workers';

export const fns = {
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

/** The binding of a connector a case names without `tools`. */
export function connector() {
  return new TestConnector();
}
