// check(): the arguments it gives `ctxgate check`, and what it throws, with a
// stand-in binary that prints what ctxgate prints (js/ci.sh runs the real one).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

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

/** The JSON report of REPORT's run, as --also-report json=FILE writes it (the fields check reads). */
const JSON_REPORT = {
  ok: false,
  failures: [{ invariant: 'tool-pairing', saved: "/tmp/my failures/it's-0123abcd.json", replay: 'ctxgate replay …' }],
  faults: [{ kind: 'crash', saved: '.ctxgate/failures/crash-4567.json' }, { kind: 'timeout', saved: null, saveError: 'disk full' }],
};

/**
 * A stand-in for the binary: records its arguments (and the config file's
 * text), writes `report` where --also-report json= says, prints `stdout`,
 * exits `code`.
 */
function fakeBinary(name, { stdout = '', stderr = '', code = 0, report = null }) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!${process.execPath}
const fs = require('node:fs');
const args = process.argv.slice(2);
const at = args.indexOf('--config');
fs.writeFileSync(${JSON.stringify(file + '.args')}, JSON.stringify({ args, config: at < 0 ? null : fs.readFileSync(args[at + 1], 'utf8') }));
const json = args.find((a, i) => args[i - 1] === '--also-report' && a.startsWith('json='));
if (json && ${JSON.stringify(report)} !== null) fs.writeFileSync(json.slice(5), JSON.stringify(${JSON.stringify(report)}));
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
  assert.equal(args.at(-2), '--also-report');
  assert.match(args.at(-1), /^json=.*ctxgate-check-.*report\.json$/);
  assert.deepEqual(JSON.parse(config), { keepRecent: 3 });
});

test('a failure throws CheckFailed with each failure, its fixture and its replay line, without the coverage tables', async () => {
  const { binary } = fakeBinary('fail.cjs', { stdout: REPORT, stderr: '  10/10 cases\nerror: 1 invariant(s) failed\n', code: 1, report: JSON_REPORT });
  await assert.rejects(check({ binary, subject: 'node x.mjs', cwd: dir }), (e) => {
    assert.ok(e instanceof CheckFailed);
    assert.ok(e.message.startsWith('ctxgate check failed on node x.mjs\nFAILED tool-pairing (case 3)\n'), e.message);
    assert.ok(!e.message.includes('invariant                        pass'), 'the table is left out');
    assert.ok(!e.message.includes('coverage'), 'the coverage is left out');
    assert.ok(e.message.endsWith('FAILED: 1 invariant(s) broken, 1 fault kind(s); reproduce the run with --seed 5'), e.message);
    assert.match(e.message, /FAULT crash/);
    // From the JSON report, absolute (a relative one is ctxgate's cwd's): never from the shell-quoted replay line.
    assert.deepEqual(e.fixtures, ["/tmp/my failures/it's-0123abcd.json", path.join(dir, '.ctxgate/failures/crash-4567.json')]);
    assert.equal(e.replays.length, 2);
    assert.match(e.replays[0], /^ctxgate replay '\/tmp\/my failures\/tool-pairing-0123abcd\.json' --subject 'node x\.mjs'$/);
    assert.equal(e.exitCode, 1);
    assert.match(e.output, /error: 1 invariant\(s\) failed/);
    return true;
  });
});

test('bad usage throws with what ctxgate said, and no fixtures', async () => {
  const { binary } = fakeBinary('usage.cjs', { stderr: 'error: --cases 0: at least one case\n', code: 2 });
  await assert.rejects(check({ binary, subject: 'node x.mjs', cases: 0 }), (e) => {
    assert.match(e.message, /ctxgate check could not run \(exit 2\) on node x\.mjs\n[^]*--cases 0: at least one case/);
    assert.deepEqual(e.fixtures, []);
    return true;
  });
});

