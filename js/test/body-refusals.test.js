// bodyBytes refuses the bodies the binary refuses, by the binary's rules
// (issue 44 §3; wire.js, strictDumps): a string or a key holding a lone
// surrogate, NaN and ±Infinity, JSON nested 128 deep — the messages read
// as `ctxgate body` reads a history file, the JSON array of them (a message
// is at depth 2), the envelope as `--envelope` reads it (depth 1) — and a
// message that is not an object. Python's body_bytes keeps the same rules.
// With the binary at hand (CTXGATE_BINARY, or the checkout's
// target/release/ctxgate), each case is also given to `ctxgate body` in
// each wire format: it refuses exactly the ones bodyBytes refuses, and
// measures the others as bodyBytes does.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { NotJson, bodyBytes, bodyMeterFor, toolCallsFloor } from '../index.js';

const FORMATS = ['engine', 'openai', 'anthropic'];
const nested = (levels) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const user = (extra) => `{"role":"user","content":"x"${extra}}`;

/**
 * [name, history JSON text, envelope JSON text, refused?]. The text is
 * what the binary reads; JSON.parse of it is what bodyBytes gets (NaN and
 * Infinity, which JSON text cannot hold, are given to the binary as the
 * words NaN and Infinity: refused as not JSON).
 */
const CASES = [
  ['a plain history', `[${user('')}]`, '{}', false],
  ['an emoji as a surrogate pair escape', `[${user(',"e":"\\ud83d\\ude00"')}]`, '{}', false],
  ['a lone high surrogate in content', '[{"role":"user","content":"cut \\ud83d"}]', '{}', true],
  ['a lone low surrogate in a field', `[${user(',"f":"\\udc00 x"')}]`, '{}', true],
  ['a lone surrogate in a key', `[${user(',"\\udc00":1')}]`, '{}', true],
  ['a lone surrogate in tool call arguments', '[{"role":"assistant","content":null,"toolCalls":[{"id":"c","name":"n","arguments":{"p":"\\ud800"}}]},{"role":"tool","toolCallId":"c","content":"r"}]', '{}', true],
  ['NaN in a field', `[${user(',"n":NaN')}]`, '{}', true],
  ['Infinity in tool call arguments', '[{"role":"assistant","content":null,"toolCalls":[{"id":"c","name":"n","arguments":{"p":Infinity}}]},{"role":"tool","toolCallId":"c","content":"r"}]', '{}', true],
  ['-Infinity in an image part', '[{"role":"user","content":[{"type":"image","mediaType":"image/png","data":"AAAA","w":-Infinity}]}]', '{}', true],
  ['nested 127 deep (a message is 2)', `[${user(`,"d":${nested(125)}`)}]`, '{}', false],
  ['nested 128 deep', `[${user(`,"d":${nested(126)}`)}]`, '{}', true],
  ['nested 128 deep in a content part', `[{"role":"user","content":[{"type":"text","text":"t","d":${nested(124)}}]}]`, '{}', true],
  ['nested 127 deep in a content part', `[{"role":"user","content":[{"type":"text","text":"t","d":${nested(123)}}]}]`, '{}', false],
  ['a message that is not an object', '[1]', '{}', true],
  ['an envelope nested 127 deep', `[${user('')}]`, `{"model":"m","x":${nested(126)}}`, false],
  ['an envelope nested 128 deep', `[${user('')}]`, `{"model":"m","x":${nested(127)}}`, true],
  ['NaN in the envelope', `[${user('')}]`, '{"temperature":NaN}', true],
  ['a lone surrogate in the envelope', `[${user('')}]`, '{"model":"\\ud800x"}', true],
];

/** JSON.parse, with the words NaN, Infinity and -Infinity read as those numbers. */
function parse(text) {
  return JSON.parse(text.replace(/(:)(-?Infinity|NaN)/g, '$1"@@$2"'), (_k, v) => (
    typeof v === 'string' && v.startsWith('@@') ? Number(v.slice(2)) : v));
}

/** bodyBytes of a case in a format: the size, or the error it throws. */
function ours(history, envelope, wireFormat) {
  try {
    return { size: bodyBytes(parse(history), { wireFormat, envelope: parse(envelope) }) };
  } catch (e) {
    return { error: e };
  }
}

test('bodyBytes refuses each case the rules refuse, naming the field, and measures the others', () => {
  for (const [name, history, envelope, refused] of CASES) {
    for (const format of FORMATS) {
      const got = ours(history, envelope, format);
      if (!refused) {
        assert.equal(got.error, undefined, `${name} (${format}): ${got.error?.message}`);
        continue;
      }
      assert.ok(got.error instanceof TypeError, `${name} (${format}): measured ${got.size} bytes, not refused`);
      assert.match(got.error.message, /^(messages\[\d+\]|config\.envelope)/, `${name} (${format}): ${got.error.message}`);
    }
  }
});

