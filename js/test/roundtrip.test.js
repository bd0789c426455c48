// roundTrip: `ctxgate gen`'s cases through an adapter's own conversion and
// back, equal by value (SPEC §5), the first difference named by its path;
// and firstDifference, on values made to differ in each way. The round trips
// run the binary (CTXGATE_BINARY, or the checkout's target/release/ctxgate).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { RoundTripMismatch, firstDifference, roundTrip } from '../index.js';

const binary = process.env.CTXGATE_BINARY || fileURLToPath(new URL('../../target/release/ctxgate', import.meta.url));
const needsBinary = { skip: !fs.existsSync(binary) && `no ctxgate binary at ${binary} (cargo build --release, or set CTXGATE_BINARY)` };

/** An adapter's own message type: a role, text, and what it keeps of the rest. */
class Turn {
  constructor(m, keepExtra = true) {
    const { role, content, ...rest } = m;
    this.role = role;
    this.hasContent = 'content' in m;
    this.content = content;
    this.rest = keepExtra ? rest : Object.fromEntries(Object.entries(rest).filter(([k]) => k === 'toolCalls' || k === 'toolCallId'));
  }

  toEngine() {
    return { role: this.role, ...(this.hasContent ? { content: this.content } : {}), ...this.rest };
  }
}

const faithful = (messages) => messages.map((m) => new Turn(m));
const back = (turns) => turns.map((t) => t.toEngine());

test('a faithful conversion comes back equal, as an array, as JSON text and asynchronously', needsBinary, async () => {
  assert.equal(await roundTrip(faithful, back, { binary, cases: 120, seed: 3 }), 120);
  const asText = (turns) => JSON.stringify(back(turns).map((m) => Object.fromEntries(Object.entries(m).reverse())));
  assert.equal(await roundTrip(faithful, asText, { binary, cases: 40, seed: 4 }), 40);
  assert.equal(await roundTrip(async (m) => faithful(m), async (t) => Buffer.from(asText(t)), { binary, cases: 10 }), 10);
});

test('a dropped field is named with its case and path', needsBinary, async () => {
  const lossy = (messages) => messages.map((m) => new Turn(m, false));
  const err = await roundTrip(lossy, back, { binary, cases: 200, seed: 3 }).then(() => null, (e) => e);
  assert.ok(err instanceof RoundTripMismatch, String(err));
  assert.match(err.path, /^messages\[\d+\]\.[^.[]+$/);
  assert.ok(!['role', 'content', 'toolCalls', 'toolCallId'].includes(err.path.split('.')[1]), err.path);
  assert.ok(err.message.includes(`case ${err.caseIndex} of \`ctxgate gen --cases 200 --seed 3\``), err.message);
  assert.ok(err.message.includes(`${err.path}: missing (expected `), err.message);
  assert.ok(err.message.includes(`sed -n ${err.caseIndex + 1}p`), err.message);
  assert.equal(err.command, 'ctxgate gen --cases 200 --seed 3');
});

test('a text-only adapter passes on textOnly cases, and where content parts break it is said', needsBinary, async () => {
  const textOnly = (messages) => {
    for (const m of messages) {
      if (m.content != null && typeof m.content !== 'string') throw new TypeError(`content must be a string, found ${typeof m.content}`);
    }
    return faithful(messages);
  };
  assert.equal(await roundTrip(textOnly, back, { binary, cases: 300, seed: 8, textOnly: true }), 300);
  const err = await roundTrip(textOnly, back, { binary, cases: 300, seed: 8 }).then(() => null, (e) => e);
  assert.ok(err instanceof RoundTripMismatch, String(err));
  assert.match(err.message, /parse threw TypeError: content must be a string, found object/);
  assert.ok(err.cause instanceof TypeError);
});

test('text that is not JSON, a gen that cannot run and what is not a function are said', needsBinary, async () => {
  await assert.rejects(roundTrip(faithful, () => '[{', { binary, cases: 1 }), /serialise returned text that is not JSON/);
  await assert.rejects(roundTrip(faithful, back, { binary, cases: 1, config: '/no/such/config.json' }), /exited with 2/);
  await assert.rejects(roundTrip(faithful, null, { binary }), /both must be functions/);
});

test('equality is SPEC §5\'s', () => {
  const same = [
    [{ a: 1 }, JSON.parse('{"a":1.0}')],
    [{ a: 1, b: [true, null, 'x'] }, { b: [true, null, 'x'], a: 1 }],
    [{ a: 1 }, { a: 1, b: undefined }], // JSON.stringify leaves `b` out
    ['\u2028', '\u2028'],
  ];
  for (const [a, b] of same) assert.equal(firstDifference(a, b), null, JSON.stringify([a, b]));
  const differ = [
    [{ a: true }, { a: 1 }, 'messages.a', 'expected true, got 1'],
    [{ a: 0 }, { a: false }, 'messages.a', 'expected 0, got false'],
    [{ a: null }, {}, 'messages.a', 'missing (expected null)'],
    [{}, { a: null }, 'messages.a', 'not expected (got null)'],
    [[1, [2, 'x']], [1, [2, 'y']], 'messages[1][1]', 'expected "x", got "y"'],
    [[1, 2, 3], [1, 2], 'messages', 'expected an array of 3 item(s), got 2'],
    [[1, 2, 3], [1, 5], 'messages[1]', 'expected 2, got 5'],
    [{ 'a b': 'x' }, { 'a b': ['x'] }, 'messages["a b"]', 'expected "x", got ["x"]'],
    [{ z: 1, a: 2 }, { z: 2, a: 3 }, 'messages.z', 'expected 1, got 2'],
    [{ z: 1, a: 2 }, { a: 2 }, 'messages.z', 'missing (expected 1)'],
    [{ a: 'é' }, { a: 'e' }, 'messages.a', 'expected "\\u00e9", got "e"'],
    [{ a: 1 }, { a: 1n }, 'messages.a', 'expected 1, got a BigInt (not JSON)'],
  ];
  for (const [a, b, path, problem] of differ) {
    assert.deepEqual(firstDifference(a, b), { path, problem }, `${path}: ${problem}`);
  }
});

test('deep values do not overflow', () => {
  const nest = (leaf, extra) => {
    let v = leaf;
    for (let i = 0; i < 20000; i++) v = extra === undefined ? [v] : [v, extra];
    return v;
  };
  assert.equal(firstDifference(nest('x'), nest('x')), null);
  const d = firstDifference(nest('x'), nest('y'));
  assert.equal(d.problem, 'expected "x", got "y"');
  assert.match(d.path, /more levels/);
  assert.equal(firstDifference(nest('x'), nest('x', 1)).problem, 'expected an array of 1 item(s), got 2');
});
