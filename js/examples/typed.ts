// The package's types at work (js/ci.sh type-checks this file with tsc --strict).
import { serve, bodyBytes, toolCallsFloor, check, CannotFit, CheckFailed } from 'ctxgate';
import type { Config, Message } from 'ctxgate';

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
