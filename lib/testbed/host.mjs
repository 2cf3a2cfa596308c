// The workerd side of the testbed: the real DynamicWorkerExecutor, driven over HTTP by the
// engine (engine.mjs), which bundles this file with esbuild: `@cloudflare/codemode` is the
// reference under test, `codemode-testbed:catalog` the catalog of host functions the cases may
// name (no-catalog.mjs unless the runner gives one).
import { RpcTarget } from 'cloudflare:workers';
import { DynamicWorkerExecutor } from '@cloudflare/codemode';
import * as catalog from 'codemode-testbed:catalog';
import { ECHO_HOST, buildConnectors, buildProviders, echoFetch } from './answers.mjs';
import { encodeOutcome } from './codec.mjs';

export default {
  async fetch(request, env) {
    // A sandbox's fetch routed here through globalOutbound: 'echo' (env.SELF is this worker).
    if (new URL(request.url).hostname === ECHO_HOST) return echoFetch(request);
    const spec = await request.json();
    const executor = new DynamicWorkerExecutor({
      loader: env.LOADER,
      ...(spec.timeout !== undefined ? { timeout: spec.timeout } : {}),
      ...(spec.modules ? { modules: spec.modules } : {}),
      ...(spec.globalOutbound === 'echo' ? { globalOutbound: env.SELF } : {}),
    });
    try {
      const options = spec.connectors ? { connectors: buildConnectors(spec, catalog, RpcTarget) } : undefined;
      const result = await executor.execute(spec.code, buildProviders(spec, catalog), options);
      return Response.json({ outcome: encodeOutcome(result) });
    } catch (e) {
      return Response.json({ rejected: String(e?.message ?? e) });
    }
  },
};
