// `check(...)`: run `ctxgate check` against a subject command from a test
// (vitest, node:test, jest) and throw when it finds something, with what
// ctxgate printed about each failure: the invariant, the shrunk fixture, and
// the replay line that reproduces it.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { binaryPath, skewWarning } from './binary.js';
import { guardChild } from './signals.js';
import { strictDumps } from './wire.js';

/** What `check` throws when ctxgate finds a failure or a fault: `message` holds ctxgate's account of each. */
export class CheckFailed extends Error {
  constructor(message, { output, fixtures, replays, exitCode }) {
    super(message);
    this.name = 'CheckFailed';
    /** ctxgate's whole stdout and stderr. */
    this.output = output;
    /** The fixture files saved for the failures and faults (SPEC §7), absolute paths, from ctxgate's JSON report. */
    this.fixtures = fixtures;
    /** The `ctxgate replay …` lines, one per failure. */
    this.replays = replays;
    this.exitCode = exitCode;
  }
}

/** A word as a POSIX shell reads it back (ctxgate splits CMD that way). */
function quote(word) {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${String(word).replace(/'/g, `'\\''`)}'`;
}

/** A command given as one string, or as words. */
export function commandLine(command) {
  if (typeof command === 'string' && command.trim()) return command;
  if (Array.isArray(command) && command.length) return command.map(quote).join(' ');
  throw new TypeError('check: `subject` must be a command, as one string or an array of words');
}

/**
 * The part of ctxgate's report that is about failures: each FAILED or FAULT
 * paragraph (the invariant, the shrunk case, the answer, the replay line),
 * then the verdict line — not the tables and the coverage around them.
 */
function failureText(stdout) {
  const paragraphs = stdout.split(/\n\s*\n/);
  const failures = paragraphs.filter((p) => /^(FAILED|FAULT) /.test(p) && !p.startsWith('FAILED:'));
  if (failures.length === 0) return null;
  const last = stdout.trimEnd().split('\n').pop();
  return [...failures.map((p) => p.trimEnd()), last].join('\n\n');
}

/** The fixtures a JSON report says were saved, as absolute paths (`saved` is relative to ctxgate's cwd). */
function savedFixtures(report, cwd) {
  const out = [];
  for (const list of [report?.failures, report?.faults]) {
    if (!Array.isArray(list)) continue;
    for (const entry of list) if (typeof entry?.saved === 'string') out.push(path.resolve(cwd, entry.saved));
  }
  return out;
}

const warned = new Set();

/**
 * Run `ctxgate check --subject <subject>` and resolve with its output when
 * every checked invariant held; reject with CheckFailed otherwise.
 *
 * Options: `subject` (required: a command string, or an array of words),
 * `cases` [300], `seed`, `invariants` (names, SPEC §5), `config` and
 * `genConfig` (objects, or paths of JSON files), `save` (where shrunk
 * fixtures go) ['.ctxgate/failures'], `args` (more `ctxgate check`
 * arguments), `cwd`, `env`, `binary` (a ctxgate binary; default: the
 * installed one, see binaryPath).
 *
 * The scratch folder it writes `config`, `genConfig` and ctxgate's JSON
 * report into is removed however it ends: resolved, thrown, or this process
 * asked to end (SIGTERM, SIGINT, SIGHUP: then the ctxgate it runs is
 * stopped too, and its subjects with it).
 */
export async function check(options) {
  const {
    subject, cases = 300, seed, invariants, config, genConfig,
    save = '.ctxgate/failures', args = [], cwd = process.cwd(), env = process.env,
  } = options ?? {};
  const cmd = commandLine(subject);
  const binary = options.binary ?? binaryPath({ env });
  if (options.binary === undefined) {
    const skew = skewWarning(binary, { env });
    if (skew && !warned.has(skew)) {
      warned.add(skew);
      process.emitWarning(skew, { code: 'CTXGATE_VERSION_SKEW' });
    }
  }
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-check-'));
  try {
    /** A JSON file for an object (refused, naming the option, when it is not JSON data), or the path given. */
    const file = (value, name, option) => {
      if (typeof value === 'string') return value;
      let text;
      try {
        text = strictDumps(value, { path: option });
      } catch (e) {
        throw new TypeError(`check: \`${option}\` must be JSON data or a file path: ${e.message}`);
      }
      const p = path.join(scratch, name);
      fs.writeFileSync(p, text);
      return p;
    };
    const report = path.join(scratch, 'report.json');
    const argv = ['check', '--subject', cmd, '--cases', String(cases), '--save', save];
    if (seed !== undefined) argv.push('--seed', String(seed));
    if (invariants !== undefined) argv.push('--invariants', [].concat(invariants).join(','));
    if (config !== undefined) argv.push('--config', file(config, 'config.json', 'config'));
    if (genConfig !== undefined) argv.push('--gen-config', file(genConfig, 'gen-config.json', 'genConfig'));
    argv.push(...args, '--also-report', `json=${report}`);
    const { code, stdout, stderr } = await run(binary, argv, { cwd, env, scratch });
    const output = stdout + (stderr ? `\n${stderr}` : '');
    if (code === 0) return { output };
    const replays = [...stdout.matchAll(/^\s*replay: (ctxgate replay .*)$/gm)].map((m) => m[1]);
    // The paths from the JSON report, not from the text meant for a reader (quoted for a shell there).
    let parsed = null;
    try {
      parsed = JSON.parse(fs.readFileSync(report, 'utf8'));
    } catch {
      // no report (ctxgate could not run): no fixtures either
    }
    const fixtures = savedFixtures(parsed, path.resolve(cwd));
    const failures = failureText(stdout);
    const what = code === 1 ? `ctxgate check failed on ${cmd}`
      : typeof code === 'string' ? `ctxgate check was ended by ${code.replace(/^signal /, '')} on ${cmd}`
        : `ctxgate check could not run (exit ${code}) on ${cmd}`;
    // (stderr is check's progress, and on a failure one line the report's last line says.)
    const body = failures ?? tail(output, 30);
    throw new CheckFailed(`${what}\n${body}`, { output, fixtures, replays, exitCode: code });
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

function tail(text, lines) {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Run a program to its end: exit code (or signal), stdout, stderr; stopped if this process is asked to end. */
function run(program, argv, { cwd, env, scratch }) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, argv, {
      cwd,
      env: { ...(env ?? process.env), CTXGATE_DIE_WITH_PARENT: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const release = guardChild(child, scratch);
    const out = [], err = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', (e) => {
      release();
      reject(new Error(`ctxgate: cannot run ${program}: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      release();
      resolve({
        code: code ?? `signal ${signal}`,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}
