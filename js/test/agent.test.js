// checkAgent (issue 45 §7): an agent that runs in the test's own process,
// checked over `ctxgate agent --driven`. The tiny fetch agent of
// examples/vitest/tiny-agent.js holds at several seeds; with a bug planted
// (the system prompt dropped at compaction; a 413 answered by sending the
// same body again) checkAgent names the invariant it fails, with a fixture
// that replays; what the agent's own code throws fails its case, not the
// helper; and nothing it starts outlives it — a signal, SIGKILL to the test
// process. Needs the ctxgate binary (CTXGATE_BINARY, or the checkout's
// target/release/ctxgate); the lifetime tests read Linux's /proc.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { AgentCheckFailed, AgentReport, AgentRunError, BinaryNotFound, checkAgent, replayAgent } from '../index.js';
import { DEPLOYMENTS, runCase } from '../examples/vitest/tiny-agent.js';

const binary = process.env.CTXGATE_BINARY || fileURLToPath(new URL('../../target/release/ctxgate', import.meta.url));
const skip = !fs.existsSync(binary) ? `no ctxgate binary at ${binary} (cargo build --release, or set CTXGATE_BINARY)` : false;
const skipProc = skip || (!fs.existsSync('/proc/self/cmdline') ? 'no /proc to read' : false);
const INDEX = new URL('../index.js', import.meta.url).href;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-agent-test-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const folder = () => fs.mkdtempSync(path.join(root, `${n++}-`));

const OWN = DEPLOYMENTS['own-limits'];
const EXPRESS = DEPLOYMENTS['behind-express-100kb'];

/** checkAgent over the tiny agent in a deployment, with its bug; the report, whether it resolved or rejected. */
async function check(deployment, bug, options) {
  try {
    return await checkAgent((c) => runCase(c, deployment.limits, bug), {
      binary, config: deployment.config, invariants: deployment.invariants, cases: 8, save: folder(), ...options,
    });
  } catch (e) {
    if (e instanceof AgentCheckFailed) return e.report;
    throw e;
  }
}

// --- a correct agent, and planted bugs ---

for (const seed of [1, 2, 3]) {
  test(`the correct in-process agent holds every invariant (seed ${seed})`, { skip, timeout: 120_000 }, async () => {
    for (const deployment of [OWN, EXPRESS]) {
      const report = await check(deployment, null, { seed });
      assert.ok(report.ok, report.ok || report.failureMessage());
      assert.ok(report instanceof AgentReport);
      assert.equal(report.seed, seed);
      assert.deepEqual([report.failures, report.fixtures, report.failedInvariants], [[], [], []]);
      assert.deepEqual(report.json.dialects, ['openai-chat']);
      for (const [name, v] of Object.entries(report.verdicts)) {
        assert.equal(v.fail, 0, name);
        assert.equal(v.pass + v.notApplicable, 8, name);
      }
    }
  });
}

