// Conformance against web-platform-tests data for base64, the Encoding Standard, Headers and
// structured clone (__test__/wpt/*, each folder's README says where the cases came from). Each
// data set runs inside the sandbox in one execution, which returns the cases that failed.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { executor } from './helpers.mjs';

const ex = executor({ workers: 1, timeout: 60_000 });
const data = (path) => readFileSync(new URL(`./wpt/${path}`, import.meta.url), 'utf8');

async function failuresOf(json, body) {
  const out = await ex.execute({
    code: `import data from './data.js'
async () => {
  const failures = [];
  const str = (t, key) => t[key + 'CodeUnits'] ? String.fromCharCode(...t[key + 'CodeUnits']) : t[key + 'Js'] !== undefined ? (0, eval)('(' + t[key + 'Js'] + ')') : t[key];
  const units = (s) => Array.from({ length: s.length }, (_, i) => s.charCodeAt(i));
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  // What f returns, or the name of what it throws.
  const attempt = (f) => { try { return f() } catch (e) { return e.name } };
  ${body}
  return failures
}`,
    modules: { './data.js': `export default ${json}` },
  });
  expect(out.error).toBeUndefined();
  return out.result;
}

describe('base64 (WPT atob/btoa)', () => {
  it('atob decodes or throws InvalidCharacterError as forgiving-base64 says', async () => {
    expect(await failuresOf(data('base64/atob.json'), `
      for (const t of data) {
        const input = str(t, 'input');
        const got = attempt(() => atob(input));
        if (t.output === null) { if (got !== 'InvalidCharacterError') failures.push([input, got]); continue }
        const bytes = units(got);
        const want = t.outputBytes;
        if (t.matchPrefixOnly ? !same(bytes.slice(0, want.length), want) : !same(bytes, want)) failures.push([input, bytes, want]);
      }`)).toEqual([]);
  });

  it('btoa encodes Latin-1 or throws InvalidCharacterError', async () => {
    expect(await failuresOf(data('base64/btoa.json'), `
      for (const t of data) {
        const input = str(t, 'input');
        const got = attempt(() => btoa(input));
        const want = t.output === null ? 'InvalidCharacterError' : t.output;
        if (got !== want) failures.push([String(input).slice(0, 20), got, want]);
      }`)).toEqual([]);
  });
});

