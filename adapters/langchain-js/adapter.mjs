// LangChain.js's `trimMessages` (@langchain/core) as a ctxgate subject (protocol v1).
//
// What is under test is the call the LangChain.js docs show for keeping a
// chat history under a budget ("How to trim messages"; the docstring of
// `trimMessages`):
//
//   await trimMessages(messages, {
//     maxTokens: <the trigger>, strategy: "last", tokenCounter,
//     startOn: "human", includeSystem: true, allowPartial: false,
//   });
//
// @langchain/core ships no approximate counter (the docs pass a chat model,
// whose tokenizer is fetched over the network), so `tokenCounter` is the
// adapter's: SPEC §3's adr-0098 estimate of the messages given, in the
// config's bytes per token. What is under test is therefore where
// trimMessages cuts, not how it counts: no estimate invariant is claimed.
// CTXGATE_LANGCHAIN_START_ON="" calls it without `startOn`.
//
// Mapping (lossless): SystemMessage, HumanMessage, AIMessage({tool_calls:
// [{id, name, args, type: "tool_call"}]}), ToolMessage({tool_call_id}), each
// with its index as `id`; what a message cannot hold (null vs absent content,
// extra fields, a call's extra fields) is kept beside it and put back on what
// trimMessages returns, rebuilt from the LangChain message (so a message it
// changed shows as changed). `node adapter.mjs --roundtrip < cases.jsonl` is
// the round-trip test.
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import {
  AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages,
} from '@langchain/core/messages';

const require = createRequire(import.meta.url);
const VERSION = require('@langchain/core/package.json').version;
const START_ON = (process.env.CTXGATE_LANGCHAIN_START_ON ?? 'human').split(',').filter(Boolean);
const DEFAULTS = {
  contextWindow: 128000, threshold: 0.7, transportMaxBodyBytes: 8388608, bytesPerToken: 4,
  keepRecent: 2, summaryMaxBytes: 4096, wireFormat: 'engine', envelope: {},
};
const CLAIMS = [
  'tool-pairing', // any provider: a result without its call is a 400
  'no-premature-compaction', // it trims only past maxTokens
  'progress', // "Trim messages to be below a token count"
  'verbatim-suffix', // strategy "last": the last messages, whole (allowPartial: false)
  'order-preserved',
  'pinned-kept', // includeSystem: "keep the SystemMessage if there is one at index 0"
  'deterministic',
  'idempotent',
];
const CORE = new Set(['role', 'content', 'toolCalls', 'toolCallId']);
const CALL = new Set(['id', 'name', 'arguments']);

class InvalidInput extends Error {}
class LibraryResult extends Error {}

const textOf = (m) => {
  if (m.content === undefined || m.content === null) return '';
  if (typeof m.content === 'string') return m.content;
  throw new InvalidInput('content parts are not mapped by this adapter (text content only)');
};
const omit = (o, keys) => Object.fromEntries(Object.entries(o).filter(([k]) => !keys.has(k)));

/** What LangChain cannot carry of engine message m (as adapters/lib/zoo.py). */
function side(m) {
  const s = {
    extra: omit(m, CORE),
    content: !('content' in m) ? 'absent' : m.content === null ? 'null' : 'text',
  };
  if ('toolCalls' in m) {
    s.toolCalls = m.toolCalls.map((c) => omit(c, CALL));
    s.emptyCalls = m.toolCalls.length === 0;
  }
  return s;
}

/** An engine message from what LangChain returned, the side put back. */
function restore(role, text, calls, toolCallId, s) {
  const out = s ? { ...s.extra } : {};
  out.role = role;
  const kind = s ? s.content : 'text';
  if (text === '' && kind === 'absent') { /* stays absent */ } else if (text === '' && kind === 'null') out.content = null;
  else out.content = text;
  if (calls.length) {
    const extras = (s && s.toolCalls) || [];
    out.toolCalls = calls.map(([id, name, args], i) => ({ ...(extras[i] || {}), id, name, arguments: args }));
  } else if (s && s.emptyCalls) out.toolCalls = [];
  if (toolCallId !== undefined && toolCallId !== null) out.toolCallId = toolCallId;
  return out;
}

function toLc(m, i) {
  const text = textOf(m);
  const id = String(i);
  switch (m.role) {
    case 'system': return new SystemMessage({ content: text, id });
    case 'user': return new HumanMessage({ content: text, id });
    case 'assistant': {
      const calls = (m.toolCalls || []).map((c) => {
        if (c.arguments === null || typeof c.arguments !== 'object' || Array.isArray(c.arguments)) {
          throw new InvalidInput('LangChain tool-call args are an object');
        }
        return { id: c.id, name: c.name, args: c.arguments, type: 'tool_call' };
      });
      return new AIMessage({ content: text, tool_calls: calls, id });
    }
    case 'tool': return new ToolMessage({ content: text, tool_call_id: m.toolCallId, id });
    default: throw new InvalidInput(`unknown role ${JSON.stringify(m.role)}`);
  }
}

