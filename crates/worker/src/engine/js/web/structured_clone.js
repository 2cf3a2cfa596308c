// structuredClone (HTML): V8's serializer, the one every boundary of this executor uses.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { DOMException } = load('web/dom_exception.js');
const { TypeErrorCtor } = load('primordials.js');

function structuredClone(value, options = undefined) {
  if (arguments.length === 0) throw new TypeErrorCtor("Failed to execute 'structuredClone': 1 argument required, but only 0 present.");
  const transfer = options?.transfer;
  // A sequence, read through its own iterator, as WebIDL says.
  if (transfer !== undefined && [...transfer].length > 0) {
    throw new DOMException('structuredClone: transferring is not supported in this sandbox; the value is copied instead when `transfer` is omitted.', 'DataCloneError');
  }
  // A getter that throws while the value is read propagates its own exception.
  const cloned = natives.clone(value); // [ok, the copy or why not]
  if (!cloned[0]) throw new DOMException(cloned[1], 'DataCloneError');
  return cloned[1];
}

return { structuredClone };
})
