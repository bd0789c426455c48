// A vitest test that checks a compactor with ctxgate: 300 generated
// histories through the subject protocol, every invariant it claims. When
// one fails, the test fails with ctxgate's account of it: the invariant, the
// shrunk history, and the `ctxgate replay …` line that reproduces it from
// the saved fixture (.ctxgate/failures/).
//
// js/ci.sh runs it over adapters/node-minimal's compactor (CTXGATE_SUBJECT),
// and over a copy of it with a planted defect, which must fail.
import { test } from 'vitest';
import { check } from 'ctxgate';

const subject = process.env.CTXGATE_SUBJECT ?? 'node my-compactor.mjs';

test('the compactor holds every invariant on 300 generated histories', async () => {
  await check({ subject, cases: 300, seed: 29 });
}, 300_000);
