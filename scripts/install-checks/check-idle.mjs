// Install check: an executor left open after its work keeps no host alive (Node, Bun, Deno): this
// file never closes it, and must end by itself, with nothing pending (the runner's timeout fails
// it otherwise).
import { IsolateExecutor } from '@supolka/codemode-executor';

const ex = new IsolateExecutor({ workers: 1 });
const out = await ex.execute({ code: 'async () => 1' });
if (out.result !== 1) throw new Error(`unexpected outcome ${JSON.stringify(out)}`);
console.log('left open; the host ends on its own');
