#!/usr/bin/env node
// The Vercel AI SDK's `pruneMessages` as a ctxgate subject (protocol v1,
// engine format).
//
// What is under test is the call from the SDK's own reference page for
// pruneMessages (ai 6.x), made before every model call:
//
//   pruneMessages({
//     messages,
//     reasoning: 'before-last-message',
//     toolCalls: 'before-last-2-messages',
//     emptyMessages: 'remove',
//   })
//
// pruneMessages takes no budget: it strips tool-call and tool-result parts
// outside the last N messages, whatever the size. Set
// CTXGATE_PRUNE_WHEN=over-trigger to call it only when ADR 0098's estimate
// is over the trigger (what a user who prunes "when the context is large"
// writes), and CTXGATE_PRUNE_TOOL_CALLS to another strategy
// ('before-last-message', 'all', 'before-last-5-messages', …).
//
// This file only converts. Engine messages become ModelMessages: system and
// user turns; an assistant turn with a text part and one `tool-call` part per
// call; each run of engine tool messages becomes ONE tool message with one
// `tool-result` part per result (the shape the SDK itself produces). Every
// message and part carries, under a Symbol key that the SDK's spreads copy
// along, the engine message it came from, so that what pruneMessages keeps
// is written back as the very JSON text it came in (JavaScript numbers would
// turn 12.0 into 12). An assistant message that loses some of its calls is
// written back with the calls that are left; one that loses all of them and
// has text keeps its text and no `toolCalls`.

import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { pruneMessages } from 'ai';

const require = createRequire(import.meta.url);
const AI_VERSION = require('ai/package.json').version;

const CLAIMS = [
  'tool-pairing',
  'body-under-ceiling',
  'no-premature-compaction',
  'progress',
  'verbatim-suffix',
  'order-preserved',
  'pinned-kept',
  'deterministic',
  'idempotent',
  'session-never-overflows',
];
const DEFAULTS = {
  contextWindow: 128000, threshold: 0.7, transportMaxBodyBytes: 8388608, bytesPerToken: 4,
  keepRecent: 2, summaryMaxBytes: 4096, wireFormat: 'engine', envelope: {},
};
const WHEN = process.env.CTXGATE_PRUNE_WHEN || 'always';
const TOOL_CALLS = process.env.CTXGATE_PRUNE_TOOL_CALLS || 'before-last-2-messages';
const SRC = Symbol('ctxgate engine message index');

// ---- raw JSON: the text of each value, as it came --------------------------------

/** Index just past the JSON value that starts at `i` (after whitespace). */
function skipValue(text, i) {
  i = skipWs(text, i);
  const c = text[i];
  if (c === '"') {
    for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
    return i + 1;
  }
  if (c === '{' || c === '[') {
    let depth = 0;
    for (; i < text.length; i++) {
      const d = text[i];
      if (d === '"') { i = skipValue(text, i) - 1; continue; }
      if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') { depth--; if (depth === 0) return i + 1; }
    }
    throw new Error('unterminated JSON');
  }
  while (i < text.length && !',]} \t\r\n'.includes(text[i])) i++;
  return i;
}

function skipWs(text, i) {
  while (' \t\r\n'.includes(text[i]) && i < text.length) i++;
  return i;
}

/** The raw text of each member of the object whose text is `text`, in order. */
function rawMembers(text) {
  const out = new Map();
  let i = skipWs(text, 0) + 1; // past '{'
  for (;;) {
    i = skipWs(text, i);
    if (text[i] === '}') return out;
    const keyEnd = skipValue(text, i);
    const key = JSON.parse(text.slice(i, keyEnd));
    const start = skipWs(text, skipWs(text, keyEnd) + 1); // past ':'
    const end = skipValue(text, start);
    out.set(key, text.slice(start, end));
    i = skipWs(text, end);
    if (text[i] === ',') i++;
  }
}

/** The raw text of each element of the array whose text is `text`. */
function rawElements(text) {
  const out = [];
  let i = skipWs(text, 0) + 1; // past '['
  for (;;) {
    i = skipWs(text, i);
    if (text[i] === ']') return out;
    const end = skipValue(text, i);
    out.push(text.slice(i, end));
    i = skipWs(text, end);
    if (text[i] === ',') i++;
  }
}

// ---- engine <-> ModelMessage -------------------------------------------------------

function text(m) {
  return typeof m.content === 'string' ? m.content : '';
}

