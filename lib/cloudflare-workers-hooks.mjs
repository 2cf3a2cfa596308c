// Module resolution hook (node:module register): `cloudflare:workers` resolves to the stand-ins.
const STANDIN = new URL('./cloudflare-workers.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'cloudflare:workers') return { url: STANDIN, shortCircuit: true };
  return nextResolve(specifier, context);
}
