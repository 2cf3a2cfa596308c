//! The failure grammar: every code the executor reports, whether retrying helps, and the text.
//!
//! Texts are written for the model that wrote the program (what happened, what to do instead).
//! Placeholders are `{name}`; [`FailureCode::render`] fills them. The JS layer reads the same
//! table through the addon's `failureCatalog()`, and `docs/failures.md` is checked against it by
//! the test suite, so this file is the one place a text is changed.

use std::fmt;

/// Where a failure surfaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// In the outcome's `error`: the program failed; `execute` still resolves.
    Program,
    /// An `ExecutorError` rejection: the executor could not run the request.
    Fault,
    /// A rejection inside the sandbox (a tool call); the program may catch it.
    Sandbox,
    /// A notice the executor adds to the run's logs.
    Log,
}

macro_rules! failure_codes {
    ($( $variant:ident => ($code:literal, $kind:ident, $retryable:literal, $when:literal, $text:literal), )*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FailureCode { $($variant,)* }

        impl FailureCode {
            pub const ALL: &'static [FailureCode] = &[$(FailureCode::$variant,)*];
            pub fn as_str(self) -> &'static str { match self { $(FailureCode::$variant => $code,)* } }
            pub fn kind(self) -> FailureKind { match self { $(FailureCode::$variant => FailureKind::$kind,)* } }
            /// Whether the same request may succeed if tried again unchanged.
            pub fn retryable(self) -> bool { match self { $(FailureCode::$variant => $retryable,)* } }
            /// When the failure happens (the docs table's second column).
            pub fn when(self) -> &'static str { match self { $(FailureCode::$variant => $when,)* } }
            /// The text with its `{placeholders}`.
            pub fn template(self) -> &'static str { match self { $(FailureCode::$variant => $text,)* } }
        }
    };
}

