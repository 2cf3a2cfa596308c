// Install check: a host file using every exported type, type-checked with `tsc --noEmit --strict`
// against the installed index.d.ts (never run). `@ts-expect-error` lines prove the types refuse.
import {
  CodemodeExecutor,
  bundleModules,
  type BundleModulesOptions,
  ExecutorError,
  IsolateExecutor,
  connect,
  failureCatalog,
  register,
  serve,
  type CodemodeExecutorOptions,
  type ConnectOptions,
  type ConnectionInfo,
  type ConnectorBinding,
  type Dispatch,
  type ExecuteRequest,
  type ExecuteResult,
  type ExecutorStats,
  type ExtendedExecuteOptions,
  type FailureEntry,
  type Fetcher,
  type HandlesClosed,
  type HandlesClosedReason,
  type IsolateExecutorOptions,
  type LogEntry,
  type OutboundPolicy,
  type Outcome,
  type ProgramError,
  type ProviderDeclaration,
  type RemoteExecutor,
  type RemoteStats,
  type ResolvedProvider,
  type RunStats,
  type Server,
  type ServeOptions,
  type ToolCall,
  type WireRequest,
  type WireResponse,
} from '@supolka/codemode-executor';
import * as facade from '@supolka/cloudflare-codemode-executor';
import { generateText, tool, type ModelMessage, type LanguageModel } from 'ai';
import { z } from 'zod';
import { codeModeTool, type CodeModeOutput, type CodeModePaused, type CodeModeApprovalRequest, type CodeModeApprovalResponse, type CodeModeToolOptions } from '@supolka/codemode-executor';

const outbound: OutboundPolicy = async (request: WireRequest): Promise<WireResponse> => ({
  status: 200,
  statusText: 'OK',
  headers: [['content-type', 'text/plain'], ['x-url', request.url]],
  body: request.body,
});
const closedReasons: HandlesClosedReason[] = ['closed', 'idle', 'timeout', 'memory', 'worker-lost', 'pool-closed'];
const options: IsolateExecutorOptions = {
  workers: 2,
  queueBound: 10,
  timeout: 1_000,
  memoryLimit: 64,
  outbound,
  handlesIdleTimeout: 60_000,
  onHandlesClosed: (event: HandlesClosed) => void closedReasons.includes(event.reason),
};
const providers: ProviderDeclaration[] = [{ name: 'kv', tools: ['get'] }, { name: 'any', tools: '*' }];
const dispatch: Dispatch = ({ provider, tool, args }: ToolCall) => `${provider}.${tool}(${args.length})`;
const request: ExecuteRequest = { code: 'async () => 1', modules: { './m.js': 'export {}' }, providers, dispatch, retainHandles: false };

