#!/usr/bin/env node
// The `ctxgate` command of the npm package: runs the platform's binary
// (lib/binary.js) with these arguments, stdin, stdout and stderr, and exits
// as it exits.

import { spawnSync } from 'node:child_process';

import { BinaryNotFound, binaryPath } from '../lib/binary.js';

let binary;
try {
  binary = binaryPath();
} catch (e) {
  if (!(e instanceof BinaryNotFound)) throw e;
  process.stderr.write(`ctxgate: ${e.message}\n`);
  process.exit(2);
}
const result = spawnSync(binary, process.argv.slice(2), { stdio: 'inherit' });
if (result.error) {
  process.stderr.write(`ctxgate: cannot run ${binary}: ${result.error.message}\n`);
  process.exit(2);
}
if (result.signal) process.kill(process.pid, result.signal); // die as the binary died
process.exit(result.status ?? 1);
