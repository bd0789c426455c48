// checkAgent(runCase, options): ctxgate plays the model for an agent that
// runs inside this process — an SDK agent in a vitest or node:test test —
// with no process per case (SPEC §9; docs/agent.md, "In-process agents").
//
// It starts `ctxgate agent --driven`, which generates the cases, starts a
// loopback model endpoint for each and judges every request the agent sends.
// For each case ctxgate sends (a JSON line on its stdout), `runCase(case)`
// is awaited: it runs the agent against `case.baseUrl` (OpenAI's clients) or
// `case.anthropicBaseUrl` (Anthropic's) to its end and returns its final
// output; what it throws is the agent's exit 1, and fails that case, not the
// helper. The answer goes back on ctxgate's stdin; the report comes last.
//
// Nothing outlives it: ctxgate is stopped when checkAgent settles, however;
// it is told to die with this process (CTXGATE_DIE_WITH_PARENT); SIGTERM,
// SIGINT or SIGHUP to this process stop it and remove the scratch folder,
// which holds the case folders (signals.js).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

import { binaryPath, skewWarning } from './binary.js';
import { guardChild } from './signals.js';
import { strictDumps } from './wire.js';

/** The most of a case's output or error sent back to ctxgate (it keeps the last few KB of each). */
const MAX_TEXT = 64 * 1024;
/** How much of ctxgate's stderr is kept for a message. */
const STDERR_TAIL = 16 * 1024;
/** How long ctxgate has to die of SIGTERM before it is killed. */
const GRACE_MS = 5000;

/** ctxgate could not run the check, or ended without a report: the message holds what it said and the command. */
export class AgentRunError extends Error {
  constructor(message, { exitCode, stderr } = {}) {
    super(message);
    this.name = 'AgentRunError';
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** What checkAgent and replayAgent throw when the agent fails: `report` holds everything ctxgate found. */
export class AgentCheckFailed extends Error {
  constructor(message, report) {
    super(message);
    this.name = 'AgentCheckFailed';
    this.report = report;
    this.exitCode = report.exitCode;
    this.fixtures = report.fixtures ?? [];
  }
}

// --- text sent back to ctxgate -------------------------------------------------

/** Valid UTF-16 (a lone surrogate becomes U+FFFD: ctxgate reads UTF-8), at most MAX_TEXT units, the end kept. */
function clean(text) {
  const whole = String(text).replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  if (whole.length <= MAX_TEXT) return whole;
  const tail = whole.slice(-MAX_TEXT);
  return /^[\uDC00-\uDFFF]/.test(tail) ? tail.slice(1) : tail;
}

/** A value as text, or what can be said of it when that throws (a hostile toString, a revoked proxy). */
function textOf(value) {
  try {
    return typeof value === 'string' ? value : String(value);
  } catch {
    return `<a ${typeof value} whose text could not be read>`;
  }
}

/** What the agent threw, as its `error`: name and message, and the cause's (fetch's "fetch failed" says why there). */
export function describeError(e) {
  try {
    if (!(e instanceof Error)) return `thrown: ${textOf(e)}`;
    const one = (x) => {
      const name = textOf(x.name || 'Error');
      const message = textOf(x.message ?? '');
      return message ? `${name}: ${message}` : name;
    };
    let said = one(e);
    if (e.cause instanceof Error) said += ` (cause: ${one(e.cause)})`;
    return said;
  } catch {
    return '<an error whose name or message could not be read>';
  }
}

// --- a case -----------------------------------------------------------------------

function caseOf(raw) {
  const text = (key) => {
    if (typeof raw[key] !== 'string') {
      throw new AgentRunError(`ctxgate sent a case whose ${JSON.stringify(key)} is not a string: ${JSON.stringify(raw).slice(0, 200)}`);
    }
    return raw[key];
  };
  if (!Number.isInteger(raw.index)) throw new AgentRunError(`ctxgate sent a case without an index: ${JSON.stringify(raw).slice(0, 200)}`);
  const c = {
    index: raw.index,
    url: text('url'),
    baseUrl: text('openaiBaseUrl'),
    openaiBaseUrl: text('openaiBaseUrl'),
    anthropicBaseUrl: text('anthropicBaseUrl'),
    apiKey: text('apiKey'),
    prompt: text('prompt'),
    promptFile: text('promptFile'),
    workspace: text('workspace'),
    deadlineSeconds: typeof raw.deadlineSeconds === 'number' ? raw.deadlineSeconds : 120,
  };
  c.env = {
    OPENAI_BASE_URL: c.openaiBaseUrl, OPENAI_API_BASE: c.openaiBaseUrl,
    ANTHROPIC_BASE_URL: c.anthropicBaseUrl, CTXGATE_AGENT_URL: c.url,
    OPENAI_API_KEY: c.apiKey, ANTHROPIC_API_KEY: c.apiKey,
    CTXGATE_AGENT_PROMPT: c.prompt, CTXGATE_AGENT_PROMPT_FILE: c.promptFile,
    CTXGATE_AGENT_CASE: String(c.index),
  };
  return c;
}

/** Run one case: the `done` object for what runCase returned or threw, aborted at the case's deadline. */
async function play(runCase, c, errors) {
  const controller = new AbortController();
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const e = new Error(`the case's deadline (${c.deadlineSeconds} s) passed: the agent was aborted`);
      e.name = 'DeadlineExceeded';
      controller.abort(e);
      reject(e);
    }, c.deadlineSeconds * 1000);
  });
  try {
    const output = await Promise.race([Promise.resolve().then(() => runCase({ ...c, signal: controller.signal })), deadline]);
    return { exitCode: 0, output: clean(output === undefined || output === null ? '' : textOf(output)) };
  } catch (e) {
    errors.push([c.index, e]);
    return { exitCode: 1, error: clean(describeError(e)) };
  } finally {
    clearTimeout(timer);
  }
}