const ROLE = { system: 'system', human: 'user', ai: 'assistant', tool: 'tool' };

function fromLc(lc, sides) {
  const i = /^\d+$/.test(lc.id ?? '') ? Number(lc.id) : -1;
  const s = i >= 0 && i < sides.length ? sides[i] : null;
  const text = typeof lc.content === 'string' ? lc.content : JSON.stringify(lc.content);
  const calls = (lc.tool_calls || []).map((c) => [c.id, c.name, c.args]);
  return restore(ROLE[lc._getType()], text, calls, lc.tool_call_id, s);
}

const bytes = (s) => Buffer.byteLength(s, 'utf8');
const tokens = (s, bpt) => Math.ceil(bytes(s) / bpt);

/** SPEC §3's adr-0098 estimate of one engine message. */
function adr(m, bpt) {
  let n = tokens(textOf(m), bpt);
  if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length) n += tokens(JSON.stringify(m.toolCalls), bpt);
  return n;
}

function trigger(cfg) {
  const window = Math.min(cfg.contextWindow, Math.floor(cfg.transportMaxBodyBytes / cfg.bytesPerToken));
  const x = cfg.threshold * window;
  const whole = Math.floor(x);
  return whole + (x - whole >= 0.5 ? 1 : 0);
}

async function compact(cfg, messages) {
  const sides = messages.map(side);
  const lc = messages.map(toLc);
  // The counter reads the engine message each LangChain message came from (its id).
  const tokenCounter = (msgs) => msgs.reduce((n, m) => n + adr(messages[Number(m.id)], cfg.bytesPerToken), 0);
  const kept = await trimMessages(lc, {
    maxTokens: trigger(cfg),
    strategy: 'last',
    tokenCounter,
    includeSystem: true,
    allowPartial: false,
    ...(START_ON.length ? { startOn: START_ON } : {}),
  });
  const hole = kept.findIndex((m) => !m);
  if (hole !== -1) {
    // Not a message: an answer no caller can send (the next model call throws on it).
    throw new LibraryResult(`trimMessages returned ${kept[hole]} at index ${hole} of its ${kept.length} messages`);
  }
  return kept.map((m) => fromLc(m, sides));
}

function roundtrip(messages) {
  const sides = messages.map(side);
  return messages.map((m, i) => fromLc(toLc(m, i), sides));
}

/** JSON value equality (numbers by value, members in any order). */
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  const ka = Object.keys(a); const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && same(a[k], b[k]));
}

async function answer(req) {
  const rid = Object.hasOwn(req, 'id') ? req.id : null;
  if (req.op === 'hello') {
    return {
      op: 'hello', protocol: 1, name: 'langchain-js trimMessages', version: VERSION, ops: ['compact'],
      format: 'engine', invariants: CLAIMS, contentParts: false, // text content only (SPEC §6)
    };
  }
  try {
    if (req.op !== 'compact') throw new InvalidInput(`unknown op ${JSON.stringify(req.op)}`);
    if (!Array.isArray(req.messages)) throw new InvalidInput('`messages` must be an array');
    return { id: rid, messages: await compact({ ...DEFAULTS, ...(req.config || {}) }, req.messages) };
  } catch (e) {
    if (e instanceof InvalidInput) return { id: rid, error: { kind: 'invalid_input', message: e.message } };
    // The library threw, or answered with something that is not a message
    // list: a fault of the subject, reported with the library's words.
    const what = e instanceof LibraryResult ? e.message : `${e && e.name}: ${e && e.message}`;
    return { id: rid, error: { kind: 'library_error', message: what } };
  }
}

async function main() {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  if (process.argv[2] === '--roundtrip') {
    let cases = 0; let msgs = 0;
    for await (const line of lines) {
      if (!line.trim()) continue;
      const c = JSON.parse(line);
      cases += 1;
      const back = roundtrip(c.messages);
      if (!same(back, c.messages)) {
        process.stderr.write(`roundtrip langchain-js: case ${cases} is not lossless\n  sent ${JSON.stringify(c.messages)}\n  came back ${JSON.stringify(back)}\n`);
        process.exit(1);
      }
      msgs += c.messages.length;
    }
    console.log(`roundtrip @langchain/core ${VERSION}: ${cases} of ${cases} histories (${msgs} messages) came back identical`);
    if (cases === 0) process.exit(1);
    return;
  }
  for await (const line of lines) {
    if (!line.trim()) continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      process.stdout.write(`${JSON.stringify({ id: null, error: { kind: 'invalid_input', message: `not JSON: ${e.message}` } })}\n`);
      continue;
    }
    process.stdout.write(`${JSON.stringify(await answer(req))}\n`);
  }
}

await main();
