// wire.js has one copy: adapters/node-minimal imports the package's.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

test('adapters/node-minimal measures the body with the package\'s wire.js, not a copy of its own', () => {
  const dir = new URL('../../adapters/node-minimal/', import.meta.url);
  const copies = fs.readdirSync(dir).filter((f) => /^wire\./.test(f));
  assert.deepEqual(copies, [], 'a second wire module would drift from the package\'s');
  const source = fs.readFileSync(new URL('compactor.mjs', dir), 'utf8');
  assert.match(source, /from '\.\.\/\.\.\/js\/lib\/wire\.js';/);
});
