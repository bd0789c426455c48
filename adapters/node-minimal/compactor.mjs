#!/usr/bin/env node
// A small, correct context compactor behind the ctxgate subject protocol v1,
// in plain Node.js (20+, no dependencies).
//
// A port of adapters/python-minimal/compactor.py, the same algorithm, with one
// difference on purpose: it has no number-preserving JSON layer. Requests are
// read with JSON.parse and answers written with JSON.stringify, as any
// JavaScript program would (so 653.50 comes back as 653.5, and 12.0 as 12).
// It speaks the engine wire format on stdin/stdout (one JSON object a line)
// and implements ADR 0098 as ctxgate's SPEC §4 hardens it:
//
//   1. Under the trigger and under the transport ceiling: return the history.
//   2. Keep the head (the leading run of system messages, up to an earlier
//      summary, which is folded into the new one); split the rest into
//      iterations (an assistant message with toolCalls + the tool results that
//      answer it travel together); an iteration with a pinned message is pinned.
//   3. Keep the last keepRecent iterations verbatim; replace the earlier,
//      unpinned ones by ONE summary message (role system, <= summaryMaxBytes
//      bytes of UTF-8), placed after the pinned iterations of that span.
//   4. Over the ceiling: elide the images of the recent iterations but the
//      last (and pinned ones), oldest first, until it fits: each becomes one
//      text part "[image elided: M, W×H, N bytes]". Still over the ceiling
//      or the trigger: keep fewer recent iterations, down to one.
//   5. One left and still over the ceiling: shorten the summary to the room
//      that is left (on a character boundary), or drop it.
//   6. head + pinned + last iteration alone over the ceiling: cannot_fit.
//
// Content may be an array of parts (SPEC §1.4): text, images ({type:
// 'image', mediaType, data} inline, or {type: 'image', url}), and parts of
// other kinds, kept as they are. An image weighs its pixels in tokens (SPEC
// §3: wire.imageTokens reads its header) and its base64 in the body: a
// screenshot is ~1,600 tokens and ~1 MB.
//
// Run it by hand:
//
//     echo '{"op":"hello","protocol":1}' | node adapters/node-minimal/compactor.mjs
//
// or under ctxgate:
//
//     ctxgate check --subject 'node adapters/node-minimal/compactor.mjs'
//
// The body's exact size, in the engine, openai and anthropic formats, is in
// js/lib/wire.js, the ctxgate npm package's own (one copy, imported by path).

import { DEFAULTS } from '../../js/lib/config.js'; // SPEC §2's defaults
import { eachLine } from '../../js/lib/serve.js'; // stdin as lines of bytes
import { bodyMeter, dumps, elisionText, imagesOf, imageTokens, isImage, nbytes } from '../../js/lib/wire.js';

const NAME = 'node-minimal', VERSION = '1.0.0';
const SUMMARY_PREFIX = '[summary]';
const ROLES = ['system', 'user', 'assistant', 'tool'];

/** Answered as {"error": {"kind": "invalid_input"}}. */
class InvalidInput extends Error {}

/** Answered as {"error": {"kind": "cannot_fit"}}. */
class CannotFit extends Error {}

/** A plain JSON object (not an array, not null). */
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value roughly as Python's repr() writes it, for error messages. */
function repr(v) {
  if (v === undefined || v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'string') {
    const q = v.includes("'") && !v.includes('"') ? '"' : "'";
    return q + v.replace(/\\/g, '\\\\').replace(new RegExp(q, 'g'), '\\' + q)
      .replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t') + q;
  }
  if (Array.isArray(v)) return '[' + v.map(repr).join(', ') + ']';
  return typeof v === 'object' ? dumps(v) : String(v);
}

// --- sizes -------------------------------------------------------------------

/** ceil(bytes / bytesPerToken), 0 for nothing. */
function tokens(nb, bpt) {
  return Math.ceil(nb / bpt);
}

/** The text: the string, or the text parts joined (images are never text). */
function textOf(msg) {
  if (Array.isArray(msg.content)) {
    return msg.content.filter((p) => isObject(p) && p.type === 'text').map((p) => p.text).join('');
  }
  return typeof msg.content === 'string' ? msg.content : '';
}

