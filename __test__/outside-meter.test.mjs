// Memory outside the meter (docs/bounds.md): ICU objects behind Intl live outside the heap the
// memory limit counts. Intl works (the worker embeds ICU's data), and an Intl-heavy program under
// memoryLimit 64 completes or fails with a declared failure, its worker's resident memory never
// past the memory ceiling docs/deployment.md tells operators to plan for (RLIMIT_DATA, 256 MiB +
// 3 × memoryLimit). bench/outside-meter.js measures the same programs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { executor, failureCatalog } from './helpers.mjs';

const LOCALES = `const locales = ['en','de','fr','es','it','pt','nl','sv','da','nb','fi','pl','cs','sk','hu','ro','bg','el','ru','uk','tr','ar','he','fa','hi','bn','ta','te','th','vi','id','ms','ja','ko','zh','zh-Hant']
  .flatMap((l) => ['', '-US', '-GB', '-IN', '-CA'].map((r) => l + r))`;

/** VmHWM of `pid` in MiB, or NaN once it is gone. */
function hwmMiB(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/** Runs `code` on a one-worker executor and samples its worker's peak RSS while it runs. */
async function watched(code, memoryLimit) {
  const ex = executor({ workers: 1, memoryLimit, timeout: 60_000 });
  expect((await ex.execute({ code: 'async () => 1' })).result).toBe(1);
  const [pid] = ex.workerPids();
  let peak = hwmMiB(pid);
  const sampler = setInterval(() => {
    const now = hwmMiB(pid);
    if (now > peak) peak = now;
  }, 10);
  let outcome;
  try {
    outcome = await ex.execute({ code });
  } catch (e) {
    outcome = { fault: e };
  } finally {
    clearInterval(sampler);
  }
  const last = hwmMiB(pid);
  if (last > peak) peak = last;
  return { outcome, peak };
}

const declared = new Set(failureCatalog().map((f) => f.code));

describe('Intl', () => {
  it('works: formats, collates, segments and pluralizes with the locales asked for', async () => {
    const ex = executor({ workers: 1 });
    const outcome = await ex.execute({
      code: `async () => [
        new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', dateStyle: 'medium' }).format(0),
        new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(1234.5),
        (1234.5).toLocaleString('en-US'),
        new Intl.Collator('sv').compare('ä', 'z'),
        [...new Intl.Segmenter('en', { granularity: 'word' }).segment('hello big world')].filter((s) => s.isWordLike).length,
        new Intl.PluralRules('en', { type: 'ordinal' }).select(2),
        Intl.supportedValuesOf('timeZone').includes('Europe/Berlin'),
      ]`,
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.result).toEqual(['Jan 1, 1970', '1.234,50\u00a0€', '1,234.5', 1, 3, 'two', true]);
  });
});

describe('memory outside the meter', () => {
  const ceiling = 256 + 3 * 64;

  it('thousands of live Intl objects under memoryLimit 64 complete, the worker under its ceiling', async () => {
    const { outcome, peak } = await watched(
      `async () => {
        ${LOCALES}
        const keep = []
        for (let i = 0; i < 10000; i++) {
          const l = locales[i % locales.length]
          keep.push(new Intl.NumberFormat(l, { style: 'currency', currency: ['EUR', 'USD', 'JPY', 'INR'][i % 4] }))
          keep.push(new Intl.PluralRules(l, { type: i % 2 ? 'ordinal' : 'cardinal' }))
          keep.push(new Intl.Collator(l, { sensitivity: ['base', 'accent', 'case', 'variant'][i % 4] }))
          keep.push(new Intl.Segmenter(l, { granularity: ['grapheme', 'word', 'sentence'][i % 3] }))
        }
        return keep.length
      }`,
      64,
    );
    expect(outcome.fault).toBeUndefined();
    if (outcome.error) expect(declared.has(outcome.error.code)).toBe(true);
    else expect(outcome.result).toBe(40000);
    // Past memoryLimit, as docs/bounds.md says (the heap holds only the wrappers)...
    expect(peak).toBeGreaterThan(64);
    // ...and under the ceiling.
    expect(peak).toBeLessThan(ceiling);
  }, 60_000);

  it('20,000 live DateTimeFormats under memoryLimit 64 end in a declared failure, never past the ceiling', async () => {
    const { outcome, peak } = await watched(
      `async () => {
        ${LOCALES}
        const zones = Intl.supportedValuesOf('timeZone')
        const keep = []
        for (let i = 0; i < 20000; i++) {
          keep.push(new Intl.DateTimeFormat(locales[i % locales.length], { timeZone: zones[i % zones.length], dateStyle: 'full', timeStyle: 'long' }))
        }
        return keep.length
      }`,
      64,
    );
    const code = outcome.fault?.code ?? outcome.error?.code;
    if (code !== undefined) expect(declared.has(code)).toBe(true);
    expect(peak).toBeLessThan(ceiling);
  }, 60_000);
});
