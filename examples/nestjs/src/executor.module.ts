// ONE IsolateExecutor for the app's lifetime: its pool of worker processes starts with the app,
// stays warm across requests, and is closed (queued runs drained, every worker reaped) when the
// app shuts down.

import { Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { IsolateExecutor, type IsolateExecutorOptions } from '@supolka/codemode-executor';

function optionsFromEnv(env: NodeJS.ProcessEnv): IsolateExecutorOptions {
  // `outbound: null`: the network is closed to the model's code, in runs and in retained
  // handlers alike; fetch rejects with the NETWORK_CLOSED text without leaving the sandbox.
  // Omitted, the executor would perform the requests itself, from this machine's network
  // position (the app's own port, internal services and cloud metadata included). To let
  // programs reach a few services, pass a function that allows those and refuses the rest.
  const options: IsolateExecutorOptions = { workers: 2, timeout: 5_000, outbound: null };
  // The executor validates these and refuses a bad value with INVALID_OPTION at startup.
  if (env.CODEMODE_WORKERS) options.workers = Number(env.CODEMODE_WORKERS);
  if (env.CODEMODE_TIMEOUT_MS) options.timeout = Number(env.CODEMODE_TIMEOUT_MS);
  return options;
}

@Module({
  providers: [{ provide: IsolateExecutor, useFactory: () => new IsolateExecutor(optionsFromEnv(process.env)) }],
  exports: [IsolateExecutor],
})
export class ExecutorModule implements OnApplicationShutdown {
  constructor(@Inject(IsolateExecutor) private readonly executor: IsolateExecutor) {}

  // Runs after the HTTP server has stopped taking requests, so requests in flight finish
  // on a live executor first.
  async onApplicationShutdown(): Promise<void> {
    await this.executor.close();
    Logger.log('executor closed: every worker process reaped', ExecutorModule.name);
  }
}
