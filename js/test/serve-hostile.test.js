// The serve() loop never dies on one request (issue 44 §3): a battery of
// hostile requests and hostile compactors, each class of its own, fed to a
// real subject process over real pipes. Every request gets exactly one
// answer line, in order, that ctxgate can read (UTF-8, JSON, an object, no
// lone surrogate, no NaN, nested less than 128 deep), of the kind the class
// calls for and naming its cause; after each one a plain request is
// answered as it should be, and the subject exits 0 when its stdin closes.
//
// This file is also the subject: run with CTXGATE_HOSTILE_SUBJECT set, it
// serves a compactor whose first message's content says what to do
// ("throw:null-proto", "answer:nan", ...). With the ctxgate binary at hand
// (CTXGATE_BINARY, or the checkout's target/release/ctxgate), ctxgate
// check is run against it too: whatever the compactor does, the binary
// sees library_error answers, never a malformed line or a crash.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CannotFit, InvalidInput, serve } from '../index.js';
import { strictDumps } from '../lib/wire.js';

const SELF = fileURLToPath(import.meta.url);

/** A Proxy whose every trap throws. */
function trap() {
  const boom = () => { throw new Error('a trap of this Proxy threw'); };
  return new Proxy({}, {
    get: boom, has: boom, ownKeys: boom, getPrototypeOf: boom, getOwnPropertyDescriptor: boom,
    apply: boom, construct: boom, defineProperty: boom, set: boom, deleteProperty: boom,
    isExtensible: boom, preventExtensions: boom, setPrototypeOf: boom,
  });
}

function revoked() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

/** An Error whose `key` getter throws `what`. */
function errorWhose(key, what = new Error('the getter threw')) {
  const e = new Error('hidden');
  Object.defineProperty(e, key, { get() { throw what; } });
  return e;
}

function nested(depth, leaf = 'x') {
  let v = leaf;
  for (let i = 0; i < depth; i += 1) v = [v];
  return v;
}

/** What the hostile compactor throws, by name. */
const THROWN = {
  undefined: () => undefined,
  null: () => null,
  zero: () => 0,
  'empty-string': () => '',
  string: () => 'boom',
  symbol: () => Symbol('boom'),
  bigint: () => 10n,
  true: () => true,
  function: () => function namedThrowable() {},
  array: () => [1, 'two'],
  'null-proto': () => Object.create(null),
  'null-proto-fields': () => Object.assign(Object.create(null), { why: 'fields' }),
  'tostring-throws': () => ({ toString() { throw new Error('toString threw'); } }),
  'tostring-object': () => ({ toString() { return {}; }, valueOf() { return {}; } }),
  cycle: () => { const o = { a: 1 }; o.self = o; return o; },
  proxy: trap,
  'proxy-of-error': () => new Proxy(new Error('inside'), { get() { throw new Error('get trap'); }, getPrototypeOf() { throw new Error('proto trap'); } }),
  'revoked-proxy': revoked,
  'message-getter-throws': () => errorWhose('message'),
  'message-getter-throws-proxy': () => errorWhose('message', trap()),
  'name-getter-throws': () => errorWhose('name'),
  'stack-getter-throws': () => errorWhose('stack'),
  'message-not-string': () => Object.assign(new Error('x'), { message: { toString() { throw new Error('no'); } } }),
  'lone-surrogate-message': () => new TypeError('half an emoji: \ud83d'),
  'huge-message': () => new RangeError('x'.repeat(5_000_000)),
  'promise': () => Promise.reject(new Error('a thrown promise')),
  'aggregate': () => new AggregateError([new Error('a'), null], 'several'),
  'cannot-fit-lone-surrogate': () => new CannotFit('too big \udc00'),
  'cannot-fit-getter-throws': () => { const e = new CannotFit('x'); Object.defineProperty(e, 'message', { get() { throw trap(); } }); return e; },
  'invalid-input-huge': () => new InvalidInput('y'.repeat(100_000)),
};

