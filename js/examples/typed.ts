// The package's types at work (js/ci.sh type-checks this file with tsc --strict).
import { serve, bodyBytes, toolCallsFloor, check, roundTrip, CannotFit, CheckFailed, RoundTripMismatch, checkAgent, replayAgent, AgentCheckFailed, AgentRunError } from 'ctxgate';
import type { AgentCase, AgentReport, Config, Message, RunCase } from 'ctxgate';

/** Drop the oldest non-system messages until the body fits; give up when only the system ones are left. */
function compact(messages: Message[], config: Config): Message[] {
  const kept = [...messages];
  while (bodyBytes(kept, config) > config.transportMaxBodyBytes) {
    const oldest = kept.findIndex((m) => m.role !== 'system');
    if (oldest === -1) throw new CannotFit(`${bodyBytes(kept, config)} bytes of system messages`);
    kept.splice(oldest, 1);
  }
  return kept;
}

const estimate = (messages: Message[], config: Config) => ({ tokens: toolCallsFloor(messages, config) });

serve({ name: 'drop-oldest', version: '0.0.0', compact, estimate, invariants: ['body-under-ceiling', 'estimate-covers-tool-calls'] });

export async function inATest(): Promise<void> {
  try {
    await check({ subject: ['node', 'drop-oldest.js'], cases: 100, config: { wireFormat: 'openai' } });
  } catch (e) {
    if (e instanceof CheckFailed) console.log(e.fixtures, e.replays);
    throw e;
  }
}

// An agent checked in the test's own process (checkAgent): each case's base URL, key and task handed to it.
export async function anAgentInATest(runAgent: (baseUrl: string, apiKey: string, task: string, signal: AbortSignal) => Promise<string>): Promise<void> {
  const runCase: RunCase = (c: AgentCase) => runAgent(c.baseUrl, c.apiKey, c.prompt, c.signal);
  try {
    const report: AgentReport = await checkAgent(runCase, {
      config: { contextWindow: 32000, transportMaxBodyBytes: 102400, toolOutputMaxBytes: 16384 },
      cases: 10,
      invariants: ['pinned-kept', 'finishes'],
    });
    console.log(report.verdicts['pinned-kept'].pass, report.json.coverage);
  } catch (e) {
    if (e instanceof AgentCheckFailed) {
      console.log(e.report.failedInvariants, e.fixtures);
      await replayAgent(runCase, e.fixtures, { expectFailures: true });
    } else if (e instanceof AgentRunError) console.log(e.exitCode, e.stderr);
    throw e;
  }
}

/** A library's own message type, and the adapter's conversion both ways. */
interface Turn { speaker: string; text: string | null; rest: Omit<Message, 'role' | 'content'> }
const toTurns = (messages: Message[]): Turn[] =>
  messages.map(({ role, content, ...rest }) => ({ speaker: role, text: typeof content === 'string' ? content : null, rest }));
const fromTurns = (turns: Turn[]): Message[] =>
  turns.map((t) => ({ role: t.speaker as Message['role'], content: t.text, ...t.rest }));

export async function roundTripInATest(): Promise<number> {
  try {
    return await roundTrip(toTurns, fromTurns, { cases: 200, textOnly: true });
  } catch (e) {
    if (e instanceof RoundTripMismatch) console.log(e.caseIndex, e.path, e.command);
    throw e;
  }
}
