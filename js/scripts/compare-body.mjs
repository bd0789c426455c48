#!/usr/bin/env node
// bodyBytes() against the ctxgate binary, on generated cases, in each wire
// format; and, on the way, toolCallsFloor() and imageTokens() against the
// binary's adr-0098 count per message (text + tool calls + images).
//
//     node js/scripts/compare-body.mjs --binary target/release/ctxgate [--cases 5000] [--seed 29]
//
// Four long-lived processes, no spawn per case: `ctxgate gen` prints the
// cases, and its output goes, as it comes, to us and to one
// `ctxgate estimate --lines --format engine --wire-format F` per format, which prints each
// case's exact body (`bodyBytes`) and `perMessage`. Exit 0 when every figure
// agreed, 1 when one did not (the first of each format printed with the
// `gen` line that reproduces it), 2 on bad usage or a binary without
// `estimate --lines`. (The bodies both must refuse — lone surrogates, NaN,
// nesting 128 deep — are test/body-refusals.test.js's, against `ctxgate body`.)

import { spawn, spawnSync } from 'node:child_process';
import readline from 'node:readline';

import { bodyMeterFor, imageTokens, toolCallsFloor } from '../index.js';

const FORMATS = ['engine', 'openai', 'anthropic'];
const USAGE = 'usage: compare-body.mjs --binary FILE [--cases N] [--seed S]';

function fail(message) {
  process.stderr.write(`compare-body: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { cases: 5000, seed: 29 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]?.replace(/^--/, '');
    if (!['binary', 'cases', 'seed'].includes(key) || i + 1 >= argv.length) fail(`bad argument ${argv[i]}\n${USAGE}`);
    opts[key] = argv[i + 1];
  }
  if (!opts.binary) fail(`--binary is required\n${USAGE}`);
  for (const k of ['cases', 'seed']) {
    opts[k] = Number(opts[k]);
    if (!Number.isInteger(opts[k]) || opts[k] < (k === 'seed' ? 0 : 1)) fail(`--${k} must be a whole number`);
  }
  return opts;
}

/** ADR 0098's tokens of one message (SPEC §3), from the package's floors: what the binary's perMessage holds. */
function adrTokens(m, config) {
  const parts = Array.isArray(m.content) ? m.content : [];
  const text = Array.isArray(m.content)
    ? parts.filter((p) => p?.type === 'text').map((p) => p.text).join('')
    : typeof m.content === 'string' ? m.content : '';
  let n = Math.ceil(Buffer.byteLength(text, 'utf8') / config.bytesPerToken) + toolCallsFloor([m], config);
  for (const p of parts) if (p?.type === 'image') n += imageTokens(p, config.wireFormat);
  return n;
}

const opts = parseArgs(process.argv.slice(2));
const help = spawnSync(opts.binary, ['estimate', '--help'], { encoding: 'utf8' });
if (help.error) fail(`cannot run ${opts.binary}: ${help.error.message}`);
if (!help.stdout.includes('--lines')) {
  fail(`${opts.binary} has no \`estimate --lines\` (one process for many cases): build it from a checkout that has it`);
}

const started = Date.now();
const ours = Object.fromEntries(FORMATS.map((f) => [f, []])); // [bodyBytes, perMessage] per case
const agreed = Object.fromEntries(FORMATS.map((f) => [f, 0]));
const bytes = Object.fromEntries(FORMATS.map((f) => [f, 0]));
const firstMismatch = {};

const gen = spawn(opts.binary, ['gen', '--seed', String(opts.seed), '--cases', String(opts.cases)], { stdio: ['ignore', 'pipe', 'inherit'] });
const estimates = FORMATS.map((format) => {
  const child = spawn(opts.binary, ['estimate', '--lines', '--format', 'engine', '--wire-format', format, '-'],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.on('error', () => {}); // it stopped reading: its exit code and stderr say why
  let index = 0;
  readline.createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
    const theirs = JSON.parse(line);
    const [body, perMessage] = ours[format][index];
    bytes[format] += theirs.bodyBytes;
    if (body === theirs.bodyBytes && JSON.stringify(perMessage) === JSON.stringify(theirs.perMessage)) agreed[format] += 1;
    else firstMismatch[format] ??= { index, body, theirs: theirs.bodyBytes, perMessage, theirPerMessage: theirs.perMessage };
    ours[format][index] = null; // measured: let it go
    index += 1;
  });
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  return { format, child, exited };
});

// gen's output goes to each estimate as it comes (gen waits while one is
// behind), and is split into lines here for bodyBytes.
let pending = [];
let waiting = 0;
const measure = (line) => {
  const c = JSON.parse(line);
  for (const format of FORMATS) {
    const config = { ...c.config, wireFormat: format };
    ours[format].push([bodyMeterFor(config)(c.messages), c.messages.map((m) => adrTokens(m, config))]);
  }
};
gen.stdout.on('data', (chunk) => {
  for (const { child } of estimates) {
    if (!child.stdin.write(chunk)) {
      waiting += 1;
      gen.stdout.pause();
      child.stdin.once('drain', () => {
        waiting -= 1;
        if (waiting === 0) gen.stdout.resume();
      });
    }
  }
  let start = 0;
  for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
    pending.push(chunk.subarray(start, nl));
    measure(Buffer.concat(pending).toString('utf8'));
    pending = [];
    start = nl + 1;
  }
  if (start < chunk.length) pending.push(chunk.subarray(start));
});
const genCode = await new Promise((resolve) => gen.on('close', resolve));
if (genCode !== 0) fail(`${opts.binary} gen exited ${genCode}`);
for (const { child } of estimates) child.stdin.end();
for (const { format, exited } of estimates) {
  const code = await exited;
  if (code !== 0) fail(`${opts.binary} estimate --lines --wire-format ${format} exited ${code}`);
}

const secs = ((Date.now() - started) / 1000).toFixed(1);
let failed = false;
for (const format of FORMATS) {
  const m = firstMismatch[format];
  const measured = ours[format].length;
  if (m) {
    failed = true;
    process.stdout.write(`${format}: ${measured - agreed[format]} of ${measured} cases differ; the first, case ${m.index} `
      + `(ctxgate gen --seed ${opts.seed} --cases ${m.index + 1} | tail -1): bodyBytes ${m.body}, binary ${m.theirs}; `
      + `tokens per message ${JSON.stringify(m.perMessage)}, binary ${JSON.stringify(m.theirPerMessage)}\n`);
  } else if (agreed[format] !== opts.cases) {
    failed = true;
    process.stdout.write(`${format}: the binary measured ${agreed[format]} cases of ${opts.cases}\n`);
  } else {
    process.stdout.write(`${format}: bodyBytes and the per-message floors equal the binary's on all ${agreed[format]} cases `
      + `(${(bytes[format] / 1e6).toFixed(1)} MB of bodies)\n`);
  }
}
process.stdout.write(`compared in ${secs} s\n`);
process.exit(failed ? 1 : 0);
