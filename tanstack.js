// @ts-check
'use strict';
// @supolka/codemode-executor/tanstack: @tanstack/ai-code-mode's IsolateDriver over this
// executor. See tanstack.d.ts for the documented API and docs/tanstack.md for the mapping.

module.exports = require('./lib/tanstack');
