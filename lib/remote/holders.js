// @ts-check
'use strict';
// Which daemon holds each retained execution this process was granted over connect().
//
// One table for the whole process, on purpose: a host may run an execution through one
// connect() executor and invoke its handles through another it opened later (a connection per
// request, say), and behind a load balancer that one may reach another daemon; the invocation
// then goes over a channel pinned to the holder (`?daemon=<id>`), which only this table can name
// (docs/deployment.md, "connect() does its part on its own"; __test__/cluster.test.mjs invokes
// a handle from 20 fresh connections). It is bounded: past HOLDERS_BOUND executions the oldest
// grant is forgotten, and an invocation of it goes to the primary daemon, as for an execution
// granted to another process.

/** Executions whose holding daemon this process remembers (the oldest are forgotten first). */
const HOLDERS_BOUND = 65_536;

/** executionId -> id of the daemon that holds it, oldest grant first. */
const holders = new Map();

/**
 * @param {string} executionId
 * @param {string} daemon
 */
function remember(executionId, daemon) {
  holders.delete(executionId);
  holders.set(executionId, daemon);
  if (holders.size > HOLDERS_BOUND) holders.delete(holders.keys().next().value);
}

/**
 * The id of the daemon that holds `executionId`, when this process was granted it.
 * @param {string} executionId
 * @returns {string | undefined}
 */
function holderOf(executionId) {
  return holders.get(executionId);
}

/**
 * The execution ended (closed, expired, or its daemon is gone).
 * @param {string} executionId
 */
function forget(executionId) {
  holders.delete(executionId);
}

module.exports = { remember, holderOf, forget };
