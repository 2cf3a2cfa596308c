// @ts-check
'use strict';
// The events of one HTTP session's SSE streams, kept so that a client that lost a stream resumes
// it with Last-Event-ID: the MCP SDK's `EventStore`, whose transport then sends each POST
// stream's priming event and replays what the client missed. The SDK ships no store of its own
// (its examples keep every event forever); this one is bounded. docs/mcp.md, "Resuming a stream".

/** What one kept event costs beyond its JSON, counted against the store's bytes. */
const EVENT_OVERHEAD = 64;

/** @typedef {import('@modelcontextprotocol/sdk/server/streamableHttp.js').EventStore} EventStoreShape */

/**
 * Bounded to `bytes` (each event's JSON and EVENT_OVERHEAD), the oldest dropped first; an id from
 * before a dropped event cannot resume (the client would miss answers silently). Event ids are
 * `SEQUENCE.STREAM`.
 * @implements {EventStoreShape}
 */
class BoundedEventStore {
  /** @param {number} bytes */
  constructor(bytes) {
    this.bytes = bytes;
    this.used = 0;
    /** The last sequence number given. */
    this.last = 0;
    /** The highest sequence number dropped (0: none). */
    this.dropped = 0;
    /** @type {Map<number, { stream: string, json: string | null, size: number }>} in sequence order */
    this.events = new Map();
  }

  /**
   * @param {string} stream
   * @param {object} message
   */
  async storeEvent(stream, message) {
    const seq = ++this.last;
    // The priming event (`{}`) is kept as an id only: there is nothing in it to replay.
    const json = Object.keys(message).length === 0 ? null : JSON.stringify(message);
    const size = EVENT_OVERHEAD + (json === null ? 0 : Buffer.byteLength(json));
    this.events.set(seq, { stream, json, size });
    this.used += size;
    for (const [s, e] of this.events) {
      if (this.used <= this.bytes) break;
      this.events.delete(s);
      this.used -= e.size;
      this.dropped = s;
    }
    return `${seq}.${stream}`;
  }

  /**
   * Why a stream cannot resume after `id`, or null when it can.
   * @param {string} id
   */
  refusal(id) {
    const seq = Number(/^(\d+)\./.exec(id)?.[1] ?? NaN);
    if (!(seq >= 1 && seq <= this.last)) return `Last-Event-ID ${JSON.stringify(id)} is not an event of this session. Open a new stream without Last-Event-ID`;
    if (seq < this.dropped) {
      return `Last-Event-ID ${JSON.stringify(id)} cannot be resumed: the events after it were dropped (a session keeps its last ${this.bytes} bytes of events). Open a new stream without Last-Event-ID; answers sent since are lost`;
    }
    return null;
  }

  /** @param {string} id */
  async getStreamIdForEventId(id) {
    return this.refusal(id) === null ? id.slice(id.indexOf('.') + 1) : undefined;
  }

  /**
   * @param {string} id
   * @param {{ send: (id: string, message: any) => Promise<void> }} sink
   */
  async replayEventsAfter(id, { send }) {
    if (this.refusal(id) !== null) throw new Error(/** @type {string} */ (this.refusal(id)));
    const after = Number(id.slice(0, id.indexOf('.')));
    const stream = id.slice(id.indexOf('.') + 1);
    for (const [seq, e] of this.events) {
      if (seq > after && e.stream === stream && e.json !== null) await send(`${seq}.${stream}`, JSON.parse(e.json));
    }
    return stream;
  }
}

module.exports = { BoundedEventStore };
