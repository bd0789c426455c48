#!/usr/bin/env node
// Assemble one per-platform npm package (@ctxgate/<platform>) from a built
// ctxgate binary, ready for `npm pack` or `npm publish`:
//
//     node js/scripts/platform-package.mjs [--binary target/release/ctxgate]
//         [--package @ctxgate/linux-x64-gnu] [--out target/npm/linux-x64-gnu]
//
// The package holds package.json (name, the main package's version, and the
// os/cpu/libc fields npm installs it by, from lib/platforms.js), a README,
// and bin/ctxgate (bin/ctxgate.exe on Windows), executable. Defaults: the
// release binary of this checkout, the package for this machine, and
// target/npm/<platform>. The folder is replaced if it exists. Prints its path.
//
// The binary is stripped in the package, as the wheel's is (maturin
// `strip = true`): the release profile keeps line tables for profiling
// (a 68 MB binary; 14 MB stripped). `strip` (binutils, or $STRIP for a
// cross toolchain's) must be on PATH; a Windows .exe carries no symbols to
// strip. `--no-strip` packs the binary as it is, and says so.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { PLATFORMS, describe, packageFor } from '../lib/platforms.js';

const JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.resolve(JS, '..');

function fail(message) {
  process.stderr.write(`platform-package: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i];
    if (key === '--no-strip') {
      opts.noStrip = true;
      continue;
    }
    if (!['--binary', '--package', '--out'].includes(key)) fail(`unknown argument ${key} (usage: [--binary FILE] [--package NAME] [--out DIR] [--no-strip])`);
    if (i + 1 >= argv.length) fail(`${key} needs a value`);
    opts[key.slice(2)] = argv[(i += 1)];
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const name = opts.package ?? packageFor();
if (name === null) fail(`no package is published for this platform (${describe()}): give --package, one of ${Object.keys(PLATFORMS).join(', ')}`);
const platform = PLATFORMS[name];
if (!platform) fail(`unknown package ${name}: one of ${Object.keys(PLATFORMS).join(', ')}`);
const binary = path.resolve(opts.binary ?? path.join(REPO, 'target', 'release', platform.exe));
if (!fs.statSync(binary, { throwIfNoEntry: false })?.isFile()) fail(`no binary at ${binary}: build it first (cargo build --release)`);
const short = name.replace('@ctxgate/', '');
const out = path.resolve(opts.out ?? path.join(REPO, 'target', 'npm', short));

const main = JSON.parse(fs.readFileSync(path.join(JS, 'package.json'), 'utf8'));
const manifest = {
  name,
  version: main.version,
  description: `The ctxgate binary for ${short} (${platform.target}), installed by the ctxgate package`,
  license: main.license,
  os: [platform.os],
  cpu: [platform.cpu],
  ...(platform.libc ? { libc: [platform.libc] } : {}),
  files: ['bin/'],
  preferUnplugged: true, // Yarn PnP: a binary must be on disk to be run
};

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(path.join(out, 'bin'), { recursive: true });
fs.writeFileSync(path.join(out, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
fs.writeFileSync(path.join(out, 'README.md'),
  `# ${name}\n\nThe \`ctxgate\` binary for ${short} (Rust target \`${platform.target}\`). `
  + 'Install [`ctxgate`](https://www.npmjs.com/package/ctxgate) instead: it depends on this package '
  + 'on this platform, and its `ctxgate` command runs the binary.\n');
const exe = path.join(out, 'bin', platform.exe);
fs.copyFileSync(binary, exe);
fs.chmodSync(exe, 0o755);
if (opts.noStrip) {
  process.stderr.write(`platform-package: ${exe} packed unstripped (--no-strip)\n`);
} else if (!platform.exe.endsWith('.exe')) {
  const strip = process.env.STRIP || 'strip';
  try {
    // Arguments as a list: the path is never read by a shell.
    execFileSync(strip, [exe], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    fs.rmSync(out, { recursive: true, force: true });
    fail(`could not strip ${exe} with ${strip} (${e.code ?? String(e.stderr ?? e.message).trim()}): install binutils, set STRIP to the target's strip, or pass --no-strip`);
  }
}
process.stdout.write(`${out}\n`);
