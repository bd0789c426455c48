// binaryPath(): which binary runs, and what it says when none fits.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

import { fileURLToPath } from 'node:url';

import { BinaryNotFound, binaryPath } from '../index.js';
import { PACKAGE_VERSION, VersionSkew, skewWarning } from '../lib/binary.js';
import { PLATFORMS, packageFor } from '../lib/platforms.js';

const noPackages = () => { throw new Error('Cannot find module'); };

test('each platform maps to its package; musl, FreeBSD and 32-bit Windows to none', () => {
  assert.equal(packageFor('linux', 'x64', 'glibc'), '@ctxgate/linux-x64-gnu');
  assert.equal(packageFor('linux', 'arm64', 'glibc'), '@ctxgate/linux-arm64-gnu');
  assert.equal(packageFor('darwin', 'arm64', null), '@ctxgate/darwin-arm64');
  assert.equal(packageFor('darwin', 'x64', null), '@ctxgate/darwin-x64');
  assert.equal(packageFor('win32', 'x64', null), '@ctxgate/win32-x64-msvc');
  assert.equal(packageFor('linux', 'x64', 'musl'), null);
  assert.equal(packageFor('freebsd', 'x64', null), null);
  assert.equal(packageFor('win32', 'ia32', null), null);
});

test('no package for the platform: the error names the platform and the ones published', () => {
  for (const [platform, arch, libc, named] of [['linux', 'x64', 'musl', 'linux-x64-musl'], ['freebsd', 'arm64', null, 'freebsd-arm64']]) {
    assert.throws(() => binaryPath({ env: {}, platform, arch, libc, resolve: noPackages }), (e) => {
      assert.ok(e instanceof BinaryNotFound);
      assert.ok(e.message.includes(`no prebuilt ctxgate binary for this platform (${named})`), e.message);
      assert.match(e.message, /linux-x64-gnu, linux-arm64-gnu, darwin-x64, darwin-arm64, win32-x64-msvc/);
      assert.match(e.message, /CTXGATE_BINARY/);
      return true;
    });
  }
});

test('the package for the platform is missing: the error names it and why npm may have skipped it', () => {
  assert.throws(() => binaryPath({ env: {}, platform: 'darwin', arch: 'arm64', libc: null, resolve: noPackages }),
    (e) => e instanceof BinaryNotFound
      && e.message.includes('this platform (darwin-arm64) needs the package @ctxgate/darwin-arm64, and it is not installed')
      && e.message.includes('--omit=optional'));
});

test('an installed package: its bin/ctxgate, made executable if it was not', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-binary-test-'));
  try {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ version: PACKAGE_VERSION }));
    const exe = path.join(dir, 'bin', 'ctxgate');
    fs.writeFileSync(exe, '#!/bin/sh\n', { mode: 0o644 });
    const resolve = (id) => {
      assert.equal(id, '@ctxgate/linux-x64-gnu/package.json');
      return path.join(dir, 'package.json');
    };
    assert.equal(binaryPath({ env: {}, platform: 'linux', arch: 'x64', libc: 'glibc', resolve }), exe);
    if (process.platform !== 'win32') assert.equal(fs.statSync(exe).mode & 0o111, 0o111);
    fs.rmSync(exe);
    assert.throws(() => binaryPath({ env: {}, platform: 'linux', arch: 'x64', libc: 'glibc', resolve }),
      /@ctxgate\/linux-x64-gnu is installed but has no binary at .*ctxgate: reinstall it/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('CTXGATE_BINARY wins, and must exist', () => {
  assert.equal(binaryPath({ env: { CTXGATE_BINARY: process.execPath }, resolve: noPackages }), process.execPath);
  assert.throws(() => binaryPath({ env: { CTXGATE_BINARY: '/no/such/ctxgate' } }),
    /CTXGATE_BINARY is \/no\/such\/ctxgate, and there is no file there/);
});

test('the main package lists every platform package, at its own version, which is the crate\'s', () => {
  const main = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const cargo = fs.readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8');
  const crateVersion = cargo.match(/^version = "([^"]+)"/m)[1];
  assert.equal(main.version, crateVersion);
  assert.deepEqual(Object.keys(main.optionalDependencies).sort(), Object.keys(PLATFORMS).sort());
  for (const v of Object.values(main.optionalDependencies)) assert.equal(v, main.version);
});

