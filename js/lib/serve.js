// The subject protocol v1 loop (ctxgate SPEC §6), for a compactor written in
// JavaScript or TypeScript.
//
//     import { serve, CannotFit } from 'ctxgate';
//     serve({ name: 'my-compactor', version: '1.0.0', compact: (messages, config) => myCompact(messages, config) });
//
// Requests are read from stdin, one JSON object a line, and each is answered
// on one line of stdout, in order. `compact(messages, config)` returns the
// engine messages to answer with (or a Promise of them), or throws
// `CannotFit` (answered `cannot_fit`) or `InvalidInput` (`invalid_input`: the
// case is counted as refused). Any other exception is the compactor's own
// crash: it is answered with the kind `library_error`, which ctxgate reports
// as a fault of the subject with the case that caused it — a finding, never a
// hang. `estimate(messages, config)` returns `{tokens, perMessage?}`.
// `config` is the request's config over SPEC §2's defaults. Nothing here
// judges anything.
//
// The loop never dies on one request. Every line gets one answer line that
// ctxgate can read, whatever the line held and whatever the compactor did:
//   - a line that is not a request — not UTF-8, not JSON, not an object,
//     longer than `maxLineBytes`, or holding what ctxgate's own reader
//     refuses (a lone surrogate, a number past a double, nesting 128 deep) —
//     is answered `invalid_input`, saying what is wrong where;
//   - whatever the compactor throws or rejects with (an Error, undefined, a
//     Symbol, an object without a prototype, a Proxy whose traps throw, an
//     Error whose message getter throws) is described as far as it lets
//     itself be read, never by code that can throw in turn: `library_error`;
//   - an answer ctxgate could not read, or that JSON.stringify would change
//     (NaN, Infinity, a lone surrogate — say, half an emoji cut by slice() —,
//     BigInt, a cycle, nesting 128 deep, an unawaited Promise; wire.js,
//     strictDumps) is not written: `library_error`, naming the field.

import { constants as bufferConstants } from 'node:buffer';

import { withDefaults } from './config.js';
import { MAX_DEPTH, NotJson, loneSurrogate, pathStep, strictDumps, toWellFormed, wellFormed } from './wire.js';

/** Thrown by a compactor to answer `cannot_fit`. */
export class CannotFit extends Error {
  constructor(message) {
    super(message);
    this.name = 'CannotFit';
  }
}

/** Thrown for a history the compactor has no representation for (answered `invalid_input`). */
export class InvalidInput extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidInput';
  }
}

/**
 * The longest request line read: the longest a JavaScript string can be
 * (a longer line could not be decoded anyway). A longer one is skipped to
 * its newline, never held, and answered `invalid_input`.
 */
export const MAX_LINE_BYTES = bufferConstants.MAX_STRING_LENGTH;

/** The longest error message sent, in characters: a message is for a report, not a data channel. */
const MAX_MESSAGE_CHARS = 4000;

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** f(), or `fallback` when f throws (reading a hostile value can throw anywhere). */
function attempt(f, fallback) {
  try {
    return f();
  } catch {
    return fallback;
  }
}

/** A message fit for the wire: a string, valid Unicode, at most MAX_MESSAGE_CHARS long. */
function wireText(text) {
  let out = typeof text === 'string' ? text : attempt(() => String(text), '(a message that cannot be read)');
  if (typeof out !== 'string') out = '(a message that cannot be read)';
  if (out.length > MAX_MESSAGE_CHARS) {
    out = `${out.slice(0, MAX_MESSAGE_CHARS)}… (${out.length - MAX_MESSAGE_CHARS} more characters)`;
  }
  return toWellFormed(out);
}

/** A string property of a value that may be hostile: undefined when it is absent, not a string, or cannot be read. */
function readString(value, key) {
  const v = attempt(() => value[key], undefined);
  return typeof v === 'string' ? v : undefined;
}

const THREW = Symbol('threw');

/**
 * What a thrown value is, in words, without ever throwing: an Error's
 * `Name: message`, a primitive's own spelling, an object's own String()
 * when it has one, and what it is when nothing of it can be read. Each
 * property is read once, as it may be a getter.
 */
