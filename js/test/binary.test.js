// binaryPath(): which binary runs, and what it says when none fits.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { BinaryNotFound, binaryPath } from '../index.js';
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
    fs.writeFileSync(path.join(dir, 'package.json'), '{}');
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
