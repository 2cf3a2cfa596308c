// Retained handles as the executor's handle methods take and return them: a run that returns a
// request handler (a function, or an object with a `fetch` method) and asked for
// `retainHandles` comes back with an `executionId` and the granted names instead of a result.

import type { ExecuteRequest, IsolateExecutor, Outcome, WireRequest, WireResponse } from '@supolka/codemode-executor';

/** An outcome; `executionId` and `handles` are present only when a handle was granted. */
export interface GrantOutcome extends Outcome {
  executionId?: string;
  handles?: string[];
}

/** The part of an executor that runs programs and serves the handles they grant. */
export interface HandleHost {
  execute(request: ExecuteRequest): Promise<GrantOutcome>;
  invokeHandle(executionId: string, name: string, request: WireRequest): Promise<WireResponse>;
  closeHandles(executionId: string): Promise<void>;
}

/** The executor seen through its handle methods. */
export function handleHost(executor: IsolateExecutor): HandleHost {
  return executor as unknown as HandleHost;
}
