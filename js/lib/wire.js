// The exact size of a request body (ctxgate SPEC §2), in the three wire formats.
//
// The compactor reads and writes engine messages (that is what it told ctxgate
// in its hello), but `config.wireFormat` says in which format the body goes on
// the wire — and so in which format it must fit under `transportMaxBodyBytes`.
// This module writes engine messages as `openai` or `anthropic` the way ctxgate
// does (SPEC §1.3) and measures the compact JSON of envelope + messages.
//
// The body is compact JSON: no insignificant whitespace, non-ASCII left
// unescaped, escapes only for `"`, `\` and control characters. That is plain
// `JSON.stringify(value)`, measured in UTF-8 bytes with `Buffer.byteLength`.
// Numbers are whatever JSON.parse and JSON.stringify make of them: no layer of
// our own (a port of adapters/python-minimal/wire.py without its wire.Number).
//
// Two JavaScript traps are avoided here: an object key such as "__proto__" or
// "toString" must be looked up with Object.hasOwn (never `in`), and copied with
// defineProperty (never `obj[k] = v`, which for "__proto__" sets the prototype).

const ENGINE_FIELDS = new Set(['role', 'content', 'toolCalls', 'toolCallId', 'pinned']);
const CALL_FIELDS = new Set(['id', 'name', 'arguments']);
const IMAGE_FIELDS = new Set(['type', 'mediaType', 'data', 'url']);

/** UTF-8 bytes of a string. */
export function nbytes(text) {
  return Buffer.byteLength(text, 'utf8');
}

/** Compact JSON: JSON.stringify, nothing else (for values known to be JSON data: see strictDumps). */
export function dumps(value) {
  return JSON.stringify(value);
}

// --- JSON data, as ctxgate reads it -------------------------------------------------
//
// The binary reads JSON with serde_json: UTF-8 text (a lone surrogate, even
// escaped as \ud800, is refused), no NaN or Infinity, and at most
// MAX_DEPTH - 1 = 127 arrays and objects open at once (its recursion limit,
// src/model/document.rs: a value nested 128 deep is refused). JSON.stringify
// writes all three anyway: NaN and Infinity as null (other data than was
// given), a lone surrogate as the escape \ud800, any depth. strictDumps
// writes what JSON.stringify writes, and refuses — with NotJson naming
// where and what — every value ctxgate would refuse or JSON.stringify would
// change: those three, BigInt, undefined in an array (written null), a
// function or a symbol (dropped), a Map, a Set or a Promise (written {}).
// An object field whose value is undefined is left out, as JavaScript means
// it: the field is absent.

/** serde_json's recursion limit: the binary refuses JSON nested this deep (127 levels are read). */
export const MAX_DEPTH = 128;

