// atob, btoa (HTML, forgiving-base64). Built-in methods through primordials.js's captures
// (primordials.js says why).
(function (load) {
'use strict';
const { DOMException } = load('web/dom_exception.js');
const {
  MapCtor, StringCtor, StringFromCharCode, TypeErrorCtor, call, mapGet, regexpExec, replaceMatches, stringCharCodeAt,
} = load('primordials.js');

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_INDEX = new MapCtor([...B64].map((c, i) => [c, i]));
function btoa(data) {
  if (arguments.length === 0) throw new TypeErrorCtor("Failed to execute 'btoa': 1 argument required, but only 0 present.");
  const s = StringCtor(data);
  let out = '';
  for (let i = 0; i < s.length; i += 3) {
    const a = call(stringCharCodeAt, s, i), b = call(stringCharCodeAt, s, i + 1), c = call(stringCharCodeAt, s, i + 2);
    if (a > 255 || b > 255 || c > 255) {
      throw new DOMException("Failed to execute 'btoa': The string to be encoded contains characters outside of the Latin1 range.", 'InvalidCharacterError');
    }
    const n = (a << 16) | ((b || 0) << 8) | (c || 0);
    out += B64[n >> 18] + B64[(n >> 12) & 63] + (i + 1 < s.length ? B64[(n >> 6) & 63] : '=') + (i + 2 < s.length ? B64[n & 63] : '=');
  }
  return out;
}
const ASCII_WHITESPACE = /[\t\n\f\r ]/g;
const PADDING = /={1,2}$/;
const NOT_BASE64 = /[^A-Za-z0-9+/]/;
function atob(data) {
  if (arguments.length === 0) throw new TypeErrorCtor("Failed to execute 'atob': 1 argument required, but only 0 present.");
  let s = replaceMatches(StringCtor(data), ASCII_WHITESPACE, () => '');
  if (s.length % 4 === 0) s = replaceMatches(s, PADDING, () => '');
  const invalid = () => new DOMException("Failed to execute 'atob': The string to be decoded is not correctly encoded.", 'InvalidCharacterError');
  if (s.length % 4 === 1 || call(regexpExec, NOT_BASE64, s) !== null) throw invalid();
  let out = '';
  let buffer = 0, bits = 0;
  for (let i = 0; i < s.length; i++) {
    buffer = (buffer << 6) | call(mapGet, B64_INDEX, s[i]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += StringFromCharCode((buffer >> bits) & 255);
    }
  }
  return out;
}

return { btoa, atob };
})