export function describeThrown(e) {
  switch (typeof e) {
    case 'undefined':
      return 'undefined (not an Error)';
    case 'string':
      return `the string ${JSON.stringify(e)} (not an Error)`;
    case 'number':
    case 'boolean':
      return `${e} (not an Error)`;
    case 'bigint':
      return `${e}n (not an Error)`;
    case 'symbol':
      return `${attempt(() => e.toString(), 'a symbol')} (not an Error)`;
    case 'function':
      return `a function ${readString(e, 'name') || '(anonymous)'} (not an Error)`;
    default:
      break;
  }
  if (e === null) return 'null (not an Error)';
  const isError = attempt(() => e instanceof Error, false);
  const name = readString(e, 'name');
  const message = attempt(() => e.message, THREW);
  const className = readString(attempt(() => e.constructor, undefined), 'name');
  if (isError || (name !== undefined && typeof message === 'string')) {
    const text = typeof message === 'string' ? message
      : message === THREW ? '(its message cannot be read: reading it threw)' : '(its message is not a string)';
    return `${name ?? className ?? 'Error'}: ${text}`;
  }
  // Not an Error: its own String(), unless that is the [object Object] of every object.
  const own = attempt(() => String(e), undefined);
  if (typeof own === 'string' && !/^\[object \w*\]$/.test(own)) return `${own} (not an Error)`;
  const proto = attempt(() => Object.getPrototypeOf(e), THREW);
  const what = proto === null ? 'an object without a prototype'
    : attempt(() => Array.isArray(e), false) ? 'an array'
      : className ? `an object of class ${className}` : 'an object';
  const json = attempt(() => strictDumps(e), undefined);
  if (typeof json === 'string') return `${what}: ${json} (not an Error)`;
  const keys = attempt(() => Object.keys(e), undefined);
  if (!Array.isArray(keys)) return `${what} that cannot be read (not an Error)`;
  if (keys.length === 0) return `${what} with no fields (not an Error)`;
  const shown = keys.slice(0, 10).map((k) => JSON.stringify(k)).join(', ');
  return `${what} with the fields ${shown}${keys.length > 10 ? `, … (${keys.length} in all)` : ''} (not an Error)`;
}

/** The message of a CannotFit or an InvalidInput, read once, whatever it is. */
function messageOf(e) {
  const message = attempt(() => e.message, THREW);
  if (typeof message === 'string') return message;
  return message === THREW ? '(its message cannot be read: reading it threw)' : '(its message is not a string)';
}

/** The first `at …` line of a thrown value's stack, when it has one that can be read. */
function whereThrown(e) {
  if (typeof e !== 'object' || e === null) return undefined;
  const stack = readString(e, 'stack');
  return stack?.split('\n').find((l) => l.trim().startsWith('at '))?.trim();
}

/** An error answer. */
function failure(id, kind, message) {
  return { id, error: { kind, message: wireText(message) } };
}

/** A library_error answer for a value the compactor threw (its stack goes to stderr). */
function crash(id, e, options) {
  const text = describeThrown(e);
  const where = whereThrown(e);
  attempt(() => process.stderr.write(`${wireText(options.name)}: ${readString(e, 'stack') ?? text}\n`));
  return failure(id, 'library_error', where ? `${text} (${where})` : text);
}

/**
 * The hello answer for `options` (SPEC §6): the optional fields only when
 * given, so that ctxgate's defaults apply otherwise.
 */
export function helloOf(options) {
  const { name, version, compact, estimate, invariants, wireFormats, contentParts } = options;
  if (typeof name !== 'string' || !name || !wellFormed(name)) throw new TypeError('serve: `name` must be a non-empty string of Unicode text');
  if (typeof version !== 'string' || !version || !wellFormed(version)) throw new TypeError('serve: `version` must be a non-empty string of Unicode text');
  if (typeof compact !== 'function') throw new TypeError('serve: `compact` must be a function (messages, config) => messages');
  if (estimate !== undefined && typeof estimate !== 'function') {
    throw new TypeError('serve: `estimate`, when given, must be a function (messages, config) => {tokens, perMessage?}');
  }
  const hello = {
    op: 'hello', protocol: 1, name, version,
    ops: estimate ? ['compact', 'estimate'] : ['compact'],
    format: 'engine',
  };
  if (invariants !== undefined) hello.invariants = [...invariants];
  if (wireFormats !== undefined) hello.wireFormats = [...wireFormats];
  if (contentParts !== undefined) hello.contentParts = Boolean(contentParts);
  strictDumps(hello); // refused now, not on every hello
  return hello;
}

