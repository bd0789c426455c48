// The exact sizes ctxgate measures (SPEC §2, §5), for compactors that must
// keep under them: the request body in the config's wire format, and the
// floor an estimate must not fall under for tool calls. The formats
// themselves are written in wire.js (content parts and images included).

import { bodyMeter, checkJson, dumps, nbytes } from './wire.js';
import { withDefaults } from './config.js';

const FORMATS = ['engine', 'openai', 'anthropic'];

/** The config over SPEC §2's defaults, with the two fields the body reads checked. */
function bodyConfig(config) {
  const cfg = withDefaults(config);
  if (!FORMATS.includes(cfg.wireFormat)) {
    throw new TypeError(`config.wireFormat: ${JSON.stringify(cfg.wireFormat)} is not one of ${FORMATS.join(', ')}`);
  }
  if (typeof cfg.envelope !== 'object' || cfg.envelope === null || Array.isArray(cfg.envelope)) {
    throw new TypeError('config.envelope: must be an object');
  }
  return cfg;
}

/**
 * The exact size in bytes of the request body that carries `messages`
 * (engine messages) in `config.wireFormat`: the compact JSON of
 * `config.envelope` with `messages` added, in UTF-8 (SPEC §2). The number
 * ctxgate compares with `transportMaxBodyBytes`.
 *
 * Throws NotJson (a TypeError naming the field) for a body ctxgate refuses,
 * by the binary's rules (wire.js, strictDumps): a string holding a lone
 * surrogate, NaN or ±Infinity, JSON nested 128 deep (a message counts as
 * depth 2, as in a history file), and values JSON.stringify would change
 * (BigInt, undefined in an array, a function, a Map, an unawaited Promise).
 */
export function bodyBytes(messages, config) {
  if (!Array.isArray(messages)) throw new TypeError('bodyBytes: `messages` must be an array of engine messages');
  return bodyMeter(bodyConfig(config))(messages);
}

/**
 * A measurer for many histories under one config: `meter(messages)` is
 * `bodyBytes(messages, config)`, faster when the same message objects are
 * measured again (in engine and openai each message's size is kept).
 */
export function bodyMeterFor(config) {
  return bodyMeter(bodyConfig(config));
}

/**
 * The `estimate-covers-tool-calls` floor (SPEC §5): Σ over `messages` of
 * ceil(bytes(JSON of its toolCalls) / bytesPerToken), 0 for a message
 * without calls. An estimate of the messages, in total and per message, may
 * not be below it. Numbers are counted as JSON.stringify spells them, which
 * for the numbers ctxgate generates is their own spelling. Tool calls
 * ctxgate would refuse are refused as bodyBytes refuses them.
 */
export function toolCallsFloor(messages, config) {
  if (!Array.isArray(messages)) throw new TypeError('toolCallsFloor: `messages` must be an array of engine messages');
  const bpt = withDefaults(config).bytesPerToken;
  let total = 0;
  messages.forEach((m, i) => {
    const calls = m.toolCalls;
    if (Array.isArray(calls) && calls.length) {
      checkJson(calls, { depth: 3, path: `messages[${i}].toolCalls` });
      total += Math.ceil(nbytes(dumps(calls)) / bpt);
    }
  });
  return total;
}
