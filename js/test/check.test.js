// check(): the arguments it gives `ctxgate check`, and what it throws, with a
// stand-in binary that prints what ctxgate prints (js/ci.sh runs the real one).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

import { CheckFailed, check } from '../index.js';
import { commandLine } from '../lib/check.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-check-test-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const REPORT = `ctxgate check — subject x 1.0.0 (engine format), seed 5
invariant                        pass     fail      n/a
tool-pairing                       90        0       10

FAILED tool-pairing (case 3)
  tool-pairing: message 1 answers call c9, which no message of its iteration made
  replay: ctxgate replay '/tmp/my failures/tool-pairing-0123abcd.json' --subject 'node x.mjs'

FAULT crash (1 case(s), first at case 7)
  replay: ctxgate replay .ctxgate/failures/crash-4567.json --subject 'node x.mjs'

coverage:
  coverage of 100 cases: body mean 51.7 KiB (max 518.5 KiB), 25.9 messages mean
  never reached: images: remote URL

FAILED: 1 invariant(s) broken, 1 fault kind(s); reproduce the run with --seed 5
`;

/** A stand-in for the binary: records its arguments (and the config file's text), prints `stdout`, exits `code`. */
function fakeBinary(name, { stdout = '', stderr = '', code = 0 }) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!${process.execPath}
const fs = require('node:fs');
const args = process.argv.slice(2);
const at = args.indexOf('--config');
fs.writeFileSync(${JSON.stringify(file + '.args')}, JSON.stringify({ args, config: at < 0 ? null : fs.readFileSync(args[at + 1], 'utf8') }));
process.stdout.write(${JSON.stringify(stdout)});
process.stderr.write(${JSON.stringify(stderr)});
process.exit(${code});
`, { mode: 0o755 });
  return { binary: file, seen: () => JSON.parse(fs.readFileSync(file + '.args', 'utf8')) };
}

test('a run where everything held resolves with the output; the arguments are check\'s', async () => {
  const { binary, seen } = fakeBinary('ok.cjs', { stdout: 'OK: every checked invariant held on 10 cases\n' });
  const result = await check({ binary, subject: ['node', 'my compactor.mjs'], cases: 10, seed: 4, invariants: ['tool-pairing', 'progress'], config: { keepRecent: 3 } });
  assert.match(result.output, /^OK: every checked invariant held/);
  const { args, config } = seen();
  assert.deepEqual(args.slice(0, 7), ['check', '--subject', "node 'my compactor.mjs'", '--cases', '10', '--save', '.ctxgate/failures']);
  assert.deepEqual(args.slice(7, 11), ['--seed', '4', '--invariants', 'tool-pairing,progress']);
  assert.deepEqual(JSON.parse(config), { keepRecent: 3 });
});

test('a failure throws CheckFailed with each failure, its fixture and its replay line, without the coverage tables', async () => {
  const { binary } = fakeBinary('fail.cjs', { stdout: REPORT, stderr: '  10/10 cases\nerror: 1 invariant(s) failed\n', code: 1 });
  await assert.rejects(check({ binary, subject: 'node x.mjs' }), (e) => {
    assert.ok(e instanceof CheckFailed);
    assert.ok(e.message.startsWith('ctxgate check failed on node x.mjs\nFAILED tool-pairing (case 3)\n'), e.message);
    assert.ok(!e.message.includes('invariant                        pass'), 'the table is left out');
    assert.ok(!e.message.includes('coverage'), 'the coverage is left out');
    assert.ok(e.message.endsWith('FAILED: 1 invariant(s) broken, 1 fault kind(s); reproduce the run with --seed 5'), e.message);
    assert.match(e.message, /FAULT crash/);
    assert.deepEqual(e.fixtures, ['/tmp/my failures/tool-pairing-0123abcd.json', '.ctxgate/failures/crash-4567.json']);
    assert.equal(e.replays.length, 2);
    assert.match(e.replays[0], /^ctxgate replay '\/tmp\/my failures\/tool-pairing-0123abcd\.json' --subject 'node x\.mjs'$/);
    assert.equal(e.exitCode, 1);
    assert.match(e.output, /error: 1 invariant\(s\) failed/);
    return true;
  });
});

test('bad usage throws with what ctxgate said', async () => {
  const { binary } = fakeBinary('usage.cjs', { stderr: 'error: --cases 0: at least one case\n', code: 2 });
  await assert.rejects(check({ binary, subject: 'node x.mjs', cases: 0 }),
    /ctxgate check could not run \(exit 2\) on node x\.mjs\n[^]*--cases 0: at least one case/);
});

test('a subject is one command string or its words', () => {
  assert.equal(commandLine('node a.mjs --fast'), 'node a.mjs --fast');
  assert.equal(commandLine(['node', "it's.mjs", 'a b']), `node 'it'\\''s.mjs' 'a b'`);
  assert.throws(() => commandLine([]), /`subject` must be a command/);
  assert.throws(() => commandLine(' '), /`subject` must be a command/);
});