// --- one run of `ctxgate agent --driven` -------------------------------------------

/** Start ctxgate, play every case it sends in order, one at a time; its exit, report and what else it printed. */
async function drive(binary, argv, runCase, { cwd, env, scratch }) {
  const child = spawn(binary, argv, {
    cwd,
    env: { ...env, CTXGATE_DIE_WITH_PARENT: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const release = guardChild(child, scratch);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (s) => { stderr = (stderr + s).slice(-STDERR_TAIL); });
  child.stdin.on('error', () => {}); // EPIPE: ctxgate ended; its exit says why
  let failedToStart = null;
  const exited = new Promise((resolve) => {
    child.on('error', (e) => { failedToStart = e; resolve(null); });
    child.on('close', (code, signal) => resolve(code ?? `signal ${signal}`));
  });
  const errors = [];
  const other = [];
  let report = null;
  try {
    const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
    for await (const line of lines) {
      let message = null;
      try {
        message = JSON.parse(line);
      } catch {
        // not the driver's: replay's text
      }
      if (message?.case && typeof message.case === 'object') {
        const done = await play(runCase, caseOf(message.case), errors);
        child.stdin.write(`${JSON.stringify({ done })}\n`);
      } else if (message?.report && typeof message.report === 'object') {
        report = message.report;
        child.stdin.end();
      } else {
        other.push(line);
      }
    }
    child.stdin.end();
    const code = await exited;
    if (failedToStart) throw new AgentRunError(`ctxgate: cannot run ${binary}: ${failedToStart.message}`);
    return { code, report, other, stderr, errors };
  } finally {
    if (child.exitCode === null && child.signalCode === null && !failedToStart) {
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), GRACE_MS);
      await exited;
      clearTimeout(kill);
    }
    release();
  }
}