failure_codes! {
    // Program failures: reported in `outcome.error`.
    SyntaxError => ("SYNTAX_ERROR", Program, false,
        "The code (or a module it imports) does not parse. The text names the place (line and column, and the module); `{hint}` is the entry-shape reminder, given only when the code would parse as a function's body (statements written without their function).",
        "{detail}.{hint}"),
    EntryShape => ("ENTRY_SHAPE", Program, false,
        "The code parses but is not one expression that evaluates to a function.",
        "The code must be one expression that evaluates to a function, optionally preceded by import declarations, e.g. `async () => { const rows = await store.list(); return rows.length }`. Found {found}."),
    ModuleNotFound => ("MODULE_NOT_FOUND", Program, false,
        "An import names a specifier the request's `modules` map does not hold.",
        "Cannot import \"{specifier}\": no module by that name was provided with this run. Only the modules in the request's module map can be imported (available: {available})."),
    ProgramError => ("PROGRAM_ERROR", Program, false,
        "The program threw, or its promise rejected, and nothing caught it.",
        "{detail}"),
    DenialUncaught => ("DENIAL_UNCAUGHT", Program, false,
        "A tool call that needs approval was denied (`APPROVAL_DENIED` inside the sandbox) and the program did not catch the rejection: the run ended on a person's (or `decide`'s) no, not on a bug in the program.",
        "{detail}"),
    ResultNotCloneable => ("RESULT_NOT_CLONEABLE", Program, false,
        "The program's result holds a value structuredClone cannot copy (a function, a symbol).",
        "The program's result cannot be copied out of the sandbox: {detail}. Return plain data (objects, arrays, strings, numbers, Map, Set, Date, typed arrays), not functions or symbols."),
    ResultNotJson => ("RESULT_NOT_JSON", Program, false,
        "A `codeModeTool` program's result has no JSON form (a BigInt or a cycle in it, a function or symbol as the whole result, a `toJSON` that throws): its output is JSON, as `@ai-sdk/code-mode`'s is (docs/ai-sdk.md).",
        "The program's result cannot be returned as JSON: {detail}. Return JSON data: objects, arrays, strings, finite numbers, booleans and null (a Date becomes its ISO string; Map, Set, functions and undefined are not kept)."),
    NeverSettled => ("NEVER_SETTLED", Program, false,
        "The program awaits a promise nothing can settle (no tool call is in flight).",
        "The program's promise can never settle: it awaits something that nothing will resolve (no tool call is in flight). Make sure every promise you await is resolved or rejected."),
    Timeout => ("TIMEOUT", Program, false,
        "The run outlived its `timeout` (measured on the host, tool calls included).",
        "The program ran longer than its time bound of {ms} ms and was stopped. Do less work in one run: split the task into smaller runs, or avoid loops that never finish."),
    MemoryLimit => ("MEMORY_LIMIT", Program, false,
        "The run's heap plus its ArrayBuffer memory outgrew `memoryLimit`.",
        "The program ran out of memory: it needed more than its limit of {mib} MiB and was stopped. Work in smaller pieces: process data in batches, keep fewer items in memory at once, and return a summary instead of the whole data set."),
    CpuLimit => ("CPU_LIMIT", Program, false,
        "The run (or an invocation of a retained execution) spent more CPU time than its `cpuLimit`: the CPU of the thread running the program, its microtasks and timers included, from its start to its end. Time spent awaiting a tool call, a fetch or a timer does not count.",
        "The program used up its CPU budget of {ms} ms and was stopped. Only computation counts against it (time spent awaiting tool calls, fetches and timers does not), so this run computed too much. Do less work in one run: process less data per run, avoid loops that never finish, and leave heavy computation to the host's tools."),
    ReplayDiverged => ("REPLAY_DIVERGED", Program, false,
        "A run resumed from an approval token asked for another call (or fetch) than the one its ledger holds at that point: on replay it did not take the path it took before the pause (it raced a timer against a tool, or read something the replay does not reproduce).",
        "The run was resumed after an approval, but on replay the program asked for {got} where it had asked for {expected}, so it could not be resumed. Write the program so its path depends only on its tools' answers: no races between timers and tool calls. Run it again from the start."),
    ApprovalLedgerTooLarge => ("APPROVAL_LEDGER_TOO_LARGE", Program, false,
        "A run paused for approval, but what a resume needs (the program, its modules and every answer so far) would make a token of more than the bound.",
        "The run paused for an approval, but its token would hold {size} bytes (the program, its modules and every answer so far), more than the {limit} a token may hold. Make fewer or smaller calls before the one that needs approval."),
    ResultTooLarge => ("RESULT_TOO_LARGE", Program, false,
        "The program's result, serialized, is larger than the result bound.",
        "The program's result is {size} bytes, more than the {limit} bytes a result may take. Return less: a summary, a page of rows, or only the fields that are needed."),
    // Rejections inside the sandbox (a program may catch them).
    ToolNotFound => ("TOOL_NOT_FOUND", Sandbox, false,
        "A program calls a tool its provider did not list.",
        "Tool \"{tool}\" not found"),
    ToolArgsNotCloneable => ("TOOL_ARGS_NOT_CLONEABLE", Sandbox, false,
        "A tool call's arguments hold a value structuredClone cannot copy.",
        "The arguments of {provider}.{tool} cannot be copied out of the sandbox: {detail}. Pass plain data, not functions or symbols."),
    ToolResultNotCloneable => ("TOOL_RESULT_NOT_CLONEABLE", Sandbox, false,
        "The host's dispatch returned a value structuredClone cannot copy.",
        "The tool {provider}.{tool} returned a value that cannot be copied into the sandbox: {detail}."),
    ToolAnswerUnreadable => ("TOOL_ANSWER_UNREADABLE", Sandbox, false,
        "The host's answer to a tool call reached the worker as bytes its V8 cannot read back into a value (a value-serializer format the start-up check did not catch, or damaged bytes).",
        "The tool's answer could not be read inside the sandbox (malformed value)."),
    ToolPayloadTooLarge => ("TOOL_PAYLOAD_TOO_LARGE", Sandbox, false,
        "A tool call's arguments, or the host's answer, serialized, pass the payload bound.",
        "The {what} of {provider}.{tool} came to {size} bytes, more than the {limit} bytes a tool call may carry. Send less per call: split the data across several calls."),
    BufferNotResizable => ("BUFFER_NOT_RESIZABLE", Sandbox, false,
        "A program creates a resizable ArrayBuffer (`maxByteLength`).",
        "Resizable ArrayBuffers are not available in this sandbox: a buffer cannot grow past the length it was created with. Create a new buffer of the size you need and copy into it."),
    CompressionUnavailable => ("COMPRESSION_UNAVAILABLE", Sandbox, false,
        "A program constructs CompressionStream or DecompressionStream (declared absences).",
        "CompressionStream and DecompressionStream are not available in this sandbox: it carries no compression codecs. Ask the host to compress or decompress through a tool call, or work with uncompressed data."),
    CachesUnavailable => ("CACHES_UNAVAILABLE", Sandbox, false,
        "A program touches `caches` (the Cache API is a declared absence).",
        "The Cache API (caches) is not available in this sandbox: nothing persists between runs. Keep data in variables for the length of the run, or ask the host to store it through a tool call."),
    ExecutionCompleted => ("EXECUTION_COMPLETED", Sandbox, false,
        "A retained handler (or a timer of its isolate) calls a tool after the run that granted it ended: the dispatch ended with the run.",
        "Execution has already completed."),
    NetworkClosed => ("NETWORK_CLOSED", Sandbox, false,
        "A program calls fetch while the run's outbound is null (blocked).",
        "fetch is closed in this sandbox: the host allows no network access from programs. Ask for the data through a tool call instead."),
    FetchFailed => ("FETCH_FAILED", Sandbox, true,
        "A native fetch could not complete (DNS, connection, TLS, timeout, too many redirects).",
        "fetch {url} failed: {detail}. Check the URL; if the service is down, try again later or ask for the data through a tool call."),
    FetchTooLarge => ("FETCH_TOO_LARGE", Sandbox, false,
        "A fetch request or response body passes the body bound.",
        "The {what} body of fetch {url} is larger than the {limit} bytes a fetch may carry. Ask for less: a page, a range, or a filtered query."),
    FetchNotPublic => ("FETCH_NOT_PUBLIC", Sandbox, false,
        "A fetch under outbound `'public'` names a host that is not a public internet address, or a name that resolves only to such addresses (loopback, private, carrier-grade NAT, link-local and cloud metadata, unique-local, site-local, multicast, broadcast, documentation, benchmarking and other reserved ranges, IPv4 embedded in IPv6 that is one of those, Teredo, `localhost` names), at the first hop or at any redirect; nothing is sent to it.",
        "fetch {url} was refused: {reason}, not a public internet address, and this sandbox may reach public addresses only. Fetch a public URL instead; if the data lives on a private or local service, ask for it through a tool call (or ask the host to run the program with a routed outbound policy that reaches that service)."),
    FetchRedirected => ("FETCH_REDIRECTED", Sandbox, false,
        "A fetch whose `redirect` is `'error'` got a redirect response (the Fetch standard's network error).",
        "fetch {url} was answered with a redirect (status {status} to {location}) and its redirect mode is 'error'. Pass redirect: 'follow' to follow it, or redirect: 'manual' to read the redirect response itself."),
    FetchBytesInFlight => ("FETCH_BYTES_IN_FLIGHT", Sandbox, false,
        "A fetch would bring the request bytes (URL, headers and body) the run has in flight, sent and not yet answered or waiting their turn, past `limits::FETCH_BYTES_IN_FLIGHT`; the fetch rejects inside the sandbox without being sent.",
        "fetch {url} was not sent: this request ({size} bytes of URL, headers and body) would bring the requests this run has in flight past {limit} bytes. Await some of the fetches in flight before sending more, or send smaller bodies."),
    OutboundInvalidResponse => ("OUTBOUND_INVALID_RESPONSE", Sandbox, false,
        "The host's outbound policy answered with something that is not a WireResponse.",
        "The host's outbound policy answered fetch {url} with a value outside the response wire shape ({detail})."),
    AnswerTooLarge => ("ANSWER_TOO_LARGE", Sandbox, false,
        "The host's answer to a tool call or fetch (a value, a rejection text, a response with its headers) does not fit in one frame to the worker.",
        "The host's answer to this {what} came to {size} bytes, more than the {limit} bytes one message into the sandbox may carry. Ask for less per call: a page, a summary, or only the fields that are needed."),
    // Notices added to the logs.
    LogLimit => ("LOG_LIMIT", Log, false,
        "The run logged more entries or bytes than the log bound; later output is dropped.",
        "[log limit reached: {dropped} more console entries were dropped. Log less: print summaries or counts instead of every item.]"),
    // Executor faults: `execute` rejects with an ExecutorError.
    InvalidOption => ("INVALID_OPTION", Fault, false,
        "An executor option has the wrong type or range.",
        "Invalid option `{field}`: {problem}. Allowed: {allowed}."),
    InvalidRequest => ("INVALID_REQUEST", Fault, false,
        "An execute request field has the wrong type or range.",
        "Invalid request field `{field}`: {problem}. Allowed: {allowed}."),
    Closed => ("CLOSED", Fault, false,
        "The executor was closed before or while the request waited.",
        "The executor is closed: close() was called, so it runs no more programs. Create a new executor."),
    QueueFull => ("QUEUE_FULL", Fault, true,
        "Every worker is busy and `queueBound` executions already wait; or a retained execution already has `queueBound` invocations waiting for its handles (they run one at a time).",
        "{bound} {what} are already waiting for {whom}, the most that may wait. Retry after one finishes{advice}."),
    TenantCpuLimit => ("TENANT_CPU_LIMIT", Fault, true,
        "A run is submitted while its tenant has spent its `cpuPerMinute` in the last minute (docs/tenants.md): it is refused and never started (runs already queued wait for the minute to have room).",
        "Tenant \"{tenant}\" has spent {spent} ms of CPU in the last minute, its share of {limit} ms a minute (`cpuPerMinute`), so this execution did not start. Retry in {retry} ms, or ask the operator to raise the tenant's cpuPerMinute."),
    TenantMismatch => ("TENANT_MISMATCH", Fault, false,
        "A request on a daemon connection names a tenant other than the one its connection's token belongs to (`serve --tenants`).",
        "This request names tenant \"{named}\", and this connection's token belongs to another tenant. Leave `tenant` out (a request runs as its connection's tenant) or connect with that tenant's token."),
    WorkerLost => ("WORKER_LOST", Fault, true,
        "The worker process running the execution exited or was killed.",
        "The worker process running this execution exited unexpectedly ({detail}). It has been replaced; the execution can be retried."),
    RequestTooLarge => ("REQUEST_TOO_LARGE", Fault, false,
        "An `execute` (code, modules, provider tool lists) or `invokeHandle` request (its request) does not fit in one frame to the worker; it is refused before it leaves the host.",
        "The {what} came to {size} bytes, more than the {limit} bytes one message to a worker may carry. Send less: smaller code or modules, fewer tools, or a smaller request body."),
    WorkerNotFound => ("WORKER_NOT_FOUND", Fault, false,
        "The `codemode-worker` binary is not where the executor looked.",
        "The worker binary was not found at {path}. Build it (npm run build), install the platform package, or point `workerPath` or CODEMODE_WORKER_PATH at it."),
    ValueFormatUnsupported => ("VALUE_FORMAT_UNSUPPORTED", Fault, false,
        "This Node's V8 writes a value-serializer format other than the worker's V8 (values cross both ways, and each side reads only formats up to its own), so the executor refuses to start rather than risk a value that cannot be read.",
        "This Node ({node}, V8 {v8}) writes V8 value-serializer format {written}, and the codemode-worker speaks format {supported}. Run a Node the installed @supolka/codemode-executor supports (its README, \"Install\"), or a release built for this Node."),
    WorkerStartFailed => ("WORKER_START_FAILED", Fault, true,
        "A worker process could not be started or did not complete its handshake.",
        "A worker process could not be started: {detail}."),
    HandlesClosed => ("HANDLES_CLOSED", Fault, false,
        "`invokeHandle` or `closeHandles` names an execution that holds no handles: closed, expired at the idle bound, ended by a bound or a lost worker, or never granted.",
        "Execution \"{id}\" holds no handles: they were closed, expired at the idle bound, or never granted. Execute again with retainHandles to get a fresh executionId."),
    HandleNotFound => ("HANDLE_NOT_FOUND", Fault, false,
        "`invokeHandle` names a handle the execution was not granted; the handler is not entered and the handles stay open.",
        "Execution \"{id}\" has no handle named \"{name}\". The granted handles are: {granted}."),
    HandleNotGranted => ("HANDLE_NOT_GRANTED", Fault, false,
        "`invokeHandle` names a handle of an execution whose grant lists none.",
        "Execution \"{id}\" has no handle named \"{name}\". It was granted no handles."),
    HandlerError => ("HANDLER_ERROR", Fault, false,
        "A retained handler threw or rejected during an invocation (the text is its error's message); the handles stay open.",
        "{detail}"),
    HandleNotResponse => ("HANDLE_NOT_RESPONSE", Fault, false,
        "The fetch handle answered with a value that is not the runtime's Response (checked against the Response captured before any program ran).",
        "The fetch handle answered with a value that is not a Response."),
    HandleResponseInvalid => ("HANDLE_RESPONSE_INVALID", Fault, false,
        "The fetch handle's Response is outside the response wire shape (checked again on the host: status 200-599, ByteString header names and values, the body bound).",
        "The fetch handle answered outside the response wire shape."),
    // The executor daemon and its protocol (docs/protocol.md).
    Draining => ("DRAINING", Fault, true,
        "An `execute` reaches the executor daemon while it drains (it is shutting down).",
        "The executor daemon is shutting down and takes no new executions. Retry: a new connection reaches a daemon that is serving."),
    InFlightLimit => ("IN_FLIGHT_LIMIT", Fault, true,
        "A connection to the daemon already has `maxInFlight` requests waiting for their answers.",
        "This connection already has {limit} requests in flight, the most the daemon takes on one connection. Wait for some to finish, or open another connection."),
    ProtocolError => ("PROTOCOL_ERROR", Fault, false,
        "A message on a daemon connection broke the executor protocol (not JSON, an unknown type, a missing field, a duplicate id, too large).",
        "The executor protocol was broken: {detail}."),
    ProtocolMismatch => ("PROTOCOL_MISMATCH", Fault, false,
        "The client and the daemon speak different versions of the executor protocol.",
        "This client speaks executor protocol {got} and the daemon speaks {want}. Use the same version of @supolka/codemode-executor on both sides."),
    ConnectionRefused => ("CONNECTION_REFUSED", Fault, false,
        "The daemon refused a connection: a missing or wrong token, or its `onConnection` hook said no (or did not answer).",
        "The executor daemon refused the connection: {reason}."),
    DaemonUnreachable => ("DAEMON_UNREACHABLE", Fault, true,
        "`connect()` could not open a connection to the daemon (nothing listens, a network error, an HTTP answer instead of an upgrade).",
        "The executor daemon at {url} could not be reached: {detail}. Check that it is running and that the address is right, then retry."),
    ConnectionLost => ("CONNECTION_LOST", Fault, true,
        "The connection to the daemon closed while a request waited for its answer.",
        "The connection to the executor daemon at {url} closed ({detail}) before this request was answered. The daemon stops an execution whose caller is gone; retry on a new connection."),
    CallerGone => ("CALLER_GONE", Sandbox, false,
        "A tool call or routed fetch of a daemon execution whose connection has closed.",
        "The host that started this execution has disconnected, so {what} cannot be answered."),
    TokenRequired => ("TOKEN_REQUIRED", Fault, false,
        "`serve` was asked to listen on an address other than loopback without a token: anyone who reaches the port could run code and fetch from the operator's network.",
        "Refusing to serve on {address} without a token: an address other than loopback is reachable from other machines. Put a shared secret of at least 16 characters in a file and pass --token-file PATH (serve(): `token`), or listen on 127.0.0.1 behind a proxy that authenticates."),
    ListenFailed => ("LISTEN_FAILED", Fault, false,
        "The daemon could not listen on its address (the port is taken, the address is not local, permission).",
        "Could not listen on {address}: {detail}. Choose another port (port 0 picks a free one) or stop what holds this one."),
    Internal => ("INTERNAL", Fault, true,
        "An invariant inside the executor broke; this is a bug.",
        "Internal executor error: {detail}. Please report it."),
    TokenTampered => ("TOKEN_TAMPERED", Fault, false,
        "`resume` was given a token that is not one this executor's key signed as it is: altered, cut short, or not a token at all.",
        "This approval token is not valid: it was altered or damaged ({detail}). Resume only with the token a paused outcome gave, unchanged."),
    TokenForeignKey => ("TOKEN_FOREIGN_KEY", Fault, false,
        "`resume` was given a token signed with another approval key than this executor's (another process with a random key, or another deployment).",
        "This approval token was signed with another key than this executor's. Resume it on an executor (or daemon) configured with the same `approvalKey`; an executor without one makes a random key that dies with its process."),
    TokenExpired => ("TOKEN_EXPIRED", Fault, false,
        "`resume` was given a token past its `expiresIn`.",
        "This approval token expired at {at}. Run the program again from the start, and ask for the approval again."),
    DecisionsInvalid => ("DECISIONS_INVALID", Fault, false,
        "`resume`'s decisions do not answer the token's pending calls: one is missing, one names no pending call, or one is not `{ approved: boolean, reason?: string }`.",
        "The decisions do not match the paused calls: {detail}. Give one decision per pending call, keyed by its id: {ids}."),
    Aborted => ("ABORTED", Fault, false,
        "The caller aborted the execution or invocation through its `AbortSignal` (queued: it never started; running: it was stopped as at a time bound).",
        "The {what} was aborted by its caller before it finished. Its AbortSignal's reason is the error's `cause`."),
    TypeError => ("TYPE_ERROR", Program, false,
        "A request with `typecheck: true`: the program does not type-check against its `declarations` (a tool that does not exist, a missing or misnamed argument, an argument of the wrong type, a property the declared result does not have, a result used without `await`); the run did not start and no tool was called (docs/typecheck.md).",
        "This program was not run and no tool was called: it does not type-check against the declared tools (errors: {count}).{diagnostics}Fix the calls and reads named above (the declarations give each tool's input and result) and send the program again."),
    TypeScriptUnsupported => ("TYPESCRIPT_UNSUPPORTED", Program, false,
        "The code (or a TypeScript module it imports, named in `{what}`) is TypeScript with a construct that has no JavaScript once its types are removed (an enum, a namespace with values, a parameter property, a decorator, `import = require`, `export =`): types are removed, nothing is compiled.",
        "{what} uses {construct} on line {line}. TypeScript runs here with its types removed, and this construct has no JavaScript once they are gone. Write {instead}."),
    // bundleModules (lib/bundle.js), on the host, before any run.
    BundleNodeBuiltin => ("BUNDLE_NODE_BUILTIN", Fault, false,
        "`bundleModules` met a package that imports a Node built-in: the sandbox has no Node, so the package is refused at bundle time.",
        "The package \"{package}\" imports the Node built-in \"{builtin}\" (from {importer}), and the sandbox has no Node built-ins. Use a package that does not need it, or alias the built-in to a module written for the sandbox: the `alias` option, keyed by \"{builtin}\", naming a package or a file."),
    BundleFailed => ("BUNDLE_FAILED", Fault, false,
        "`bundleModules` could not bundle a package: it is not installed where it was resolved from, esbuild is missing, or esbuild reported an error.",
        "Could not bundle \"{package}\": {detail}."),
    WorkerViolation => ("WORKER_VIOLATION", Fault, false,
        "The worker process running the execution sent the host what a healthy worker never sends (a frame naming another execution, a second result, a tool the request did not declare, output past the bounds, a malformed frame); the host killed and replaced it.",
        "The worker process running this execution broke the host's rules ({detail}) and was killed and replaced. A healthy worker never does this: the program most likely took control of its worker (an exploit of the JavaScript engine), or the worker binary does not match this executor. Do not retry the same program."),
    ToolCallLimit => ("TOOL_CALL_LIMIT", Sandbox, false,
        "A tool call past the run's `toolCallLimit`; the call rejects inside the sandbox and never reaches the host.",
        "This call to {provider}.{tool} was not made: the run has made its {limit} tool calls, the most it may make. Make fewer calls: ask for more per call (a batch or a page instead of one item), and return what you have."),
    ApprovalDenied => ("APPROVAL_DENIED", Sandbox, false,
        "A tool call that needs approval was denied (by a person's decision, by `decide`, or because no decision came within the approval's `timeout`); it was never dispatched.",
        "The call to {provider}.{tool} was not made: it needs a person's approval, and it was denied ({reason}). Do not retry it; tell the user what was refused, or do without it."),
    FetchLimit => ("FETCH_LIMIT", Sandbox, false,
        "A fetch past the run's (or the invocation's) `fetchLimit`; the fetch rejects inside the sandbox and never reaches the host.",
        "This fetch of {url} was not made: the run has made its {limit} fetches, the most it may make. Fetch less: combine requests, and return what you have."),
    CallsInFlight => ("CALLS_IN_FLIGHT", Sandbox, false,
        "A tool call or fetch started while the run already had the most calls in flight a run may have (`limits::CALLS_IN_FLIGHT`); the call rejects inside the sandbox.",
        "This call would be one more than the {limit} tool calls and fetches a run may have in flight at once. Await some of those in flight before starting more (for example, batch a large Promise.all)."),
    ToolBytesInFlight => ("TOOL_BYTES_IN_FLIGHT", Sandbox, false,
        "A tool call's arguments would take the bytes the host holds for the run's unanswered tool calls past `limits::TOOL_BYTES_IN_FLIGHT`; the call rejects inside the sandbox and never reaches `dispatch`.",
        "This call to {provider}.{tool} was not made: its arguments ({size} bytes) and those of the calls still waiting for an answer ({held} bytes) would pass the {limit} bytes a run's tool calls may hold at once. Keep fewer or smaller calls in flight: await them in batches (a few at a time instead of one large Promise.all), or pass less data per call (an id or a page instead of the whole data set)."),
    // The MCP gateway (lib/mcp/): a call from the `code` tool's program to an upstream server.
    UpstreamLost => ("UPSTREAM_LOST", Sandbox, true,
        "The MCP gateway's upstream server was not connected when a program called one of its tools, or its connection ended before the answer came (it crashed, exited or hung up); the gateway restarts it with backoff, and other servers keep serving.",
        "The call to {server}.{tool} was not answered: the MCP server \"{server}\" is not connected ({detail}). The gateway is restarting it; try the call again in a later run, or do without it."),
    UpstreamTimeout => ("UPSTREAM_TIMEOUT", Sandbox, true,
        "An upstream MCP server did not answer a tool call within the gateway's call timeout; the call rejects inside the sandbox (the program may catch it).",
        "The call to {server}.{tool} got no answer within {ms} ms and was given up. The server may be busy or stuck: try it again later with less work per call, or do without it."),
    McpConfigInvalid => ("MCP_CONFIG_INVALID", Fault, false,
        "The MCP gateway's server configuration (the `mcpServers` file of `codemode-executor mcp --config`, or `createMcpGateway`'s `servers`) is malformed.",
        "The MCP server configuration is invalid: {where}: {problem}. Each server is `{ \"command\": \"...\", \"args\": [...], \"env\": {...} }` (stdio) or `{ \"url\": \"https://...\", \"headers\": {...} }` (Streamable HTTP), keyed by its name under `mcpServers`."),
    PeerMissing => ("PEER_MISSING", Fault, false,
        "A feature that works with another package (an optional peer dependency the host brings, such as `ai` for `codeModeTool`) found it missing, or too old to have what it needs.",
        "{feature} needs the package `{package}` ({version}) in the host project, and {problem}. Install it beside @supolka/codemode-executor: npm install {package}@{version}."),
    // Program text refused before it is parsed (the parsers recurse per level of nesting).
    NestingTooDeep => ("NESTING_TOO_DEEP", Program, false,
        "The code (or a TypeScript module it imports) nests more deeply than `limits::NESTING_LEVELS`: brackets, blocks, nested statements and chained operators are counted in one pass before any parser reads it, and code past the bound is never parsed.",
        "{what} nests too deeply: {depth} levels at line {line}, more than the {limit} levels code may nest (brackets, blocks, nested statements and chains of operators all count). Flatten it: give intermediate results names, split long chains into steps, and build deeply nested data in a loop or with JSON.parse instead of writing it out."),
    CodeTooLarge => ("CODE_TOO_LARGE", Program, false,
        "The code given to `CodemodeExecutor.execute` is longer than `limits::CODE_BYTES`; it is refused before it is read.",
        "The code is {size} bytes, more than the {limit} bytes a program may take. Write a shorter program: fetch large data through a tool call, or import it from a module, instead of writing it into the code."),
}

