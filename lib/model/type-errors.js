// @ts-check
'use strict';
// The adapters' `typecheck` option (docs/typecheck.md): the compiler looked for when the option is
// given, not at the first run; and a `TYPE_ERROR`'s text, which lists its diagnostics as
// `- line L, column C: ...`, places in the program the executor was given, moved back into the
// code the model wrote by an adapter that wraps it (codeModeTool, the TanStack driver).

const { LISTED, listedPlace, needCompiler } = require('../typecheck');

/**
 * `message` with each listed place moved: `move` answers the place in the model's code, or a
 * text that says where instead (`at the end of the code`).
 * @param {string} message
 * @param {(line: number, column: number) => { line: number, column: number } | string} move
 */
function moveListedPlaces(message, move) {
  return message.replace(LISTED, (_, line, column) => {
    const to = move(Number(line), Number(column));
    return typeof to === 'string' ? `- ${to}:` : listedPlace(to);
  });
}

/**
 * Throws PEER_MISSING when the compiler a check needs (`typescript`, an optional peer the host
 * brings) is not installed, so an adapter given `typecheck` says so when it is made rather than
 * on each run.
 * @param {string} feature what asked for the check (`codeModeTool's typecheck`, ...)
 */
function needTypescript(feature) {
  needCompiler(feature);
}

module.exports = { moveListedPlaces, needTypescript };
