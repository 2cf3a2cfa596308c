'use strict';
// Values cross to and from the sandbox with V8's own serializer, the one structuredClone uses.
// The plain Serializer (not v8.serialize's DefaultSerializer) writes typed arrays natively
// instead of as Node host objects, so the worker's V8 reads them without Node.

const { Serializer, Deserializer } = require('node:v8');

function serialize(value) {
  const s = new Serializer();
  s.writeHeader();
  s.writeValue(value);
  return s.releaseBuffer();
}

function deserialize(buffer) {
  const d = new Deserializer(buffer);
  d.readHeader();
  return d.readValue();
}

module.exports = { serialize, deserialize };