async function host(): Promise<void> {
  register();
  const bundleOptions: BundleModulesOptions = { packages: ['lodash-es'], alias: { 'node:events': 'events' }, cacheDir: '/tmp/x', minify: true };
  const bundled: Record<string, string> = await bundleModules(bundleOptions);
  void bundled;
  const native: IsolateExecutor = new IsolateExecutor(options);
  const outcome: Outcome = await native.execute(request);
  const logs: LogEntry[] = outcome.logs;
  const error: ProgramError | undefined = outcome.error;
  const place: [number | undefined, number | undefined, string | undefined] = [error?.line, error?.column, error?.module];
  void place;
  const stats: RunStats = outcome.stats;
  const counts: ExecutorStats = native.stats();
  const n: number = stats.wallMs + stats.cpuMs + stats.heapPeakBytes + stats.buffersPeakBytes + stats.toolCalls + counts.retained;
  void [logs.map((l) => `${l.level} ${l.message}`), error?.code, n, native.workerPids()];
  if (outcome.executionId !== undefined) {
    const response: WireResponse = await native.invokeHandle(outcome.executionId, 'fetch', { method: 'GET', url: 'http://x/', headers: [], body: null });
    void response.status;
    await native.closeHandles(outcome.executionId);
  }
  try {
    // @ts-expect-error workers is a number
    new IsolateExecutor({ workers: 'two' });
  } catch (e) {
    if (e instanceof ExecutorError) {
      const code: string = e.code;
      const retryable: boolean = e.retryable;
      void [code, retryable, e.name satisfies 'ExecutorError'];
    }
  }
  const catalog: FailureEntry[] = failureCatalog();
  void catalog.filter((e) => e.kind === 'fault' && e.retryable).map((e) => e.text);

  const serveOptions: ServeOptions = {
    host: '127.0.0.1',
    port: 0,
    workers: 1,
    token: 'a shared secret of 16+ characters',
    allowOrigins: ['https://app.example'],
    allowHosts: ['executor.internal'],
    outbound: 'public',
    maxConnections: 64,
    maxConnectionsPerAddress: 8,
    helloTimeout: 5_000,
    idleTimeout: 0,
    maxMessageBytes: 20 * 1024 * 1024,
    onConnection: (info: ConnectionInfo) => `${info.remoteAddress}:${info.remotePort}${info.path}`,
    log: (line: string) => void line,
  };
  const server: Server = await serve(serveOptions);
  const connectOptions: ConnectOptions = { token: 'a shared secret of 16+ characters', outbound: null, connectTimeout: 1_000, onHandlesClosed: (e) => void e.executionId };
  const remote: RemoteExecutor = await connect(server.url, connectOptions);
  const remoteStats: RemoteStats = await remote.stats();
  void [remoteStats.connections, remote.daemon, remote.name, server.stats().connections, server.port];
  void [remote.ceilings.timeout, remote.ceilings.memoryLimit, remote.ceilings.outbound];
  new facade.IsolateExecutor({ outbound: 'native' });
  // @ts-expect-error outbound is 'public', 'native', a policy function or null
  new facade.IsolateExecutor({ outbound: 'everything' });

  const fetcher: Fetcher = { fetch: async (req: Request) => new Response(req.url) };
  const defaults: CodemodeExecutorOptions = { modules: {}, timeout: 5_000, globalOutbound: fetcher };
  const resolved: ResolvedProvider[] = [{ name: 'billing', fns: { invoices: async (account: string) => [account] }, prelude: '' }];
  const connectors: ConnectorBinding[] = [{ name: 'mcp', binding: { callTool: (method: string, args: unknown) => [method, args] } }];
  const perCall: ExtendedExecuteOptions = { connectors, modules: {}, timeout: 1_000, outbound: null };
  const dialect = new CodemodeExecutor(remote, defaults);
  const result: ExecuteResult = await dialect.execute('async () => 1', resolved, perCall);
  void [result.result, result.error?.length, result.logs?.length];
  // The facade's exports are the same declarations.
  const viaFacade: facade.ExecuteResult = await new facade.CodemodeExecutor(new facade.IsolateExecutor()).execute('1', {});
  void viaFacade;
  // @ts-expect-error the dialect takes code as a string
  await dialect.execute(42, []);
  await remote.close();
  await server.close();
  await native.close();
}
void host;

// codeModeTool with the host's own `ai` (installed in the project, as a host brings it).

async function aiSdkHost(model: LanguageModel, messages: ModelMessage[]): Promise<void> {
  const executor = new IsolateExecutor();
  const getOrder = tool({ description: 'Look up an order', inputSchema: z.object({ id: z.string() }), execute: async ({ id }) => ({ id }) });
  const refund = tool({ inputSchema: z.object({ amount: z.number() }), needsApproval: async ({ amount }) => amount > 10, execute: async () => 'ok' });
  const options: CodeModeToolOptions = {
    executor,
    toolApproval: { refund: { type: 'user-approval', reason: 'money leaves' } },
    approval: { mode: 'callback', decide: async (request: CodeModeApprovalRequest) => request.toolName !== 'refund' },
  };
  const direct = codeModeTool({ getOrder, refund }, options);
  const caller = codeModeTool({}, { executor, approval: { mode: 'interrupt', expiresIn: 60_000 } });
  const first = await generateText({ model, messages, tools: { direct } });
  await generateText({ model, messages, tools: { caller, getOrder, refund }, experimental_toolCallers: { getOrder: ['caller'], refund: ['caller', 'AI_SDK_DIRECT_TOOL_CALL'] } });
  const output = first.steps[0]?.toolResults[0]?.output as CodeModeOutput;
  if ('approvals' in output) {
    const paused: CodeModePaused = output;
    const responses: CodeModeApprovalResponse[] = paused.approvals.map((a) => ({ type: 'tool-approval-response', approvalId: a.approvalId, approved: true }));
    const next: CodeModeOutput = await caller.resume(paused, responses, { tools: { getOrder, refund } });
    void next;
  } else if ('error' in output) {
    void output.error.code;
  } else {
    void [output.result, output.logs.length, output.calls.map((c) => c.status)];
  }
  // @ts-expect-error the executor is required
  codeModeTool({ getOrder }, {});
  await executor.close();
}
void aiSdkHost;
