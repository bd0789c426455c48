// roundTrip(parse, serialise): `ctxgate gen`'s cases through an adapter's
// own message conversion and back, asserted equal by value (SPEC §5:
// numbers by value, object members in any order, a member left out is not
// a member set to null), the first difference named by its path
// (`messages[3].content[0].text`). An adapter that drops or re-spells a
// field on the way in or out fails here, next to its cause, rather than as
// an invariant far from it.

import { spawn } from 'node:child_process';

import { binaryPath } from './binary.js';
import { guardChild } from './signals.js';
import { pathStep } from './wire.js';

/** What roundTrip throws at the first difference, or when parse or serialise throws. */
export class RoundTripMismatch extends Error {
  constructor(message, { caseIndex = null, path = null, command = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'RoundTripMismatch';
    /** The index of the case in `ctxgate gen`'s output. */
    this.caseIndex = caseIndex;
    /** Where the values differ: `messages[3].content[0].text` (null when a function threw). */
    this.path = path;
    /** The `ctxgate gen …` command that prints the cases again. */
    this.command = command;
  }
}

const ABSENT = Symbol('absent');
const LENGTHS = Symbol('lengths');

function kind(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'boolean': return 'a boolean';
    case 'number': return 'a number';
    case 'string': return 'a string';
    case 'object': return 'an object';
    case 'bigint': return 'a BigInt (not JSON)';
    default: return `${typeof v === 'undefined' ? 'undefined' : `a ${typeof v}`} (not JSON)`;
  }
}

/** A value in a message: its JSON, cut to 120 characters. */
function shown(v) {
  let text;
  try {
    text = JSON.stringify(v);
  } catch {
    text = undefined;
  }
  if (text === undefined) return kind(v);
  // ASCII, as the message may go to a log that mangles the rest.
  text = text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

/** `root` and the keys of `path` (a linked [parent, key, inArray] list), as JavaScript spells them. */
function where(root, path) {
  const steps = [];
  for (let p = path; p; p = p[0]) steps.push(p);
  steps.reverse();
  const shownSteps = steps.length > 24 ? [...steps.slice(0, 10), null, ...steps.slice(-10)] : steps;
  let out = root;
  for (const s of shownSteps) out += s === null ? `…(${steps.length - 20} more levels)…` : pathStep(s[1], s[2], out === '');
  return out;
}

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * null when `got` equals `expected` as JSON values (SPEC §5), else
 * {path, problem}: the first difference in document order. Walks with a
 * stack of its own: no depth of nesting overflows it.
 */
export function firstDifference(expected, got, root = 'messages') {
  const stack = [[expected, got, null]];
  while (stack.length) {
    const [a, b, path] = stack.pop();
    const here = () => where(root, path);
    const differ = () => ({ path: here(), problem: `expected ${shown(a)}, got ${shown(b)}` });
    if (a === LENGTHS) return { path: here(), problem: `expected an array of ${b[0]} item(s), got ${b[1]}` };
    if (b === ABSENT) return { path: here(), problem: `missing (expected ${shown(a)})` };
    if (a === ABSENT) return { path: here(), problem: `not expected (got ${shown(b)})` };
    if (Array.isArray(a)) {
      if (!Array.isArray(b)) return { path: here(), problem: `expected an array, got ${kind(b)}: ${shown(b)}` };
      if (a.length !== b.length) stack.push([LENGTHS, [a.length, b.length], path]);
      for (let i = Math.min(a.length, b.length) - 1; i >= 0; i--) stack.push([a[i], b[i], [path, i, true]]);
    } else if (isObject(a)) {
      if (!isObject(b)) return { path: here(), problem: `expected an object, got ${kind(b)}: ${shown(b)}` };
      const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k) && o[k] !== undefined;
      const added = Object.keys(b).filter((k) => !has(a, k) && b[k] !== undefined);
      for (let i = added.length - 1; i >= 0; i--) stack.push([ABSENT, b[added[i]], [path, added[i], false]]);
      const keys = Object.keys(a);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i];
        stack.push([a[k], has(b, k) ? b[k] : ABSENT, [path, k, false]]);
      }
    } else if (typeof a === 'number') {
      // JSON numbers read as doubles: 1 and 1.0 are one number already.
      if (typeof b !== 'number' || a !== b) return differ();
    } else if (a !== b) {
      return differ();
    }
  }
  return null;
}

