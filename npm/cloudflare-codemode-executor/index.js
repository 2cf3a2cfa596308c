'use strict';
// @supolka/cloudflare-codemode-executor: the name a host migrating from DynamicWorkerExecutor
// imports. Everything is @supolka/codemode-executor's own export (one definition each).
module.exports = require('@supolka/codemode-executor');
