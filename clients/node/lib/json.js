// JSON as a verifier reads and compares it: parsed strictly (UTF-8, no key twice in an
// object, no NaN/Infinity, a number with a fraction or exponent is not an integer), and
// compared by JSON type (1 is not true, 1 is not 1.0), in the expected value's key order.
// An integer beyond 2^53 is read as a BigInt, exactly (where a Number would round).
'use strict';

/** A JSON number written with a fraction or an exponent: never equal to an integer. */
class JsonFloat {
  constructor(text) {
    this.text = text;
    this.value = Number(text);
  }
}

class JsonSyntaxError extends Error {}

/** Arrays and objects one inside another, at most (a history nests a few; ofc.verify's limit). */
const MAX_DEPTH = 500;
/** Digits of an integer, at most (Python's int conversion limit, which ofc.verify keeps). */
const MAX_INT_DIGITS = 4300;

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `input` as text: a string as it is, bytes strictly as UTF-8 (a BOM kept, as Python's
 * decode keeps it); throws JsonSyntaxError. */
function utf8Text(input) {
  if (typeof input === 'string') return input;
  try {
    return UTF8.decode(input);
  } catch {
    throw new JsonSyntaxError('the bytes are not UTF-8');
  }
}

/** Parse `input` (a string, or bytes as UTF-8) strictly; throws JsonSyntaxError. */
function parseStrict(input) {
  const text = utf8Text(input);
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
    const close = text.indexOf('"', i);
    if (close < 0) fail('unterminated string');
    const plain = text.slice(i, close);
    if (!/[\\\u0000-\u001f]/.test(plain)) {
      i = close + 1;
      return plain; // the common case: no escape, no control character
    }
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
    // Python reads no integer of more than 4300 digits (int's conversion limit): neither does this
    if (m[0].length - (m[0][0] === '-' ? 1 : 0) > MAX_INT_DIGITS) fail(`a number of more than ${MAX_INT_DIGITS} digits`);
    const value = Number(m[0]);
    // beyond 2^53 a Number would round: a BigInt keeps it (Python reads any integer)
    return Number.isSafeInteger(value) ? value : BigInt(m[0]);
  };
  const value = (depth) => {
    ws();
    if (i >= n) fail('expecting a value');
    const c = text[i];
    // depth: the arrays and objects around this value; MAX_DEPTH of them at most, as ofc.verify
    if ((c === '{' || c === '[') && depth >= MAX_DEPTH) fail('nested too deeply');
    if (c === '{') {
      i += 1;
      const obj = {};
      ws();
      if (text[i] === '}') {
        i += 1;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expecting a property name in double quotes');
        const key = string();
        if (Object.prototype.hasOwnProperty.call(obj, key)) throw new JsonSyntaxError(`the key '${key}' appears twice in one object`);
        ws();
        if (text[i] !== ':') fail("expecting ':'");
        i += 1;
        const v = value(depth + 1);
        if (key === '__proto__') Object.defineProperty(obj, key, { value: v, enumerable: true, writable: true, configurable: true });
        else obj[key] = v;
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

// The first difference as [steps from the inside out, expected, actual]: a path is only
// spelled out once a difference is found.
function firstDifference(expected, actual) {
  if (isObject(expected)) {
    if (!isObject(actual)) return [[], expected, actual];
    for (const key in expected) {
      const d = firstDifference(expected[key], Object.prototype.hasOwnProperty.call(actual, key) ? actual[key] : MISSING);
      if (d !== null) {
        d[0].push(key);
        return d;
      }
    }
    for (const key in actual) {
      if (!Object.prototype.hasOwnProperty.call(expected, key)) return [[key], MISSING, actual[key]];
    }
    return null;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [[], expected, actual];
    const len = Math.max(expected.length, actual.length);
    for (let k = 0; k < len; k += 1) {
      const d = firstDifference(k < expected.length ? expected[k] : MISSING, k < actual.length ? actual[k] : MISSING);
      if (d !== null) {
        d[0].push(k);
        return d;
      }
    }
    return null;
  }
  if (expected === actual) return null;
  if (expected instanceof JsonFloat && actual instanceof JsonFloat && expected.value === actual.value) return null;
  return [[], expected, actual];
}

/**
 * The first place (in `expected`'s document order) where `actual` differs:
 * {path, expected, actual} (MISSING where one side has nothing), or null. Values of other
 * JSON types differ (1 is not true, 1 is not 1.0).
 */
function difference(expected, actual, path) {
  const d = firstDifference(expected, actual);
  if (d === null) return null;
  let where = path;
  for (let k = d[0].length - 1; k >= 0; k -= 1) {
    const step = d[0][k];
    where = typeof step === 'number' ? `${where}[${step}]` : join(where, step);
  }
  return { path: where, expected: d[1], actual: d[2] };
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

module.exports = { JsonFloat, JsonSyntaxError, MISSING, difference, isObject, join, kind, parseStrict, repr, same, show, utf8Text };
