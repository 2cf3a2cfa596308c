// fetch (Fetch Standard): the request goes to the host through the `fetch` native; the answer
// becomes a Response unless the request's signal aborted first.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { consume, hasBody } = load('web/body.js');
const { onAbort } = load('web/events.js');
const { headerList } = load('web/headers.js');
const { Request } = load('web/request.js');
const { responseFromWire } = load('web/response.js');
const { PromiseCtor, PromiseReject } = load('primordials.js');

function fetch(input, init = undefined) {
  let request;
  try {
    request = new Request(input, init);
  } catch (e) {
    return PromiseReject(e);
  }
  const signal = request.signal;
  if (signal.aborted) return PromiseReject(signal.reason);
  return consume(request, 'fetch').then((bytes) => {
    const body = hasBody(request) ? bytes : null;
    const pending = natives.fetch(request.method, request.url, headerList(request.headers).map(([k, v]) => [k, v]), body, request.redirect);
    return new PromiseCtor((resolve, reject) => {
      onAbort(signal, (reason) => reject(reason));
      pending.then((raw) => {
        if (signal.aborted) return;
        resolve(responseFromWire(raw, request.url));
      }, reject);
    });
  });
}

return { fetch };
})
