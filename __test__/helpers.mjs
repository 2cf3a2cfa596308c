import { createRequire } from 'node:module';
import { afterAll } from 'vitest';

const require = createRequire(import.meta.url);
export const { IsolateExecutor, ExecutorError, failureCatalog } = require('../index.js');
/** The declared text of failure `code` with its placeholders filled (the grammar's own renderer). */
export const { render: declaredText } = require('../lib/errors.js');

const open = [];

/** An executor closed after the file's tests. */
export function executor(options = { workers: 2 }) {
  const ex = new IsolateExecutor(options);
  open.push(ex);
  return ex;
}

afterAll(async () => {
  await Promise.all(open.map((ex) => ex.close()));
});

/** Runs `code` (a function's source) with optional providers and dispatch. */
export function run(ex, code, extra = {}) {
  return ex.execute({ code, ...extra });
}

/** What `fn` throws; fails the test when it returns. */
export function thrown(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw, got a return');
}

export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection, got a resolution');
}

/**
 * Polls `check` (sync or async) until it holds or `ms` pass; resolves with what it returned when
 * it held (`true` for a comparison), or false.
 */
export async function until(check, ms = 10_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const held = await check();
    if (held) return held;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
