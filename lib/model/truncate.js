// @ts-check
'use strict';
// Cuts a tool call's result that is too large for the model down to a character limit while
// keeping its shape: long strings, arrays and objects are shortened level by level, each cut
// marked with MARKER. The output is always plain JSON data whose JSON text fits the limit.

const MARKER = '--- TRUNCATED ---';
const MAX_DEPTH = 32;
const LISTED_KEYS = 10; // names of left-out keys listed, at most
const LISTED_KEY_CHARS = 40;

/** (longest string, most array items or object keys), from lenient to strict. @type {Array<[number, number]>} */
const LEVELS = [[8192, 400], [4096, 200], [2048, 100], [1024, 50], [512, 25], [256, 12], [128, 6], [64, 3], [32, 1]];

/**
 * One level's limits and its running tally. `size` is a lower bound of the output's JSON length
 * so far; past `limit` the level cannot fit and is abandoned (`over`). `cut`: something was left out.
 * @typedef {{ maxString: number, maxItems: number, limit: number, size: number, over: boolean, cut: boolean }} Level
 */

/** @param {Level} level @param {number} chars */
function count(level, chars) {
  level.size += chars;
  if (level.size > level.limit) level.over = true;
}

/** @param {string} text @param {number} n @returns {number} n, moved back off the middle of a surrogate pair */
function boundary(text, n) {
  const code = text.charCodeAt(n - 1);
  return n > 0 && n < text.length && code >= 0xd800 && code <= 0xdbff ? n - 1 : n;
}

/** @param {string} text @param {Level} level @returns {string} */
function shortString(text, level) {
  if (text.length > level.maxString) {
    const n = boundary(text, level.maxString);
    text = `${text.slice(0, n)} ${MARKER} (${text.length - n} more characters)`;
    level.cut = true;
  }
  count(level, text.length + 2);
  return text;
}

/** @param {Level} level @param {string} what @returns {string} */
function mark(level, what) {
  level.cut = true;
  const text = `${MARKER} ${what}`;
  count(level, text.length + 2);
  return text;
}

