// @ts-check
'use strict';
// The usage text of `codemode-executor mcp`, apart from the gateway so the command line's other
// commands print it without loading the MCP SDK.

/**
 * The gateway's own defaults (the executor's come from `limits()`): a desktop's, a few workers and
 * the time a person's tools may take.
 */
const MCP_DEFAULTS = {
  workers: 2,
  timeout: 60_000,
  toolCallLimit: 256,
  callTimeout: 60_000,
  /** Declarations longer than this (characters) make `--catalog auto` switch to search. */
  fullCatalogChars: 32_000,
};

/** The usage text, its defaults filled in. */
function mcpUsage() {
  const { limits } = require('../native');
  const serve = limits().serveDefaults;
  return `Usage: codemode-executor mcp --config FILE [options]

Serves the MCP servers of FILE (the "mcpServers" format of Claude Desktop and Cursor) to an MCP
client as one \`code\` tool: the model writes a program that calls their tools, and it runs in a
fresh V8 isolate. docs/mcp.md.

Options:
  --config FILE          the servers (required)
  --http PORT            serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio
                         (0 picks a free port; the URL is printed on stdout)
  --host ADDRESS         the address --http listens on (default 127.0.0.1); any address
                         other than loopback needs --token-file
  --token-file PATH      a shared secret (16+ characters) HTTP clients send as
                         "Authorization: Bearer SECRET"; without it --http makes a
                         random one and prints it with the URL
  --allow-origin ORIGIN  a web origin whose pages may call --http besides the gateway's own
                         (http://HOST:PORT of its address, and localhost on loopback);
                         repeatable, default none
  --max-connections N    connections open at once (default ${serve.maxConnections})
  --max-connections-per-address N
                         connections open at once from one address (default ${serve.maxConnectionsPerAddress})
  --outbound MODE        what programs' fetch may reach: null (closed, the default),
                         public (public internet addresses only) or native (everything)
  --approve SERVER.TOOL  a tool whose calls wait for a person's yes, asked through the
                         client (MCP elicitation); SERVER.* for all of a server's (repeatable)
  --catalog MODE         how the model learns the tools: auto (the default: whole, or
                         search and describe tools past ${MCP_DEFAULTS.fullCatalogChars} characters), full, search
  --typecheck            type-check each program against the servers' declarations before
                         it runs: a wrong call is answered TYPE_ERROR and nothing runs
                         (needs the typescript package; docs/typecheck.md)
  --tenant NAME          whom every program runs for (docs/tenants.md): 1 to 64 of
                         A-Z a-z 0-9 . _ - (default: none, the executor's unnamed domain)
  --workers N            worker processes (default ${MCP_DEFAULTS.workers})
  --timeout MS           a program's time bound (default ${MCP_DEFAULTS.timeout})
  --memory-limit MIB     a program's memory (default ${limits().defaults.memoryLimit})
  --cpu-limit MS         a program's CPU budget (default: none)
  --tool-call-limit N    tool calls a program may make (default ${MCP_DEFAULTS.toolCallLimit})
  --call-timeout MS      how long one tool call waits for its server (default ${MCP_DEFAULTS.callTimeout})
  --approval-timeout MS  how long a call waits for a person's yes (default ${limits().approval.defaultTimeout})
  -h, --help             show this text
`;
}

module.exports = { mcpUsage, MCP_DEFAULTS };
