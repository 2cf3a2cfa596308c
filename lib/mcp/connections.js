// @ts-check
'use strict';
// The HTTP gateway's connection caps, as the daemon's (crates/daemon; its bounds through
// `limits()`): connections open at once in all and from one address, counted from accept to
// close, and the time a connection may take to send its first request. The MCP SDK's transport
// sees requests, not connections, so these are the gateway's own. docs/mcp.md, "HTTP".

const net = require('node:net');

/** How long a connection may take to send a request head (ms), as the daemon's; then it is closed. */
const HEAD_TIMEOUT_MS = 10_000;

/**
 * The address a client is counted by, as the daemon counts it: an IPv4 address (an IPv4-mapped
 * IPv6 one too), or the /64 of an IPv6 address, which one host usually holds whole.
 * @param {string} address
 */
function clientKey(address) {
  if (!net.isIPv6(address)) return address;
  const bare = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped) return mapped[1];
  const [head, tail] = bare.split('::');
  /** @param {string | undefined} part */
  const groups = (part) => (part ? part.split(':').flatMap((g) => {
    if (!g.includes('.')) return [g];
    const [a, b, c, d] = g.split('.').map(Number);
    return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  }) : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${all.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/**
 * Connections are counted from accept to close; one that sends no request within
 * HEAD_TIMEOUT_MS is closed (Node's headersTimeout bounds a head begun, not one never begun). One
 * past a cap is not counted; it waits for its request (as long at most), whose answer is the
 * refusal `requested` gives. At most `capAll` wait so; past that a refused connection is closed at
 * once, unanswered.
 */
class ConnectionCaps {
  #capAll;
  #capPerAddress;
  #open = 0;
  #waiting = 0;
  /** @type {Map<string, number>} */
  #perAddress = new Map();
  /** @type {WeakMap<net.Socket, string>} */
  #refusals = new WeakMap();
  /** @type {WeakMap<net.Socket, NodeJS.Timeout>} the connections yet to send a request */
  #silent = new WeakMap();

  /** @param {{ capAll: number, capPerAddress: number }} caps */
  constructor({ capAll, capPerAddress }) {
    this.#capAll = capAll;
    this.#capPerAddress = capPerAddress;
  }

  /**
   * A connection accepted (the server's `connection` event).
   * @param {net.Socket} socket
   */
  admit(socket) {
    const timer = setTimeout(() => socket.destroy(), HEAD_TIMEOUT_MS).unref();
    this.#silent.set(socket, timer);
    socket.once('close', () => clearTimeout(timer));
    const address = clientKey(socket.remoteAddress ?? '');
    const from = this.#perAddress.get(address) ?? 0;
    const why = from >= this.#capPerAddress
      ? `${from} connections from ${address} are open, the most the gateway takes from one address (--max-connections-per-address)`
      : this.#open >= this.#capAll ? `${this.#open} connections are open, the most the gateway takes (--max-connections)` : null;
    if (why !== null) {
      if (this.#waiting >= this.#capAll) return void socket.destroy();
      this.#waiting++;
      this.#refusals.set(socket, `${why}. Close idle connections or reuse one.`);
      socket.once('close', () => void this.#waiting--);
      return;
    }
    this.#open++;
    this.#perAddress.set(address, from + 1);
    socket.once('close', () => {
      this.#open--;
      const left = (this.#perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.#perAddress.set(address, left);
      else this.#perAddress.delete(address);
    });
  }

  /**
   * A request came on `socket`: it is no longer silent. Why it is refused (its connection was
   * past a cap), or undefined.
   * @param {net.Socket} socket
   * @returns {string | undefined}
   */
  requested(socket) {
    clearTimeout(this.#silent.get(socket));
    return this.#refusals.get(socket);
  }
}

module.exports = { ConnectionCaps, clientKey, HEAD_TIMEOUT_MS };