/** ADR 0098: tokens(content) + tokens(JSON of toolCalls); an image by its pixels (SPEC §3). */
function messageTokens(msg, bpt, format) {
  let n = tokens(nbytes(textOf(msg)), bpt);
  for (const p of imagesOf(msg)) n += imageTokens(p, format);
  const calls = msg.toolCalls;
  if (msg.role === 'assistant' && Array.isArray(calls) && calls.length) n += tokens(nbytes(dumps(calls)), bpt);
  return n;
}

/** SPEC's round(): half away from zero (written as in the Python, for x >= 0). */
function roundHalfAway(x) {
  const whole = Math.floor(x);
  return whole + (x - whole >= 0.5 ? 1 : 0);
}

/** SPEC §2: round(threshold × min(contextWindow, floor(ceiling / bytesPerToken))). */
function triggerOf(cfg) {
  const window = Math.min(cfg.contextWindow, Math.floor(cfg.transportMaxBodyBytes / cfg.bytesPerToken));
  return roundHalfAway(cfg.threshold * window);
}

// --- iterations (SPEC §1.2) ----------------------------------------------------

/** An assistant message with a non-empty toolCalls. */
function opensIteration(msg) {
  return msg.role === 'assistant' && Array.isArray(msg.toolCalls) && msg.toolCalls.length > 0;
}

/** [[begin, end]] index ranges, covering msgs.slice(start) in order. */
function iterations(msgs, start = 0) {
  const out = [];
  let i = start;
  while (i < msgs.length) {
    const begin = i;
    i += 1;
    if (opensIteration(msgs[begin])) {
      const ids = new Set(msgs[begin].toolCalls.map((c) => c.id));
      while (i < msgs.length && msgs[i].role === 'tool' && ids.has(msgs[i].toolCallId)) i += 1;
    }
    out.push([begin, i]);
  }
  return out;
}

/** Each message on its own: a known role and fields of the right types. */
function checkShape(msgs) {
  if (!Array.isArray(msgs)) throw new InvalidInput('`messages` must be an array');
  msgs.forEach((m, i) => {
    if (!isObject(m) || !ROLES.includes(m.role)) throw new InvalidInput(`message ${i}: not a message with a known role`);
    if (m.content !== undefined && m.content !== null && typeof m.content !== 'string' && !Array.isArray(m.content)) {
      throw new InvalidInput(`message ${i}: \`content\` must be a string, null or an array of parts`);
    }
    (Array.isArray(m.content) ? m.content : []).forEach((p, j) => {
      if (!isObject(p)) throw new InvalidInput(`message ${i}: content[${j}] must be a part object`);
      if (p.type === 'text' && typeof p.text !== 'string') {
        throw new InvalidInput(`message ${i}: content[${j}]: a text part needs a string \`text\``);
      }
      if (p.type === 'image' && !(typeof p.url === 'string' || (typeof p.data === 'string' && typeof p.mediaType === 'string'))) {
        throw new InvalidInput(`message ${i}: content[${j}]: an image needs \`mediaType\` and \`data\`, or \`url\``);
      }
    });
    if (Object.hasOwn(m, 'toolCalls')) {
      if (m.role !== 'assistant' || !Array.isArray(m.toolCalls)) {
        throw new InvalidInput(`message ${i}: \`toolCalls\` must be an array on an assistant message`);
      }
      for (const c of m.toolCalls) {
        if (!(isObject(c) && typeof c.id === 'string' && c.id && typeof c.name === 'string' && Object.hasOwn(c, 'arguments'))) {
          throw new InvalidInput(`message ${i}: a call needs a non-empty id, a name and arguments`);
        }
      }
    }
    if (m.role === 'tool' && typeof m.toolCallId !== 'string') throw new InvalidInput(`message ${i}: tool message without \`toolCallId\``);
  });
}

