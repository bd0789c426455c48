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

/** UTF-8 bytes of a string. */
export function nbytes(text) {
  return Buffer.byteLength(text, 'utf8');
}

/** Compact JSON: JSON.stringify, nothing else. */
export function dumps(value) {
  return JSON.stringify(value);
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

// --- openai (Chat Completions) --------------------------------------------------

function openaiArguments(args) {
  // A string that is not itself JSON text was kept as a string: written raw.
  if (typeof args === 'string' && !isJsonText(args)) return args;
  return dumps(args);
}

/** One engine message as an openai message. */
export function openaiMessage(m) {
  const obj = { role: m.role };
  contentInto(obj, m);
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
      draft = start('user', Object.hasOwn(m, 'content') ? m.content : ABSENT, m);
    } else if (role === 'assistant') {
      if (Array.isArray(m.toolCalls) && m.toolCalls.length) {
        const blocks = m.content ? [textBlock(m.content)] : [];
        for (const c of m.toolCalls) {
          blocks.push(add({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments }, extra(c, CALL_FIELDS)));
        }
        draft = start('assistant', blocks, m);
      } else {
        draft = start('assistant', Object.hasOwn(m, 'content') ? m.content : ABSENT, m);
      }
    } else { // a system message after the head: a user message with one text block
      draft = start('user', [textBlock(m.content || '')], m);
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
 */
export function bodyMeter(config) {
  const format = config.wireFormat;
  const envelope = config.envelope;
  const own = Object.fromEntries(Object.entries(envelope).filter(([k]) => k !== 'messages'));
  // `{` + own fields + `,` (or just `{` and the closing `}`) + `"messages":`.
  const fixed = (Object.keys(own).length ? nbytes(dumps(own)) + 1 : 2) + nbytes('"messages":');
  const sizes = new Map();
  const write = format === 'openai' ? openaiMessage : (m) => m;

  const size = (m) => {
    let n = sizes.get(m);
    if (n === undefined) {
      n = nbytes(dumps(write(m)));
      sizes.set(m, n);
    }
    return n;
  };

  return (msgs) => {
    if (format === 'anthropic') {
      const [system, arr] = anthropicMessages(msgs);
      const body = Object.fromEntries(Object.entries(envelope).filter(
        ([k]) => k !== 'messages' && !(system !== null && k === 'system')));
      if (system !== null) put(body, 'system', system);
      put(body, 'messages', arr);
      return nbytes(dumps(body));
    }
    let total = fixed + 2 + Math.max(msgs.length - 1, 0); // `[`, `]` and the commas
    for (const m of msgs) total += size(m);
    return total;
  };
}