test('the refusals say what is wrong where', () => {
  const refusal = (messages, config = {}) => {
    try {
      bodyBytes(messages, config);
    } catch (e) {
      return e;
    }
    return assert.fail('not refused');
  };
  let e = refusal([{ role: 'user', content: 'ok' }, { role: 'user', content: 'cut 😀'.slice(0, 5) }]);
  assert.ok(e instanceof NotJson);
  assert.equal(e.message, 'messages[1].content: holds a lone surrogate U+D83D at character 4: not Unicode text, which UTF-8 (and so ctxgate) cannot carry');
  e = refusal([{ role: 'user', content: 'x', score: NaN }], { wireFormat: 'openai' });
  assert.equal(e.message, 'messages[0].score: NaN, which JSON cannot hold (JSON.stringify would write null; ctxgate refuses NaN and Infinity)');
  e = refusal([{ role: 'user', content: 'x', big: 10n }]);
  assert.match(e.message, /^messages\[0\]\.big: the BigInt 10n/);
  e = refusal([{ role: 'user', content: [{ type: 'text', text: 'a' }, undefined] }]);
  assert.match(e.message, /^messages\[0\]\.content\[1\]: undefined/);
  e = refusal([null]);
  assert.equal(e.message, 'messages[0]: null, not a message (a JSON object)');
  e = refusal([], { envelope: { temperature: Infinity } });
  assert.match(e.message, /^config\.envelope\.temperature: Infinity/);
  e = refusal([{ role: 'user', content: 'x', p: Promise.resolve('y') }], { wireFormat: 'anthropic' });
  assert.match(e.message, /^messages\[0\]\.p: a Promise .*was it awaited\?/);
  // An absent field is absent: undefined in an object is left out, as JSON.stringify leaves it.
  assert.equal(bodyBytes([{ role: 'user', content: 'x', toolCalls: undefined }]), bodyBytes([{ role: 'user', content: 'x' }]));
  // A meter refuses a message it has not measured yet, and still measures the ones it has.
  const meter = bodyMeterFor({});
  const fine = { role: 'user', content: 'x' };
  const size = meter([fine]);
  assert.throws(() => meter([fine, { role: 'user', content: '\udfff' }]), /messages\[1\]\.content: holds a lone surrogate U\+DFFF/);
  assert.equal(meter([fine]), size);
  // toolCallsFloor counts the same JSON, so it refuses the same values.
  assert.throws(() => toolCallsFloor([{ role: 'assistant', toolCalls: [{ id: 'c', name: 'n', arguments: { p: NaN } }] }]),
    /^NotJson: messages\[0\]\.toolCalls\[0\]\.arguments\.p: NaN/);
});

const binary = process.env.CTXGATE_BINARY || fileURLToPath(new URL('../../target/release/ctxgate', import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-body-refusals-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('ctxgate body refuses the same cases, in each wire format, and measures the others to the byte',
  { skip: !fs.existsSync(binary) && `no ctxgate binary at ${binary} (cargo build --release, or set CTXGATE_BINARY)` }, () => {
    for (const [i, [name, history, envelope, refused]] of CASES.entries()) {
      const file = path.join(dir, `history-${i}.json`);
      const env = path.join(dir, `envelope-${i}.json`);
      fs.writeFileSync(file, history);
      fs.writeFileSync(env, envelope);
      for (const format of FORMATS) {
        const run = spawnSync(binary, ['body', '--format', 'engine', '--wire-format', format, '--envelope', env, file]);
        const got = ours(history, envelope, format);
        assert.equal(run.status === 2, refused, `${name} (${format}): the binary exited ${run.status}: ${run.stderr}`);
        if (refused) {
          assert.ok(got.error, `${name} (${format}): the binary refuses it (${run.stderr.toString().trim()}), bodyBytes measured ${got.size}`);
          assert.match(run.stderr.toString(), /error: .*(malformed JSON|nested deeper|expected a message object)/, name);
        } else {
          assert.equal(run.status, 0, `${name} (${format}): ${run.stderr}`);
          assert.equal(got.size, run.stdout.length - 1, `${name} (${format}): bodyBytes ${got.size}, the binary ${run.stdout.length - 1}`);
        }
      }
    }
  });

test('checkJson, the fast walk bodyBytes uses, and strictDumps, which writes answers, agree on every kind of value', async () => {
  const { checkJson, strictDumps } = await import('../lib/wire.js');
  const deep = (n) => { let v = 1; for (let i = 0; i < n; i += 1) v = [v]; return v; };
  class Point { constructor() { this.x = 1; } }
  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  const values = [
    {}, [], 'text', 1.5, -0, true, null, { a: [1, { b: 'c' }] }, Object.assign(Object.create(null), { a: 1 }),
    NaN, Infinity, -Infinity, 'cut \ud83d', { ['\udc00']: 1 }, deep(126), deep(127), deep(128), deep(5000),
    { a: undefined }, [undefined], [1, , 2], { f() {} }, { s: Symbol('s') }, 10n, { b: 10n }, new Date(0),
    new Point(), new Map(), new Set([1]), Promise.resolve(1), { then() {} }, { toJSON: () => NaN }, { toJSON: () => 'ok' },
    new Number(NaN), new Number(2), new String('\ud800'), new String('fine'), new Boolean(false), cyclic,
  ];
  const verdict = (f) => { try { f(); return 'ok'; } catch (e) { return e.message; } };
  for (const [i, v] of values.entries()) {
    for (const depth of [1, 2]) {
      assert.equal(verdict(() => checkJson(v, { depth, path: 'v' })), verdict(() => strictDumps(v, { depth, path: 'v' })), `value ${i} at depth ${depth}`);
    }
  }
  assert.throws(() => strictDumps(new Number(NaN)), /NaN, which JSON cannot hold/);
});
