// The workerd side of the testbed: the real DynamicWorkerExecutor, driven over HTTP by run.mjs.
import { DynamicWorkerExecutor } from '@cloudflare/codemode';
import { ECHO_HOST, buildConnectors, buildProviders, echoFetch } from './catalog.mjs';
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
      const options = spec.connectors ? { connectors: buildConnectors(spec) } : undefined;
      const result = await executor.execute(spec.code, buildProviders(spec), options);
      return Response.json({ outcome: encodeOutcome(result) });
    } catch (e) {
      return Response.json({ rejected: String(e?.message ?? e) });
    }
  },
};
