// Writes docs/typecheck-corpus.md: the type-check corpus run through the checker
// (lib/typecheck/corpus.js).
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { corpusDeclarations } from '../__test__/fixtures/typecheck-declarations.mjs';
import * as corpus from '../__test__/fixtures/typecheck-corpus.mjs';

const require = createRequire(import.meta.url);
const { runCorpus, report } = require('../lib/typecheck/corpus');
const r = await runCorpus(corpus, corpusDeclarations());
writeFileSync(new URL('../docs/typecheck-corpus.md', import.meta.url), report(r));
console.log(`valid refused: ${r.refused.length}; mistakes caught: ${r.mistakes.filter((m) => m.caught).length} of ${r.mistakes.length}`);
