// @ts-check
'use strict';
// One `code` call: the program run on the executor with each upstream server as a provider
// global, each of its tool calls a `tools/call` on that server, the calls `--approve` names put
// to a person (through `decide`: elicitation.js), and the answer (its result cut structurally,
// its failure, its console lines). docs/mcp.md, "The answer" and "Approvals".

const { truncateResult, consoleText, truncatedNote } = require('../model/truncate');
const { render } = require('../errors');

/** @typedef {import('./upstream').Upstream} Upstream */
/** @typedef {import('./upstream').UpstreamTool} UpstreamTool */
/** @typedef {import('./options').ApproveRule} ApproveRule */
/** @typedef {import('./options').Executor} Executor */
/** @typedef {import('../../index').Outcome} Outcome */
/** @typedef {import('../../index').ProviderDeclaration} ProviderDeclaration */
/** A program's tool call. @typedef {{ provider: string, tool: string, args: unknown[] }} Call */
/** Whether a call may run, and why not. @typedef {{ approved: true } | { approved: false, reason: string }} Decision */
/** An answer of a tool of the gateway. @typedef {{ content: Array<{ type: 'text', text: string }>, isError: boolean }} Answer */
/**
 * One run's view of the tools: its providers, what each name meant at its start (per provider),
 * and the server tool each name was put to a person as.
 * @typedef {{ providers: ProviderDeclaration[], names: Map<string, Map<string, UpstreamTool>>,
 *   pinned: Map<string, string>, asked: number }} Run
 */

class Runner {
  #upstreams;
  #executor;
  #approve;
  #approvalTimeout;
  #maxResultChars;
  #tenant;
  #declarations;

  /**
   * @param {{ upstreams: Upstream[], executor: Executor, approve: ApproveRule[], approvalTimeout: number, maxResultChars: number, tenant?: string | undefined, declarations?: (() => string) | undefined }} options
   *   `tenant`: whom every program runs for (undefined: the executor's unnamed domain);
   *   `declarations`: with `typecheck`, the declarations each program is checked against before it
   *   runs (docs/typecheck.md), as they are at its start
   */
  constructor({ upstreams, executor, approve, approvalTimeout, maxResultChars, tenant, declarations }) {
    this.#upstreams = upstreams;
    this.#executor = executor;
    this.#approve = approve;
    this.#approvalTimeout = approvalTimeout;
    this.#maxResultChars = maxResultChars;
    this.#tenant = tenant;
    this.#declarations = declarations;
  }

