// Where the ctxgate binary is, found at run time: $CTXGATE_BINARY when set
// (a binary built from source), else the per-platform package npm installed
// beside this one (platforms.js). When neither is there, the error names the
// platform, the package it needs, and what to do.
//
// Versions: the binary and this package are released together, at one
// version, and this package's serve(), bodyBytes() and check() follow the
// rules of its own. A platform package of another version is an install
// gone wrong (npm pins it to exactly this version): refused, naming both
// versions and the command that mends it. A binary named by CTXGATE_BINARY
// is the user's choice (one built from a newer checkout, say): run, with a
// warning naming both versions, from `--version`.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

import { PLATFORMS, describe, packageFor } from './platforms.js';

const require = createRequire(import.meta.url);

/** The error for a missing binary: its message says what was looked for and what to do. */
export class BinaryNotFound extends Error {
  constructor(message) {
    super(message);
    this.name = 'BinaryNotFound';
  }
}

/** This package's version, which its binary must have. */
export const PACKAGE_VERSION = require('../package.json').version;

/** The error for a platform package of another version than this package's. */
export class VersionSkew extends Error {
  constructor(message) {
    super(message);
    this.name = 'VersionSkew';
  }
}

/** Text from outside (a path, what a program printed) with its control characters made visible. */
function visible(text) {
  return String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

const FROM_SOURCE = 'or build it from source (`cargo install --path .` in a ctxgate checkout) and set CTXGATE_BINARY to its path';

/**
 * The absolute path of the ctxgate binary for this machine, or throws
 * BinaryNotFound. `env`, `platform`, `arch`, `libc` and `resolve` are for tests.
 */
export function binaryPath({
  env = process.env,
  platform = process.platform,
  arch = process.arch,
  libc,
  resolve = (id) => require.resolve(id),
} = {}) {
  if (env.CTXGATE_BINARY) {
    const file = path.resolve(env.CTXGATE_BINARY);
    if (!fs.existsSync(file)) throw new BinaryNotFound(`CTXGATE_BINARY is ${env.CTXGATE_BINARY}, and there is no file there`);
    return file;
  }
  // (An undefined libc is read from this process, by the default parameter.)
  const here = describe(platform, arch, libc);
  const name = packageFor(platform, arch, libc);
  if (name === null) {
    throw new BinaryNotFound(
      `no prebuilt ctxgate binary for this platform (${here}); there are for `
      + `${Object.keys(PLATFORMS).map((n) => n.replace('@ctxgate/', '')).join(', ')}. `
      + `Run it on one of those, ${FROM_SOURCE}.`);
  }
  let manifest;
  try {
    manifest = resolve(`${name}/package.json`);
  } catch {
    throw new BinaryNotFound(
      `this platform (${here}) needs the package ${name}, and it is not installed: `
      + 'npm installs it with ctxgate as an optional dependency, unless optional dependencies were left out '
      + `(--omit=optional, --no-optional) or the lockfile was made on another platform. `
      + `Install it (\`npm install ${name}\`), ${FROM_SOURCE}.`);
  }
  let version;
  try {
    ({ version } = JSON.parse(fs.readFileSync(manifest, 'utf8')));
  } catch (e) {
    throw new BinaryNotFound(`${name} is installed but its ${manifest} cannot be read (${e.message}): reinstall it`);
  }
  if (version !== PACKAGE_VERSION) {
    throw new VersionSkew(
      `${name} is version ${typeof version === 'string' ? visible(version) : '(none)'}, and ctxgate is ${PACKAGE_VERSION}: `
      + 'the two are released together, and a binary of another version may speak another protocol or measure by '
      + `other rules than this package. Install the matching one (\`npm install ${name}@${PACKAGE_VERSION}\`, `
      + 'or reinstall ctxgate without its lockfile entry for the platform package).');
  }
  const file = path.join(path.dirname(manifest), 'bin', PLATFORMS[name].exe);
  if (!fs.existsSync(file)) throw new BinaryNotFound(`${name} is installed but has no binary at ${file}: reinstall it`);
  makeExecutable(file);
  return file;
}

/** A binary unpacked without its executable bit (some tar tools drop it) gets it back. */
function makeExecutable(file) {
  if (process.platform === 'win32') return;
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(file, 0o755);
    } catch {
      // Not ours to change: spawning it will say why it cannot run.
    }
  }
}

/**
 * The warning for a CTXGATE_BINARY of another version than this package,
 * or null (no CTXGATE_BINARY, the same version, or a binary that cannot be
 * run: running it will say why). Asks the binary its `--version`.
 */
export function skewWarning(file, { env = process.env } = {}) {
  if (!env.CTXGATE_BINARY) return null; // the platform package's version was checked by binaryPath
  const run = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (run.error || run.status !== 0) return null;
  const version = /^ctxgate (\S+)\s*$/m.exec(run.stdout)?.[1];
  if (version === PACKAGE_VERSION) return null;
  const said = version ? `is ctxgate ${version}` : `does not say its version (--version printed ${JSON.stringify(run.stdout.slice(0, 80))})`;
  return `CTXGATE_BINARY=${visible(file)} ${said}, and this npm package is ctxgate ${PACKAGE_VERSION}: running it, as CTXGATE_BINARY asks; `
    + `this package's serve(), bodyBytes() and check() follow ${PACKAGE_VERSION}'s rules`;
}