/** A value that is not JSON data as ctxgate reads it: `path` says where, `problem` what. */
export class NotJson extends TypeError {
  constructor(path, problem) {
    super(`${path || 'the value'}: ${problem}`);
    this.name = 'NotJson';
    this.path = path;
    this.problem = problem;
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether a string is valid Unicode (no lone surrogate): what UTF-8, and so ctxgate, can carry. */
export function wellFormed(text) {
  return typeof text.isWellFormed === 'function' ? text.isWellFormed() : !LONE_SURROGATE.test(text);
}

/** The problem of a string that is not well formed: which surrogate, at which character. */
export function loneSurrogate(text) {
  const at = text.search(LONE_SURROGATE);
  const unit = text.charCodeAt(at).toString(16).toUpperCase();
  return `a lone surrogate U+${unit} at character ${at}: not Unicode text, which UTF-8 (and so ctxgate) cannot carry`;
}

/** `text` with each lone surrogate replaced by U+FFFD (String.prototype.toWellFormed, on Node 18 too). */
export function toWellFormed(text) {
  if (typeof text.toWellFormed === 'function') return text.toWellFormed();
  return text.replace(new RegExp(LONE_SURROGATE.source, 'g'), '\ufffd');
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** One step of a path as JavaScript spells it: [2], .content, ["a b"] (`first`: no dot). */
export function pathStep(key, inArray, first) {
  if (inArray) return `[${key}]`;
  if (IDENTIFIER.test(key)) return first ? key : `.${key}`;
  return `[${JSON.stringify(key)}]`;
}

/** The path of field `key` of the array or object `node` (strictDumps' places): messages[2].content. */
function pathIn(node, key) {
  const steps = [[key, node.isArray]];
  for (; node.up; node = node.up) steps.push([node.key, node.up.isArray]);
  steps.reverse();
  // A path hundreds of levels long is shown by its ends.
  const shown = steps.length > 24 ? [...steps.slice(0, 10), null, ...steps.slice(-10)] : steps;
  let out = node.label;
  for (const s of shown) out += s === null ? `…(${steps.length - 20} more levels)…` : pathStep(s[0], s[1], out === '');
  return out;
}

/** What a value JSON cannot hold as it is, or null. */
function notData(v, inArray) {
  switch (typeof v) {
    case 'number':
      return Number.isFinite(v) ? null
        : `${v}, which JSON cannot hold (JSON.stringify would write null; ctxgate refuses NaN and Infinity)`;
    case 'bigint':
      return `the BigInt ${v}n, which JSON cannot hold: write it as a number or a string`;
    case 'undefined':
      return inArray ? 'undefined, which JSON cannot hold (JSON.stringify would write null)' : null;
    case 'function':
      return 'a function, which JSON cannot hold (JSON.stringify would leave it out)';
    case 'symbol':
      return 'a symbol, which JSON cannot hold (JSON.stringify would leave it out)';
    case 'object':
      if (v === null) return null;
      if (v instanceof Promise || typeof v.then === 'function') {
        return 'a Promise (or thenable), which JSON cannot hold (JSON.stringify would write {}): was it awaited?';
      }
      if (v instanceof Map || v instanceof Set || v instanceof WeakMap || v instanceof WeakSet) {
        return `a ${v.constructor.name}, which JSON cannot hold (JSON.stringify would write {}, without its entries)`;
      }
      return null;
    default:
      return null;
  }
}

/**
 * JSON.stringify(value), refusing what is not JSON data as ctxgate reads
 * it (above) with NotJson. `depth` is the level `value` itself is at when
 * it is an array or an object (1: it is a whole document; 2: a message in
 * a history's array); `path` names it in errors.
 */
export function strictDumps(value, { depth = 1, path = '' } = {}) {
  const places = new WeakMap(); // each array or object being written → {up, key, isArray, depth, label}
  return JSON.stringify(value, function check(key, value_) {
    // A boxed primitive is written as its primitive (JSON.stringify unwraps it after asking us).
    const v = value_ instanceof Number || value_ instanceof String || value_ instanceof Boolean ? value_.valueOf() : value_;
    const holder = places.get(this); // undefined: JSON.stringify's own wrapper around `value`
    const here = () => (holder ? pathIn(holder, key) : path);
    if (holder && !holder.isArray && !wellFormed(key)) throw new NotJson(here(), `its key holds ${loneSurrogate(key)}`);
    const problem = typeof v === 'string' ? (wellFormed(v) ? null : `holds ${loneSurrogate(v)}`)
      : notData(v, holder ? holder.isArray : true);
    if (problem) throw new NotJson(here(), problem);
    if (typeof v === 'object' && v !== null) {
      const level = (holder ? holder.depth : depth - 1) + 1;
      if (level >= MAX_DEPTH) {
        throw new NotJson(here(), `nested ${level} arrays and objects deep: `
          + `ctxgate reads JSON at most ${MAX_DEPTH - 1} deep (serde_json's recursion limit)`);
      }
      places.set(v, { up: holder ?? null, key, isArray: Array.isArray(v), depth: level, label: path });
    }
    return v;
  });
}

/** Set an own, enumerable field (safe for any key, "__proto__" included). */
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  return obj;
}

/** The [key, value] fields of an engine object other than the named ones, in order. */
function extra(obj, named) {
  return Object.entries(obj).filter(([k]) => !named.has(k));
}

/** Add fields that are not there yet (the fields already written win). */
function add(to, fields) {
  for (const [k, v] of fields) if (!Object.hasOwn(to, k)) put(to, k, v);
  return to;
}

/** Copy `content` as it is: absent stays absent, null stays null. */
function contentInto(obj, msg, key = 'content') {
  if (Object.hasOwn(msg, 'content')) obj[key] = msg.content;
}

/** Python's `x is None` for a field read with .get(): absent or null. */
function none(x) {
  return x === undefined || x === null;
}

/** Whether a string is JSON text (JSON.parse, like serde_json, has no NaN). */
function isJsonText(s) {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * strictDumps' verdict without writing anything: throws NotJson where
 * strictDumps would, returns otherwise. Plain data — arrays, objects whose
 * prototype is Object's (or none) without a toJSON, strings, finite
 * numbers, booleans, null — is walked here, several times faster than
 * strictDumps writes it; on anything else, or anything wrong, strictDumps
 * is asked, and says where.
 */
export function checkJson(value, { depth = 1, path = '' } = {}) {
  if (!plain(value, depth, true)) strictDumps(value, { depth, path });
}

/** Whether `v` is plain JSON data that strictDumps accepts (false: not known). */
function plain(v, level, inArray) {
  switch (typeof v) {
    case 'string':
      return wellFormed(v);
    case 'number':
      return Number.isFinite(v);
    case 'boolean':
      return true;
    case 'undefined':
      return !inArray; // an absent field
    case 'object': {
      if (v === null) return true;
      if (level >= MAX_DEPTH) return false;
      const proto = Object.getPrototypeOf(v);
      if (Array.isArray(v)) {
        if (proto !== Array.prototype) return false;
        for (let i = 0; i < v.length; i += 1) if (!plain(v[i], level + 1, true)) return false;
        return true;
      }
      if ((proto !== Object.prototype && proto !== null) || typeof v.toJSON === 'function') return false;
      for (const k of Object.keys(v)) if (!wellFormed(k) || !plain(v[k], level + 1, false)) return false;
      return true;
    }
    default:
      return false; // a BigInt, a function, a symbol
  }
}

// --- content parts and images (SPEC §1.4) ------------------------------------------
//
// Engine parts: {type: 'text', text}, {type: 'image', mediaType, data} (inline
// base64) or {type: 'image', url} (remote); any other part as it is.

export function isImage(part) {
  return part !== null && typeof part === 'object' && part.type === 'image';
}

export function imagesOf(msg) {
  return Array.isArray(msg.content) ? msg.content.filter(isImage) : [];
}

const PIXELS = new Map();

/**
 * [width, height] from an inline image's header (PNG, JPEG, GIF, WebP), or
 * null: a remote URL, an unknown or broken header. Read as ctxgate reads it
 * (the `imagesize` crate's rules), cached by the data string.
 */
export function imagePixels(part) {
  const data = part.data;
  if (typeof data !== 'string') return null;
  if (!PIXELS.has(data)) PIXELS.set(data, readPixels(data));
  return PIXELS.get(data);
}

const B64 = /^[A-Za-z0-9+/]*$/;

function b64(data, bytes) {
  let chars = bytes === undefined ? data : data.slice(0, Math.ceil(bytes / 3) * 4);
  chars = chars.split('=')[0];
  if (!B64.test(chars)) return Buffer.alloc(0);
  return Buffer.from(chars, 'base64');
}

function readPixels(data) {
  const head = b64(data, 64);
  let w = 0, h = 0;
  const eq = (at, text) => head.length >= at + text.length && head.subarray(at, at + text.length).equals(Buffer.from(text, 'latin1'));
  if (eq(0, '\x89PNG\r\n\x1a\n') && head.length >= 24) {
    w = head.readUInt32BE(16); h = head.readUInt32BE(20);
  } else if ((eq(0, 'GIF87a') || eq(0, 'GIF89a')) && head.length >= 10) {
    w = head.readUInt16LE(6); h = head.readUInt16LE(8);
  } else if (eq(0, 'RIFF') && eq(8, 'WEBP') && head.length >= 30) {
    const tag = String.fromCharCode(head[15]);
    if (tag === 'X') {
      w = 1 + head.readUIntLE(24, 3); h = 1 + head.readUIntLE(27, 3);
    } else if (tag === 'L') {
      const dims = head.readUInt32LE(21);
      w = (dims & 0x3fff) + 1; h = ((dims >>> 14) & 0x3fff) + 1;
    } else if (tag === ' ') {
      w = head.readUInt16LE(26); h = head.readUInt16LE(28);
    }
  } else if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) {
    [w, h] = jpegSize(b64(data));
  }
  return w && h ? [w, h] : null;
}

const SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

/** The first SOFn marker's size outside nested images (imagesize's walk). */
function jpegSize(buf) {
  let pos = 2, depth = 0;
  while (pos + 4 <= buf.length) {
    if (buf[pos] !== 0xff) return [0, 0];
    const page = buf[pos + 1];
    if (SOF.has(page) && depth === 0) {
      if (pos + 9 > buf.length) return [0, 0];
      return [buf.readUInt16BE(pos + 7), buf.readUInt16BE(pos + 5)];
    }
    if (page === 0xd8) depth += 1;
    else if (page === 0xd9) {
      depth -= 1;
      if (depth < 0) return [0, 0];
    }
    pos += 2 + buf.readUInt16BE(pos + 2);
  }
  return [0, 0];
}

/** floor(x · √(num / den)), exactly (BigInt square root). */
function floorScaledByRoot(x, num, den) {
  const t = (BigInt(x) * BigInt(x) * BigInt(num)) / BigInt(den);
  let n = BigInt(Math.floor(Math.sqrt(Number(t))));
  while (n * n > t) n -= 1n;
  while ((n + 1n) * (n + 1n) <= t) n += 1n;
  return Number(n);
}

function anthropicTokens(w, h) {
  const long = Math.max(w, h), area = w * h;
  const byLong = long > 1568, byArea = area > 1_150_000;
  const longSmaller = 1568n * 1568n * BigInt(area) <= 1_150_000n * BigInt(long) * BigInt(long);
  if (byLong && (!byArea || longSmaller)) {
    [w, h] = [Math.floor(w * 1568 / long), Math.floor(h * 1568 / long)];
  } else if (byArea) {
    [w, h] = [floorScaledByRoot(w, 1_150_000, area), floorScaledByRoot(h, 1_150_000, area)];
  }
  return Math.ceil(w * h / 750);
}

function openaiTokens(w, h) {
  const long = Math.max(w, h);
  if (long > 2048) [w, h] = [Math.floor(w * 2048 / long), Math.floor(h * 2048 / long)];
  const short = Math.min(w, h);
  if (short > 768) [w, h] = [Math.floor(w * 768 / short), Math.floor(h * 768 / short)];
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}

/** SPEC §3: an image's tokens by its pixels, never its base64. */
export function imageTokens(part, format) {
  if (format === 'openai' && part.detail === 'low') return 85;
  const dims = imagePixels(part);
  if (format === 'openai') return dims === null ? 85 + 170 * 8 : openaiTokens(...dims);
  return dims === null ? 1534 : anthropicTokens(...dims);
}

/** [image elided: M, W×H, N bytes], at most 200 bytes (SPEC §4 step 4). */
export function elisionText(part) {
  const dims = imagePixels(part);
  const pixels = dims ? `${dims[0]}×${dims[1]}` : '?×?';
  const media = String(part.mediaType ?? 'remote').slice(0, 64);
  const text = `[image elided: ${media}, ${pixels}, ${(part.data ?? '').length} bytes]`;
  let cut = text;
  while (nbytes(cut) > 200) cut = cut.slice(0, -1);
  return cut;
}

function imageExtra(part) {
  return extra(part, IMAGE_FIELDS);
}

// --- openai (Chat Completions) --------------------------------------------------

function openaiPart(p) {
  if (!isImage(p)) return p;
  const url = Object.hasOwn(p, 'url') ? p.url : `data:${p.mediaType};base64,${p.data}`;
  const inner = { url };
  if (Object.hasOwn(p, 'detail')) inner.detail = p.detail;
  return add({ type: 'image_url', image_url: inner }, imageExtra(p).filter(([k]) => k !== 'detail'));
}

/**
 * The openai messages one engine message is written as: itself, and for a
 * tool message with images, a user message carrying them (Chat Completions
 * tool messages hold text only; ctxgate writes it after the run of results,
 * which moves no byte: the body is the same sum).
 */
export function openaiMessages(m) {
  if (m.role !== 'tool' || imagesOf(m).length === 0) return [openaiMessage(m)];
  const rest = m.content.filter((p) => !isImage(p));
  const tool = { ...m, content: rest.length ? rest : '' };
  const user = { role: 'user', content: imagesOf(m) };
  if (m.pinned === true) user.pinned = true;
  return [openaiMessage(tool), openaiMessage(user)];
}

function openaiArguments(args) {
  // A string that is not itself JSON text was kept as a string: written raw.
  if (typeof args === 'string' && !isJsonText(args)) return args;
  return dumps(args);
}

/** One engine message as an openai message. */
export function openaiMessage(m) {
  const obj = { role: m.role };
  contentInto(obj, m);
  if (Array.isArray(obj.content)) obj.content = obj.content.map(openaiPart);
  if (Object.hasOwn(m, 'toolCalls')) {
    obj.tool_calls = m.toolCalls.map((c) =>
      add({ id: c.id, type: 'function', function: { name: c.name, arguments: openaiArguments(c.arguments) } },
        extra(c, CALL_FIELDS)));
  }
  if (Object.hasOwn(m, 'toolCallId')) obj.tool_call_id = m.toolCallId;
  if (Object.hasOwn(m, 'pinned')) obj.pinned = m.pinned;
  return add(obj, extra(m, ENGINE_FIELDS));
}

// --- anthropic (Messages) ---------------------------------------------------------

function textBlock(text) {
  return { type: 'text', text };
}

function anthropicBlock(p) {
  if (!isImage(p)) return p;
  const source = Object.hasOwn(p, 'url')
    ? { type: 'url', url: p.url }
    : { type: 'base64', media_type: p.mediaType, data: p.data };
  return add({ type: 'image', source }, imageExtra(p));
}

/** Engine content as anthropic content: parts become blocks. */
function blocks(content) {
  return Array.isArray(content) ? content.map(anthropicBlock) : content;
}

// Python's `True in (a, b)` compares with ==, so 1 counts as True too.
const trueish = (x) => x === true || x === 1;

/** [system or null, messages] for engine messages. */
export function anthropicMessages(msgs) {
  let head = 0;
  while (head < msgs.length && msgs[head].role === 'system') head += 1;
  let system = null;
  if (head === 1 && !Object.hasOwn(msgs[0], 'pinned') && extra(msgs[0], ENGINE_FIELDS).length === 0) {
    system = msgs[0].content || '';
  } else if (head) {
    system = msgs.slice(0, head).map((m) => {
      const b = textBlock(m.content || '');
      if (Object.hasOwn(m, 'pinned')) b.pinned = m.pinned;
      return add(b, extra(m, ENGINE_FIELDS));
    });
  }

  const out = [];
  let draft = null;
  let prevTool = false;
  const ABSENT = Symbol('absent');

  const flush = () => {
    if (draft === null) return;
    const obj = { role: draft.role };
    if (draft.content !== ABSENT) obj.content = draft.content;
    if (!none(draft.pinned)) obj.pinned = draft.pinned;
    out.push(add(obj, draft.extra));
  };
  const start = (role, content, m) => {
    flush();
    return { role, content, pinned: m.pinned, extra: extra(m, ENGINE_FIELDS), blocks: Array.isArray(content) };
  };

  for (const m of msgs.slice(head)) {
    const role = m.role;
    if (role === 'tool') {
      const block = { type: 'tool_result', tool_use_id: m.toolCallId };
      contentInto(block, m);
      if (Object.hasOwn(block, 'content')) block.content = blocks(block.content);
      add(block, extra(m, ENGINE_FIELDS));
      if (prevTool && draft !== null && draft.role === 'user' && draft.blocks) {
        draft.content.push(block);
        const a = draft.pinned, b = m.pinned;
        draft.pinned = trueish(a) || trueish(b) ? true : (!none(a) ? a : b);
      } else {
        draft = start('user', [block], m);
        draft.extra = []; // a tool message's own fields went into its block
      }
    } else if (role === 'user') {
      draft = start('user', Object.hasOwn(m, 'content') ? blocks(m.content) : ABSENT, m);
    } else if (role === 'assistant') {
      if (Array.isArray(m.toolCalls) && m.toolCalls.length) {
        const list = Array.isArray(m.content) ? blocks(m.content) : (m.content ? [textBlock(m.content)] : []);
        for (const c of m.toolCalls) {
          list.push(add({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments }, extra(c, CALL_FIELDS)));
        }
        draft = start('assistant', list, m);
      } else {
        draft = start('assistant', Object.hasOwn(m, 'content') ? blocks(m.content) : ABSENT, m);
      }
    } else { // a system message after the head: a user message with one text block
      draft = start('user', Array.isArray(m.content) ? blocks(m.content) : [textBlock(m.content || '')], m);
    }
    prevTool = role === 'tool';
  }
  flush();
  return [system, out];
}

// --- the body ---------------------------------------------------------------------

/**
 * bodyMeter(config)(msgs) = the exact byte size of envelope + messages in
 * `wireFormat`. For engine and openai every message has a size of its own,
 * measured once (cached per message object); anthropic groups neighbours
 * (tool results share a user message), so its body is written out whole.
 *
 * A body ctxgate would refuse is refused here too (NotJson, naming the
 * field): the envelope and each message are read as the binary reads a
 * history file — `ctxgate body FILE`, FILE the JSON array of the messages
 * (so a message is at depth 2) — by checkJson, once per message object.
 */
export function bodyMeter(config) {
  const format = config.wireFormat;
  const envelope = config.envelope;
  checkJson(envelope, { path: 'config.envelope' });
  const own = Object.fromEntries(Object.entries(envelope).filter(([k]) => k !== 'messages'));
  // `{` + own fields + `,` (or just `{` and the closing `}`) + `"messages":`.
  const fixed = (Object.keys(own).length ? nbytes(dumps(own)) + 1 : 2) + nbytes('"messages":');
  const sizes = new Map();
  const checked = new WeakSet();

  /** Refuse a message ctxgate would not read. */
  const checkMessage = (m, i) => {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) {
      throw new TypeError(`messages[${i}]: ${m === null ? 'null' : Array.isArray(m) ? 'an array' : typeof m}, not a message (a JSON object)`);
    }
    checkJson(m, { depth: 2, path: `messages[${i}]` });
    checked.add(m);
  };

  const size = (m, i) => {
    let n = sizes.get(m);
    if (n === undefined) {
      checkMessage(m, i);
      if (format === 'openai') {
        // A tool message's images go in a user message of their own
        // (openai): both count, and the comma between them.
        const written = openaiMessages(m);
        n = written.reduce((t, w) => t + nbytes(dumps(w)), 0) + written.length - 1;
      } else {
        n = nbytes(dumps(m));
      }
      sizes.set(m, n);
    }
    return n;
  };

  return (msgs) => {
    if (format === 'anthropic') {
      msgs.forEach((m, i) => checked.has(m) || checkMessage(m, i));
      const [system, arr] = anthropicMessages(msgs);
      const body = Object.fromEntries(Object.entries(envelope).filter(
        ([k]) => k !== 'messages' && !(system !== null && k === 'system')));
      if (system !== null) put(body, 'system', system);
      put(body, 'messages', arr);
      return nbytes(dumps(body));
    }
    let total = fixed + 2 + Math.max(msgs.length - 1, 0); // `[`, `]` and the commas
    msgs.forEach((m, i) => { total += size(m, i); });
    return total;
  };
}
