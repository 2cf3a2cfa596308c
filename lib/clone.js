// @ts-check
'use strict';
// Values cross to and from the sandbox in V8's value-serializer format, the one structuredClone
// uses. Where the host's runtime has V8's own serializer (Node, Deno) it writes and reads them:
// the plain Serializer (not v8.serialize's DefaultSerializer) writes typed arrays natively instead
// of as Node host objects, so the worker's V8 reads them without Node. Where it has none (Bun),
// lib/value-codec.js writes and reads the same format in JavaScript; CODEMODE_VALUE_CODEC=js
// makes any host use it (the suite runs it on Node beside V8's).

const v8 = require('node:v8');
const codec = require('./value-codec');
const { loadNative } = require('./native');
const { fault } = require('./errors');

/** Whether V8's own serializer is there to use (Bun's `node:v8` has none). */
const NATIVE = (() => {
  if (process.env.CODEMODE_VALUE_CODEC === 'js') return false;
  try {
    new v8.Serializer().writeHeader();
    return true;
  } catch {
    return false;
  }
})();

/**
 * @param {unknown} value
 * @returns {Buffer}
 */
function serialize(value) {
  if (!NATIVE) return codec.encode(value);
  const s = new v8.Serializer();
  s.writeHeader();
  s.writeValue(value);
  return s.releaseBuffer();
}

/**
 * @param {Uint8Array} buffer
 * @returns {unknown}
 */
function deserialize(buffer) {
  try {
    if (!NATIVE) return codec.decode(buffer);
    const d = new v8.Deserializer(buffer);
    d.readHeader();
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
  return new Error(`the host's ${NATIVE ? 'Node' : 'runtime'} (${process.version}) cannot read this value (${why}): the worker's V8 writes kinds of value an older V8 does not know, such as a Float16Array before Node 24`);
}

/**
 * The value-serializer format this Node writes: the varint after the header's 0xFF tag.
 * @returns {number}
 */
function nodeValueFormat() {
  if (!NATIVE) return codec.VERSION;
  const s = new v8.Serializer();
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
