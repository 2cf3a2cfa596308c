'use strict';
// The main job in one file: a host with two tools, and a program (as a model would write it)
// that calls them, logs, and returns a value. Run it with `npm run example`.

const { IsolateExecutor } = require('..');

const inventory = new Map([
  ['hat', { price: 25, stock: 3 }],
  ['scarf', { price: 40, stock: 0 }],
  ['gloves', { price: 15, stock: 12 }],
]);

// The host's tools. They run here, in the host process; only data crosses into the sandbox.
async function dispatch({ provider, tool, args }) {
  if (provider === 'store' && tool === 'listProducts') return [...inventory.keys()];
  if (provider === 'store' && tool === 'getProduct') {
    const [name] = args;
    const item = inventory.get(name);
    if (!item) throw new Error(`No product named "${name}"`);
    return { name, ...item };
  }
  if (provider === 'fx' && tool === 'rate') return args[0] === 'EUR' ? 0.92 : 1;
  throw new Error(`Unknown tool ${provider}.${tool}`);
}

const program = `async () => {
  const names = await store.listProducts()
  const products = await Promise.all(names.map((name) => store.getProduct(name)))
  const inStock = products.filter((p) => p.stock > 0)
  console.log('in stock:', inStock.map((p) => p.name))
  const rate = await fx.rate('EUR')
  return {
    count: inStock.length,
    totalEur: Math.round(inStock.reduce((sum, p) => sum + p.price * p.stock, 0) * rate * 100) / 100,
    checkedAt: new Date(0),
  }
}`;

async function main() {
  const executor = new IsolateExecutor({ workers: 2, timeout: 5_000 });
  try {
    const outcome = await executor.execute({
      code: program,
      providers: [
        { name: 'store', tools: ['listProducts', 'getProduct'] },
        { name: 'fx', tools: ['rate'] },
      ],
      dispatch,
    });
    console.log(outcome);
    if (outcome.error) process.exitCode = 1;
  } finally {
    await executor.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