/** What the hostile compactor answers with, by name (messages: the request's). */
const ANSWERED = {
  nan: (m) => [{ ...m[0], content: NaN }],
  infinity: (m) => [{ ...m[0], extra: Infinity }],
  'minus-infinity': (m) => [{ ...m[0], extra: [-Infinity] }],
  bigint: (m) => [{ ...m[0], extra: 2n ** 70n }],
  cycle: (m) => { const x = { ...m[0] }; x.self = x; return [x]; },
  'lone-surrogate': (m) => [{ ...m[0], content: 'cut 😀'.slice(0, 5) }],
  'lone-surrogate-key': (m) => [{ ...m[0], ['k\udc00']: 1 }],
  'undefined-in-array': (m) => [m[0], undefined],
  'hole-in-array': (m) => { const a = [m[0]]; a[2] = m[0]; return a; },
  'function-field': (m) => [{ ...m[0], run() {} }],
  'symbol-field': (m) => [{ ...m[0], tag: Symbol('t') }],
  map: (m) => [{ ...m[0], extra: new Map([['a', 1]]) }],
  'unawaited-promise': (m) => [{ ...m[0], content: Promise.resolve('summary') }],
  'deep-128': (m) => [{ ...m[0], extra: nested(125) }], // answer 1, messages 2, message 3, + 125 = 128
  'deep-127': (m) => [{ ...m[0], extra: nested(124) }], // 127: read
  'deep-100k': (m) => [{ ...m[0], extra: nested(100_000) }],
  'tojson-throws': (m) => [{ ...m[0], extra: { toJSON() { throw new Error('toJSON threw'); } } }],
  'getter-throws': (m) => [Object.defineProperty({ ...m[0] }, 'content', { get() { throw Symbol('getter'); }, enumerable: true })],
  'proxy-messages': () => new Proxy([], { get() { throw new Error('array trap'); }, ownKeys() { throw new Error('keys trap'); } }),
  'revoked-messages': revoked,
  undefined: () => undefined,
  string: () => 'not messages',
  null: () => null,
  'thenable-throws': () => ({ then() { throw new Error('then threw'); } }),
};

// (Rejections take the path throws take: the pipe battery has both; ctxgate check runs the throws.)
const DIRECTIVES = [...Object.keys(THROWN).map((n) => `throw:${n}`), ...Object.keys(ANSWERED).map((n) => `answer:${n}`)];

function hostileSubject() {
  const { CTXGATE_HOSTILE_MAX_LINE: max, CTXGATE_HOSTILE_COUNTER: counter } = process.env;
  /** The next directive in turn, counted in a file a byte a request (ctxgate restarts its subjects, and may kill one mid-way). */
  const next = () => {
    const n = fs.statSync(counter).size;
    fs.appendFileSync(counter, '.');
    return DIRECTIVES[n % DIRECTIVES.length];
  };
  const act = async (messages, directive) => {
    const [how, what] = String(directive).split(':');
    if (how === 'throw') throw THROWN[what]();
    if (how === 'reject') return Promise.reject(THROWN[what]());
    if (how === 'answer') return ANSWERED[what](messages);
    return messages;
  };
  serve({
    name: 'hostile', version: '1.0.0',
    // Under ctxgate check (a counter file): each request, compact or estimate, does the next hostile thing.
    compact: (messages) => act(messages, counter ? next() : messages[0]?.content),
    estimate: (messages) => {
      if (counter) return act(messages, next());
      const d = messages[0]?.content;
      if (d === 'estimate:nan') return { tokens: NaN };
      if (d === 'estimate:bigint') return 5n;
      if (d === 'estimate:undefined') return undefined;
      if (d === 'estimate:forged-id') return { id: 'forged', tokens: 3 };
      return { tokens: messages.length };
    },
    invariants: ['tool-pairing'],
  }, max ? { maxLineBytes: Number(max) } : {});
}

if (process.env.CTXGATE_HOSTILE_SUBJECT) {
  hostileSubject();
} else {
  await battery();
}

