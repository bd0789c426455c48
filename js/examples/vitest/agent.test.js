// A vitest test that checks an agent running inside the test process with
// ctxgate playing the model: checkAgent hands each generated case (the base
// URL, a dummy key, the task, the workspace) to runCase, which runs the agent
// to its final answer; ctxgate judges every request the agent sends. When an
// invariant fails, the test fails with it: what was expected and what came,
// the shrunk fixture (.ctxgate/agent-failures/) and how to replay it.
//
// The agent is tiny-agent.js, a stand-in for yours (a Vercel AI SDK agent:
// `createOpenAI({ baseURL: c.baseUrl, apiKey: c.apiKey })`, and
// `abortSignal: c.signal`). js/ci.sh runs this file as it is, and with
// CTXGATE_EXAMPLE_BUG=drops-system-prompt, which must fail.
import { test } from 'vitest';
import { checkAgent } from 'ctxgate';

import { DEPLOYMENTS, runCase } from './tiny-agent.js';

const bug = process.env.CTXGATE_EXAMPLE_BUG || null;
const cases = Number(process.env.CTXGATE_CASES || 8);

for (const [name, { limits, config, invariants }] of Object.entries(DEPLOYMENTS)) {
  test(`the agent keeps its context (${name})`, async () => {
    await checkAgent((c) => runCase(c, limits, bug), { config, invariants, cases });
  }, 120_000);
}