/** The `ctxgate gen` arguments of roundTrip's options. */
function genArgs({ cases, seed, textOnly, exactNumbers, config, genConfig }) {
  const args = ['gen', '--cases', String(cases), '--seed', String(seed)];
  if (textOnly) args.push('--text-only');
  if (exactNumbers) args.push('--exact-numbers');
  if (config !== undefined) args.push('--config', String(config));
  if (genConfig !== undefined) args.push('--gen-config', String(genConfig));
  return args;
}

/**
 * Run `ctxgate gen`'s cases through `serialise(await parse(messages))` and
 * resolve with how many were checked, each equal by value to what was
 * generated; reject with RoundTripMismatch at the first difference, or when
 * parse or serialise throws.
 *
 * `parse` takes a case's engine messages (as JSON.parse reads them: a copy
 * of its own, which it may keep or change) and returns anything of the
 * adapter's own (or a Promise of it); `serialise` takes that and returns
 * engine messages, as an array or as JSON text. Options: `cases` [200],
 * `seed` [0], `textOnly` (the cases a subject whose hello says
 * `"contentParts": false` is sent), `exactNumbers`, `config` and
 * `genConfig` (paths of JSON files, as `ctxgate gen` takes them), `binary`
 * and `env` (as for check).
 */
export async function roundTrip(parse, serialise, options = {}) {
  if (typeof parse !== 'function' || typeof serialise !== 'function') {
    throw new TypeError('roundTrip(parse, serialise): both must be functions (engine messages -> yours, and yours -> engine messages)');
  }
  const { cases = 200, seed = 0, env = process.env } = options;
  const binary = options.binary ?? binaryPath({ env });
  const args = genArgs({ ...options, cases, seed });
  const command = `ctxgate ${args.join(' ')}`;
  const child = spawn(binary, args, { env: { ...env, CTXGATE_DIE_WITH_PARENT: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const release = guardChild(child);
  const stderr = [];
  child.stderr.on('data', (b) => stderr.push(b));
  const ended = new Promise((resolve, reject) => {
    child.on('error', (e) => reject(new Error(`ctxgate: cannot run ${binary}: ${e.message}`)));
    child.on('close', (code, signal) => resolve(code ?? `signal ${signal}`));
  });
  let index = 0;
  const check = async (line) => {
    const at = `case ${index} of \`${command}\` (print it: \`${command} | sed -n ${index + 1}p\`)`;
    const expected = JSON.parse(line).messages;
    const fail = (what, extra) => new RoundTripMismatch(`${at}: ${what}`, { caseIndex: index, command, ...extra });
    let own;
    try {
      own = await parse(JSON.parse(line).messages);
    } catch (e) {
      throw fail(`parse threw ${e?.name ?? 'a value'}: ${e?.message ?? String(e)}`, { cause: e });
    }
    let back;
    try {
      back = await serialise(own);
    } catch (e) {
      throw fail(`serialise threw ${e?.name ?? 'a value'}: ${e?.message ?? String(e)}`, { cause: e });
    }
    if (typeof back === 'string' || back instanceof Uint8Array) {
      const text = typeof back === 'string' ? back : Buffer.from(back).toString('utf8');
      try {
        back = JSON.parse(text);
      } catch (e) {
        throw fail(`serialise returned text that is not JSON: ${e.message}`, { cause: e });
      }
    }
    const diff = firstDifference(expected, back);
    if (diff) throw fail(`${diff.path}: ${diff.problem}`, { path: diff.path });
    index += 1;
  };
  try {
    // Lines end at \n alone (gen escapes U+2028 and its kin anyway).
    let rest = Buffer.alloc(0);
    for await (const chunk of child.stdout) {
      let buf = rest.length ? Buffer.concat([rest, chunk]) : chunk;
      let nl;
      while ((nl = buf.indexOf(0x0a)) >= 0) {
        await check(buf.subarray(0, nl).toString('utf8'));
        buf = buf.subarray(nl + 1);
      }
      rest = Buffer.from(buf);
    }
    if (rest.length) await check(rest.toString('utf8'));
    const code = await ended;
    if (code !== 0) {
      throw new Error(`\`${command}\` exited with ${code}: ${Buffer.concat(stderr).toString('utf8').trim()}`);
    }
    return index;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await ended.catch(() => {});
    release();
  }
}
