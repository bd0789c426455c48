#!/usr/bin/env node
// bodyBytes() against the ctxgate binary, on generated cases, in each wire
// format: the binary's `gen` prints the cases (in chunks of a few seeds,
// so that memory stays bounded), and its `estimate --json` prints each one's
// exact body, `bodyBytes` in the output. Exit 0 when every size agreed, 1 on
// the first mismatches (printed with their seed, case and format), 2 on bad
// usage.
//
//     node js/scripts/compare-body.mjs --binary target/release/ctxgate
//         [--cases 5000] [--seed 1] [--jobs 4] [--formats engine,openai,anthropic]
//
// `estimate` reads one history a run, so this is a spawn per case and
// format, `--jobs` at a time (see js/README.md for the cost).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { bodyBytes } from '../lib/body.js';

const USAGE = 'usage: compare-body.mjs --binary FILE [--cases N] [--seed S] [--jobs J] [--formats LIST]';
const CHUNK = 100; // cases a `gen` run prints

function fail(message) {
  process.stderr.write(`compare-body: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { cases: 5000, seed: 1, jobs: Math.max(2, os.availableParallelism?.() ?? 2), formats: 'engine,openai,anthropic' };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, '');
    if (!['binary', 'cases', 'seed', 'jobs', 'formats'].includes(key) || i + 1 >= argv.length) fail(`bad argument ${argv[i]}`);
    opts[key] = argv[i + 1];
  }
  if (!opts.binary) fail('--binary is required');
  for (const k of ['cases', 'seed', 'jobs']) {
    opts[k] = Number(opts[k]);
    if (!Number.isInteger(opts[k]) || opts[k] < (k === 'seed' ? 0 : 1)) fail(`--${k} must be a whole number`);
  }
  opts.formats = opts.formats.split(',');
  return opts;
}

/** The cases of one `gen` run, parsed. */
function generate(binary, seed, cases) {
  const r = spawnSync(binary, ['gen', '--seed', String(seed), '--cases', String(cases)], { maxBuffer: 1 << 30 });
  if (r.status !== 0) fail(`${binary} gen --seed ${seed} exited ${r.status ?? r.signal}: ${String(r.stderr).trim()}`);
  return String(r.stdout).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** The binary's body size for `messages` under the config file, in `format`. */
function binaryBody(binary, configFile, format, messagesJson) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['estimate', '--json', '--format', 'engine', '--wire-format', format, '--config', configFile, '-'],
      { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [], err = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.stdin.on('error', () => {}); // an early exit is reported below, with its stderr
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`estimate exited ${code}: ${Buffer.concat(err).toString().trim()}`));
      resolve(JSON.parse(Buffer.concat(out).toString()).bodyBytes);
    });
    child.stdin.end(messagesJson);
  });
}

const opts = parseArgs(process.argv.slice(2));
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-compare-body-'));
const started = Date.now();
const agreed = Object.fromEntries(opts.formats.map((f) => [f, 0]));
const mismatches = [];
let running = 0, done = 0;
const slots = [];
const slot = () => (running < opts.jobs ? Promise.resolve() : new Promise((r) => slots.push(r)));

try {
  for (let first = 0, seed = opts.seed; first < opts.cases; first += CHUNK, seed += 1) {
    const chunk = generate(opts.binary, seed, Math.min(CHUNK, opts.cases - first));
    const pending = [];
    for (const [index, c] of chunk.entries()) {
      const configFile = path.join(scratch, `config-${index}.json`);
      fs.writeFileSync(configFile, JSON.stringify(c.config));
      const messagesJson = JSON.stringify(c.messages);
      for (const format of opts.formats) {
        const mine = bodyBytes(c.messages, { ...c.config, wireFormat: format });
        await slot();
        running += 1;
        pending.push(binaryBody(opts.binary, configFile, format, messagesJson).then((theirs) => {
          if (theirs === mine) agreed[format] += 1;
          else mismatches.push({ seed, index, of: chunk.length, format, bodyBytes: mine, binary: theirs });
        }).finally(() => {
          running -= 1;
          done += 1;
          slots.shift()?.();
        }));
      }
    }
    await Promise.all(pending);
    if (mismatches.length) break;
  }
} catch (e) {
  fs.rmSync(scratch, { recursive: true, force: true });
  process.stderr.write(`compare-body: ${e.message}\n`);
  process.exit(2);
}
fs.rmSync(scratch, { recursive: true, force: true });

const secs = ((Date.now() - started) / 1000).toFixed(1);
const counts = opts.formats.map((f) => `${f} ${agreed[f]}`).join(', ');
if (mismatches.length) {
  for (const m of mismatches.slice(0, 5)) {
    process.stdout.write(`MISMATCH ${m.format}: bodyBytes ${m.bodyBytes}, binary ${m.binary} `
      + `(case ${m.index} of \`ctxgate gen --seed ${m.seed} --cases ${m.of}\`)\n`);
  }
  process.stdout.write(`bodyBytes disagrees with the binary on ${mismatches.length} of ${done} sizes; agreed: ${counts} (${secs} s)\n`);
  process.exit(1);
}
process.stdout.write(`bodyBytes equals the binary's body on ${done} sizes — ${counts} — from seeds ${opts.seed}.. (${secs} s, ${opts.jobs} jobs)\n`);
