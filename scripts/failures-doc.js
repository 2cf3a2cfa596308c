// @ts-check
'use strict';
// Writes docs/failures.md from the addon's failure catalog (crates/protocol/src/failures.rs), so
// the table and the code cannot drift; __test__/failures.test.mjs checks the file against it.
const fs = require('node:fs');
const path = require('node:path');
const { failureCatalog } = require('..');

const esc = (/** @type {string} */ s) => s.replace(/\|/g, '\\|');
const rows = failureCatalog().map(
  (e) => `| \`${e.code}\` | ${e.kind} | ${e.retryable ? 'yes' : 'no'} | ${esc(e.when)} | ${esc(e.text)} |`,
);
const doc = `# Failure grammar

Every failure the executor reports, generated from \`crates/protocol/src/failures.rs\` by
\`node scripts/failures-doc.js\` (the test suite checks this file against the code).

Kinds:

- **program**: the program failed. \`execute\` resolves; the outcome carries
  \`error: { code, message }\` and the logs captured so far.
- **fault**: the executor could not run the request. \`execute\` (or the constructor) rejects with
  \`ExecutorError { code, retryable, message }\`.
- **sandbox**: a tool call rejects inside the sandbox with this text; the program may catch it.
  Uncaught, it becomes a \`PROGRAM_ERROR\` whose message is \`Error: <text>\`, but for
  \`APPROVAL_DENIED\`, whose Error carries \`code: 'APPROVAL_DENIED'\` and which uncaught
  becomes a \`DENIAL_UNCAUGHT\`.

Texts are written for the model that wrote the program: what happened, and what to do instead.
\`{name}\` marks a value filled in at run time. Retryable means the same request may succeed if
sent again unchanged.

| code | kind | retryable | when | text |
| --- | --- | --- | --- | --- |
${rows.join('\n')}

A \`PROGRAM_ERROR\` message is the thrown value's description: \`<name>: <message>\` for an Error
(just \`<name>\` when the message is empty), \`Uncaught <value>\` for anything else
(\`Uncaught null\`, \`Uncaught 'boom'\`).
`;
fs.writeFileSync(path.join(__dirname, '..', 'docs', 'failures.md'), doc);