/** SPEC §1.2: results answer calls of their own iteration, once; only the last iteration may leave calls pending. */
function checkWellFormed(msgs) {
  checkShape(msgs);
  const spans = iterations(msgs);
  spans.forEach(([b, e], n) => {
    if (msgs[b].role === 'tool') throw new InvalidInput(`message ${b}: tool result for ${repr(msgs[b].toolCallId)} answers no call of its iteration`);
    if (!opensIteration(msgs[b])) return;
    const ids = msgs[b].toolCalls.map((c) => c.id);
    if (new Set(ids).size !== ids.length) throw new InvalidInput(`message ${b}: two calls with one id`);
    const answered = msgs.slice(b + 1, e).map((m) => m.toolCallId);
    if (new Set(answered).size !== answered.length) throw new InvalidInput(`message ${b}: a call is answered twice`);
    // answered ⊆ ids by construction, so "the same set" is "as many distinct ids".
    if (n !== spans.length - 1 && answered.length !== new Set(ids).size) {
      throw new InvalidInput(`message ${b}: a call is never answered (only the last iteration may be pending)`);
    }
  });
}

// --- the summariser --------------------------------------------------------------

/** The longest prefix of at most maxBytes UTF-8 bytes, on a character boundary. */
function truncateUtf8(text, maxBytes) {
  if (nbytes(text) <= maxBytes) return text;
  let used = 0, end = 0;
  for (const ch of text) { // by code point: a surrogate pair is one character, never split
    used += nbytes(ch);
    if (used > maxBytes) break;
    end += ch.length;
  }
  return text.slice(0, end);
}

/** A summary this compactor wrote (in an earlier turn of the ToolLoop). */
function isSummary(msg) {
  return msg.role === 'system' && textOf(msg).startsWith(SUMMARY_PREFIX);
}

/** Strings in code point order, as Python sorts them (JS's default sort compares UTF-16 units). */
function byCodePoint(a, b) {
  return Buffer.compare(Buffer.from(a[0], 'utf8'), Buffer.from(b[0], 'utf8'));
}

/** Deterministic digest. A lone system message that fits is kept as it is: that makes compaction idempotent when an earlier summary is replaced. */
function summarise(replaced, maxBytes) {
  if (replaced.length === 1 && replaced[0].role === 'system' && imagesOf(replaced[0]).length === 0
      && nbytes(textOf(replaced[0])) <= maxBytes) return textOf(replaced[0]);
  const roles = new Map(), tools = new Map(); // Maps, not objects: a tool may be called "constructor"
  let calls = 0;
  for (const m of replaced) {
    roles.set(m.role, (roles.get(m.role) || 0) + 1);
    for (const c of m.toolCalls || []) {
      tools.set(c.name, (tools.get(c.name) || 0) + 1);
      calls += 1;
    }
  }
  let text = `${SUMMARY_PREFIX} ${replaced.length} earlier messages (`;
  text += [...roles].sort(byCodePoint).map(([r, n]) => `${n} ${r}`).join(', ') + ')';
  if (tools.size) text += `; ${calls} tool calls: ` + [...tools].sort(byCodePoint).map(([k, v]) => `${k}×${v}`).join(', ');
  text += '.';
  const users = replaced.filter((m) => m.role === 'user' && textOf(m));
  if (users.length) text += ' Last user message: ' + textOf(users[users.length - 1]);
  return truncateUtf8(text, maxBytes);
}

// --- the compactor (SPEC §4) -----------------------------------------------------

