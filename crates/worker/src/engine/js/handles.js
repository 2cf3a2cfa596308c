// Retained handles (docs/handles.md): one invocation of a retained fetch handler. The worker
// (run/retained.rs) calls `invokeFetch` with the wire request; it builds a real Request, calls the
// handler, and answers with the parts of the real Response it got back, or why there are none.
// The check that the answer is a Response is a brand check against the class captured here, so a
// program that redefines `globalThis.Response` cannot pass something else off as one. It runs
// after the program has: built-ins through primordials.js's captures, promises followed with the
// captured `then` (primordials.js says why).
(function (load) {
'use strict';
const { describeThrow } = load('errors.js');
const { isError } = load('inspect.js');
const { consume, hasBody } = load('web/body.js');
const { headerList } = load('web/headers.js');
const { requestFromWire } = load('web/request.js');
const { isResponse, partsOf } = load('web/response.js');
const { PromiseCtor, PromiseResolve, ReflectApply, StringCtor, arrayPush, call, promiseThen } = load('primordials.js');

// The message an invocation rejects with: a thrown Error's own message, else the description
// an uncaught throw gets.
function messageOf(e) {
  if (isError(e)) {
    try { return StringCtor(e.message); } catch { return describeThrow(e); }
  }
  return describeThrow(e);
}

// The answer for `response`, whose body is `bytes`.
function answer(response, bytes) {
  const { status, statusText, headers: own } = partsOf(response);
  const list = headerList(own);
  const pairs = [];
  for (let i = 0; i < list.length; i++) call(arrayPush, pairs, [list[i][0], list[i][1]]);
  return ['ok', status, statusText, pairs, bytes];
}

// -> a promise of
//    ['ok', status, statusText, [[name, value], ...], Uint8Array | null]
//  | ['not-response']
//  | ['threw', message]
function invokeFetch(handler, thisArg, method, url, headers, body) {
  return new PromiseCtor((resolve, reject) => {
    const threw = (e) => {
      try {
        resolve(['threw', messageOf(e)]);
      } catch (x) {
        reject(x); // a throw whose description throws too: the invocation rejects
      }
    };
    let answered;
    try {
      const request = requestFromWire(method, url, headers, body);
      // The handler's value, awaited as `await` would take it.
      answered = PromiseResolve(ReflectApply(handler, thisArg, [request]));
    } catch (e) {
      threw(e);
      return;
    }
    call(promiseThen, answered, (value) => {
      if (!isResponse(value)) {
        resolve(['not-response']);
        return;
      }
      if (!hasBody(value)) {
        resolve(answer(value, null));
        return;
      }
      let read;
      try {
        read = consume(value, 'fetch handle');
      } catch (e) {
        threw(e);
        return;
      }
      call(promiseThen, read, (bytes) => resolve(answer(value, bytes)), threw);
    }, threw);
  });
}

return { invokeFetch };
})
