// JSON as a verifier reads and compares it: parsed strictly (UTF-8, no key twice in an
// object, no NaN/Infinity, a number with a fraction or exponent is not an integer), and
// compared by JSON type (1 is not true, 1 is not 1.0), in the expected value's key order.
'use strict';

/** A JSON number written with a fraction or an exponent: never equal to an integer. */
class JsonFloat {
  constructor(text) {
    this.text = text;
    this.value = Number(text);
  }
}

class JsonSyntaxError extends Error {}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Parse `input` (a string, or bytes as UTF-8) strictly; throws JsonSyntaxError. */
function parseStrict(input) {
  let text = input;
  if (typeof input !== 'string') {
    try {
      text = UTF8.decode(input);
    } catch {
      throw new JsonSyntaxError('the bytes are not UTF-8');
    }
  }
  let i = 0;
  const n = text.length;
  const fail = (what) => {
    throw new JsonSyntaxError(`${what} at char ${i}`);
  };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i += 1;
      else break;
    }
  };
  const string = () => {
    i += 1; // the opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i += 1;
        return out;
      }
      if (c < 0x20) fail('a control character in a string');
      if (c === 0x5c) {
        out += text.slice(start, i);
        const e = text[i + 1];
        i += 2;
        if (e === 'u') {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('a bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
        } else {
          const map = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (!(e in map)) fail('a bad escape');
          out += map[e];
        }
        start = i;
      } else {
        i += 1;
      }
    }
  };
  const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
  const number = () => {
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail('expecting a value');
    i = NUMBER.lastIndex;
    if (m[1] !== undefined || m[2] !== undefined) return new JsonFloat(m[0]);
    const value = Number(m[0]);
    if (!Number.isSafeInteger(value)) throw new JsonSyntaxError(`the integer ${m[0]} is beyond this verifier's range (2^53)`);
    return value;
  };
  const value = (depth) => {
    if (depth > 1000) fail('nested too deeply');
    ws();
    if (i >= n) fail('expecting a value');
    const c = text[i];
    if (c === '{') {
      i += 1;
      const obj = {};
      const seen = new Set();
      ws();
      if (text[i] === '}') {
        i += 1;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expecting a property name in double quotes');
        const key = string();
        if (seen.has(key)) throw new JsonSyntaxError(`the key '${key}' appears twice in one object`);
        seen.add(key);
        ws();
        if (text[i] !== ':') fail("expecting ':'");
        i += 1;
        const v = value(depth + 1);
        Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true });
        ws();
        if (text[i] === ',') {
          i += 1;
          continue;
        }
        if (text[i] === '}') {
          i += 1;
          return obj;
        }
        fail("expecting ',' or '}'");
      }
    }
    if (c === '[') {
      i += 1;
      const arr = [];
      ws();
      if (text[i] === ']') {
        i += 1;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i] === ',') {
          i += 1;
          continue;
        }
        if (text[i] === ']') {
          i += 1;
          return arr;
        }
        fail("expecting ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    for (const word of ['NaN', 'Infinity', '-Infinity']) {
      if (text.startsWith(word, i)) throw new JsonSyntaxError(`${word} is not a JSON number`);
    }
    return number();
  };
  const result = value(0);
  ws();
  if (i < n) fail('extra data');
  return result;
}

// --- values ------------------------------------------------------------------------------

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof JsonFloat);
}

function kind(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'list';
  if (v instanceof JsonFloat) return 'float';
  return typeof v;
}

const MISSING = Symbol('nothing');

function join(path, key) {
  return path ? `${path}.${key}` : key;
}

/**
 * The first place (in `expected`'s document order) where `actual` differs:
 * {path, expected, actual} (MISSING where one side has nothing), or null.
 */
function difference(expected, actual, path) {
  if (isObject(expected)) {
    if (!isObject(actual)) return { path, expected, actual };
    for (const key of Object.keys(expected)) {
      const d = difference(expected[key], Object.prototype.hasOwnProperty.call(actual, key) ? actual[key] : MISSING, join(path, key));
      if (d) return d;
    }
    for (const key of Object.keys(actual)) {
      if (!Object.prototype.hasOwnProperty.call(expected, key)) return { path: join(path, key), expected: MISSING, actual: actual[key] };
    }
    return null;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return { path, expected, actual };
    const len = Math.max(expected.length, actual.length);
    for (let k = 0; k < len; k += 1) {
      const d = difference(k < expected.length ? expected[k] : MISSING, k < actual.length ? actual[k] : MISSING, `${path}[${k}]`);
      if (d) return d;
    }
    return null;
  }
  if (expected === MISSING || actual === MISSING) return expected === actual ? null : { path, expected, actual };
  if (kind(expected) !== kind(actual)) return { path, expected, actual };
  if (expected instanceof JsonFloat) return expected.value === actual.value ? null : { path, expected, actual };
  return expected === actual ? null : { path, expected, actual };
}

/** Deep equality of JSON values (by type). */
function same(a, b) {
  return difference(a, b, '') === null;
}

/** A value as Python's repr writes it (the messages read alike in both verifiers). */
function repr(v) {
  if (v === MISSING) return 'nothing';
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (v instanceof JsonFloat) return String(v.value).includes('.') || /e/i.test(String(v.value)) ? String(v.value) : `${v.value}.0`;
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') {
    const quote = v.includes("'") && !v.includes('"') ? '"' : "'";
    const body = v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
    return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
  }
  if (Array.isArray(v)) return `[${v.map(repr).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.keys(v).map((k) => `${repr(k)}: ${repr(v[k])}`).join(', ')}}`;
  return String(v);
}

/** repr, at most 80 characters. */
function show(v) {
  const text = repr(v);
  return text.length <= 80 ? text : `${text.slice(0, 77)}...`;
}

module.exports = { JsonFloat, JsonSyntaxError, MISSING, difference, isObject, join, kind, parseStrict, repr, same, show };