  /**
   * Runs one program and answers the `code` call.
   * @param {string} code
   * @param {AbortSignal} signal the `code` call's
   * @param {(call: Call, run: Run) => Promise<Decision>} decide asks whether a call that needs a yes may run
   * @returns {Promise<Answer>}
   */
  async run(code, signal, decide) {
    const providers = this.#providers();
    // What each name meant when the run started: a tool list that changes during the run does
    // not move a name onto another tool. `pinned` holds what a person was asked about.
    /** @type {Run} */
    const run = {
      providers,
      names: new Map(this.#upstreams.map((u) => [u.spec.provider, new Map(u.byName)])),
      pinned: new Map(),
      asked: 0,
    };
    const gated = providers.some((p) => p.approve);
    /** @type {Outcome} */
    let outcome;
    try {
      outcome = await this.#executor.execute({
        code,
        providers,
        dispatch: (call) => this.#dispatch(call, run, signal),
        signal,
        ...(this.#tenant === undefined ? {} : { tenant: this.#tenant }),
        // A type error is the program's failure (TYPE_ERROR), answered as any other: nothing ran.
        ...(this.#declarations ? { declarations: this.#declarations(), typecheck: true } : {}),
        ...(gated ? { approval: { mode: 'callback', timeout: this.#approvalTimeout, decide: (call) => decide(call, run) } } : {}),
      });
    } catch (e) {
      const err = /** @type {{ code?: string, message?: string }} */ (e);
      return textAnswer(`The program could not be run (${err.code ?? 'ERROR'}): ${err.message}`, true);
    }
    return this.#answer(outcome);
  }

  /**
   * Whether `--approve` names `tool` of `up`.
   * @param {Upstream} up
   * @param {UpstreamTool} tool
   */
  #needsYes(up, tool) {
    return this.#approve.some((r) => r.server === up.spec.name && (r.tool === '*' || r.tool === tool.name || r.tool === tool.original));
  }

  /** The run's providers, from the tools known now. */
  #providers() {
    return this.#upstreams.map((u) => {
      const known = u.tools.length > 0;
      /** @type {ProviderDeclaration} */
      const p = { name: u.spec.provider, tools: known ? u.tools.map((t) => t.name) : '*' };
      const rules = this.#approve.filter((a) => a.server === u.spec.name);
      if (rules.length > 0) {
        // A server whose tools are not known yet (not connected) may come up during the run:
        // every call to it then waits for a yes.
        if (!known || rules.some((r) => r.tool === '*')) p.approve = true;
        else {
          const names = u.tools.filter((t) => this.#needsYes(u, t)).map((t) => t.name);
          if (names.length > 0) p.approve = names;
        }
      }
      return p;
    });
  }

  /**
   * A program's tool call: `tools/call` on its upstream.
   * @param {Call} call
   * @param {Run} run
   * @param {AbortSignal} [signal]
   */
  async #dispatch(call, run, signal) {
    const up = this.#upstreams.find((u) => u.spec.provider === call.provider);
    if (!up) throw new Error(render('TOOL_NOT_FOUND', { tool: `${call.provider}.${call.tool}` }));
    // A server unknown at the start has no names of the run's: they resolve now.
    const names = run.names.get(call.provider);
    const tool = names && names.size > 0 ? names.get(call.tool) : up.byName.get(call.tool);
    if (!tool) {
      if (!up.connected) throw new Error(render('UPSTREAM_LOST', { server: up.spec.name, tool: call.tool, detail: up.down }));
      throw new Error(render('TOOL_NOT_FOUND', { tool: `${call.provider}.${call.tool}` }));
    }
    // The tool list may have changed since the run started (the names, or the server came up):
    // a call the run did not put to a person, to a tool that needs a yes, is refused.
    const gate = run.providers.find((p) => p.name === call.provider)?.approve;
    const asked = run.pinned.get(`${call.provider}.${call.tool}`);
    if ((this.#needsYes(up, tool) && gate !== true && !(gate ?? []).includes(call.tool)) || (asked !== undefined && asked !== tool.original)) {
      throw new Error(render('APPROVAL_DENIED', { provider: call.provider, tool: call.tool, reason: 'the server changed its tool list during this run, so the call was not put to a person; run the program again' }));
    }
    const input = callInput(call);
    if (!input) throw new TypeError(notOneObject(call));
    const result = await up.call(tool, input, signal);
    const content = Array.isArray(result.content) ? result.content : [];
    const allText = content.every((/** @type {any} */ c) => c.type === 'text');
    const text = content.filter((/** @type {any} */ c) => c.type === 'text').map((/** @type {any} */ c) => c.text).join('\n');
    if (result.isError) throw new Error(text || `${call.provider}.${call.tool} reported an error`);
    if (result.structuredContent !== undefined) return result.structuredContent;
    return allText ? text : content;
  }

  /**
   * The answer to a `code` call: the result (cut structurally), the program's failure, and
   * its console lines.
   * @param {Outcome} outcome
   */
  #answer(outcome) {
    /** @type {string[]} */
    const parts = [];
    const max = this.#maxResultChars;
    if (outcome.error) {
      parts.push(`The program failed (${outcome.error.code}): ${clip(outcome.error.message, max)}`);
    } else if (outcome.result === undefined) {
      parts.push('The program returned nothing (undefined).');
    } else {
      const { value, truncated } = truncateResult(outcome.result, max);
      if (typeof value === 'string') parts.push(value);
      else {
        const pretty = JSON.stringify(value, null, 2);
        parts.push(pretty.length <= max ? pretty : JSON.stringify(value));
      }
      if (truncated) parts.push(`(${truncatedNote(max)})`);
    }
    if (outcome.logs.length > 0) {
      parts.push(`Console:\n${consoleText(outcome.logs)}`);
    }
    return textAnswer(parts.join('\n\n'), Boolean(outcome.error));
  }
}

/**
 * A call's input when it is one plain object (or nothing), else null.
 * @param {{ args: unknown[] }} call
 * @returns {Record<string, unknown> | null}
 */
function callInput(call) {
  const input = call.args[0] ?? {};
  if (typeof input !== 'object' || input === null || Array.isArray(input) || call.args.length > 1) return null;
  return /** @type {Record<string, unknown>} */ (input);
}

/** @param {{ provider: string, tool: string }} call */
function notOneObject(call) {
  return `${call.provider}.${call.tool} takes one object argument (its input), e.g. ${call.provider}.${call.tool}({ ... })`;
}

/**
 * `text` cut to its first `max` characters, saying how many more there were.
 * @param {string} text
 * @param {number} max
 */
function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/**
 * @param {string} text
 * @param {boolean} isError
 * @returns {Answer}
 */
function textAnswer(text, isError) {
  return { content: [{ type: 'text', text }], isError };
}

module.exports = { Runner, callInput, notOneObject, clip, textAnswer };
