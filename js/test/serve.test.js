// serve(): the protocol loop, driven through in-memory streams.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';

import { CannotFit, InvalidInput, serve } from '../index.js';

/** Feed `chunks` (strings or Buffers) to serve(options); resolve with the answers, parsed. */
async function talk(options, chunks) {
  const input = new PassThrough();
  let written = '';
  const output = { write: (s) => { written += s; } };
  const done = serve(options, { input, output });
  for (const c of chunks) input.write(typeof c === 'string' ? Buffer.from(c) : c);
  input.end();
  await done;
  assert.ok(written.endsWith('\n'), `answers end with a newline: ${JSON.stringify(written)}`);
  return written.trimEnd().split('\n').map((l) => JSON.parse(l));
}

const keepAll = { name: 'keep-all', version: '0.0.1', compact: (messages) => messages };

test('hello names the subject, its ops and only the optional fields given', async () => {
  const [plain] = await talk(keepAll, ['{"op":"hello","protocol":1}\n']);
  assert.deepEqual(plain, { op: 'hello', protocol: 1, name: 'keep-all', version: '0.0.1', ops: ['compact'], format: 'engine' });
  const [full] = await talk({
    ...keepAll, estimate: () => ({ tokens: 0 }), invariants: ['tool-pairing'], wireFormats: ['engine'], contentParts: false,
  }, ['{"op":"hello","protocol":1}\n']);
  assert.deepEqual(full.ops, ['compact', 'estimate']);
  assert.deepEqual([full.invariants, full.wireFormats, full.contentParts], [['tool-pairing'], ['engine'], false]);
});

test('compact gets the messages and the config over the defaults; answers keep their ids and order', async () => {
  const seen = [];
  const slowFirst = {
    ...keepAll,
    compact: async (messages, config) => {
      seen.push(config);
      // The first request takes longer: its answer must still come first.
      await new Promise((r) => setTimeout(r, messages.length ? 20 : 0));
      return messages.slice(1);
    },
  };
  const answers = await talk(slowFirst, [
    '{"op":"compact","id":1,"config":{"keepRecent":5},"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}\n',
    '{"op":"compact","id":"two","messages":[]}\n',
  ]);
  assert.deepEqual(answers, [{ id: 1, messages: [{ role: 'user', content: 'b' }] }, { id: 'two', messages: [] }]);
  assert.equal(seen[0].keepRecent, 5);
  assert.equal(seen[0].transportMaxBodyBytes, 8388608);
  assert.equal(seen[1].wireFormat, 'engine');
});

test('CannotFit and InvalidInput are answers; any other throw is a library_error with where it happened', async () => {
  const answers = await talk({
    ...keepAll,
    compact: (messages) => {
      if (messages.length === 1) throw new CannotFit('too big');
      if (messages.length === 2) throw new InvalidInput('no such role');
      return messages[5].content; // a TypeError
    },
  }, [
    '{"op":"compact","id":1,"messages":[{"role":"user"}]}\n',
    '{"op":"compact","id":2,"messages":[{"role":"user"},{"role":"user"}]}\n',
    '{"op":"compact","id":3,"messages":[]}\n',
  ]);
  assert.deepEqual(answers[0], { id: 1, error: { kind: 'cannot_fit', message: 'too big' } });
  assert.deepEqual(answers[1], { id: 2, error: { kind: 'invalid_input', message: 'no such role' } });
  assert.equal(answers[2].error.kind, 'library_error');
  assert.match(answers[2].error.message, /^TypeError: .*\(at .*serve\.test\.js:\d+/);
});

test('estimate answers tokens and perMessage; an op the subject lacks is invalid_input', async () => {
  const answers = await talk({ ...keepAll, estimate: (m) => ({ tokens: 7, perMessage: m.map(() => 7) }) }, [
    '{"op":"estimate","id":4,"messages":[{"role":"user","content":"x"}]}\n',
  ]);
  assert.deepEqual(answers, [{ id: 4, tokens: 7, perMessage: [7] }]);
  // The count alone, awaited: {tokens}.
  const [alone] = await talk({ ...keepAll, estimate: async (m) => m.length }, [
    '{"op":"estimate","id":9,"messages":[{"role":"user","content":"x"}]}\n',
  ]);
  assert.deepEqual(alone, { id: 9, tokens: 1 });
  const [none] = await talk(keepAll, ['{"op":"estimate","id":5,"messages":[]}\n']);
  assert.deepEqual(none, { id: 5, error: { kind: 'invalid_input', message: 'unknown op "estimate"' } });
});

test('bad lines get invalid_input with a null id; a line split mid-character is joined first', async () => {
  const euro = Buffer.from('{"op":"compact","id":6,"messages":[{"role":"user","content":"€"}]}\n');
  const cut = euro.indexOf(Buffer.from('€')) + 1;
  const answers = await talk(keepAll, [
    'not json\n', '[1]\n', '\n', '{"op":"compact","id":7,"messages":{}}\n',
    euro.subarray(0, cut), euro.subarray(cut), // the cut falls inside the 3-byte "€"
    '{"op":"compact","id":8,"messages":[]}', // no final newline
  ]);
  assert.equal(answers.length, 5);
  assert.deepEqual([answers[0].id, answers[0].error.kind], [null, 'invalid_input']);
  assert.match(answers[0].error.message, /^not JSON/);
  assert.deepEqual(answers[1], { id: null, error: { kind: 'invalid_input', message: 'a request is a JSON object' } });
  assert.deepEqual(answers[2], { id: 7, error: { kind: 'invalid_input', message: '`messages` must be an array of objects' } });
  assert.deepEqual(answers[3], { id: 6, messages: [{ role: 'user', content: '€' }] });
  assert.deepEqual(answers[4], { id: 8, messages: [] });
});

test('serve refuses options it cannot answer with', () => {
  assert.throws(() => serve({ name: 'x', version: '1' }), /`compact` must be a function/);
  assert.throws(() => serve({ ...keepAll, name: '' }), /`name` must be a non-empty string/);
});