/** A word as a POSIX shell reads it back. */
function quote(word) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${String(word).replace(/'/g, `'\\''`)}'`;
}

function noReport(run, binary, argv) {
  const said = [run.stderr.trim(), run.other.join('\n').trim()].filter(Boolean).join('\n');
  const status = typeof run.code === 'string' ? `by ${run.code}` : `exit ${run.code}`;
  return new AgentRunError(
    `ctxgate agent ended (${status}) without a report:\n${said || '(it printed nothing)'}\ncommand: ${[binary, ...argv].map(quote).join(' ')}`,
    { exitCode: run.code, stderr: run.stderr },
  );
}

const warned = new Set();

function binaryOf(options, env) {
  if (options.binary !== undefined) return options.binary;
  const binary = binaryPath({ env });
  const skew = skewWarning(binary, { env });
  if (skew && !warned.has(skew)) {
    warned.add(skew);
    process.emitWarning(skew, { code: 'CTXGATE_VERSION_SKEW' });
  }
  return binary;
}

function commonArgs(scratch, { timeout = 120, tools = [], dialect, gateway, summaryMatch, args = [] }) {
  // The case folders (workspace, task) inside the scratch folder, which is
  // removed however the run ends (ctxgate stopped by a signal cannot remove its own).
  const cases = path.join(scratch, 'cases');
  fs.mkdirSync(cases);
  const out = ['--timeout', String(timeout), '--work-dir', cases];
  for (const tool of [].concat(tools)) out.push('--tool', String(tool));
  if (dialect !== undefined) out.push('--dialect', String(dialect));
  if (gateway !== undefined) out.push('--gateway', String(gateway));
  if (summaryMatch !== undefined) out.push('--summary-match', String(summaryMatch));
  return [...out, ...args.map(String)];
}

function checkCallable(runCase, who) {
  if (typeof runCase !== 'function') {
    throw new TypeError(`${who}: runCase must be a function of the case (async, or returning the agent's final output), not ${textOf(runCase)}`);
  }
}

// --- the report -------------------------------------------------------------------------

function oneLine(value, limit = 300) {
  const text = (typeof value === 'string' ? value : JSON.stringify(value) ?? '').split(/\s+/).filter(Boolean).join(' ');
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}

/** What checkAgent found: ctxgate's JSON report (`json`) and its human report (`text`), read for a test. */
export class AgentReport {
  constructor({ exitCode, json, text, command, stderr, errors }) {
    this.exitCode = exitCode;
    this.json = json;
    this.text = text;
    this.command = command;
    this.stderr = stderr;
    /** [case index, what runCase threw], for each run that threw. */
    this.errors = errors;
  }

  /** Every checked invariant held and each was exercised (exit 0). */
  get ok() { return this.exitCode === 0; }

  get seed() { return this.json.seed; }

  /** Each judged invariant's tally over the cases: {name: {pass, fail, notApplicable}}. */
  get verdicts() { return { ...(this.json.tally ?? {}) }; }

  /** The shrunk failures: {invariant, case, detail, expected, received, shrunk, fixture, replay}. */
  get failures() { return [...(this.json.failures ?? [])]; }

  /** Failures that did not repeat on every re-run (not shrunk). */
  get flaky() { return [...(this.json.flaky ?? [])]; }

  /** Every case that failed an invariant, before shrinking: {case, invariant, detail}. */
  get failingCases() { return [...(this.json.failingCases ?? [])]; }

  /** The names of the invariants that failed or were flaky, once each. */
  get failedInvariants() {
    return [...new Set([...this.failures, ...this.flaky].map((f) => f.invariant).filter((n) => typeof n === 'string'))];
  }

  /** The saved fixture files of the failures (absolute paths). */
  get fixtures() { return this.failures.map((f) => f.fixture).filter((p) => typeof p === 'string'); }

  /** Each failure, its fixture and how to replay it; the flaky ones; what run_case threw; the verdict. */
  failureMessage() {
    const lines = [`ctxgate agent: the in-process agent failed its checks (exit ${this.exitCode}, seed ${this.seed})`];
    for (const f of this.failures) {
      lines.push('', `FAILED ${f.invariant} (case ${f.case}): ${oneLine(f.detail)}`);
      for (const key of ['expected', 'received']) if (f[key]) lines.push(`  ${key}: ${oneLine(f[key], 400)}`);
      const to = f.shrunk?.to;
      if (to) lines.push(`  shrunk to ${to.turns} turn(s), ${to.calls} call(s), ${to.resultBytes} result bytes in ${f.shrunk.runs} run(s)`);
      if (typeof f.fixture === 'string') {
        lines.push(`  fixture: ${f.fixture}`, `  replay:  await replayAgent(runCase, ${JSON.stringify(f.fixture)})`);
      }
    }
    for (const f of this.flaky) {
      lines.push('', `FLAKY ${f.invariant} (case ${f.case}): failed again ${f.failedAgain} of ${f.reruns} re-run(s): ${oneLine(f.detail)}`);
    }
    const never = this.json.neverExercised ?? [];
    if (never.length && !this.failures.length && !this.flaky.length) lines.push('', `never exercised: ${never.join(', ')}`);
    if (this.json.unplayable) lines.push('', `the script cannot be played: ${oneLine(this.json.unplayable)}`);
    if (this.errors.length) {
      const [index, e] = this.errors[0];
      let stack;
      try {
        stack = e instanceof Error && typeof e.stack === 'string' ? e.stack : describeError(e);
      } catch {
        stack = describeError(e); // (V8 formats a stack lazily, through the error's own message)
      }
      lines.push('', `runCase threw in ${this.errors.length} run(s); the first, case ${index}:`, stack.slice(-4000).trimEnd());
    }
    const verdict = this.text.trimEnd().split('\n').pop();
    if (verdict) lines.push('', verdict);
    if (this.seed !== undefined) lines.push(`this run again: checkAgent(runCase, { ..., seed: ${this.seed} })`);
    return lines.join('\n');
  }

  /** Throw AgentCheckFailed with the findings unless every invariant held. */
  assertOk() {
    if (!this.ok) throw new AgentCheckFailed(this.failureMessage(), this);
    return this;
  }
}

/**
 * Check an agent that runs in this process: `runCase(case)` runs it on one
 * case and returns (or resolves with) its final output. Resolves with the
 * AgentReport when every checked invariant held and each was exercised;
 * rejects with AgentCheckFailed (its `report`) otherwise, AgentRunError when
 * ctxgate ends without a report (bad usage: the message says why).
 *
 * Options: `config` (the agent's settings: SPEC §2's fields plus
 * `toolOutputMaxBytes` and `earlyTolerance`; an object or a JSON file's
 * path), `cases` [20], `seed` [$CTXGATE_SEED, else random], `invariants`,
 * `timeout` (seconds a case may take) [120], `tools`, `dialect`, `gateway`,
 * `summaryMatch` (as `ctxgate agent`'s flags), `save` (where shrunk failures
 * go) ['.ctxgate/agent-failures'], `args` (more `ctxgate agent` arguments),
 * `cwd`, `env` (ctxgate's environment), `binary`.
 */
export async function checkAgent(runCase, options = {}) {
  checkCallable(runCase, 'checkAgent');
  const { config, cases = 20, invariants, save = path.join('.ctxgate', 'agent-failures'), cwd = process.cwd(), env = process.env } = options;
  const seed = options.seed ?? env.CTXGATE_SEED;
  const binary = binaryOf(options, env);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-agent-js-'));
  try {
    const argv = ['agent', '--driven', '--cases', String(cases)];
    if (config !== undefined) {
      let file = config;
      if (typeof config !== 'string') {
        let text;
        try {
          text = strictDumps(config, { path: 'config' });
        } catch (e) {
          throw new TypeError(`checkAgent: \`config\` must be JSON data (SPEC §2's fields) or a file path: ${e.message}`);
        }
        file = path.join(scratch, 'config.json');
        fs.writeFileSync(file, text);
      }
      argv.push('--config', file);
    }
    if (seed !== undefined && seed !== '') argv.push('--seed', String(seed));
    if (invariants !== undefined) argv.push('--invariants', [].concat(invariants).join(','));
    // (absolute: the fixtures' paths in the report are then absolute too)
    argv.push('--save', path.resolve(cwd, save));
    const human = path.join(scratch, 'report.txt');
    argv.push('--also-report', `human=${human}`, ...commonArgs(scratch, options));
    const run = await drive(binary, argv, runCase, { cwd, env, scratch });
    if (run.report === null) throw noReport(run, binary, argv);
    if (run.code === 2) { // bad usage that only a case could tell: no advertised tool reads a file
      throw new AgentRunError(
        `ctxgate agent: the script cannot be played: ${oneLine(run.report.unplayable ?? '?', 600)} (here: \`tools: ['NAME:ARG']\`)`
          + `\ncommand: ${[binary, ...argv].map(quote).join(' ')}`,
        { exitCode: 2, stderr: run.stderr },
      );
    }
    let text = '';
    try {
      text = fs.readFileSync(human, 'utf8');
    } catch {
      // written after the report line: absent only if ctxgate could not write it
    }
    const report = new AgentReport({
      exitCode: run.code, json: run.report, text, command: [binary, ...argv], stderr: run.stderr, errors: run.errors,
    });
    return report.assertOk();
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Play agent fixtures (files, or folders of them) again with the in-process
 * agent (`ctxgate agent replay PATH… --driven`). Resolves with {exitCode,
 * text, errors} when every fixture held (with `expectFailures`: when every
 * one still failed); rejects with AgentCheckFailed otherwise.
 */
export async function replayAgent(runCase, paths, options = {}) {
  checkCallable(runCase, 'replayAgent');
  const { expectFailures = false, cwd = process.cwd(), env = process.env } = options;
  const binary = binaryOf(options, env);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-agent-js-'));
  try {
    const argv = ['agent', 'replay', ...[].concat(paths).map(String), '--driven'];
    if (expectFailures) argv.push('--expect-failures');
    argv.push(...commonArgs(scratch, options));
    const run = await drive(binary, argv, runCase, { cwd, env, scratch });
    if (run.code === 2 || (run.code !== 0 && run.other.length === 0)) throw noReport(run, binary, argv);
    const result = { exitCode: run.code, ok: run.code === 0, text: `${run.other.join('\n')}\n`, errors: run.errors };
    if (!result.ok) {
      throw new AgentCheckFailed(`ctxgate agent replay: exit ${run.code}\n${result.text.trimEnd()}`, { ...result, fixtures: [] });
    }
    return result;
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
