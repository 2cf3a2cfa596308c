// `node --import @supolka/codemode-executor/register app.mjs`: makes `cloudflare:workers`
// importable on Node, so @cloudflare/codemode (root and /ai) loads. See lib/cloudflare-workers.mjs.
import { register } from 'node:module';

register('./cloudflare-workers-hooks.mjs', import.meta.url);
