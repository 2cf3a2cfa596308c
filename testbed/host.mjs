// The workerd side of the testbed: the real DynamicWorkerExecutor, driven over HTTP by run.mjs.
import { DynamicWorkerExecutor } from '@cloudflare/codemode';
import { buildConnectors, buildProviders } from './catalog.mjs';
import { encodeOutcome } from './codec.mjs';

export default {
  async fetch(request, env) {
    const spec = await request.json();
    const executor = new DynamicWorkerExecutor({
      loader: env.LOADER,
      ...(spec.timeout !== undefined ? { timeout: spec.timeout } : {}),
      ...(spec.modules ? { modules: spec.modules } : {}),
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