/** Every answer line is one ctxgate reads: UTF-8, a JSON object, nothing strictDumps refuses. */
function readAnswer(bytes, what) {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  const answer = JSON.parse(text);
  assert.ok(typeof answer === 'object' && answer !== null && !Array.isArray(answer), `${what}: not an object: ${text.slice(0, 200)}`);
  strictDumps(answer); // throws on a lone surrogate, NaN (cannot come from JSON.parse), 128 deep
  if (answer.error) {
    assert.equal(typeof answer.error.message, 'string', what);
    assert.ok(answer.error.message.length > 0 && answer.error.message.length < 4200, `${what}: message of ${answer.error.message.length} characters`);
  }
  return answer;
}

/** Run the subject over pipes, feed it `lines` (each a string or bytes, \n added), return [answers, stderr, exit]. */
function talk(lines, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SELF], {
      env: { ...process.env, CTXGATE_HOSTILE_SUBJECT: '1', ...env }, stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out = [], err = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', reject);
    child.stdin.on('error', () => {}); // a subject that died: the answers it left say so
    child.on('close', (code, signal) => {
      const stdout = Buffer.concat(out);
      const parts = [];
      for (let start = 0, nl; (nl = stdout.indexOf(0x0a, start)) !== -1; start = nl + 1) parts.push(stdout.subarray(start, nl));
      resolve({ lines: parts, complete: stdout.length === 0 || stdout[stdout.length - 1] === 0x0a, stderr: Buffer.concat(err).toString(), code, signal });
    });
    for (const l of lines) child.stdin.write(Buffer.concat([typeof l === 'string' ? Buffer.from(l) : l, Buffer.from('\n')]));
    child.stdin.end();
  });
}

const compact = (id, content, extra = {}) => JSON.stringify({ op: 'compact', id, messages: [{ role: 'user', content }], ...extra });
const LIB = 'library_error', BAD = 'invalid_input';

