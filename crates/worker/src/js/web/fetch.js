// fetch (Fetch Standard): the request goes to the host through the `fetch` native; the answer
// becomes a Response unless the request's signal aborted first.
import { natives } from 'runtime:natives.js';
import { consume, hasBody } from 'runtime:web/body.js';
import { onAbort } from 'runtime:web/events.js';
import { headerList } from 'runtime:web/headers.js';
import { Request } from 'runtime:web/request.js';
import { responseFromWire } from 'runtime:web/response.js';
import { PromiseCtor, PromiseReject } from 'runtime:primordials.js';

export function fetch(input, init = undefined) {
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
    const pending = natives.fetch(request.method, request.url, headerList(request.headers).map(([k, v]) => [k, v]), body);
    return new PromiseCtor((resolve, reject) => {
      onAbort(signal, (reason) => reject(reason));
      pending.then((raw) => {
        if (signal.aborted) return;
        resolve(responseFromWire(raw, request.url));
      }, reject);
    });
  });
}
