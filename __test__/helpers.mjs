import { createRequire } from 'node:module';
import { afterAll } from 'vitest';

const require = createRequire(import.meta.url);
export const { IsolateExecutor, ExecutorError, failureCatalog } = require('../index.js');

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

export async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection, got a resolution');
}
