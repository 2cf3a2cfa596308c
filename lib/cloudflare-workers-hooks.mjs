// The hooks module `module.register()` loads on the loader thread (Nodes without
// `module.registerHooks()`; see cloudflare-workers-register.js): `cloudflare:workers` resolves
// to the stand-ins.
export { resolve } from './cloudflare-workers-register.js';