/** Set an own field, whatever its key ("__proto__" included). */
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The answer to one parsed request (a Promise: the compactor may be async). */
export async function answer(request, options, hello = helloOf(options)) {
  const id = Object.hasOwn(request, 'id') ? request.id : null; // an absent id is answered as null
  const op = request.op;
  if (op === 'hello') return hello;
  const fn = op === 'compact' ? options.compact : op === 'estimate' ? options.estimate : undefined;
  if (!fn) {
    const spelled = attempt(() => strictDumps(op), undefined) ?? typeof op;
    return failure(id, 'invalid_input', `unknown op ${spelled}`);
  }
  if (request.config !== undefined && request.config !== null && !isObject(request.config)) {
    return failure(id, 'invalid_input', '`config` must be an object');
  }
  const messages = request.messages;
  if (!Array.isArray(messages) || !messages.every(isObject)) {
    return failure(id, 'invalid_input', '`messages` must be an array of objects');
  }
  let result;
  try {
    result = await fn(messages, withDefaults(request.config));
  } catch (e) {
    if (attempt(() => e instanceof CannotFit, false)) return failure(id, 'cannot_fit', messageOf(e));
    if (attempt(() => e instanceof InvalidInput, false)) return failure(id, 'invalid_input', messageOf(e));
    return crash(id, e, options); // the compactor under test crashed on this input: a finding
  }
  try {
    if (op === 'compact') {
      if (!Array.isArray(result)) {
        return failure(id, 'library_error', `compact returned ${describeValue(result)}, not an array of messages`);
      }
      return { id, messages: result };
    }
    // An estimate is {tokens, perMessage?}, or the token count alone.
    if (typeof result === 'number') return { id, tokens: result };
    if (!isObject(result)) {
      return failure(id, 'library_error', `estimate returned ${describeValue(result)}, not {tokens, perMessage?} or a number`);
    }
    const out = { id };
    for (const [k, v] of Object.entries(result)) if (k !== 'id') put(out, k, v);
    return out;
  } catch (e) { // a Proxy, a getter: reading the result threw
    return failure(id, 'library_error', `reading what ${op} returned threw ${describeThrown(e)}`);
  }
}

/** What a returned value is, in a few words. */
function describeValue(v) {
  switch (typeof v) {
    case 'object':
      return v === null ? 'null' : attempt(() => Array.isArray(v), false) ? 'an array' : 'an object';
    case 'string':
      return 'a string';
    case 'function':
      return 'a function';
    case 'symbol':
      return attempt(() => v.toString(), 'a symbol');
    case 'bigint':
      return `${v}n`;
    default:
      return String(v); // undefined, a boolean
  }
}

