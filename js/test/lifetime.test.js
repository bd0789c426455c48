// Nothing outlives its parent (issue 44 §4): SIGTERM, SIGINT or SIGHUP to
// the `ctxgate` command, or to a process running check(), while ctxgate
// checks a subject that never answers, leaves no process of the tree — the
// command or the test process, ctxgate, its subject — alive, and check()'s
// scratch folder is gone. Every process of a run carries a marker (the
// subject lives in a folder named by it, and ctxgate's command line names
// the subject), and /proc is read until none is left, with a deadline.
// Needs the ctxgate binary (CTXGATE_BINARY, or the checkout's
// target/release/ctxgate) and Linux's /proc.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const binary = process.env.CTXGATE_BINARY || fileURLToPath(new URL('../../target/release/ctxgate', import.meta.url));
const skip = !fs.existsSync(binary) ? `no ctxgate binary at ${binary} (cargo build --release, or set CTXGATE_BINARY)`
  : !fs.existsSync('/proc/self/cmdline') ? 'no /proc to read' : false;
const LAUNCHER = fileURLToPath(new URL('../bin/ctxgate.js', import.meta.url));
const INDEX = new URL('../index.js', import.meta.url).href;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-lifetime-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

/** A folder named by a marker of its own, with a subject that answers hello and never anything else. */
function setUp(name) {
  const marker = `ctxgate-lifetime-marker-${process.pid}-${name}`;
  const dir = path.join(root, marker);
  fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'slow.mjs'), `import fs from 'node:fs';
import { serve } from ${JSON.stringify(INDEX)};
const never = (messages) => {
  fs.writeFileSync(${JSON.stringify(path.join(dir, 'started'))}, String(process.pid));
  return new Promise(() => {}); // never answers: ctxgate waits (--timeout 600)
};
serve({ name: 'slow', version: '1', compact: never, estimate: never });
`);
  return { marker, dir, subject: `node ${path.join(dir, 'slow.mjs')}` };
}

/** The live processes whose command line holds `marker` (zombies are dead: left out). */
function holding(marker) {
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`);
      const state = fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ').pop()[0];
      if (state !== 'Z' && cmd.includes(marker)) out.push(`${entry}: ${cmd.toString().replace(/\0/g, ' ').trim()}`);
    } catch {
      // gone while read
    }
  }
  return out;
}

async function until(what, ok, seconds) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = ok();
    if (value) return value;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Start `argv` (node with a script), wait for the subject's first request, send `signal`; the exit and what is left. */
async function signalDuringCheck({ marker, dir }, argv, signal) {
  const child = spawn(process.execPath, argv, {
    env: { ...process.env, CTXGATE_BINARY: binary, TMPDIR: path.join(dir, 'tmp') }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b) => { stderr += b; });
  child.stdout.resume();
  const exited = new Promise((r) => child.on('exit', (code, sig) => r({ code, signal: sig })));
  await until(`the subject's first request (stderr: ${stderr})`, () => fs.existsSync(path.join(dir, 'started')), 60);
  const tree = holding(marker);
  assert.ok(tree.length >= 3, `the command, ctxgate and the subject are running: ${tree.join('\n')}`);
  const sent = Date.now();
  child.kill(signal);
  const exit = await exited;
  let left = [];
  await until('every process of the tree gone', () => { left = holding(marker); return left.length === 0; }, 10)
    .catch((e) => { throw new Error(`${e.message}; left:\n${left.join('\n')}`); });
  return { exit, stderr, tree, ms: Date.now() - sent };
}

const CHECK = ['check', '--cases', '3', '--jobs', '1', '--timeout', '600'];

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  test(`${signal} to the ctxgate command stops ctxgate and its subject, and the command dies of ${signal}`, { skip, timeout: 90_000 }, async () => {
    const run = setUp(`command-${signal}`);
    const { exit, stderr } = await signalDuringCheck(run, [LAUNCHER, ...CHECK, '--subject', run.subject, '--save', path.join(run.dir, 'f')], signal);
    assert.deepEqual(exit, { code: null, signal }, stderr);
  });
}

/** A script that runs check() on the slow subject (and, with `ownHandler`, handles SIGTERM itself:
 * exit 7 once check() has said why it ended — or 10 s later, which the test's stderr check would fail). */
function driver({ dir, subject }, ownHandler) {
  const file = path.join(dir, 'driver.mjs');
  fs.writeFileSync(file, `import { check } from ${JSON.stringify(INDEX)};
${ownHandler ? "process.on('SIGTERM', () => setTimeout(() => process.exit(7), 10_000));" : ''}
const run = check({ subject: ${JSON.stringify(subject)}, cases: 3, config: { keepRecent: 2 }, args: ['--jobs', '1', '--timeout', '600'], save: ${JSON.stringify(path.join(dir, 'f'))} });
${ownHandler ? "run.catch((e) => { console.error(e.message); process.exit(7); });" : 'await run;'}
`);
  return file;
}

test('SIGTERM to a process running check() stops ctxgate and its subject, removes the scratch folder, and the process dies of it', { skip, timeout: 90_000 }, async () => {
  const run = setUp('check');
  const { exit, stderr } = await signalDuringCheck(run, [driver(run, false)], 'SIGTERM');
  assert.deepEqual(exit, { code: null, signal: 'SIGTERM' }, stderr);
  assert.deepEqual(fs.readdirSync(path.join(run.dir, 'tmp')), [], 'the scratch folder is gone');
});

test('a process that handles SIGTERM itself keeps its choice; check() still stops its tree and removes its scratch folder', { skip, timeout: 90_000 }, async () => {
  const run = setUp('check-handled');
  const { exit, stderr } = await signalDuringCheck(run, [driver(run, true)], 'SIGTERM');
  assert.deepEqual(exit, { code: 7, signal: null }, stderr);
  assert.match(stderr, /^ctxgate check was ended by SIGTERM on node /m);
  assert.deepEqual(fs.readdirSync(path.join(run.dir, 'tmp')), []);
});
