// DOMException (WebIDL), with the legacy code constants.
(function (load) {
'use strict';
const { ErrorCtor, ObjectDefineProperty, ObjectEntries, StringCtor, SymbolToStringTag } = load('primordials.js');

const LEGACY_CODES = {
  IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
  NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
  SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
  TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
  URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24,
  DataCloneError: 25,
};

class DOMException extends ErrorCtor {
  #name;
  constructor(message = '', name = 'Error') {
    super(StringCtor(message));
    this.#name = StringCtor(name);
  }
  get name() {
    return this.#name;
  }
  get code() {
    return LEGACY_CODES[this.#name] ?? 0;
  }
}
ObjectDefineProperty(DOMException.prototype, SymbolToStringTag, { value: 'DOMException', configurable: true });
for (const [name, code] of ObjectEntries(LEGACY_CODES)) {
  const constant = name.replace(/Error$/, '').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() + '_ERR';
  ObjectDefineProperty(DOMException, constant, { value: code, enumerable: true });
  ObjectDefineProperty(DOMException.prototype, constant, { value: code, enumerable: true });
}

return { DOMException };
})