/** [name, request line, id expected, kind expected (or null: a plain answer), what the message must say]. */
function cases() {
  const out = [];
  const add = (name, line, id, kind, says) => out.push({ name, line, id, kind, says });
  // Thrown and rejected values: library_error, naming the value.
  const named = {
    undefined: /^undefined \(not an Error\)/, null: /^null \(not an Error\)/, zero: /^0 \(not an Error\)/,
    'empty-string': /^the string "" \(not an Error\)/, string: /^the string "boom"/, symbol: /^Symbol\(boom\)/,
    bigint: /^10n/, true: /^true/, function: /^a function namedThrowable/, array: /^1,two \(not an Error\)/,
    'null-proto': /^an object without a prototype: \{\}/, 'null-proto-fields': /^an object without a prototype: \{"why":"fields"\}/,
    'tostring-throws': /^an object of class Object with the fields "toString" \(not an Error\)$/,
    'tostring-object': /^an object of class Object with the fields "toString", "valueOf"/,
    cycle: /^an object of class Object with the fields "a", "self"/, proxy: /^an object that cannot be read/,
    'proxy-of-error': /cannot be read|Error/, 'revoked-proxy': /^an object.* that cannot be read/,
    'message-getter-throws': /^Error: \(its message cannot be read: reading it threw\)/,
    'message-getter-throws-proxy': /^Error: \(its message cannot be read/,
    'name-getter-throws': /^Error: hidden/, 'stack-getter-throws': /^Error: hidden/,
    'message-not-string': /^Error: \(its message is not a string\)/,
    'lone-surrogate-message': /^TypeError: half an emoji: \ufffd/, 'huge-message': /^RangeError: x{100}.*… \(\d+ more characters\)/,
    promise: /^an object of class Promise with no fields/, aggregate: /^AggregateError: several/,
  };
  for (const how of ['throw', 'reject']) {
    for (const [what, says] of Object.entries(named)) add(`${how} ${what}`, compact(`${how}-${what}`, `${how}:${what}`), `${how}-${what}`, LIB, says);
    add(`${how} CannotFit with a lone surrogate`, compact(`${how}-cf`, `${how}:cannot-fit-lone-surrogate`), `${how}-cf`, 'cannot_fit', /^too big \ufffd$/);
    add(`${how} CannotFit whose message getter throws`, compact(`${how}-cfg`, `${how}:cannot-fit-getter-throws`), `${how}-cfg`, 'cannot_fit', /cannot be read/);
    add(`${how} a huge InvalidInput`, compact(`${how}-ii`, `${how}:invalid-input-huge`), `${how}-ii`, BAD, /^y+… \(96000 more characters\)$/);
  }
  // Answers ctxgate could not read, or JSON.stringify would change: library_error, naming the field.
  const fields = {
    nan: /messages\[0\]\.content: NaN/, infinity: /messages\[0\]\.extra: Infinity/, 'minus-infinity': /messages\[0\]\.extra\[0\]: -Infinity/,
    bigint: /messages\[0\]\.extra: the BigInt 1180591620717411303424n/, cycle: /circular/,
    'lone-surrogate': /messages\[0\]\.content: holds a lone surrogate U\+D83D at character 4/,
    'lone-surrogate-key': /messages\[0\]\["k\\udc00"\]: its key holds a lone surrogate U\+DC00/,
    'undefined-in-array': /messages\[1\]: undefined/, 'hole-in-array': /messages\[1\]: undefined/,
    'function-field': /messages\[0\]\.run: a function/, 'symbol-field': /messages\[0\]\.tag: a symbol/,
    map: /messages\[0\]\.extra: a Map/, 'unawaited-promise': /messages\[0\]\.content: a Promise .*awaited/,
    'deep-128': /nested 128 arrays and objects deep/, 'deep-100k': /nested 128 arrays and objects deep/,
    'tojson-throws': /writing it threw Error: toJSON threw/, 'getter-throws': /writing it threw Symbol\(getter\)/,
    'proxy-messages': /array trap|keys trap/, 'revoked-messages': /revoked|proxy/i,
    undefined: /^compact returned undefined, not an array/, string: /^compact returned a string/, null: /^compact returned null/,
    'thenable-throws': /^Error: then threw/,
  };
  for (const [what, says] of Object.entries(fields)) add(`answer ${what}`, compact(`answer-${what}`, `answer:${what}`), `answer-${what}`, LIB, says);
  add('answer nested 127 deep (read)', compact('answer-deep-127', 'answer:deep-127'), 'answer-deep-127', null, null);
  add('estimate NaN', JSON.stringify({ op: 'estimate', id: 'e1', messages: [{ role: 'user', content: 'estimate:nan' }] }), 'e1', LIB, /tokens: NaN/);
  add('estimate BigInt', JSON.stringify({ op: 'estimate', id: 'e2', messages: [{ role: 'user', content: 'estimate:bigint' }] }), 'e2', LIB, /^estimate returned 5n, not/);
  add('estimate undefined', JSON.stringify({ op: 'estimate', id: 'e3', messages: [{ role: 'user', content: 'estimate:undefined' }] }), 'e3', LIB, /^estimate returned undefined/);
  add('estimate with an id of its own', JSON.stringify({ op: 'estimate', id: 'e4', messages: [{ role: 'user', content: 'estimate:forged-id' }] }), 'e4', null, null);
  // Lines that are not requests: invalid_input, with a null id unless the id could be read.
  // Its deepest array is `n` deep (the request object is 1).
  const deep = (n) => `{"op":"compact","id":"deep","messages":[],"x":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`;
  const cesu = Buffer.from('{"op":"compact","id":1,"messages":[{"role":"user","content":"');
  const lines = [
    ['not JSON', 'not json', null, /^not JSON/],
    ['truncated JSON', '{"op":', null, /^not JSON/],
    ['a JSON array', '[1]', null, /^a request is a JSON object$/],
    ['a JSON string', '"hello"', null, /^a request is a JSON object$/],
    ['JSON null', 'null', null, /^a request is a JSON object$/],
    ['a number', '42', null, /^a request is a JSON object$/],
    ['a stray byte 0xff', Buffer.from([0x7b, 0xff, 0x7d]), null, /^not UTF-8: the byte at offset 1 of this 3-byte line/],
    ['a cut 2-byte character', Buffer.from([0x22, 0xc3]), null, /^not UTF-8: the byte at offset 1/],
    ['an overlong encoding', Buffer.from([0x22, 0xc0, 0xaf, 0x22]), null, /^not UTF-8: the byte at offset 1/],
    ['a surrogate encoded as UTF-8 (CESU)', Buffer.concat([cesu, Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}]}')]), null, new RegExp(`^not UTF-8: the byte at offset ${cesu.length} `)],
    ['a BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"op":"hello"}')]), null, /^not JSON/],
    ['a NUL byte', '{"op":"compact",\u0000"id":1}', null, /^not JSON/],
    ['a lone surrogate escape in content', compact('ls', '\\ud800').replace('\\\\ud800', '\\ud800'), 'ls', /^the request's messages\[0\]\.content: holds a lone surrogate U\+D800/],
    ['a lone low surrogate in a key', '{"op":"compact","id":"lk","messages":[{"role":"user","content":"x","\\udc00":1}]}', 'lk', /^the request's messages\[0\]\["\\udc00"\]: its key holds a lone surrogate U\+DC00/],
    ['a lone surrogate in the id', '{"op":"compact","id":"\\ud800","messages":[]}', null, /^the request's id: holds a lone surrogate/],
    ['a lone surrogate in op', '{"op":"\\ud800","id":"lo","messages":[]}', 'lo', /^the request's op: holds a lone surrogate/],
    ['a number past a double', '{"op":"compact","id":"big","config":{"keepRecent":1e400},"messages":[]}', 'big', /^the request's config\.keepRecent: a number past the largest/],
    ['a request nested 128 deep', deep(128), 'deep', /^the request's x(\[0\]){126}: nested 128 arrays and objects deep/],
    ['a request nested 100,000 deep', deep(100_000), 'deep', /^the request's x(\[0\]){126}: nested 128/],
    ['a config that is an array', '{"op":"compact","id":"c1","config":[],"messages":[]}', 'c1', /^`config` must be an object$/],
    ['a config that is a string', '{"op":"compact","id":"c2","config":"x","messages":[]}', 'c2', /^`config` must be an object$/],
    ['messages that are not an array', '{"op":"compact","id":"m1","messages":{}}', 'm1', /^`messages` must be an array of objects$/],
    ['a message that is not an object', '{"op":"compact","id":"m2","messages":[1]}', 'm2', /^`messages` must be an array of objects$/],
    ['an unknown op', '{"op":"explode","id":"u1","messages":[]}', 'u1', /^unknown op "explode"$/],
    ['an op that is an object', '{"op":{"a":[1]},"id":"u2","messages":[]}', 'u2', /^unknown op \{"a":\[1\]\}$/],
    ['no op', '{"id":"u3","messages":[]}', 'u3', /^unknown op undefined$/],
    ['a line over maxLineBytes', `{"op":"compact","id":"long","messages":[{"role":"user","content":"${'z'.repeat(3 << 20)}"}]}`, null, /^a request line of 31457\d\d bytes, over the 1048576 this subject reads/],
  ];
  for (const [name, line, id, says] of lines) add(name, line, id, BAD, says);
  add('an id that is an object, echoed', compact({ a: [1, { b: null }] }, 'plain'), { a: [1, { b: null }] }, null, null);
  add('a line just under maxLineBytes', compact('under', 'u'.repeat((1 << 20) - 100)), 'under', null, null);
  add('a request nested 127 deep (read)', deep(127), 'deep', null, null);
  add('CRLF', `${compact('crlf', 'plain')}\r`, 'crlf', null, null);
  return out;
}

async function battery() {
  const { test } = await import('node:test');

  test('every hostile request gets one answer ctxgate reads, of its kind, naming the cause; the loop goes on', { timeout: 120_000 }, async () => {
    const all = cases();
    const canary = (i) => compact(`canary-${i}`, 'still here');
    const lines = all.flatMap((c, i) => [c.line, canary(i)]);
    const { lines: answers, complete, stderr, code, signal } = await talk(lines, { CTXGATE_HOSTILE_MAX_LINE: String(1 << 20) });
    assert.equal(signal, null, stderr.slice(-2000));
    assert.equal(code, 0, stderr.slice(-2000));
    assert.ok(complete, 'the last answer line is whole');
    assert.equal(answers.length, lines.length, `one answer a request (stderr: ${stderr.slice(-2000)})`);
    assert.doesNotMatch(stderr, /Unhandled|uncaught|Cannot convert object to primitive value\n\s+at answer/i);
    // (throw:promise throws a rejected Promise nobody awaits: the loop says so, and goes on.)
    assert.match(stderr, /hostile: a promise rejected outside any request \(ignored\): Error: a thrown promise/);
    for (const [i, c] of all.entries()) {
      const got = readAnswer(answers[2 * i], c.name);
      assert.deepEqual(got.id, c.id, `${c.name}: the id`);
      if (c.kind === null) {
        assert.equal(got.error, undefined, `${c.name}: ${JSON.stringify(got.error)}`);
      } else {
        assert.equal(got.error?.kind, c.kind, `${c.name}: ${JSON.stringify(got).slice(0, 500)}`);
        assert.match(got.error.message, c.says, c.name);
      }
      const after = readAnswer(answers[2 * i + 1], `the request after ${c.name}`);
      assert.deepEqual(after, { id: `canary-${i}`, messages: [{ role: 'user', content: 'still here' }] }, `after ${c.name}`);
    }
  });

  test('a last line without its newline is answered; a blank line is no request', async () => {
    const child = spawn(process.execPath, [SELF], { env: { ...process.env, CTXGATE_HOSTILE_SUBJECT: '1' } });
    let out = '';
    child.stdout.on('data', (b) => { out += b; });
    child.stdin.end(`\n   \r\n${compact(1, 'a')}\n\t\n${compact(2, 'b')}`);
    const code = await new Promise((r) => child.on('close', r));
    assert.equal(code, 0);
    assert.deepEqual(out.trimEnd().split('\n').map((l) => JSON.parse(l).id), [1, 2]);
  });

  const binary = process.env.CTXGATE_BINARY || path.join(SELF, '../../../target/release/ctxgate');
  test('under ctxgate check, a compactor doing every hostile thing is a library_error fault, never a malformed line or a crash',
    { skip: !fs.existsSync(binary) && `no ctxgate binary at ${binary} (cargo build --release, or set CTXGATE_BINARY)`, timeout: 300_000 }, () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-hostile-js-'));
      try {
        const report = path.join(dir, 'report.json');
        const counter = path.join(dir, 'counter');
        fs.writeFileSync(counter, '');
        const run = spawnSync(binary, ['check', '--subject', `${JSON.stringify(process.execPath)} ${JSON.stringify(SELF)}`,
          '--cases', '60', '--seed', '44', '--jobs', '1', '--shrink-runs', '4', '--save', path.join(dir, 'failures'),
          '--also-report', `json=${report}`],
        { env: { ...process.env, CTXGATE_HOSTILE_SUBJECT: '1', CTXGATE_HOSTILE_COUNTER: counter }, encoding: 'utf8', timeout: 280_000 });
        assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
        const { faults } = JSON.parse(fs.readFileSync(report, 'utf8'));
        const kinds = [...new Set(faults.map((f) => f.kind))];
        assert.deepEqual(kinds, ['library-error'], faults.map((f) => `${f.kind}: ${f.detail}`).join('\n'));
        const requests = fs.statSync(counter).size;
        assert.ok(requests >= DIRECTIVES.length, `each hostile thing was done at least once: ${requests} requests, ${DIRECTIVES.length} things`);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
}
