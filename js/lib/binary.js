// Where the ctxgate binary is, found at run time: $CTXGATE_BINARY when set
// (a binary built from source), else the per-platform package npm installed
// beside this one (platforms.js). When neither is there, the error names the
// platform, the package it needs, and what to do.

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