/** The compacted history of h, or throws CannotFit / InvalidInput. */
function compact(cfg, h) {
  checkWellFormed(h);
  const bpt = cfg.bytesPerToken, ceiling = cfg.transportMaxBodyBytes, trig = triggerOf(cfg);
  const body = bodyMeter(cfg);
  const fits = (msgs) => body(msgs) <= ceiling;
  const underTrigger = (msgs) => msgs.reduce((s, m) => s + messageTokens(m, bpt, cfg.wireFormat), 0) <= trig;

  // Step 1: nothing to do.
  if (underTrigger(h) && fits(h)) return h;

  // Step 2: head and iterations.
  let head = 0;
  while (head < h.length && h[head].role === 'system' && !isSummary(h[head])) {
    head += 1; // a summary of an earlier turn is not head: it is folded into the next one
  }
  const spans = iterations(h, head);
  if (!spans.length) {
    if (fits(h)) return h;
    throw new CannotFit(`the history is all head: ${body(h)} bytes, over the ${ceiling}-byte ceiling`);
  }
  const pinned = ([b, e]) => h.slice(b, e).some((m) => m.pinned === true);
  const messagesOf = (ss) => ss.flatMap(([b, e]) => h.slice(b, e));

  // Steps 3-4: keep k recent iterations, from keepRecent down to one.
  const n = spans.length;
  for (let k = Math.min(cfg.keepRecent, n); k > 0; k -= 1) {
    const replaced = spans.slice(0, n - k), recent = spans.slice(n - k);
    const keptPinned = messagesOf(replaced.filter(pinned));
    const toSummarise = messagesOf(replaced.filter((s) => !pinned(s)));
    let summary = null;
    if (toSummarise.length && cfg.summaryMaxBytes > 0) {
      const text = truncateUtf8(summarise(toSummarise, cfg.summaryMaxBytes), cfg.summaryMaxBytes);
      summary = { role: 'system', content: text };
    }
    const assemble = (s) => [...h.slice(0, head), ...keptPinned, ...(s !== null ? [s] : []), ...h.slice(recent[0][0])];

    let candidate = assemble(summary);
    if (!fits(candidate)) {
      // Step 4: elide the images of the recent iterations but the last (never
      // pinned ones), oldest first, until it fits.
      const elidable = recent.slice(0, -1).filter((s) => !pinned(s))
        .flatMap(([b, e]) => Array.from({ length: e - b }, (_, j) => b + j));
      candidate = elide(candidate, elidable.map((i) => candidate.length - (h.length - i)), fits);
    }
    if (fits(candidate) && (k === 1 || underTrigger(candidate))) return candidate;
    if (k > 1) continue;

    // Steps 5-6: one recent iteration left, still over the ceiling.
    const minimal = assemble(null);
    if (!fits(minimal)) {
      throw new CannotFit(`head + pinned + last iteration, with no summary, is ${body(minimal)} bytes, over the ${ceiling}-byte ceiling`);
    }
    if (summary === null) return minimal;
    // The longest prefix of the summary that fits (binary search on characters,
    // i.e. code points: slicing UTF-16 units could cut a surrogate pair in two).
    const chars = Array.from(summary.content);
    const prefix = (count) => ({ role: 'system', content: chars.slice(0, count).join('') });
    let lo = 0, hi = chars.length;
    while (lo < hi) {
      const mid = Math.floor((lo + hi + 1) / 2);
      if (fits(assemble(prefix(mid)))) lo = mid;
      else hi = mid - 1;
    }
    const shorter = prefix(lo);
    // Cut so short that it no longer reads as a summary, it would join the
    // head on the next turn: drop it instead.
    return isSummary(shorter) ? assemble(shorter) : minimal;
  }
  return h; // not reached: keepRecent >= 1 and there is at least one iteration
}

/**
 * Each inline image at `positions` (oldest first) becomes one text part,
 * until the candidate fits (SPEC §4 step 4). Remote images stay: a URL is a
 * few bytes, which a placeholder would hardly shorten.
 */
function elide(candidate, positions, fits) {
  const out = [...candidate];
  for (const at of positions) {
    let parts = out[at].content;
    if (!Array.isArray(parts)) continue;
    for (let j = 0; j < parts.length; j += 1) {
      if (fits(out)) return out;
      const p = parts[j];
      if (isImage(p) && Object.hasOwn(p, 'data')) {
        parts = [...parts.slice(0, j), { type: 'text', text: elisionText(p) }, ...parts.slice(j + 1)];
        out[at] = { ...out[at], content: parts };
      }
    }
  }
  return out;
}

/** ADR 0098's estimate, in total and per message. */
function estimate(cfg, h) {
  const per = h.map((m) => messageTokens(m, cfg.bytesPerToken, cfg.wireFormat));
  return { tokens: per.reduce((a, b) => a + b, 0), perMessage: per };
}