describe('Encoding Standard (WPT encoding/)', () => {
  it('fatal decoders throw TypeError on invalid input', async () => {
    expect(await failuresOf(data('encoding/fatal.json'), `
      for (const t of data) {
        let got = 'no throw';
        try { new TextDecoder(t.encoding, { fatal: t.fatal }).decode(new Uint8Array(t.bytes)) } catch (e) { got = e.name }
        if (got !== t.throws) failures.push([t.name, got]);
      }`)).toEqual([]);
  });

  it('decodes samples from Uint8Array and ArrayBuffer, and round-trips UTF-8', async () => {
    expect(await failuresOf(data('encoding/decode.json'), `
      for (const t of data) {
        for (const type of t.inputTypes ?? ['Uint8Array']) {
          const u8 = new Uint8Array(t.bytes);
          const input = type === 'ArrayBuffer' ? u8.buffer : type === 'DataView' ? new DataView(u8.buffer) : u8;
          const got = new TextDecoder(t.encoding).decode(input);
          const want = t.expectedCodeUnits ?? units(t.expected);
          if (!same(units(got), want)) failures.push([t.name, type, units(got), want]);
          if (t.encodeRoundTrip && !same([...new TextEncoder().encode(got)], t.bytes)) failures.push([t.name, 'round trip']);
        }
      }`)).toEqual([]);
  });

  it('handles byte order marks (stripped when matching, kept with ignoreBOM)', async () => {
    expect(await failuresOf(data('encoding/bom.json'), `
      for (const t of data) {
        const got = units(new TextDecoder(t.encoding, t.options ?? {}).decode(new Uint8Array(t.bytes)));
        if (t.expectedCodeUnits && !same(got, t.expectedCodeUnits)) failures.push([t.name, t.case, got]);
        if (t.expected !== undefined && !same(got, units(t.expected))) failures.push([t.name, t.case, got]);
        if (t.notExpectedCodeUnits && same(got, t.notExpectedCodeUnits)) failures.push([t.name, t.case, 'matched the unexpected']);
      }`)).toEqual([]);
  });

  it('decodes streams chunk by chunk', async () => {
    expect(await failuresOf(data('encoding/streaming.json'), `
      for (const t of data) {
        const d = new TextDecoder(t.encoding);
        let s = '';
        for (const c of t.chunks) s += d.decode(new Uint8Array(c), { stream: true });
        s += d.decode();
        if (!same(units(s), t.expectedCodeUnits)) failures.push([t.name]);
      }`)).toEqual([]);
    expect(await failuresOf(data('encoding/decode-sequences.json'), `
      for (const t of data) {
        const d = new TextDecoder(t.encoding ?? 'utf-8', t.options ?? {});
        t.steps.forEach((step, i) => {
          let got;
          try { got = step.noInput ? d.decode() : d.decode(new Uint8Array(step.bytes), { stream: Boolean(step.stream) }) } catch (e) { got = 'threw ' + e.name }
          const want = step.throws ? 'threw ' + step.throws : step.expectedCodeUnits ? String.fromCharCode(...step.expectedCodeUnits) : step.expected;
          if (got !== want) failures.push([t.name, i, units(String(got)), units(String(want))]);
        });
      }`)).toEqual([]);
  });

  it('TextEncoder replaces lone surrogates with U+FFFD', async () => {
    expect(await failuresOf(data('encoding/surrogates.json'), `
      for (const t of data) {
        const input = str(t, 'input');
        const bytes = [...new TextEncoder().encode(input)];
        if (t.expectedBytes && !same(bytes, t.expectedBytes)) failures.push([t.name, bytes]);
        const decoded = new TextDecoder().decode(new Uint8Array(bytes));
        const want = t.expectedDecodedCodeUnits ?? (t.expectedDecoded !== undefined ? units(t.expectedDecoded) : null);
        if (want && !same(units(decoded), want)) failures.push([t.name, 'decoded', units(decoded)]);
      }`)).toEqual([]);
  });

  it('resolves every label of the Encoding Standard to its encoding', async () => {
    expect(await failuresOf(data('encoding/labels.json'), `
      for (const [label, name] of Object.entries(data)) {
        for (const padded of [label, ' ' + label + '\\n', label.toUpperCase()]) {
          const got = attempt(() => new TextDecoder(padded).encoding);
          const want = name === 'replacement' ? 'RangeError' : name.toLowerCase();
          if (got !== want) failures.push([padded, got, want]);
        }
      }`)).toEqual([]);
  });

  it('encodeInto writes and reports read/written into every destination shape', async () => {
    expect(await failuresOf(data('encoding/encodeInto.json'), `
      for (const c of data.cases) {
        const input = str(c, 'input');
        for (const d of data.destinations) {
          const buffer = new ArrayBuffer(c.destinationLength + d.bufferIncrease);
          const view = new Uint8Array(buffer, d.destinationOffset, c.destinationLength);
          const whole = new Uint8Array(buffer);
          const filler = d.filler === 'random' ? whole.map(() => Math.floor(Math.random() * 256)) : whole.fill(d.filler).slice();
          whole.set(filler);
          const result = new TextEncoder().encodeInto(input, view);
          if (result.read !== c.read || result.written !== c.written.length) failures.push([input, d, result]);
          const expectWhole = filler.slice();
          expectWhole.set(c.written, d.destinationOffset);
          if (!same([...whole], [...expectWhole])) failures.push([input, d, 'bytes']);
        }
      }
      for (const type of data.invalidDestinationTypes) {
        const dest = type === 'ArrayBuffer' ? new ArrayBuffer(16) : new globalThis[type](new ArrayBuffer(16));
        try { new TextEncoder().encodeInto('', dest); failures.push([type, 'no throw']) } catch (e) { if (e.name !== 'TypeError') failures.push([type, e.name]) }
      }`)).toEqual([]);
  });

  it('has the default attributes and trims label whitespace', async () => {
    expect(await failuresOf(data('encoding/basics.json'), `
      const t = data;
      if (new TextEncoder().encoding !== t.defaultEncoderEncoding) failures.push('encoder encoding');
      if (new TextDecoder().encoding !== t.defaultDecoderEncoding) failures.push('decoder encoding');
      if (!same([...new TextEncoder().encode()], t.encodeNoArgumentBytes)) failures.push('encode()');
      if (!same([...new TextEncoder().encode(undefined)], t.encodeUndefinedBytes)) failures.push('encode(undefined)');
      if (new TextDecoder().fatal !== t.defaultFatal || new TextDecoder().ignoreBOM !== t.defaultIgnoreBOM) failures.push('defaults');
      if (new TextDecoder('utf-8', { fatal: true }).fatal !== true || new TextDecoder('utf-8', { ignoreBOM: true }).ignoreBOM !== true) failures.push('options');
      for (const ws of t.labelWhitespace ?? []) {
        const w = typeof ws === 'string' ? ws : String.fromCharCode(ws);
        try { if (new TextDecoder(w + 'utf-8' + w).encoding !== 'utf-8') failures.push(['ws', ws]) } catch { failures.push(['ws throws', ws]) }
      }`)).toEqual([]);
  });
});

