// @ts-check
'use strict';
// Which Node majors the package supports, and the one warning it prints on an older one.

/** The Node majors the package is tested on and supports (README, "Node versions"). */
const SUPPORTED_NODE_MAJORS = [22, 24, 26];

/** The code of the warning: `node --disable-warning=CODEMODE_NODE_EOL` silences it. */
const NODE_EOL_WARNING = 'CODEMODE_NODE_EOL';

let warned = false;

/**
 * On a Node older than 22 (20 is past its end of life since April 2026), emits one process
 * warning per process, with code `CODEMODE_NODE_EOL`: the package still runs there, but the
 * Node gets no security fixes and the package is no longer tested on it. Nothing on 22 and newer.
 */
function warnIfUnsupportedNode() {
  if (warned) return;
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= SUPPORTED_NODE_MAJORS[0]) return;
  warned = true;
  process.emitWarning(
    `Node ${process.version} is past its end of life and gets no security fixes. ` +
      `@supolka/codemode-executor still runs on it but supports Node ${SUPPORTED_NODE_MAJORS.slice(0, -1).join(', ')} and ${SUPPORTED_NODE_MAJORS.at(-1)}: upgrade to one of them ` +
      `(the AI SDK, ai@7, already requires Node 22). Silence with --disable-warning=${NODE_EOL_WARNING}.`,
    { code: NODE_EOL_WARNING },
  );
}

module.exports = { SUPPORTED_NODE_MAJORS, NODE_EOL_WARNING, warnIfUnsupportedNode };
