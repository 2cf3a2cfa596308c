// fetch (Fetch Standard): the request goes to the host through the `fetch` native; the answer
// becomes a Response unless the request's signal aborted first. The request is read through
// request.js's accessor and the promises followed with the captured `then` (primordials.js).
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { consume, hasBody } = load('web/body.js');
const { abortReason, isAborted, onAbort } = load('web/events.js');
const { headerList } = load('web/headers.js');
const { Request, requestParts } = load('web/request.js');
const { responseFromWire } = load('web/response.js');
const { PromiseCtor, PromiseReject, arrayPush, call, promiseThen } = load('primordials.js');

function fetch(input, init = undefined) {
  let request;
  try {
    request = new Request(input, init);
  } catch (e) {
    return PromiseReject(e);
  }
  const { url, method, headers, signal, redirect } = requestParts(request);
  if (isAborted(signal)) return PromiseReject(abortReason(signal));
  return new PromiseCtor((resolve, reject) => {
    call(promiseThen, consume(request, 'fetch'), (bytes) => {
      let pending;
      try {
        const body = hasBody(request) ? bytes : null;
        const list = headerList(headers);
        const pairs = [];
        for (let i = 0; i < list.length; i++) call(arrayPush, pairs, [list[i][0], list[i][1]]);
        pending = natives.fetch(method, url, pairs, body, redirect);
      } catch (e) {
        reject(e);
        return;
      }
      onAbort(signal, (reason) => reject(reason));
      call(promiseThen, pending, (raw) => {
        if (isAborted(signal)) return;
        try {
          resolve(responseFromWire(raw, url));
        } catch (e) {
          reject(e);
        }
      }, reject);
    }, reject);
  });
}

return { fetch };
})
