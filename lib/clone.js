// @ts-check
'use strict';
// Values cross to and from the sandbox with V8's own serializer, the one structuredClone uses.
// The plain Serializer (not v8.serialize's DefaultSerializer) writes typed arrays natively
// instead of as Node host objects, so the worker's V8 reads them without Node.

const { Serializer, Deserializer } = require('node:v8');

/**
 * @param {unknown} value
 * @returns {Buffer}
 */
function serialize(value) {
  const s = new Serializer();
  s.writeHeader();
  s.writeValue(value);
  return s.releaseBuffer();
}

/**
 * @param {Uint8Array} buffer
 * @returns {unknown}
 */
function deserialize(buffer) {
  const d = new Deserializer(buffer);
  d.readHeader();
  return d.readValue();
}

module.exports = { serialize, deserialize };