// --- the protocol (SPEC §6) -------------------------------------------------------

/** The answer to hello. No "invariants": it claims them all. */
function hello() {
  return { op: 'hello', protocol: 1, name: NAME, version: VERSION, ops: ['compact', 'estimate'], format: 'engine' };
}

/** The request's config over the defaults, checked. */
function readConfig(raw) {
  if (raw === undefined || raw === null) raw = {};
  if (!isObject(raw)) throw new InvalidInput('config: must be an object');
  const unknown = Object.keys(raw).filter((k) => !Object.hasOwn(DEFAULTS, k)).sort();
  if (unknown.length) throw new InvalidInput(`config: unknown fields ${repr(unknown)}`);
  const cfg = { ...DEFAULTS, ...raw };
  for (const key of ['contextWindow', 'threshold', 'transportMaxBodyBytes', 'bytesPerToken', 'keepRecent', 'summaryMaxBytes']) {
    // (Python fails with a TypeError on a string here, and on a fractional
    // keepRecent or summaryMaxBytes, which it uses as a range and a slice.)
    const whole = key === 'keepRecent' || key === 'summaryMaxBytes';
    if (!(whole ? Number.isInteger(cfg[key]) : Number.isFinite(cfg[key]))) {
      throw new InvalidInput(`config: \`${key}\` must be ${whole ? 'an integer' : 'a number'}`);
    }
  }
  if (!['engine', 'openai', 'anthropic'].includes(cfg.wireFormat)) throw new InvalidInput(`config: unknown wireFormat ${repr(cfg.wireFormat)}`);
  if (!isObject(cfg.envelope)) throw new InvalidInput('config: `envelope` must be an object');
  if (!(cfg.threshold > 0 && cfg.threshold <= 1)
      || Math.min(cfg.contextWindow, cfg.bytesPerToken, cfg.transportMaxBodyBytes, cfg.keepRecent) < 1) {
    throw new InvalidInput('config: a value is out of range');
  }
  return cfg;
}

/** The answer to one request (a JSON object). */
function answer(request) {
  const rid = Object.hasOwn(request, 'id') ? request.id : null; // an absent id is answered as null, not dropped
  try {
    const op = request.op;
    if (op === 'hello') return hello();
    const cfg = readConfig(request.config);
    const msgs = request.messages;
    if (op === 'compact') return { id: rid, messages: compact(cfg, msgs) };
    if (op === 'estimate') {
      checkShape(msgs); // any list of messages can be estimated, well formed or not
      return { id: rid, ...estimate(cfg, msgs) };
    }
    throw new InvalidInput(`unknown op ${repr(op)}`);
  } catch (e) {
    if (e instanceof InvalidInput) return { id: rid, error: { kind: 'invalid_input', message: e.message } };
    if (e instanceof CannotFit) return { id: rid, error: { kind: 'cannot_fit', message: e.message } };
    throw e;
  }
}

/** One answer line (with its \n) for one request line (bytes, without its \n). */
function reply(line) {
  let request;
  try {
    request = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(line));
  } catch (e) {
    return dumps({ id: null, error: { kind: 'invalid_input', message: `not JSON: ${e.message}` } }) + '\n';
  }
  if (!isObject(request)) return dumps({ id: null, error: { kind: 'invalid_input', message: 'a request is a JSON object' } }) + '\n';
  try {
    return dumps(answer(request)) + '\n';
  } catch (e) { // our own bug (or a value too deep for JSON.stringify): a fault, reported as one
    process.stderr.write(`node-minimal: ${e && e.stack ? e.stack : e}\n`);
    const rid = Object.hasOwn(request, 'id') ? request.id : null;
    return dumps({ id: rid, error: { kind: 'internal', message: String(e && e.message ? e.message : e) } }) + '\n';
  }
}

/** Answer each line of stdin at once (one write per answer: stdout to a pipe is synchronous); exit when stdin ends. */
function main() {
  process.stdout.on('error', () => process.exit(0)); // the reader went away
  eachLine(process.stdin, (line) => process.stdout.write(reply(line)));
}

main();