test('a dropped system prompt fails pinned-kept, with a fixture that replays', { skip, timeout: 120_000 }, async () => {
  const save = folder();
  const failed = await checkAgent((c) => runCase(c, OWN.limits, 'drops-system-prompt'), { binary, config: OWN.config, cases: 8, seed: 1, save })
    .then(() => assert.fail('resolved'), (e) => e);
  assert.ok(failed instanceof AgentCheckFailed, String(failed));
  const { report } = failed;
  assert.deepEqual([report.exitCode, report.failedInvariants], [1, ['pinned-kept']]);
  assert.equal(failed.fixtures.length, 1);
  const [fixture] = failed.fixtures;
  assert.ok(path.isAbsolute(fixture) && path.dirname(fixture) === save, fixture);
  const saved = JSON.parse(fs.readFileSync(fixture, 'utf8'));
  assert.deepEqual([saved.op, saved.invariants], ['agent', ['pinned-kept']]);
  assert.equal(saved.request.headers.authorization, '[redacted]');
  assert.ok(report.failingCases.some((c) => c.invariant === 'pinned-kept'));
  assert.match(failed.message, /^FAILED pinned-kept \(case \d+\): request #\d+: the system prompt .* not in it verbatim/m);
  assert.ok(failed.message.includes(`fixture: ${fixture}`), failed.message);
  assert.ok(failed.message.includes('await replayAgent(runCase, '), failed.message);
  // The fixture still fails against the buggy agent and holds against the fixed one.
  const again = await replayAgent((c) => runCase(c, OWN.limits, 'drops-system-prompt'), fixture, { binary, expectFailures: true });
  assert.match(again.text, /^FAILED .*: pinned-kept$/m);
  const fixed = await replayAgent((c) => runCase(c, OWN.limits), fixture, { binary });
  assert.match(fixed.text, /1 held, 0 failed/);
  await assert.rejects(replayAgent((c) => runCase(c, OWN.limits, 'drops-system-prompt'), [fixture], { binary }),
    (e) => e instanceof AgentCheckFailed && /pinned-kept/.test(e.message));
});

test('resending after a 413 fails recovers-after-refusal', { skip, timeout: 120_000 }, async () => {
  const report = await check(EXPRESS, 'resend-on-413', { seed: 1 });
  assert.equal(report.exitCode, 1);
  assert.ok(report.failedInvariants.includes('recovers-after-refusal'), report.failureMessage());
  const failure = report.failures.find((f) => f.invariant === 'recovers-after-refusal');
  assert.match(failure.detail, /refused \(413\)/);
  assert.ok(fs.existsSync(failure.fixture));
  assert.ok(report.errors.length > 0, 'the agent gave up with an error: kept beside the report');
  assert.match(report.failureMessage(), /GaveUp: the request does not fit/);
});

// --- the agent's own failures are its cases' ---

const hostile = new Error('x');
Object.defineProperty(hostile, 'message', { get() { throw new Error('no message for you'); } });

for (const [name, thrown, shown] of [
  ['an Error', new Error("the SDK's connection pool is closed"), "Error: the SDK's connection pool is closed"],
  ['an Error with a cause', new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') }),
    'TypeError: fetch failed (cause: Error: connect ECONNREFUSED)'],
  ['an error whose message throws', hostile, '<an error whose name or message could not be read>'],
  ['a string', 'out of tokens', 'thrown: out of tokens'],
  ['a lone surrogate', '\uD800 half', 'thrown: \uFFFD half'],
]) {
  test(`what the agent's code throws fails its case, not the helper: ${name}`, { skip, timeout: 120_000 }, async () => {
    const seen = [];
    const failed = await checkAgent((c) => {
      seen.push(c.index);
      if (c.index === 1) throw thrown;
      return runCase(c, OWN.limits);
    }, { binary, config: OWN.config, cases: 3, seed: 7, save: folder(), args: ['--shrink-runs', '2'] })
      .then(() => assert.fail('resolved'), (e) => e);
    assert.ok(failed instanceof AgentCheckFailed, String(failed?.stack ?? failed));
    const { report: r } = failed;
    assert.deepEqual(r.failedInvariants, ['finishes'], r.failureMessage());
    assert.ok([0, 1, 2].every((i) => seen.includes(i)), `the cases after it ran: ${seen}`);
    assert.equal(r.failures.length, 1);
    assert.equal(r.failures[0].case, 1);
    assert.ok(r.failures[0].received.includes(shown), r.failures[0].received);
    assert.equal(r.errors[0][1], thrown);
    assert.match(failed.message, /runCase threw in \d+ run\(s\); the first, case 1:/);
  });
}

test('what runCase is handed: the base URLs, the dummy key, the task, the workspace, an abort signal', { skip, timeout: 60_000 }, async () => {
  const cases = [];
  await checkAgent((c) => {
    cases.push(c);
    assert.ok(fs.statSync(c.workspace).isDirectory());
    assert.equal(fs.readFileSync(c.promptFile, 'utf8'), c.prompt);
    assert.equal(c.signal.aborted, false);
    return runCase(c, OWN.limits);
  }, { binary, config: OWN.config, cases: 2, seed: 8, save: folder() });
  const [c] = cases;
  assert.match(c.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(c.baseUrl, `${c.url}/v1`);
  assert.equal(c.openaiBaseUrl, c.baseUrl);
  assert.equal(c.anthropicBaseUrl, c.url);
  assert.match(c.apiKey, /^sk-ctxgate/);
  assert.equal(c.deadlineSeconds, 120);
  assert.deepEqual(c.env, {
    OPENAI_BASE_URL: c.baseUrl, OPENAI_API_BASE: c.baseUrl, ANTHROPIC_BASE_URL: c.url, CTXGATE_AGENT_URL: c.url,
    OPENAI_API_KEY: c.apiKey, ANTHROPIC_API_KEY: c.apiKey, CTXGATE_AGENT_PROMPT: c.prompt,
    CTXGATE_AGENT_PROMPT_FILE: c.promptFile, CTXGATE_AGENT_CASE: String(c.index),
  });
  // The case folders were in the helper's scratch folder: gone.
  assert.ok(cases.every((x) => !fs.existsSync(x.workspace)));
});

test('an agent past its deadline is abandoned and its signal aborted', { skip, timeout: 60_000 }, async () => {
  const signals = [];
  const started = Date.now();
  const failed = await checkAgent((c) => {
    signals.push(c.signal);
    return new Promise(() => {}); // never settles
  }, { binary, config: OWN.config, cases: 1, seed: 9, timeout: 1, save: folder(), args: ['--shrink-runs', '1'] })
    .then(() => assert.fail('resolved'), (e) => e);
  assert.ok(Date.now() - started < 30_000);
  assert.ok(failed.report.failedInvariants.includes('finishes'), failed.message);
  assert.ok(signals.length > 0 && signals.every((s) => s.aborted && s.reason?.name === 'DeadlineExceeded'));
  assert.match(failed.report.errors[0][1].message, /deadline \(1 s\) passed/);
});

// --- bad usage ---

test('bad usage: an AgentRunError saying why, or a TypeError before ctxgate starts', { skip, timeout: 60_000 }, async () => {
  const nothing = () => '';
  await assert.rejects(checkAgent(nothing, { binary, config: { contextWindow: 'big' }, cases: 1, save: folder() }),
    (e) => e instanceof AgentRunError && /contextWindow/.test(e.message) && /\ncommand: /.test(e.message) && e.exitCode === 2);
  await assert.rejects(checkAgent(nothing, { binary, cases: 0, save: folder() }),
    (e) => e instanceof AgentRunError && /--cases must be at least 1/.test(e.message));
  await assert.rejects(checkAgent(nothing, { binary, invariants: ['no-such-invariant'], cases: 1, save: folder() }),
    (e) => e instanceof AgentRunError && /no-such-invariant/.test(e.message));
  await assert.rejects(checkAgent(nothing, { binary, config: { contextWindow: 1n } }), (e) => e instanceof TypeError && /JSON data/.test(e.message));
  await assert.rejects(checkAgent('my-agent.run', { binary }), (e) => e instanceof TypeError && /runCase must be a function/.test(e.message));
  await assert.rejects(replayAgent(nothing, path.join(root, 'none'), { binary }),
    (e) => e instanceof AgentRunError && /none: no such file/.test(e.message));
  await assert.rejects(checkAgent(nothing, { env: { CTXGATE_BINARY: path.join(root, 'no-ctxgate') } }),
    (e) => e instanceof BinaryNotFound && /CTXGATE_BINARY/.test(e.message));
});

// --- nothing outlives the helper ---

/** The live ctxgate children (`--driven` in their command line) of `pid`. */
function drivenChildren(pid) {
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`);
      if (Number(ppid) === pid && state !== 'Z' && cmd.includes('--driven')) out.push(Number(entry));
    } catch {
      // gone while read
    }
  }
  return out;
}

function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until(what, ok, seconds) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    if (ok()) return;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL']) {
  test(`${signal} to a process running checkAgent leaves no ctxgate${signal === 'SIGKILL' ? '' : ' and no case folder'}`, { skip: skipProc, timeout: 60_000 }, async () => {
    const dir = folder();
    fs.mkdirSync(path.join(dir, 'tmp'));
    const script = path.join(dir, 'slow-agent.mjs');
    fs.writeFileSync(script, `import fs from 'node:fs';
import { checkAgent } from ${JSON.stringify(INDEX)};
await checkAgent((c) => {
  fs.writeFileSync(${JSON.stringify(path.join(dir, 'started'))}, c.workspace);
  return new Promise(() => {}); // never settles
}, { cases: 2, timeout: 600, save: ${JSON.stringify(path.join(dir, 'f'))} });
`);
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, CTXGATE_BINARY: binary, TMPDIR: path.join(dir, 'tmp') }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b) => { stderr += b; });
    const exited = new Promise((r) => child.on('exit', (code, sig) => r({ code, signal: sig })));
    let pid;
    try {
      await until(`the first case (stderr: ${stderr})`, () => fs.existsSync(path.join(dir, 'started')), 30);
      const workspace = fs.readFileSync(path.join(dir, 'started'), 'utf8');
      [pid] = drivenChildren(child.pid);
      assert.ok(pid, 'ctxgate runs under the test process');
      child.kill(signal);
      assert.deepEqual(await exited, { code: null, signal }, stderr);
      await until(`ctxgate gone after ${signal}`, () => !alive(pid), 20);
      if (signal !== 'SIGKILL') {
        assert.ok(!fs.existsSync(workspace), 'the case folder is gone');
        assert.deepEqual(fs.readdirSync(path.join(dir, 'tmp')), [], 'the scratch folder is gone');
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
}

/** An agent whose only tool is not one ctxgate knows to read a file with. */
async function oneRequestWithAToolNamedAdd(c) {
  const response = await fetch(`${c.baseUrl}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal: c.signal,
    body: JSON.stringify({
      model: 'm', messages: [{ role: 'user', content: c.prompt }],
      tools: [{ type: 'function', function: { name: 'add', parameters: { type: 'object', properties: { x: { type: 'string' } } } } }],
    }),
  });
  await response.text();
  return 'done';
}

test('an agent with no tool that reads a file is bad usage; `tools` maps one', { skip, timeout: 60_000 }, async () => {
  await assert.rejects(checkAgent(oneRequestWithAToolNamedAdd, { binary, cases: 1, seed: 1, save: folder() }),
    (e) => e instanceof AgentRunError && e.exitCode === 2
      && /the script cannot be played: .*advertises the tools add.*tools: \['NAME:ARG'\]/.test(e.message) && /\ncommand: /.test(e.message));
  // Mapped with `tools`, the case is played: the agent stops after one answer, and fails `finishes`.
  const failed = await checkAgent(oneRequestWithAToolNamedAdd, { binary, cases: 1, seed: 1, save: folder(), tools: ['add:x'], args: ['--shrink-runs', '1'] })
    .then(() => assert.fail('resolved'), (e) => e);
  assert.ok(failed instanceof AgentCheckFailed && failed.report.failedInvariants.includes('finishes'), String(failed));
});
