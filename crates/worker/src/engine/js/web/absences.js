// Declared absences: the names exist; the first use says why and what remains possible.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { ObjectCreate, ProxyCtor, TypeErrorCtor } = load('primordials.js');

class CompressionStream {
  constructor() {
    throw new TypeErrorCtor(natives.renderFailure('COMPRESSION_UNAVAILABLE'));
  }
}
class DecompressionStream {
  constructor() {
    throw new TypeErrorCtor(natives.renderFailure('COMPRESSION_UNAVAILABLE'));
  }
}
const caches = new ProxyCtor(ObjectCreate(null), {
  get(_, prop) {
    if (typeof prop === 'symbol') return undefined;
    throw new TypeErrorCtor(natives.renderFailure('CACHES_UNAVAILABLE'));
  },
  has() { throw new TypeErrorCtor(natives.renderFailure('CACHES_UNAVAILABLE')); },
});

return { CompressionStream, DecompressionStream, caches };
})
