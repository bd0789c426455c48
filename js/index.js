// ctxgate for JavaScript and TypeScript: the subject protocol loop for a
// compactor (serve), the exact sizes ctxgate measures (bodyBytes,
// toolCallsFloor), the binary (binaryPath), two test helpers (check, and
// roundTrip for an adapter's own message conversion), and ctxgate as the
// model of an agent that runs in the test (checkAgent).
// Types: index.d.ts.

export { serve, CannotFit, InvalidInput } from './lib/serve.js';
export { DEFAULTS } from './lib/config.js';
export { bodyBytes, bodyMeterFor, toolCallsFloor } from './lib/body.js';
export { imageTokens, NotJson } from './lib/wire.js';
export { binaryPath, BinaryNotFound, VersionSkew } from './lib/binary.js';
export { check, CheckFailed } from './lib/check.js';
export { checkAgent, replayAgent, AgentReport, AgentCheckFailed, AgentRunError } from './lib/agent.js';
export { roundTrip, RoundTripMismatch, firstDifference } from './lib/roundtrip.js';
