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

import { withDefaults } from './config.js';
import { dumps } from './wire.js';

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

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The hello answer for `options` (SPEC §6): the optional fields only when
 * given, so that ctxgate's defaults apply otherwise.
 */
export function helloOf(options) {
  const { name, version, compact, estimate, invariants, wireFormats, contentParts } = options;
  if (typeof name !== 'string' || !name) throw new TypeError('serve: `name` must be a non-empty string');
  if (typeof version !== 'string' || !version) throw new TypeError('serve: `version` must be a non-empty string');
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
  return hello;
}

/** The answer to one parsed request (a Promise: the compactor may be async). */
export async function answer(request, options, hello = helloOf(options)) {
  const id = Object.hasOwn(request, 'id') ? request.id : null; // an absent id is answered as null
  const op = request.op;
  if (op === 'hello') return hello;
  const fn = op === 'compact' ? options.compact : op === 'estimate' ? options.estimate : undefined;
  if (!fn) return { id, error: { kind: 'invalid_input', message: `unknown op ${JSON.stringify(op)}` } };
  if (request.config !== undefined && request.config !== null && !isObject(request.config)) {
    return { id, error: { kind: 'invalid_input', message: '`config` must be an object' } };
  }
  const messages = request.messages;
  if (!Array.isArray(messages) || !messages.every(isObject)) {
    return { id, error: { kind: 'invalid_input', message: '`messages` must be an array of objects' } };
  }
  try {
    const result = await fn(messages, withDefaults(request.config));
    if (op === 'compact') return { id, messages: result };
    // An estimate is {tokens, perMessage?}, or the token count alone.
    return isObject(result) ? { id, ...result } : { id, tokens: result };
  } catch (e) {
    if (e instanceof CannotFit) return { id, error: { kind: 'cannot_fit', message: e.message } };
    if (e instanceof InvalidInput) return { id, error: { kind: 'invalid_input', message: e.message } };
    // The compactor under test crashed on this input: a finding.
    process.stderr.write(`${options.name}: ${e && e.stack ? e.stack : e}\n`);
    const where = e && e.stack ? String(e.stack).split('\n').find((l) => l.trim().startsWith('at ')) : undefined;
    const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    return { id, error: { kind: 'library_error', message: where ? `${text} (${where.trim()})` : text } };
  }
}

/** One answer line (with its \n) for one request line (bytes, without its \n). */
async function reply(line, options, hello) {
  let request;
  try {
    request = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(line));
  } catch (e) {
    return dumps({ id: null, error: { kind: 'invalid_input', message: `not JSON: ${e.message}` } }) + '\n';
  }
  if (!isObject(request)) {
    return dumps({ id: null, error: { kind: 'invalid_input', message: 'a request is a JSON object' } }) + '\n';
  }
  const out = await answer(request, options, hello);
  try {
    return dumps(out) + '\n';
  } catch (e) { // an answer JSON cannot hold (a BigInt, a cycle): the compactor's fault
    const id = Object.hasOwn(request, 'id') ? request.id : null;
    return dumps({ id, error: { kind: 'library_error', message: `the answer is not JSON: ${e.message}` } }) + '\n';
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
 * lack its \n.
 */
export function eachLine(input, handle, end = () => {}) {
  let pending = [];
  const take = (line) => {
    if (!blank(line)) handle(line);
  };
  input.on('data', (chunk) => {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      pending.push(chunk.subarray(start, nl));
      const line = Buffer.concat(pending);
      pending = [];
      start = nl + 1;
      take(line);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  input.on('end', () => {
    if (pending.length) take(Buffer.concat(pending));
    end();
  });
}

/**
 * Answer requests from `input` on `output` until `input` ends; resolves
 * then. Requests are answered one at a time, in order ([eachLine]), even
 * when `compact` is async.
 */
export function serve(options, { input = process.stdin, output = process.stdout } = {}) {
  const hello = helloOf(options);
  let queue = Promise.resolve();
  const handle = (line) => {
    queue = queue.then(() => reply(line, options, hello)).then((text) => {
      output.write(text);
    });
  };
  if (output === process.stdout) process.stdout.on('error', () => process.exit(0)); // the reader went away
  return new Promise((resolve, reject) => {
    eachLine(input, handle, () => queue.then(resolve, reject));
    input.on('error', reject);
  });
}
