// Stand-ins for what @cloudflare/codemode imports from `cloudflare:workers`, so its root and
// `/ai` entries load on plain Node. They reproduce the base classes' observable behaviour the
// package relies on: WorkerEntrypoint and DurableObject store (ctx, env); RpcTarget marks a class
// as passable by reference (in-process there is nothing to mark). Nothing here talks to Workers.

export class RpcTarget {}

export class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

export class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

export class WorkflowEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

/** Workers' module-level `env`: empty outside Workers. */
export const env = {};

export default { RpcTarget, WorkerEntrypoint, DurableObject, WorkflowEntrypoint, env };