/// SYNTAX_ERROR's `{hint}` when the code would parse as a function's body: the entry shape,
/// as ENTRY_SHAPE's text states it (a test holds the two to the same rule).
pub const ENTRY_SHAPE_HINT: &str = " The code must be one expression that evaluates to a function, optionally preceded by import declarations, e.g. `async () => { return 1 }`.";

impl FailureCode {
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == code)
    }

    /// Fills `{name}` placeholders from `vars`; an unknown placeholder is left as written.
    pub fn render(self, vars: &[(&str, &str)]) -> String {
        let t = self.template();
        let mut out = String::with_capacity(t.len() + 32);
        let mut rest = t;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close) => {
                    let name = &after[..close];
                    match vars.iter().find(|(k, _)| *k == name) {
                        Some((_, v)) => out.push_str(v),
                        None => {
                            out.push('{');
                            out.push_str(name);
                            out.push('}');
                        }
                    }
                    rest = &after[close + 1..];
                }
                None => {
                    out.push_str(&rest[open..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        out
    }

    pub fn failure(self, vars: &[(&str, &str)]) -> Failure {
        Failure {
            code: self,
            message: self.render(vars),
        }
    }
}

/// A code with its rendered text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: FailureCode,
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Failure {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_texts_nonempty() {
        let mut seen = std::collections::HashSet::new();
        for c in FailureCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {}", c.as_str());
            assert!(!c.template().is_empty());
            assert!(!c.when().is_empty());
            assert_eq!(FailureCode::from_code(c.as_str()), Some(*c));
        }
    }

    #[test]
    fn the_entry_shape_hint_states_the_entry_shape_rule() {
        let rule = |text: &'static str| text.trim_start().split(", e.g.").next().unwrap_or("");
        let hint = rule(ENTRY_SHAPE_HINT);
        assert!(
            hint.starts_with("The code must be one expression"),
            "{hint}"
        );
        assert_eq!(hint, rule(FailureCode::EntryShape.template()));
    }

    #[test]
    fn render_fills_known_and_keeps_unknown_placeholders() {
        let s = FailureCode::ToolNotFound.render(&[("tool", "drop")]);
        assert_eq!(s, "Tool \"drop\" not found");
        let s = FailureCode::QueueFull.render(&[]);
        assert!(s.contains("{bound}"));
    }
}
