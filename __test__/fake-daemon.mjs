// A daemon scripted in the test, behind a WebSocket class for connect()'s `websocket` option: no
// socket is opened. connect.test.mjs and wire-messages.test.mjs script it.

const OPEN = 1;

/** A binary message: the header's length, the header, the payload. */
export function framed(header, payload) {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([length, json, payload]);
}

/**
 * A WebSocket class whose daemon side is `onMessage(header, socket)`: each client message's JSON
 * header (of a binary message too) is handed to it, and `socket.deliver(data)` delivers `data` to
 * the client as a message event. `sockets` lists every socket made; each keeps the `url` and
 * `protocols` it was made with and the close it got (`closed`).
 */
export function fakeDaemon(onMessage) {
  /** @type {FakeSocket[]} */
  const sockets = [];
  class FakeSocket {
    binaryType = 'blob';
    readyState = 0;
    /** @type {{ code: number, reason: string } | null} */
    closed = null;
    #listeners = new Map();
    /**
     * @param {string} url
     * @param {string | string[]} [protocols]
     */
    constructor(url, protocols) {
      this.url = url;
      this.protocols = protocols;
      sockets.push(this);
      setTimeout(() => {
        this.readyState = OPEN;
        this.#emit('open', {});
      }, 0);
    }
    addEventListener(type, fn) {
      if (!this.#listeners.has(type)) this.#listeners.set(type, []);
      this.#listeners.get(type).push(fn);
    }
    send(data) {
      onMessage(JSON.parse(typeof data === 'string' ? data : data.subarray(4, 4 + data.readUInt32BE(0)).toString()), this);
    }
    /** Delivers `data` to the client on a later tick, while the socket is open. */
    deliver(data) {
      setTimeout(() => this.readyState === OPEN && this.#emit('message', { data }), 0);
    }
    close(code = 1005, reason = '') {
      if (this.readyState !== OPEN) return;
      this.readyState = 3;
      this.closed = { code, reason };
      setTimeout(() => this.#emit('close', { code, reason }), 0);
    }
    #emit(type, event) {
      for (const fn of this.#listeners.get(type) ?? []) fn(event);
    }
  }
  return { FakeSocket, sockets };
}
