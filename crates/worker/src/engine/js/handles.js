// Retained handles (docs/handles.md): one invocation of a retained fetch handler. The worker
// (run/retained.rs) calls `invokeFetch` with the wire request; it builds a real Request, calls the
// handler, and answers with the parts of the real Response it got back, or why there are none.
// The check that the answer is a Response is a brand check against the class captured here, so a
// program that redefines `globalThis.Response` cannot pass something else off as one.
(function (load) {
'use strict';
const { describeThrow } = load('errors.js');
const { isError } = load('inspect.js');
const { consume, hasBody } = load('web/body.js');
const { headerList } = load('web/headers.js');
const { Request } = load('web/request.js');
const { isResponse, partsOf } = load('web/response.js');
const { ReflectApply, StringCtor } = load('primordials.js');

// The message an invocation rejects with: a thrown Error's own message, else the description
// an uncaught throw gets.
function messageOf(e) {
  if (isError(e)) {
    try { return StringCtor(e.message); } catch { return describeThrow(e); }
  }
  return describeThrow(e);
}

// -> ['ok', status, statusText, [[name, value], ...], Uint8Array | null]
//  | ['not-response']
//  | ['threw', message]
async function invokeFetch(handler, thisArg, method, url, headers, body) {
  let value;
  try {
    const request = new Request(url, { method, headers, body: body === null ? undefined : body });
    value = await ReflectApply(handler, thisArg, [request]);
  } catch (e) {
    return ['threw', messageOf(e)];
  }
  if (!isResponse(value)) return ['not-response'];
  const response = value;
  let bytes = null;
  if (hasBody(response)) {
    try {
      bytes = await consume(response, 'fetch handle');
    } catch (e) {
      return ['threw', messageOf(e)];
    }
  }
  const { status, statusText, headers: own } = partsOf(response);
  const pairs = [];
  for (const [name, v] of headerList(own)) pairs.push([name, v]);
  return ['ok', status, statusText, pairs, bytes];
}

return { invokeFetch };
})
