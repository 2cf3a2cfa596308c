// Declared absences: the names exist; the first use says why and what remains possible.
import { natives } from 'runtime:natives.js';
import { ObjectCreate, ProxyCtor, TypeErrorCtor } from 'runtime:primordials.js';

export class CompressionStream {
  constructor() {
    throw new TypeErrorCtor(natives.texts.compression);
  }
}
export class DecompressionStream {
  constructor() {
    throw new TypeErrorCtor(natives.texts.compression);
  }
}
export const caches = new ProxyCtor(ObjectCreate(null), {
  get(_, prop) {
    if (typeof prop === 'symbol') return undefined;
    throw new TypeErrorCtor(natives.texts.caches);
  },
  has() { throw new TypeErrorCtor(natives.texts.caches); },
});
