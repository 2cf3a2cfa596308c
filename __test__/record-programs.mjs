// A vitest setup file, loaded only when CODEMODE_RECORD_PROGRAMS names a file
// (vitest.config.mjs): every program an in-process IsolateExecutor runs to a result is appended
// to it as a JSON line { code, providers }, for scripts/typecheck-suite-programs.mjs, which
// makes the type-check corpus's second valid set of them (docs/typecheck.md).
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { IsolateExecutor } = require('../index.js');
const file = process.env.CODEMODE_RECORD_PROGRAMS;
const execute = IsolateExecutor.prototype.execute;
IsolateExecutor.prototype.execute = function (request) {
  const promise = execute.call(this, request);
  promise.then(
    (outcome) => {
      if (!file || outcome?.error || outcome?.paused || typeof request?.code !== 'string') return;
      const providers = Array.isArray(request.providers) ? request.providers.map((p) => p?.name).filter((n) => typeof n === 'string') : [];
      appendFileSync(file, `${JSON.stringify({ code: request.code, providers })}\n`);
    },
    () => {},
  );
  return promise;
};