function toModelMessages(engine) {
  const out = [];
  let lastCalls = new Map(); // call id -> tool name, of the latest assistant message
  engine.forEach((m, i) => {
    let mm;
    if (m.role === 'assistant' && Array.isArray(m.toolCalls) && m.toolCalls.length > 0) {
      lastCalls = new Map(m.toolCalls.map((c) => [c.id, c.name]));
      const parts = text(m) ? [{ type: 'text', text: text(m) }] : [];
      for (const c of m.toolCalls) {
        parts.push({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: c.arguments, [SRC]: i });
      }
      mm = { role: 'assistant', content: parts };
    } else if (m.role === 'tool') {
      const part = {
        type: 'tool-result',
        toolCallId: m.toolCallId,
        toolName: lastCalls.get(m.toolCallId) ?? 'unknown',
        output: { type: 'text', value: text(m) },
        [SRC]: i,
      };
      const prev = out[out.length - 1];
      if (prev && prev.role === 'tool' && engine[i - 1].role === 'tool') {
        prev.content.push(part);
        return;
      }
      mm = { role: 'tool', content: [part] };
    } else {
      mm = { role: m.role, content: text(m) };
    }
    mm[SRC] = i;
    out.push(mm);
  });
  return out;
}

/** Raw engine messages for what pruneMessages returned. */
function toEngine(pruned, engine, raw) {
  const out = [];
  for (const mm of pruned) {
    if (mm.role === 'tool') {
      for (const part of mm.content) if (part.type === 'tool-result') out.push(raw[part[SRC]]);
      continue;
    }
    const i = mm[SRC];
    const calls = engine[i].toolCalls;
    if (mm.role !== 'assistant' || !Array.isArray(calls) || calls.length === 0) {
      out.push(raw[i]);
      continue;
    }
    const keptIds = new Set(mm.content.filter((p) => p.type === 'tool-call').map((p) => p.toolCallId));
    if (keptIds.size === calls.length) {
      out.push(raw[i]);
      continue;
    }
    // Some calls were pruned: the same message, with the calls that are left.
    const members = rawMembers(raw[i]);
    const rawCalls = rawElements(members.get('toolCalls'));
    const left = rawCalls.filter((_, j) => keptIds.has(calls[j].id));
    const fields = [];
    for (const [k, v] of members) {
      if (k !== 'toolCalls') fields.push(`${JSON.stringify(k)}:${v}`);
      else if (left.length > 0) fields.push(`"toolCalls":[${left.join(',')}]`);
    }
    out.push(`{${fields.join(',')}}`);
  }
  return out;
}

// ---- the budget, for CTXGATE_PRUNE_WHEN=over-trigger ------------------------------------

function trigger(cfg) {
  const win = Math.min(cfg.contextWindow, Math.floor(cfg.transportMaxBodyBytes / cfg.bytesPerToken));
  const x = cfg.threshold * win;
  return Math.floor(x) + (x - Math.floor(x) >= 0.5 ? 1 : 0); // half away from zero
}

function adrEstimate(cfg, engine, raw) {
  const tokens = (s) => Math.ceil(Buffer.byteLength(s, 'utf8') / cfg.bytesPerToken);
  let n = 0;
  engine.forEach((m, i) => {
    n += tokens(text(m));
    if (m.role === 'assistant' && Array.isArray(m.toolCalls) && m.toolCalls.length > 0) {
      n += tokens(rawMembers(raw[i]).get('toolCalls'));
    }
  });
  return n;
}

// ---- the protocol ---------------------------------------------------------------------

function compact(cfg, engine, raw) {
  if (WHEN === 'over-trigger' && adrEstimate(cfg, engine, raw) <= trigger(cfg)) return raw;
  const pruned = pruneMessages({
    messages: toModelMessages(engine),
    reasoning: 'before-last-message',
    toolCalls: TOOL_CALLS,
    emptyMessages: 'remove',
  });
  return toEngine(pruned, engine, raw);
}

function answer(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    return JSON.stringify({ id: null, error: { kind: 'invalid_input', message: `not JSON: ${e.message}` } });
  }
  const id = JSON.stringify(req.id ?? null);
  if (req.op === 'hello') {
    return JSON.stringify({
      op: 'hello', protocol: 1, name: 'ai pruneMessages', version: AI_VERSION,
      ops: ['compact'], format: 'engine', invariants: CLAIMS,
      // Text content only (SPEC §6): `content` goes to the AI SDK as a string.
      contentParts: false,
    });
  }
  const fail = (kind, message) => `{"id":${id},"error":${JSON.stringify({ kind, message })}}`;
  if (req.op !== 'compact') return fail('invalid_input', `unknown op ${JSON.stringify(req.op)}`);
  if (!Array.isArray(req.messages)) return fail('invalid_input', '`messages` must be an array');
  const cfg = { ...DEFAULTS, ...(req.config ?? {}) };
  try {
    const raw = rawElements(rawMembers(line).get('messages'));
    return `{"id":${id},"messages":[${compact(cfg, req.messages, raw).join(',')}]}`;
  } catch (e) {
    // The SDK threw: not an answer the protocol knows, so ctxgate reports a fault.
    return fail('ai_sdk_error', `${e.name}: ${e.message}`);
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line.trim() === '') continue;
  process.stdout.write(answer(line) + '\n');
}
