// The differential case set: each runs through DynamicWorkerExecutor (workerd) and through
// CodemodeExecutor, and the outcomes must match unless the case names a row of
// docs/dialect-deviations.md (`deviation`). `section` points at the reference's behaviour notes.
const tools = [{ name: 'codemode', from: 'tools' }];

export const cases = [
  // §1.1 result key sets
  { id: 'success-keys', section: '1.1', code: 'async () => 1' },
  { id: 'throw-keys', section: '1.1', code: 'async () => { throw new Error("boom") }' },
  { id: 'refusal-keys', section: '1.1', code: 'async () => 1', providers: [{ name: 'console', from: 'empty' }] },
  // §1.2 legacy record form
  { id: 'legacy-record', section: '1.2', code: 'async () => codemode.add(2, 3)', legacy: 'tools' },
  // §1.3 prelude
  { id: 'prelude-precedence', section: '1.3', code: 'async () => [codemode.step(), await codemode.add(1, 1)]', providers: [{ name: 'codemode', from: 'tools', prelude: 'codemode.step = () => "from prelude"' }] },
  // §2.2 validation
  ...['__dispatchers', '__logs', 'WorkerEntrypoint', 'CodeExecutor', 'Promise', 'setTimeout', 'Error', 'console', '__stringifyForCodemode'].map((name) => ({
    id: `reserved-${name}`, section: '2.2', code: 'async () => 1', providers: [{ name, from: 'empty' }],
  })),
  { id: 'invalid-identifier', section: '2.2', code: 'async () => 1', providers: [{ name: 'my-ns', from: 'empty' }] },
  { id: 'duplicate-provider', section: '2.2', code: 'async () => 1', providers: [{ name: 'a', from: 'empty' }, { name: 'a', from: 'tools' }] },
  { id: 'connector-reserved', section: '2.2', code: 'async () => 1', connectors: [{ name: '__connectors' }] },
  { id: 'connector-invalid', section: '2.2', code: 'async () => 1', connectors: [{ name: '1conn' }] },
  { id: 'connector-clash', section: '2.2', code: 'async () => 1', providers: [{ name: 'x', from: 'empty' }], connectors: [{ name: 'x' }] },
  { id: 'provider-error-before-collision', section: '2.2', code: 'async () => 1', providers: [{ name: 'p', from: 'collide' }, { name: 'p', from: 'empty' }] },
  // §2.3 normalization
  { id: 'fence-js', section: '2.3', code: '```js\nasync () => "fenced"\n```' },
  { id: 'fence-ts-tag', section: '2.3', code: '```typescript\nasync () => "ts fence"\n```' },
  { id: 'fence-bare', section: '2.3', code: '```\nconst x = 2\nx * 21\n```' },
  { id: 'text-before-fence', section: '2.3', code: 'Here:\n```js\nasync () => 1\n```' },
  { id: 'whitespace-only', section: '2.3', code: '   \n ' },
  { id: 'sync-arrow', section: '2.3', code: '() => "sync arrow"' },
  { id: 'trailing-semicolon', section: '2.3', code: 'async () => 1;', deviation: 'D6' },
  { id: 'export-default-function', section: '2.3', code: 'export default async function () { return "default fn" }' },
  { id: 'export-default-class', section: '2.3', code: 'export default class { static x = 1 }', deviation: 'D5' },
  { id: 'export-default-arrow', section: '2.3', code: 'export default async () => "default arrow"' },
  { id: 'named-function', section: '2.3', code: 'async function main() { return "named" }' },
  { id: 'statement-list', section: '2.3', code: 'const a = 1;\nconst b = 2;\na + b;' },
  { id: 'statement-list-awaits', section: '2.3', code: 'const r = await codemode.add(20, 22);\nr', providers: tools },
  { id: 'ends-in-declaration', section: '2.3', code: 'const a = 1;' },
  { id: 'top-level-return', section: '2.3', code: 'return 7' },
  { id: 'typescript', section: '2.3', code: 'const x: number = 1;\nx', deviation: 'D3' },
  // §2.4 sanitizing
  { id: 'sanitize-dash', section: '2.4', code: 'async () => codemode.my_tool()', providers: tools },
  { id: 'sanitize-digit-dot', section: '2.4', code: 'async () => codemode._3d_render()', providers: tools },
  { id: 'sanitize-reserved-word', section: '2.4', code: 'async () => codemode.delete_()', providers: tools },
  { id: 'sanitize-strip', section: '2.4', code: 'async () => codemode.foobar()', providers: tools },
  { id: 'raw-name-not-found', section: '2.4', code: 'async () => codemode["my-tool"]()', providers: tools },
  { id: 'sanitize-collision', section: '2.4', code: 'async () => 1', providers: [{ name: 'p', from: 'collide' }] },
  // §2.5 tool calls and the JSON codec
  { id: 'spread-args', section: '2.5', code: 'async () => codemode.echo(1, "two", [3])', providers: tools },
  { id: 'no-args', section: '2.5', code: 'async () => codemode.count()', providers: tools },
  { id: 'undefined-arg', section: '2.5', code: 'async () => codemode.echo(undefined, 1)', providers: tools },
  { id: 'date-arg', section: '2.5', code: 'async () => codemode.echo(new Date(0))', providers: tools },
  { id: 'nan-infinity-args', section: '2.5', code: 'async () => codemode.echo(NaN, Infinity)', providers: tools },
  { id: 'undefined-property-arg', section: '2.5', code: 'async () => codemode.echo({ a: 1, u: undefined })', providers: tools },
  { id: 'tool-returns-undefined', section: '2.5', code: 'async () => [await codemode.undef()]', providers: tools },
  { id: 'tool-returns-map', section: '2.5', code: 'async () => codemode.map()', providers: tools },
  { id: 'tool-returns-date', section: '2.5', code: 'async () => codemode.date()', providers: tools },
  { id: 'tool-returns-bigint', section: '2.5', code: 'async () => codemode.big()', providers: tools },
  { id: 'tool-returns-nested', section: '2.5', code: 'async () => codemode.nested()', providers: tools },
  { id: 'tool-throws', section: '2.5', code: 'async () => codemode.fail()', providers: tools },
  { id: 'tool-throws-caught', section: '2.5', code: 'async () => { try { await codemode.fail() } catch (e) { return e.message } }', providers: tools },
  { id: 'tool-throws-string', section: '2.5', code: 'async () => { try { await codemode.failString() } catch (e) { return e.message } }', providers: tools },
  { id: 'tool-throws-object', section: '2.5', code: 'async () => { try { await codemode.failObject() } catch (e) { return e.message } }', providers: tools },
  { id: 'tool-throws-empty-error', section: '2.5', code: 'async () => [await codemode.failEmpty()]', providers: tools },
  { id: 'binary-uint8array', section: '2.5', code: 'async () => { const b = await codemode.bytes(); return [b instanceof Uint8Array, [...b]] }', providers: tools },
  { id: 'binary-arraybuffer', section: '2.5', code: 'async () => { const b = await codemode.buffer(); return [b instanceof ArrayBuffer, b.byteLength] }', providers: tools },
  { id: 'binary-view', section: '2.5', code: 'async () => { const b = await codemode.view(); return [b.constructor.name, b.length] }', providers: tools },
  { id: 'binary-arg', section: '2.5', code: 'async () => { const [b] = await codemode.echo(new Uint8Array([9, 8])); return [b.constructor.name, [...b]] }', providers: tools },
  { id: 'tool-not-found', section: '2.5', code: 'async () => codemode.nope()', providers: tools },
  { id: 'namespace-then', section: '2.5', code: 'async () => { try { await codemode; return "awaited" } catch (e) { return e.message } }', providers: tools, timeout: 1000, deviation: 'D8' },
  { id: 'undeclared-namespace', section: '2.5', code: 'async () => typeof billing', providers: tools },
  { id: 'two-providers', section: '2.5', code: 'async () => [await codemode.add(1, 2), (await billing.invoices("ada")).length]', providers: [{ name: 'codemode', from: 'tools' }, { name: 'billing', from: 'billing' }] },
  { id: 'parallel-calls', section: '2.5', code: 'async () => Promise.all([codemode.add(1, 1), codemode.add(2, 2), codemode.echo("x")])', providers: tools },
  // §2.7 console
  { id: 'console-formats', section: '2.7', code: 'async () => { console.log("a", { x: 1 }, [1, 2], undefined, 10n, null); console.log(); return 1 }' },
  { id: 'console-prefixes', section: '2.7', code: 'async () => { console.warn("careful"); console.error(new Error("e1")); console.log("plain") }' },
  { id: 'console-info-debug-not-captured', section: '2.7', code: 'async () => { console.info("info"); console.debug("debug"); console.log("kept") }' },
  { id: 'logs-on-throw', section: '2.7', code: 'async () => { console.log("before"); throw new Error("after") }' },
  // §2.8 connectors
  { id: 'connector-first-arg', section: '2.8', code: 'async () => conn.search({ q: 1 }, "ignored")', connectors: [{ name: 'conn' }] },
  { id: 'connector-throws', section: '2.8', code: 'async () => { try { await conn.explode() } catch (e) { return e.message } }', connectors: [{ name: 'conn' }] },
  { id: 'connector-pause', section: '2.8', code: 'async () => { await conn.pause(); return "unreachable" }', connectors: [{ name: 'conn' }] },
  { id: 'connector-error-control', section: '2.8', code: 'async () => { await conn.deny(); return "unreachable" }', connectors: [{ name: 'conn' }] },
  { id: 'connector-error-caught', section: '2.8', code: 'async () => { try { await conn.deny() } catch (e) { return ["caught", e] } }', connectors: [{ name: 'conn' }] },
  // §2.9 errors
  { id: 'reference-error', section: '2.9', code: 'async () => host.call()' },
  { id: 'type-error', section: '2.9', code: 'async () => { const x = null; return x.y }' },
  { id: 'throw-object-with-message', section: '2.9', code: 'async () => { throw { message: "object message" } }' },
  { id: 'throw-string', section: '2.9', code: 'async () => { throw "str" }', deviation: 'D2' },
  { id: 'throw-empty-error', section: '2.9', code: 'async () => { throw new Error("") }', deviation: 'D2' },
  { id: 'throw-null', section: '2.9', code: 'async () => { throw null }', deviation: 'D1' },
  { id: 'syntax-error', section: '2.9', code: 'async () => { return 1 +', deviation: 'D3' },
  { id: 'class-instance-result', section: '2.9', code: 'async () => { class Pt { constructor() { this.x = 1 } } return new Pt() }', deviation: 'D4' },
  { id: 'symbol-result', section: '2.9', code: 'async () => Symbol("s")', deviation: 'D4' },
  // §2.10 unawaited calls
  { id: 'unawaited-call', section: '2.10', code: 'async () => { codemode.slow(200); return "returned-early" }', providers: tools },
  // §2.11 timeout
  { id: 'timeout-tool-call', section: '2.11', code: 'async () => { console.log("started"); return await codemode.slow(3000) }', providers: tools, timeout: 500 },
  { id: 'timeout-never-settles', section: '2.11', code: 'async () => new Promise(() => {})', timeout: 500, deviation: 'D8' },
  { id: 'timeout-not-reached', section: '2.11', code: 'async () => codemode.slow(50)', providers: tools, timeout: 2000 },
  { id: 'sync-infinite-loop', section: '2.11', code: 'async () => { for (;;) {} }', timeout: 500, deviation: 'D7', referenceSkip: 'wedges workerd for good (dialect notes 2.11)' },
  // §2.12 result serialization
  { id: 'result-undefined', section: '2.12', code: 'async () => {}' },
  { id: 'result-null', section: '2.12', code: 'async () => null' },
  { id: 'result-date', section: '2.12', code: 'async () => new Date(86400000)' },
  { id: 'result-map-set', section: '2.12', code: 'async () => [new Map([["a", 1]]), new Set([1, 2])]' },
  { id: 'result-bigint', section: '2.12', code: 'async () => 2n ** 70n' },
  { id: 'result-special-numbers', section: '2.12', code: 'async () => [NaN, -Infinity, -0]' },
  { id: 'result-nested-undefined', section: '2.12', code: 'async () => ({ a: undefined, b: [undefined] })' },
  { id: 'result-sparse', section: '2.12', code: 'async () => { const a = [1]; a[3] = 4; return a }' },
  { id: 'result-circular', section: '2.12', code: 'async () => { const o = { name: "o" }; o.self = o; return o }' },
  { id: 'result-regexp-binary', section: '2.12', code: 'async () => [/a+/gi, new Uint8Array([1, 2]), new Uint8Array([3]).buffer]' },
  { id: 'result-error-returned', section: '2.12', code: 'async () => new RangeError("returned, not thrown")' },
  { id: 'result-function', section: '2.12', code: 'async () => ({ f: () => 1 })', deviation: 'D5' },
  // §2.13 network and the sandbox scope
  { id: 'fetch-blocked', section: '2.13', code: 'async () => { try { await fetch("https://example.com/") } catch (e) { return e.message } }', deviation: 'D13' },
  { id: 'no-process', section: '2.6', code: 'async () => typeof process', deviation: 'D12' },
  // modules
  // constructor options (`construct`: modules, timeout and globalOutbound go to both executors'
  // constructors; `globalOutbound: 'echo'` is a Fetcher answering with what it was sent)
  { id: 'ctor-modules-dynamic-import', section: '1.6', code: "async () => (await import('mylib.js')).answer", modules: { 'mylib.js': 'export const answer = 42' }, construct: true },
  { id: 'ctor-modules-missing', section: '1.6', code: "async () => { try { await import('other.js'); return 'loaded' } catch (e) { return e instanceof Error } }", modules: { 'mylib.js': 'export const answer = 42' }, construct: true },
  { id: 'ctor-timeout', section: '2.11', code: 'async () => { console.log("started"); return await codemode.slow(3000) }', providers: tools, timeout: 500, construct: true },
  { id: 'ctor-global-outbound-post', section: '2.13', code: 'async () => { const r = await fetch("https://echo.test/a?b=1", { method: "POST", headers: { "x-k": "v" }, body: "ping" }); return [r.status, r.headers.get("x-echo"), await r.json()] }', globalOutbound: 'echo', construct: true },
  { id: 'ctor-global-outbound-get', section: '2.13', code: 'async () => { const r = await fetch("https://echo.test/"); return (await r.json()).method }', globalOutbound: 'echo', construct: true },
  { id: 'imports-from-modules', section: '1.6', code: "import { total } from './lib.js'\n\nasync () => total(await billing.invoices('ada'))", providers: [{ name: 'billing', from: 'billing' }], modules: { './lib.js': 'export const total = (rows) => rows.length' }, deviation: 'D9' },
];
