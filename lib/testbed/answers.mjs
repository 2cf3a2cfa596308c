// The host side of a testbed case, built from data: the provider functions and connector
// bindings both executors call, and the echo service a case's `globalOutbound: 'echo'` names.
// The same module runs inside the workerd host worker (for DynamicWorkerExecutor) and in Node
// (for CodemodeExecutor), and both build from the same wire form of the case (`wireCase`), so
// both executors call identical host code. No imports beyond the codec: it must bundle for
// workerd as it is.
import { decode, encode, unanswerable } from './codec.mjs';

/** The keys that make an object an answer form rather than a canned value. */
const FORMS = ['returns', 'throws', 'sequence'];

/** The form `answer` takes: `{ returns }`, `{ throws }`, `{ sequence }`, or null (a canned value). */
function formOf(answer) {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return null;
  if (Object.getPrototypeOf(answer) !== Object.prototype && Object.getPrototypeOf(answer) !== null) return null;
  const keys = Object.keys(answer);
  return keys.length === 1 && FORMS.includes(keys[0]) ? keys[0] : null;
}

/**
 * One answer as JSON: `{ r: <encoded value> }`, `{ t: 'message' }` or `{ s: [answers] }`.
 * Throws a TypeError naming `where` when the answer is not data.
 */
function wireAnswer(answer, where, inSequence = false) {
  const form = formOf(answer);
  if (form === 'throws') {
    if (typeof answer.throws !== 'string') throw new TypeError(`${where}: \`throws\` takes the error's message (a string)`);
    return { t: answer.throws };
  }
  if (form === 'sequence') {
    if (inSequence) throw new TypeError(`${where}: a sequence cannot hold another sequence`);
    if (!Array.isArray(answer.sequence)) throw new TypeError(`${where}: \`sequence\` takes an array of answers`);
    return { s: answer.sequence.map((a, i) => wireAnswer(a, `${where} answer ${i}`, true)) };
  }
  const value = form === 'returns' ? answer.returns : answer;
  const why = unanswerable(value);
  if (why) throw new TypeError(`${where}: ${why}; a canned answer must be a value both executors can receive (see docs/testbed.md)`);
  return { r: encode(value) };
}

/**
 * A case as it travels (to workerd as JSON, and the same form in Node): providers' and
 * connectors' answers encoded. Throws a TypeError for a case that is not data.
 */
export function wireCase(c) {
  const providers = c.providers?.map((p) => {
    if (!p.fns) return p;
    return { ...p, fns: Object.fromEntries(Object.entries(p.fns).map(([tool, a]) => [tool, wireAnswer(a, `case ${c.id}: ${p.name}.${tool}`)])) };
  });
  const connectors = c.connectors?.map((k) => {
    if (!k.tools) return k;
    return { ...k, tools: Object.fromEntries(Object.entries(k.tools).map(([m, a]) => [m, wireAnswer(a, `case ${c.id}: connector ${k.name}.${m}`)])) };
  });
  return JSON.parse(JSON.stringify({ ...c, ...(providers ? { providers } : {}), ...(connectors ? { connectors } : {}) }));
}

/** A function answering with one wired answer per call (a sequence in order). */
function answering(wired, name) {
  let calls = 0;
  return (/* args are not looked at: answers are data */) => {
    let a = wired;
    if (a.s) {
      a = a.s[calls++];
      if (!a) throw new Error(`${name}: no answer left in its sequence`);
    }
    if (a.t !== undefined) throw new Error(a.t);
    return decode(a.r);
  };
}

/**
 * Providers as a wired case describes them: `[{ name, fns: answers } | { name, from: catalog set },
 * prelude?]`, or `legacy: <catalog set>` for the record form.
 */
export function buildProviders(spec, catalog) {
  if (spec.legacy) return { ...catalogSet(catalog, spec.legacy) };
  return (spec.providers ?? []).map((p) => {
    const fns = p.fns
      ? Object.fromEntries(Object.entries(p.fns).map(([tool, a]) => {
        const answer = answering(a, `${p.name}.${tool}`);
        return [tool, async (...args) => answer(...args)];
      }))
      : { ...catalogSet(catalog, p.from) };
    return { name: p.name, fns, ...(p.prelude ? { prelude: p.prelude } : {}) };
  });
}

function catalogSet(catalog, name) {
  const set = catalog.fns?.[name];
  if (!set) throw new Error(`testbed: no function set ${JSON.stringify(name)} in the catalog`);
  return set;
}

/**
 * Connectors as a wired case describes them: `[{ name, tools: { method: answer } }]`, or
 * `[{ name }]` for the catalog's connector. `Base` is the class a binding extends (workerd's
 * RpcTarget inside workerd; a plain class in Node).
 */
export function buildConnectors(spec, catalog, Base) {
  return (spec.connectors ?? []).map((k) => {
    if (!k.tools) {
      if (typeof catalog.connector !== 'function') throw new Error(`testbed: connector ${k.name} has no \`tools\` and the catalog has no connector`);
      return { name: k.name, binding: catalog.connector(k) };
    }
    const table = Object.fromEntries(Object.entries(k.tools).map(([m, a]) => [m, answering(a, `${k.name}.${m}`)]));
    class DataConnector extends Base {
      async callTool(method) {
        if (!Object.hasOwn(table, method)) throw new Error(`${k.name}: no answer for ${method}`);
        return table[method]();
      }
    }
    return { name: k.name, binding: new DataConnector() };
  });
}

/** The host an echo request goes to. */
export const ECHO_HOST = 'echo.test';

/** The outbound service a case names as `globalOutbound: 'echo'`: answers with what it was sent. */
export async function echoFetch(request) {
  const body = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.text();
  const seen = { method: request.method, url: request.url, k: request.headers.get('x-k'), body };
  return new Response(JSON.stringify(seen), { status: 201, headers: { 'x-echo': 'yes', 'content-type': 'application/json' } });
}
