// The catalog a testbed run has when its runner gives none: no named function sets and no
// connector, so a case's providers and connectors answer from data only (docs/testbed.md).
export const fns = {};
