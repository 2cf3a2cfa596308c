// @ts-check
'use strict';
// Values cross to and from the sandbox with V8's own serializer, the one structuredClone uses.
// The plain Serializer (not v8.serialize's DefaultSerializer) writes typed arrays natively
// instead of as Node host objects, so the worker's V8 reads them without Node.

const { Serializer, Deserializer } = require('node:v8');
const { loadNative } = require('./native');
const { fault } = require('./errors');

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
  try {
    return d.readValue();
  } catch (e) {
    throw unreadable(e);
  }
}

/**
 * A value the worker sent that this Node cannot read: the worker's V8 (15.2) knows kinds of
 * value an older V8 does not (a Float16Array before Node 24; docs/runtime.md), and Node's own
 * text ("Unable to deserialize cloned data.") says neither that nor what to do.
 * @param {unknown} e
 */
function unreadable(e) {
  const why = (e instanceof Error ? e.message : String(e)).replace(/\.+$/, '');
  return new Error(`the host's Node (${process.version}) cannot read this value (${why}): the worker's V8 writes kinds of value an older V8 does not know, such as a Float16Array before Node 24`);
}

/**
 * The value-serializer format this Node writes: the varint after the header's 0xFF tag.
 * @returns {number}
 */
function nodeValueFormat() {
  const s = new Serializer();
  s.writeHeader();
  const bytes = s.releaseBuffer();
  let version = 0;
  for (let i = 1, shift = 0; i < bytes.length; i++, shift += 7) {
    version += (bytes[i] & 0x7f) * 2 ** shift;
    if (bytes[i] < 0x80) break;
  }
  return bytes[0] === 0xff ? version : -1;
}

/**
 * Tool answers cross to the worker in this Node's format, arguments and results come back in the
 * worker's, and each V8 refuses a format newer than its own (it never misreads one). So an
 * executor refuses to start unless this Node writes the worker's format: ExecutorError
 * VALUE_FORMAT_UNSUPPORTED, before any value crosses.
 */
function checkValueFormat() {
  const written = nodeValueFormat();
  const supported = loadNative().binding.valueFormatVersion();
  if (written === supported) return;
  throw fault('VALUE_FORMAT_UNSUPPORTED', { node: process.version, v8: process.versions.v8, written, supported });
}

module.exports = { serialize, deserialize, checkValueFormat, nodeValueFormat };