describe('Headers (WPT fetch/api/headers)', () => {
  const runSteps = `
    for (const t of data) {
      let h;
      try {
        const init = t.initJs !== undefined ? (0, eval)('(' + t.initJs + ')') : t.init;
        h = t.useInitAsHeaders ? init : ('init' in t || 'initJs' in t) ? new Headers(init) : new Headers();
        if (t.constructThrows) { failures.push([t.name, 'constructed']); continue }
      } catch (e) {
        if (t.constructThrows !== e.name) failures.push([t.name, 'construct threw ' + e.name + ' ' + e.message]);
        continue;
      }
      let iterator = null;
      (t.steps ?? []).forEach((step, i) => {
        const fail = (...why) => failures.push([t.name, i, ...why]);
        try {
          if (step.iterate) return same([...h], step.iterate) || fail('iterate', [...h]);
          if (step.keys) return same([...h.keys()], step.keys) || fail('keys', [...h.keys()]);
          if (step.values) return same([...h.values()], step.values) || fail('values', [...h.values()]);
          if (step.entries) return same([...h.entries()], step.entries) || fail('entries', [...h.entries()]);
          if (step.forEach) {
            const seen = [];
            let self = true;
            h.forEach((v, k, obj) => { seen.push([k, v]); self = self && obj === h });
            return (same(seen, step.forEach) && self) || fail('forEach', seen);
          }
          if (step.iteratorNext || step.iteratorDone) {
            iterator ??= h[Symbol.iterator]();
            const r = iterator.next();
            return step.iteratorDone ? r.done || fail('iteratorDone', r) : same(r.value, step.iteratorNext) || fail('iteratorNext', r);
          }
          if (step.iterateWithMutation) {
            const m = step.iterateWithMutation;
            const keys = [], values = [];
            for (const [k, v] of h) {
              keys.push(k);
              values.push(v);
              if (m.whenKey === null || m.whenKey === k) h[m.call](...m.args);
            }
            return (same(keys, step.expectKeys) && same(values, step.expectValues)) || fail('mutation', keys, values);
          }
          if (step.forEachThrowing) {
            let count = 0;
            const thrown = step.forEachThrowing.thrown;
            try {
              h.forEach((v, k) => { count++; if (k === step.forEachThrowing.whenName) throw thrown });
              return fail('forEach did not throw');
            } catch (e) {
              return (e === thrown && count === step.expectCallbackCount) || fail('forEachThrowing', count);
            }
          }
          const args = step.argsJs !== undefined ? (0, eval)('(' + step.argsJs + ')') : step.args;
          let got;
          try { got = h[step.call](...args) } catch (e) {
            return step.throws === e.name || fail(step.call, 'threw ' + e.name + ' ' + e.message);
          }
          if (step.throws) return fail(step.call, 'did not throw');
          if ('expect' in step && !same(got, step.expect)) fail(step.call, got, step.expect);
        } catch (e) {
          fail('step threw', String(e));
        }
      });
    }`;
  for (const file of ['basic', 'errors', 'combine', 'normalize', 'casing', 'setcookie', 'values']) {
    it(`${file}.json`, async () => {
      expect(await failuresOf(data(`headers/${file}.json`), runSteps)).toEqual([]);
    });
  }
});

