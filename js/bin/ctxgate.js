#!/usr/bin/env node
// The `ctxgate` command of the npm package: runs the platform's binary
// (lib/binary.js) with these arguments, stdin, stdout and stderr, and exits
// as it exits.
//
// Nothing outlives it: the binary is a child in this process's group (a
// terminal's Ctrl-C, a CI runner or `timeout` killing the group reach it),
// and SIGTERM, SIGINT and SIGHUP sent to this process alone are passed on
// to it; when it dies of one, this process dies of the same. The binary
// stops its subjects when it dies (they ask for SIGKILL on its death). A
// SIGKILL of this process alone cannot be passed on: the binary then runs
// to its end (the binary watching its parent would be its own job).

import { spawn } from 'node:child_process';
import os from 'node:os';

import { BinaryNotFound, VersionSkew, binaryPath, skewWarning } from '../lib/binary.js';
import { forwardSignals } from '../lib/signals.js';

let binary;
try {
  binary = binaryPath();
} catch (e) {
  if (!(e instanceof BinaryNotFound || e instanceof VersionSkew)) throw e;
  process.stderr.write(`ctxgate: ${e.message}\n`);
  process.exit(2);
}
const skew = skewWarning(binary);
if (skew) process.stderr.write(`ctxgate: warning: ${skew}\n`);

// CTXGATE_DIE_WITH_PARENT: should this launcher be SIGKILLed (which it
// cannot pass on), ctxgate stops everything it started and ends too.
const child = spawn(binary, process.argv.slice(2), {
  stdio: 'inherit',
  env: { ...process.env, CTXGATE_DIE_WITH_PARENT: '1' },
});
const release = forwardSignals(child);
child.on('error', (e) => {
  release();
  process.stderr.write(`ctxgate: cannot run ${binary}: ${e.message}\n`);
  process.exit(2);
});
child.on('exit', (code, signal) => {
  release();
  if (signal) {
    process.kill(process.pid, signal); // die as the binary died
    // (A signal that does not end this process by default: exit as a shell reports a death by it.)
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] ?? 0)), 1000).unref();
    return;
  }
  process.exit(code ?? 1);
});
