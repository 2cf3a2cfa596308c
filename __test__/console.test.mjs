import { describe, expect, it } from 'vitest';
import { executor, run } from './helpers.mjs';

const ex = executor();

/** The log entries [level, message] pairs describe, in order. */
const entries = (...pairs) => pairs.map(([level, message]) => ({ level, message }));

describe('console capture', () => {
  it('captures every level in order', async () => {
    const out = await run(ex, 'async () => { console.log("a"); console.info("b"); console.warn("c"); console.error("d"); console.debug("e"); console.log("f") }');
    expect(out.logs).toEqual(entries(['log', 'a'], ['info', 'b'], ['warn', 'c'], ['error', 'd'], ['debug', 'e'], ['log', 'f']));
  });

  it('renders objects readably, never [object Object]', async () => {
    const out = await run(ex, `async () => {
      console.log({ a: 1, b: 'x', c: [1, 2, { d: null }] });
      console.log(new Map([['k', 1]]), new Set([1, 2]));
      const c = { name: 'c' }; c.self = c; console.log(c);
      console.log([1, , 3], new Uint8Array([1, 2]), 10n, -0, undefined, Symbol('s'));
      console.log('%s has %d items', 'cart', 3, 'extra');
      console.log(new Date(0), /x/g, function named() {});
      console.log(new Error('bad').message);
    }`);
    const text = out.logs.map((l) => l.message);
    expect(text[0]).toBe("{ a: 1, b: 'x', c: [ 1, 2, { d: null } ] }");
    expect(text[1]).toBe("Map(1) { 'k' => 1 } Set(2) { 1, 2 }");
    expect(text[2]).toBe("{ name: 'c', self: [Circular] }");
    expect(text[3]).toBe('[ 1, <1 empty item>, 3 ] Uint8Array(2) [ 1, 2 ] 10n -0 undefined Symbol(s)');
    expect(text[4]).toBe('cart has 3 items extra');
    expect(text[5]).toBe('1970-01-01T00:00:00.000Z /x/g [Function: named]');
    expect(text[6]).toBe('bad');
    for (const t of text) expect(t).not.toContain('[object Object]');
  });

  it('keeps the logs of a failed run', async () => {
    const out = await run(ex, 'async () => { console.log("before"); throw new Error("x") }');
    expect(out.logs).toEqual([{ level: 'log', message: 'before' }]);
    expect(out.error.code).toBe('PROGRAM_ERROR');
  });

  it('supports group, count, assert and the rest of console', async () => {
    const out = await run(ex, 'async () => { console.group("g"); console.log("in"); console.groupEnd(); console.count(); console.count(); console.assert(false, "nope"); console.assert(true, "silent"); console.trace("t"); console.table([1]); console.dir({ a: 1 }) }');
    expect(out.logs).toEqual(
      entries(
        ['log', 'g'],
        ['log', '  in'],
        ['info', 'default: 1'],
        ['info', 'default: 2'],
        ['error', 'Assertion failed: nope'],
        ['debug', 'Trace: t'],
        ['log', '[ 1 ]'],
        ['log', '{ a: 1 }'],
      ),
    );
  });
});