// Documented differences (docs/runtime-deviations.md, "structuredClone"): transferring and
// resizable buffers are not in this sandbox (skipped above, not listed). The cases that fail, each
// as the battery reports it ([description, compare, check]) and in the battery's order:
const CLONE_DEVIATIONS = [
  // V8 15.2 has SuppressedError (explicit resource management; V8 13.0 had none, and these two
  // failed as missing), but its serializer keeps an Error's kind only when its `name` is
  // EvalError, RangeError, ReferenceError, SyntaxError, TypeError or URIError, and writes any
  // other as a plain Error: the copy is an Error named 'Error', its message kept, its `error` and
  // `suppressed` lost, so neither its prototype nor its fields match.
  ['SuppressedError: SuppressedError', 'idbObject', 'suppressedError'],
  ['SuppressedError: SuppressedError', 'idbObject', 'suppressedError'],
  // The same for AggregateError (as in V8 13.0): a plain Error with the message, `errors` lost.
  ['AggregateError: AggregateError', 'idbObject', 'aggregateError'],
  ['AggregateError: AggregateError: abc', 'idbObject', 'aggregateError'],
];
// No longer listed since V8 15.2: the Float16Array case (V8 13.0 had none; 15.2 clones it).

describe('structured clone (WPT battery, IndexedDB cases)', () => {
  it('clones or throws as the HTML Standard says', async () => {
    const failures = await failuresOf(data('structured-clone/cases.json'), `
      const kindCheck = (kind, t, copy, input) => {
        switch (kind) {
          case 'primitive': return Object.is(copy, input);
          case 'Boolean': return copy instanceof Boolean && String(copy) === String(input) && copy !== input;
          case 'String': case 'Number': case 'BigInt': {
            const T = globalThis[kind];
            return copy instanceof T && Object.is(T(copy), T(input)) && copy !== input;
          }
          case 'Date': return copy instanceof Date && Object.is(Number(copy), Number(input)) && copy !== input;
          case 'RegExp': return copy instanceof RegExp && ['global', 'ignoreCase', 'multiline', 'sticky', 'unicode'].every((f) => copy[f] === input[f])
            && copy.source === (t.expectedSource ?? input.source) && copy.lastIndex === 0 && copy !== input;
          case 'Error': return copy instanceof Error && copy.constructor === input.constructor && copy.name === input.name
            && copy.hasOwnProperty('message') === input.hasOwnProperty('message') && copy.message === input.message && copy.foo === undefined;
          case 'ArrayBuffer': return copy instanceof ArrayBuffer && copy.byteLength === input.byteLength && copy.resizable === input.resizable;
          case 'ArrayBufferView': {
            const T = globalThis[t.viewType];
            return copy instanceof T && copy.length === input.length && copy.byteLength === input.byteLength && copy.byteOffset === input.byteOffset
              && copy.buffer !== input.buffer && same(Array.from(copy, String), Array.from(input, String));
          }
          default: return null;
        }
      };
      for (const t of data) {
        if (t.requires && t.requires.some((r) => typeof globalThis[r] === 'undefined')) { failures.push([t.description, 'missing ' + t.requires]); continue }
        if (t.transfer || /maxByteLength/.test(t.js)) continue; // documented absences
        let input;
        try { input = (0, eval)('(' + t.js + ')') } catch (e) { failures.push([t.description, 'build ' + e.message]); continue }
        let copy;
        try { copy = structuredClone(input) } catch (e) {
          const ok = t.throws === 'getterException' ? e !== null && !(e instanceof DOMException) : t.throws === e.name;
          if (!ok) failures.push([t.description, 'threw ' + e.name]);
          continue;
        }
        if (t.throws) { failures.push([t.description, 'did not throw']); continue }
        let ok;
        try {
          if (t.container === 'Array' && !(copy instanceof Array && copy !== input && copy.length === input.length)) ok = false;
          else if (t.container === 'Object' && !(copy instanceof Object && !Array.isArray(copy) && copy !== input)) ok = false;
          else if (t.container && ['primitive', 'Boolean', 'String', 'Number', 'BigInt', 'Date', 'RegExp', 'Error'].includes(t.compare)) {
            ok = Object.keys(input).every((x) => kindCheck(t.compare, t, copy[x], input[x]));
          } else {
            switch (t.compare) {
              case 'circular': ok = copy[t.prop] === copy; break;
              case 'identical': ok = copy[t.props[0]] === copy[t.props[1]]; break;
              case 'absent': ok = !(t.prop in copy); break;
              case 'writable': ok = copy[t.prop] === input[t.prop] && ((copy[t.prop] += ' baz'), copy[t.prop] === input[t.prop] + ' baz'); break;
              case 'configurable': ok = copy[t.prop] === input[t.prop] && (delete copy[t.prop], !('prop' in copy)); break;
              case 'ObjectPrototype': { const proto = { some: 'proto' }; Object.setPrototypeOf(copy, proto); ok = copy !== input && Object.getPrototypeOf(copy) === proto; break }
              case 'idbObject': {
                ok = copy !== input && typeof copy === 'object' && Object.getPrototypeOf(copy) === Object.getPrototypeOf(input);
                const keysEqual = () => same(Object.keys(copy), Object.keys(input)) && Object.keys(input).every((k) => Object.is(copy[k], input[k]));
                switch (t.check) {
                  case 'valueOf': ok = ok && Object.is(input.valueOf(), copy.valueOf()); break;
                  case 'toString': ok = ok && input.toString() === copy.toString(); break;
                  case 'uint8Bytes': ok = ok && same([...new Uint8Array(input)], [...new Uint8Array(copy)]); break;
                  case 'arrayEquals': ok = ok && input.length === copy.length && Array.from(input).every((v, i) => Object.is(v, copy[i])); break;
                  case 'mapKeysValues': ok = ok && same([...copy.keys()], [...input.keys()]) && same([...copy.values()], [...input.values()]); break;
                  case 'setValues': ok = ok && same([...copy.values()], [...input.values()]); break;
                  case 'errorNameMessage': ok = ok && copy.name === input.name && copy.message === input.message; break;
                  case 'suppressedError': ok = ok && copy.name === input.name && copy.error?.message === input.error?.message && copy.suppressed?.message === input.suppressed?.message; break;
                  case 'aggregateError': ok = ok && copy.name === input.name && copy.errors?.[0]?.message === input.errors?.[0]?.message; break;
                  case 'arrayAndKeys': ok = ok && Array.from(input).every((v, i) => Object.is(v, copy[i])) && keysEqual(); break;
                  case 'objectKeys': ok = ok && keysEqual(); break;
                  default: ok = false;
                }
                break;
              }
              default: ok = kindCheck(t.compare, t, copy, input);
            }
          }
        } catch (e) { ok = false; failures.push([t.description, 'check threw', String(e)]) }
        if (!ok) failures.push([t.description, t.compare, t.check ?? '']);
      }`);
    expect(failures).toEqual(CLONE_DEVIATIONS);
  });
});
