import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const ex = executor();

// Each case: source of an expression built inside the sandbox, and the same value built here.
// The sandbox's copy must equal what Node's own structuredClone makes of the host's value.
const cases = [
  ['undefined', 'undefined', undefined],
  ['null', 'null', null],
  ['NaN', 'NaN', NaN],
  ['-0', '-0', -0],
  ['Infinity', '[Infinity, -Infinity]', [Infinity, -Infinity]],
  ['BigInt', '2n ** 70n', 2n ** 70n],
  ['Date', 'new Date(1700000000000)', new Date(1700000000000)],
  ['RegExp', '/a+b/gi', /a+b/gi],
  ['Map', 'new Map([[1, "a"], ["k", { x: 1 }]])', new Map([[1, 'a'], ['k', { x: 1 }]])],
  ['Set', 'new Set([1, "two", 3n])', new Set([1, 'two', 3n])],
  ['ArrayBuffer', 'new Uint8Array([1, 2, 3]).buffer', new Uint8Array([1, 2, 3]).buffer],
  ['Int8Array', 'new Int8Array([-1, 2])', new Int8Array([-1, 2])],
  ['Uint8Array', 'new Uint8Array([255, 0])', new Uint8Array([255, 0])],
  ['Uint8ClampedArray', 'new Uint8ClampedArray([300, -5])', new Uint8ClampedArray([300, -5])],
  ['Int16Array', 'new Int16Array([-300])', new Int16Array([-300])],
  ['Uint16Array', 'new Uint16Array([65535])', new Uint16Array([65535])],
  ['Int32Array', 'new Int32Array([-1e9])', new Int32Array([-1e9])],
  ['Uint32Array', 'new Uint32Array([4e9])', new Uint32Array([4e9])],
  ['Float32Array', 'new Float32Array([1.5, NaN])', new Float32Array([1.5, NaN])],
  ['Float64Array', 'new Float64Array([Math.PI])', new Float64Array([Math.PI])],
  ['BigInt64Array', 'new BigInt64Array([-5n])', new BigInt64Array([-5n])],
  ['BigUint64Array', 'new BigUint64Array([5n])', new BigUint64Array([5n])],
  ['DataView', 'new DataView(new Uint8Array([9, 8]).buffer, 1)', new DataView(new Uint8Array([9, 8]).buffer, 1)],
  ['sparse array', '(() => { const a = [1]; a[4] = 5; return a })()', (() => { const a = [1]; a[4] = 5; return a; })()],
  ['nested', '({ a: [{ b: new Map([["c", new Set([1])]]) }] })', { a: [{ b: new Map([['c', new Set([1])]]) }] }],
  ['boxed primitives', '[new Number(3), new String("s"), new Boolean(false)]', [new Number(3), new String('s'), new Boolean(false)]],
];

function expectSameAsStructuredClone(actual, hostValue) {
  const expected = structuredClone(hostValue);
  expect(actual).toStrictEqual(expected);
  if (Object.is(hostValue, -0)) expect(Object.is(actual, -0)).toBe(true);
}

describe('values cross with structuredClone semantics', () => {
  for (const [name, source, hostValue] of cases) {
    it(`result: ${name}`, async () => {
      const out = await run(ex, `async () => (${source})`);
      expect(out.error).toBeUndefined();
      expectSameAsStructuredClone(out.result, hostValue);
    });
  }

  it('tool arguments and returns keep every type, both ways', async () => {
    const seen = [];
    const out = await run(ex, `async () => { const back = []; for (const v of [${cases.map((c) => c[1]).join(', ')}]) back.push(await echo.v(v)); return back }`, {
      providers: [{ name: 'echo', tools: ['v'] }],
      dispatch: ({ args: [v] }) => {
        seen.push(v);
        return v;
      },
    });
    expect(out.error).toBeUndefined();
    cases.forEach(([, , hostValue], i) => {
      expectSameAsStructuredClone(seen[i], hostValue);
      expectSameAsStructuredClone(out.result[i], hostValue);
    });
  });

  it('keeps Error name and message', async () => {
    const out = await run(ex, 'async () => [new TypeError("bad type"), new RangeError("far")]');
    expect(out.result[0]).toBeInstanceOf(TypeError);
    expect(out.result[0].message).toBe('bad type');
    expect(out.result[1].name).toBe('RangeError');
    expect(out.result[1].message).toBe('far');
  });

  it('keeps cycles and shared references', async () => {
    const out = await run(ex, 'async () => { const a = { name: "a" }; a.self = a; const shared = [1]; return { a, x: shared, y: shared } }');
    expect(out.result.a.self).toBe(out.result.a);
    expect(out.result.x).toBe(out.result.y);
  });

  it('gives a declared program failure for functions and symbols, never a crash', async () => {
    for (const source of ['() => 1', 'Symbol("s")', '{ f() {} }', '[1, Symbol.iterator]']) {
      const out = await run(ex, `async () => (${source})`);
      expect(out.error?.code, source).toBe('RESULT_NOT_CLONEABLE');
      expect(out.error.message).toContain('Return plain data');
    }
    expect((await run(ex, 'async () => 1')).result).toBe(1);
  });
});