/** @param {Record<string, unknown>} object @param {string} key @param {unknown} value */
function put(object, key, value) {
  // defineProperty, so a key named __proto__ stays an own property as in JSON.parse's output
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * A copy of `value` within the level's limits, as JSON.stringify would see it; undefined for
 * what JSON leaves out (undefined, functions, symbols).
 * @param {unknown} value
 * @param {number} depth
 * @param {Set<object>} ancestors
 * @param {Level} level
 * @returns {unknown}
 */
function shrink(value, depth, ancestors, level) {
  if (level.over) return null;
  switch (typeof value) {
    case 'string':
      return shortString(value, level);
    case 'bigint':
      return shortString(String(value), level);
    case 'number':
      count(level, 1);
      return Number.isFinite(value) ? value || 0 : null; // -0 and NaN as JSON writes them
    case 'boolean':
      count(level, 4);
      return value;
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) {
    count(level, 4);
    return null;
  }
  if (ancestors.has(value)) return mark(level, 'circular');
  if (depth >= MAX_DEPTH) return mark(level, 'nested too deeply');
  const toJSON = /** @type {{ toJSON?: unknown }} */ (value).toJSON;
  if (typeof toJSON === 'function') {
    const replaced = toJSON.call(value);
    if (replaced !== value) return shrink(replaced, depth + 1, ancestors, level);
  }
  ancestors.add(value);
  try {
    count(level, 2);
    if (Array.isArray(value)) {
      const kept = Math.min(value.length, level.maxItems);
      const out = [];
      for (let i = 0; i < kept && !level.over; i++) {
        // Every slot costs its comma, and a hole or undefined the `null` JSON writes for it: a
        // sparse array of 2^32 - 1 slots is over the limit after a few thousand, not 4 billion.
        const item = shrink(value[i], depth + 1, ancestors, level);
        count(level, item === undefined ? 5 : 1);
        out.push(item ?? null);
      }
      if (value.length > kept) out.push(mark(level, `${value.length - kept} more items`));
      return out;
    }
    const object = /** @type {Record<string, unknown>} */ (value);
    const keys = Object.keys(object);
    /** @type {Record<string, unknown>} */
    const out = {};
    let kept = 0;
    let i = 0;
    for (; i < keys.length && kept < level.maxItems && !level.over; i++) {
      const item = shrink(object[keys[i]], depth + 1, ancestors, level);
      if (item === undefined) continue;
      count(level, keys[i].length + 3);
      put(out, keys[i], item);
      kept++;
    }
    const rest = keys.slice(i);
    if (rest.length > 0) {
      const shown = Math.min(LISTED_KEYS, level.maxItems);
      const names = rest.slice(0, shown).map((k) => (k.length > LISTED_KEY_CHARS ? `${k.slice(0, LISTED_KEY_CHARS - 1)}…` : k));
      put(out, MARKER, mark(level, `${rest.length} more keys: ${names.join(', ')}${rest.length > shown ? ', …' : ''}`));
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

/**
 * The longest start of `text` that, followed by `suffix(characters left out)`, has a JSON
 * text of at most maxChars characters.
 * @param {string} text
 * @param {number} maxChars
 * @param {(left: number) => string} suffix
 * @returns {string}
 */
function cutToFit(text, maxChars, suffix) {
  /** @param {number} n */
  const piece = (n) => {
    const at = boundary(text, n);
    return text.slice(0, at) + suffix(text.length - at);
  };
  /** @param {string} s */
  const fits = (s) => JSON.stringify(s).length <= maxChars;
  if (!fits(piece(0))) return MARKER.slice(0, Math.max(0, maxChars - 2));
  // The JSON length of piece(n) never decreases as n grows, so a binary search finds the longest.
  let lo = 0;
  let hi = Math.min(text.length, maxChars);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(piece(mid))) lo = mid;
    else hi = mid - 1;
  }
  return piece(lo);
}

/** @param {unknown} value @returns {string} */
function safeString(value) {
  try {
    // An object's own String() may walk all of it (an array's join over 2^32 - 1 holes).
    if (typeof value === 'object' && value !== null) return Object.prototype.toString.call(value);
    return String(value);
  } catch {
    return '';
  }
}

/** @param {number} left */
const jsonSuffix = (left) => `… ${MARKER} (${left} more characters of JSON)`;

/**
 * The value unchanged (same reference) when its JSON text fits in maxChars characters, else a
 * shortened copy whose JSON text fits. Never throws.
 * @param {unknown} value
 * @param {number} maxChars
 * @returns {{ value: unknown, truncated: boolean }}
 */
function truncateResult(value, maxChars) {
  try {
    /** @type {string | undefined | null} null: JSON.stringify threw (a cycle, a BigInt, too deep) */
    let json;
    try {
      json = JSON.stringify(value);
    } catch {
      json = null;
    }
    if (json === undefined || (json !== null && json.length <= maxChars)) return { value, truncated: false };
    if (typeof value === 'string' || typeof value === 'bigint') {
      const text = String(value);
      if (JSON.stringify(text).length <= maxChars) return { value: text, truncated: false };
      return { value: cutToFit(text, maxChars, (left) => ` ${MARKER} (${left} more characters)`), truncated: true };
    }
    // A value JSON cannot write as is is first tried whole, with only its cycles and BigInts replaced.
    const levels = json === null ? [[Infinity, Infinity], ...LEVELS] : LEVELS;
    for (const [maxString, maxItems] of levels) {
      /** @type {Level} */
      const level = { maxString, maxItems, limit: maxChars, size: 0, over: false, cut: false };
      const out = shrink(value, 0, new Set(), level);
      if (level.over) continue;
      const text = JSON.stringify(out);
      if (text !== undefined && text.length <= maxChars) return { value: out, truncated: level.cut };
    }
    return { value: cutToFit(json ?? safeString(value), maxChars, jsonSuffix), truncated: true };
  } catch {
    // e.g. a getter or toJSON that throws
    return { value: cutToFit(safeString(value), maxChars, jsonSuffix), truncated: true };
  }
}

/** Characters of a result a model is shown by default (about 6,000 tokens): the MCP gateway's and codeModeTool's. */
const RESULT_CHARS = 24_000;
/** The console lines' share of what a model is shown (characters). */
const LOG_CHARS = 8_000;

/**
 * A run's console entries as a model reads them, `[level] message` a line, cut past LOG_CHARS
 * with a line saying how much was left out.
 * @param {Array<{ level: string, message: string }>} logs
 * @returns {string}
 */
function consoleText(logs) {
  const text = logs.map((l) => `[${l.level}] ${l.message}`).join('\n');
  return text.length > LOG_CHARS ? `${text.slice(0, LOG_CHARS)}\n… (${text.length - LOG_CHARS} more characters of console output)` : text;
}

/**
 * What a model is told of a result `truncateResult` cut to `max` characters.
 * @param {number} max
 */
const truncatedNote = (max) => `The result was longer than ${max} characters and was cut where it says TRUNCATED. Return less: a summary, a page, or only the needed fields.`;

module.exports = { MARKER, truncateResult, RESULT_CHARS, LOG_CHARS, consoleText, truncatedNote };
