// @ts-check
'use strict';
// The executor protocol's framing (docs/protocol.md): a message is JSON text, or, with a
// payload, a binary message of the header's length (u32, big-endian), the header and the
// payload. What the header must hold per message type is lib/remote/messages.js's.

/**
 * One message as received: its header, parsed, and the payload of a binary message.
 * @typedef {{ header: Record<string, unknown>, payload: Buffer | undefined }} Unframed
 */

/**
 * A message in the protocol's framing.
 * @param {Record<string, unknown>} header
 * @param {Uint8Array} [payload]
 * @returns {string | Buffer}
 */
function frame(header, payload) {
  const json = JSON.stringify(header);
  if (!payload) return json;
  const head = Buffer.from(json);
  const out = Buffer.allocUnsafe(4 + head.length + payload.byteLength);
  out.writeUInt32BE(head.length, 0);
  head.copy(out, 4);
  out.set(payload, 4 + head.length);
  return out;
}

/**
 * @param {unknown} data a message event's data
 * @returns {Unframed | string} the message, or what is wrong with it
 */
function unframe(data) {
  let json;
  /** @type {Buffer | undefined} */
  let payload;
  if (typeof data === 'string') json = data;
  else {
    const bytes = data instanceof ArrayBuffer ? Buffer.from(data) : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : null;
    if (!bytes) return `a message of type ${typeof data}`;
    if (bytes.length < 4) return `a binary message of ${bytes.length} bytes, shorter than its header length`;
    const length = bytes.readUInt32BE(0);
    if (length > bytes.length - 4) return `a binary message whose header length ${length} passes its end`;
    json = bytes.toString('utf8', 4, 4 + length);
    payload = bytes.subarray(4 + length);
  }
  let header;
  try {
    header = JSON.parse(json);
  } catch {
    return 'a message that is not JSON';
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) return 'a message that is not a JSON object';
  return { header, payload };
}

module.exports = { frame, unframe };