test('a platform package of another version is refused, naming both versions and the command that mends it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-binary-test-'));
  try {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'bin', 'ctxgate'), '#!/bin/sh\n', { mode: 0o755 });
    const resolve = () => path.join(dir, 'package.json');
    for (const [manifest, named] of [[{ version: '0.0.9' }, '0.0.9'], [{}, '(none)'], [{ version: '1.0.0\u001b[2J' }, '1.0.0\\x1b[2J']]) {
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest));
      assert.throws(() => binaryPath({ env: {}, platform: 'linux', arch: 'x64', libc: 'glibc', resolve }), (e) => {
        assert.ok(e instanceof VersionSkew);
        assert.ok(e.message.startsWith(`@ctxgate/linux-x64-gnu is version ${named}, and ctxgate is ${PACKAGE_VERSION}: `), e.message);
        assert.ok(e.message.includes(`npm install @ctxgate/linux-x64-gnu@${PACKAGE_VERSION}`), e.message);
        return true;
      });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** A stand-in binary: `--version` prints `version`; otherwise it prints its arguments and exits `code`. */
function fakeBinary(dir, version, code = 0) {
  const file = path.join(dir, `fake-${version.replace(/\W/g, '_')}-${code}`);
  fs.writeFileSync(file, `#!${process.execPath}
if (process.argv[2] === '--version') { process.stdout.write(${JSON.stringify(version)}); process.exit(0); }
process.stdout.write(JSON.stringify(process.argv.slice(2)));
process.exit(${code});
`, { mode: 0o755 });
  return file;
}

test('a CTXGATE_BINARY of another version runs, with a warning naming both versions; of this version, without', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxgate-binary-test-'));
  try {
    const other = fakeBinary(dir, 'ctxgate 9.9.9\n');
    assert.equal(skewWarning(other, { env: { CTXGATE_BINARY: other } }),
      `CTXGATE_BINARY=${other} is ctxgate 9.9.9, and this npm package is ctxgate ${PACKAGE_VERSION}: running it, as CTXGATE_BINARY asks; `
      + `this package's serve(), bodyBytes() and check() follow ${PACKAGE_VERSION}'s rules`);
    assert.equal(skewWarning(other, { env: {} }), null, 'a platform package\'s version is binaryPath\'s to check');
    assert.equal(skewWarning(fakeBinary(dir, `ctxgate ${PACKAGE_VERSION}\n`), { env: { CTXGATE_BINARY: 'x' } }), null);
    assert.match(skewWarning(fakeBinary(dir, 'something else\u001b]0;title\u0007'), { env: { CTXGATE_BINARY: 'x' } }),
      /does not say its version \(--version printed "something else\\u001b\]0;title\\u0007"\)/);
    // The command: the warning on stderr, then the binary's own run, its exit code passed on.
    const launcher = fileURLToPath(new URL('../bin/ctxgate.js', import.meta.url));
    const run = spawnSync(process.execPath, [launcher, 'check', '--cases', '1'], {
      env: { ...process.env, CTXGATE_BINARY: fakeBinary(dir, 'ctxgate 9.9.9\n', 3) }, encoding: 'utf8',
    });
    assert.equal(run.status, 3, run.stderr);
    assert.equal(run.stdout, '["check","--cases","1"]');
    assert.match(run.stderr, /^ctxgate: warning: CTXGATE_BINARY=.* is ctxgate 9\.9\.9, and this npm package is ctxgate \d+\.\d+\.\d+: running it/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
