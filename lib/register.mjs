// `node --import @supolka/codemode-executor/register app.mjs`: makes `cloudflare:workers`
// importable on Node, so @cloudflare/codemode (root and /ai) loads. See lib/cloudflare-workers.mjs
// and lib/cloudflare-workers-register.js (`module.registerHooks()` where Node has it).
import { registerCloudflareWorkers } from './cloudflare-workers-register.js';

registerCloudflareWorkers();