/** The byte offset of the first byte of `bytes` that is not UTF-8 (the line failed a fatal decode). */
function badUtf8At(bytes) {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const [n, min] = b < 0x80 ? [0, 0] : b >= 0xc2 && b <= 0xdf ? [1, 0x80] : b >= 0xe0 && b <= 0xef ? [2, 0x800]
      : b >= 0xf0 && b <= 0xf4 ? [3, 0x10000] : [-1, 0];
    if (n < 0 || i + n >= bytes.length + (n ? 0 : 1)) return i;
    let cp = n ? b & (0x3f >> n) : b;
    for (let k = 1; k <= n; k += 1) {
      if ((bytes[i + k] & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (bytes[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return i;
}

/**
 * What in a parsed request ctxgate's own JSON reader would refuse, or null:
 * a string or key holding a lone surrogate (legal JSON: "\ud800"), a number
 * JavaScript read as ±Infinity (1e400), arrays and objects nested
 * MAX_DEPTH deep. [path, problem].
 */
function requestProblem(value) {
  const walk = (v, path, depth) => {
    if (typeof v === 'string') return wellFormed(v) ? null : [path, `holds ${loneSurrogate(v)}`];
    if (typeof v === 'number') {
      return Number.isFinite(v) ? null : [path, 'a number past the largest a JavaScript number holds (read as Infinity)'];
    }
    if (typeof v !== 'object' || v === null) return null;
    if (depth >= MAX_DEPTH) return [path, `nested ${MAX_DEPTH} arrays and objects deep: at most ${MAX_DEPTH - 1} are read (as ctxgate reads JSON)`];
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i += 1) {
        const p = walk(v[i], path + pathStep(String(i), true, false), depth + 1);
        if (p) return p;
      }
      return null;
    }
    for (const k of Object.keys(v)) {
      const at = path + pathStep(k, false, path === '');
      if (!wellFormed(k)) return [at, `its key holds ${loneSurrogate(k)}`];
      const p = walk(v[k], at, depth + 1);
      if (p) return p;
    }
    return null;
  };
  return walk(value, '', 1);
}

/** The answer line for a request line that could not be read. */
function refused(id, message) {
  return strictDumps(failure(id, 'invalid_input', message));
}

/** The answer line (without its \n) for one request line (bytes, without its \n). */
async function answerLine(line, options, hello) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(line);
  } catch {
    return refused(null, `not UTF-8: the byte at offset ${badUtf8At(line)} of this ${line.length}-byte line (a request is UTF-8 JSON)`);
  }
  let request;
  try {
    request = JSON.parse(text);
  } catch (e) {
    return refused(null, `not JSON: ${attempt(() => e.message, 'a syntax error')}`);
  }
  if (!isObject(request)) return refused(null, 'a request is a JSON object');
  const problem = requestProblem(request);
  if (problem) {
    const [where, what] = problem;
    const inId = /^id(\.|\[|$)/.test(where);
    const id = !inId && Object.hasOwn(request, 'id') ? request.id : null;
    return refused(id, `the request's ${where}: ${what}`);
  }
  const out = await answer(request, options, hello);
  try {
    return strictDumps(out);
  } catch (e) { // an answer ctxgate could not read: the compactor's fault, named
    const id = Object.hasOwn(request, 'id') ? request.id : null;
    const why = attempt(() => e instanceof NotJson, false) ? e.message : `writing it threw ${describeThrown(e)}`;
    return strictDumps(failure(id, 'library_error', `the answer cannot be sent as JSON: ${why}`));
  }
}

/**
 * One answer line, with its \n, for one request line — whatever happens:
 * the last resort is a constant line.
 */
async function reply(line, options, hello) {
  try {
    return `${await answerLine(line, options, hello)}\n`;
  } catch (e) {
    try {
      return `${strictDumps(failure(null, 'library_error', `serve: answering this line threw ${describeThrown(e)}`))}\n`;
    } catch {
      return '{"id":null,"error":{"kind":"library_error","message":"serve: answering this line failed"}}\n';
    }
  }
}

/** Like Python's bytes.strip() == b"": only ASCII whitespace. */
function blank(line) {
  return line.every((b) => b === 0x20 || (b >= 0x09 && b <= 0x0d));
}

/**
 * Call `handle(line)` with each line of `input` that is not blank, then
 * `end()` when `input` ends. Lines are split on \n as bytes, so a line or a
 * UTF-8 character split across chunks is joined first; the last line may
 * lack its \n. With `tooLong`, a line longer than `maxLineBytes` is not
 * kept: its bytes are counted and dropped as they come, and `tooLong(bytes)`
 * is called in its place, in order.
 */
export function eachLine(input, handle, end = () => {}, { maxLineBytes = MAX_LINE_BYTES, tooLong } = {}) {
  let pending = [];
  let held = 0; // bytes of the current line so far (kept in pending, or dropped)
  let dropping = false;
  const over = (n) => tooLong !== undefined && held + n > maxLineBytes;
  const ended = () => {
    const [line, bytes, dropped] = [dropping ? null : Buffer.concat(pending), held, dropping];
    pending = [];
    held = 0;
    dropping = false;
    if (dropped) tooLong(bytes);
    else if (!blank(line)) handle(line);
  };
  input.on('data', (chunk) => {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      if (!dropping && over(nl - start)) dropping = true;
      if (!dropping) pending.push(chunk.subarray(start, nl));
      held += nl - start;
      ended();
      start = nl + 1;
    }
    if (start < chunk.length) {
      if (!dropping && over(chunk.length - start)) {
        dropping = true;
        pending = [];
      }
      if (!dropping) pending.push(chunk.subarray(start));
      held += chunk.length - start;
    }
  });
  input.on('end', () => {
    if (dropping || pending.length) ended();
    end();
  });
}

/**
 * Answer requests from `input` on `output` until `input` ends; resolves
 * then. Requests are answered one at a time, in order ([eachLine]), even
 * when `compact` is async. `maxLineBytes` [MAX_LINE_BYTES]: a longer request
 * line is answered `invalid_input` without being held.
 */
export function serve(options, { input = process.stdin, output = process.stdout, maxLineBytes = MAX_LINE_BYTES } = {}) {
  const hello = helloOf(options);
  if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) throw new TypeError('serve: `maxLineBytes` must be a whole number of bytes, at least 1');
  let queue = Promise.resolve();
  const send = (text) => {
    queue = queue.then(text).then((t) => { output.write(t); }).catch((e) => {
      attempt(() => process.stderr.write(`serve: cannot write an answer: ${describeThrown(e)}\n`));
    });
  };
  const handle = (line) => send(() => reply(line, options, hello));
  const tooLong = (bytes) => send(() => `${refused(null,
    `a request line of ${bytes} bytes, over the ${maxLineBytes} this subject reads (maxLineBytes); it was skipped`)}\n`);
  if (output === process.stdout) {
    process.stdout.on('error', () => process.exit(0)); // the reader went away
    // A promise the compactor left rejected outside any request would end
    // the process (Node's default); the loop goes on, and says so.
    process.on('unhandledRejection', (e) => {
      attempt(() => process.stderr.write(`${wireText(options.name)}: a promise rejected outside any request (ignored): ${describeThrown(e)}\n`));
    });
  }
  return new Promise((resolve, reject) => {
    eachLine(input, handle, () => queue.then(resolve, reject), { maxLineBytes, tooLong });
    input.on('error', reject);
  });
}
