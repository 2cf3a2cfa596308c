// @ts-check
'use strict';
// One run's tool calls on the host (docs/bounds.md, "Dispatch"): each call's arguments stay
// serialized until its dispatch starts; a call that would take the run's unanswered calls past
// their byte budget rejects inside the sandbox at once (TOOL_BYTES_IN_FLIGHT), and one past the
// dispatch cap waits its turn, in arrival order. A dispatch's value is serialized and held to the
// payload bound before it is sent. lib/executor-core.js makes one per run, at its first call,
// the same in process and over connect().

const { isDenial, render } = require('./errors');
const { serialize, deserialize } = require('./clone');
const tracing = require('./tracing');

/**
 * @typedef {import('../index').Dispatch} Dispatch
 * @typedef {import('../native').NativeToolCall} NativeToolCall
 * @typedef {import('./executor-core').Transport} Transport
 *
 * What a run's calls are held to: crates/protocol `limits`, through the addon.
 * @typedef {object} Bounds
 * @property {number} toolPayloadBytes the serialized size of an answer (and of the arguments,
 *   which the worker checks)
 * @property {number} toolBytesInFlight the argument bytes a run's unanswered calls may hold
 * @property {number} dispatches the dispatches a run may have running at once
 */

class ToolCalls {
  #bounds;
  #transport;
  #dispatch;
  #trace;
  #live;
  /** serialized argument bytes of the calls not yet answered, running or waiting */
  #held = 0;
  /** dispatches running */
  #active = 0;
  /** @type {(NativeToolCall | undefined)[]} calls past the dispatch cap, still serialized, oldest first */
  #waiting = [];
  /** the index of the oldest in #waiting */
  #next = 0;
  /** waiting calls are being started (no nested start) */
  #pumping = false;

  /**
   * @param {Bounds} bounds
   * @param {Pick<Transport, 'resolveToolCall' | 'rejectToolCall' | 'denyToolCall'>} transport
   * @param {Dispatch} dispatch the run's (a run with providers has one: validate.request)
   * @param {import('./tracing').RunTrace | null} trace
   * @param {() => boolean} live whether the run is still in flight and not aborted
   */
  constructor(bounds, transport, dispatch, trace, live) {
    this.#bounds = bounds;
    this.#transport = transport;
    this.#dispatch = dispatch;
    this.#trace = trace;
    this.#live = live;
  }

  /**
   * A call of the run: rejected at once past the byte budget, else started or queued.
   * @param {NativeToolCall} call
   */
  offer(call) {
    const size = call.args.length;
    const limit = this.#bounds.toolBytesInFlight;
    if (this.#held + size > limit) {
      const span = tracing.startToolCall(this.#trace, call.provider, call.tool);
      const text = render('TOOL_BYTES_IN_FLIGHT', { provider: call.provider, tool: call.tool, size: String(size), held: String(this.#held), limit: String(limit) });
      tracing.endChild(span, text);
      this.#transport.rejectToolCall(call, text);
      return;
    }
    this.#held += size;
    this.#waiting.push(call);
    this.#pump();
  }

  /**
   * Forgets the calls still waiting for a dispatch slot: the run is over (its worker drops
   * answers to it), so they are never dispatched or answered.
   */
  drop() {
    for (let i = this.#next; i < this.#waiting.length; i++) this.#held -= /** @type {NativeToolCall} */ (this.#waiting[i]).args.length;
    this.#waiting = [];
    this.#next = 0;
  }

  /**
   * Starts waiting calls while fewer dispatches than the cap run. Not re-entered: a dispatch
   * that settles at once frees its slot for this loop to fill.
   */
  #pump() {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#active < this.#bounds.dispatches && this.#next < this.#waiting.length) {
        if (!this.#live()) {
          this.drop();
          return;
        }
        const call = /** @type {NativeToolCall} */ (this.#waiting[this.#next]);
        this.#waiting[this.#next++] = undefined;
        if (this.#next > 1024 && this.#next * 2 > this.#waiting.length) {
          this.#waiting.splice(0, this.#next);
          this.#next = 0;
        }
        this.#active++;
        this.#start(call);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /**
   * Deserializes a call's arguments and answers it with the run's dispatch; its bytes and its
   * slot are given back once the answer has gone.
   * @param {NativeToolCall} call
   */
  #start(call) {
    const transport = this.#transport;
    const span = tracing.startToolCall(this.#trace, call.provider, call.tool);
    let settled = false;
    const release = () => {
      if (settled) return;
      settled = true;
      this.#held -= call.args.length;
      this.#active--;
      this.#pump();
    };
    /** @param {unknown} e */
    const fail = (e) => {
      tracing.endChild(span, e);
      try {
        if (isDenial(e)) transport.denyToolCall(call, /** @type {Error} */ (e).message);
        else transport.rejectToolCall(call, e instanceof Error ? e.message : String(e));
      } finally {
        release();
      }
    };
    /** @param {unknown} value */
    const succeed = (value) => {
      let bytes;
      try {
        bytes = serialize(value);
      } catch (e) {
        const detail = e instanceof Error ? e.message : String(e);
        return fail(render('TOOL_RESULT_NOT_CLONEABLE', { provider: call.provider, tool: call.tool, detail }));
      }
      const limit = this.#bounds.toolPayloadBytes;
      if (bytes.length > limit) {
        return fail(render('TOOL_PAYLOAD_TOO_LARGE', { what: 'answer', provider: call.provider, tool: call.tool, size: bytes.length, limit }));
      }
      tracing.endChild(span, undefined);
      try {
        transport.resolveToolCall(call, bytes);
      } finally {
        release();
      }
    };
    let returned;
    try {
      const args = /** @type {unknown[]} */ (deserialize(call.args)); // the worker sends the arguments array
      const request = { provider: call.provider, tool: call.tool, args };
      returned = tracing.within(span, () => this.#dispatch(request));
    } catch (e) {
      return fail(e);
    }
    if (returned !== null && typeof returned === 'object' && typeof /** @type {{ then?: unknown }} */ (returned).then === 'function') {
      Promise.resolve(returned).then(succeed, fail);
    } else {
      succeed(returned);
    }
  }
}

module.exports = { ToolCalls };