test('a subject is one command string or its words', () => {
  assert.equal(commandLine('node a.mjs --fast'), 'node a.mjs --fast');
  assert.equal(commandLine(['node', "it's.mjs", 'a b']), `node 'it'\\''s.mjs' 'a b'`);
  assert.throws(() => commandLine([]), /`subject` must be a command/);
  assert.throws(() => commandLine(' '), /`subject` must be a command/);
});

/** Run `f` with os.tmpdir() (check's scratch folders) in a folder of its own; its entries afterwards. */
async function leftInTmp(f) {
  const tmp = fs.mkdtempSync(path.join(dir, 'tmp-'));
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    await f();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
  return fs.readdirSync(tmp);
}

test('the scratch folder is removed however check ends: resolved, failed, a config it cannot write, a binary it cannot run', async () => {
  const ok = fakeBinary('scratch-ok.cjs', { stdout: 'OK\n' }).binary;
  const failing = fakeBinary('scratch-fail.cjs', { stdout: REPORT, code: 1, report: JSON_REPORT }).binary;
  const notExecutable = path.join(dir, 'not-executable');
  fs.writeFileSync(notExecutable, 'not a program', { mode: 0o644 });
  const runs = [
    ['resolved', () => check({ binary: ok, subject: 'x', config: { keepRecent: 1 }, genConfig: { cases: 1 } }), null],
    ['CheckFailed', () => check({ binary: failing, subject: 'x', config: { keepRecent: 1 } }), CheckFailed],
    ['a config holding NaN', () => check({ binary: ok, subject: 'x', config: { keepRecent: NaN } }),
      /`config` must be JSON data or a file path: config\.keepRecent: NaN/],
    ['a genConfig holding a BigInt, after the config was written', () => check({ binary: ok, subject: 'x', config: {}, genConfig: { cases: 1n } }),
      /`genConfig` must be JSON data or a file path: genConfig\.cases: the BigInt 1n/],
    ['a config with a cycle', () => { const c = {}; c.c = c; return check({ binary: ok, subject: 'x', config: c }); }, /circular/],
    ['a binary that cannot run', () => check({ binary: notExecutable, subject: 'x', config: {} }), /ctxgate: cannot run .*not-executable/],
  ];
  for (const [what, run, error] of runs) {
    const left = await leftInTmp(async () => {
      if (error === null) await run();
      else await assert.rejects(run(), error, what);
    });
    assert.deepEqual(left, [], `${what}: left ${left}`);
  }
});

const binary = process.env.CTXGATE_BINARY || fileURLToPath(new URL('../../target/release/ctxgate', import.meta.url));

test('every fixture path a failure returns exists, whatever characters its folder holds and wherever ctxgate ran',
  { skip: !fs.existsSync(binary) && `no ctxgate binary at ${binary} (cargo build --release, or set CTXGATE_BINARY)`, timeout: 120_000 }, async () => {
    const work = fs.mkdtempSync(path.join(dir, 'work-'));
    // An estimate of 0 tokens: estimate-covers-tool-calls fails on the first history with a tool call.
    fs.writeFileSync(path.join(work, 'subject.mjs'), `import { serve } from ${JSON.stringify(new URL('../index.js', import.meta.url).href)};
serve({ name: 'zero', version: '1', compact: (m) => m, estimate: () => ({ tokens: 0 }), invariants: ['estimate-covers-tool-calls'] });
`);
    for (const save of ['it\'s "a" $HOME `x` ü\\ folder', path.join(work, 'abs it\'s')]) {
      await assert.rejects(check({ binary, subject: ['node', 'subject.mjs'], cases: 20, seed: 44, save, cwd: work, args: ['--jobs', '1'] }), (e) => {
        assert.ok(e instanceof CheckFailed, e.message);
        assert.ok(e.fixtures.length >= 1, `${save}: no fixtures in ${e.output.slice(0, 2000)}`);
        for (const f of e.fixtures) {
          assert.ok(path.isAbsolute(f), f);
          assert.ok(fs.existsSync(f), `${f} does not exist`);
          assert.equal(path.dirname(f), path.resolve(work, save));
        }
        return true;
      });
    }
  });
