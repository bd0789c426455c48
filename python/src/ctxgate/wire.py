"""The exact size of a request body (ctxgate SPEC §2), in the three wire formats.

The compactor reads and writes engine messages (that is what it told ctxgate
in its hello), but `config.wireFormat` says in which format the body goes on
the wire — and so in which format it must fit under `transportMaxBodyBytes`.
This module writes engine messages as `openai` or `anthropic` the way ctxgate
does (SPEC §1.3) and measures the compact JSON of envelope + messages.

The body is compact JSON: no insignificant whitespace, non-ASCII left
unescaped, escapes only for `"`, `\\` and control characters. That is
`json.dumps(..., ensure_ascii=False, separators=(",", ":"))`.

    body_bytes(messages, config)         # the body's size, as ctxgate measures it
    tool_calls_floor(message, bytes_per_token)  # the ADR 0098 estimate floor

The source of truth is python/src/ctxgate/wire.py in the ctxgate repository
(the `ctxgate` package's `ctxgate.body_bytes`); adapters/python-minimal/wire.py
is a byte-for-byte copy, written by python/sync.py, so that python-minimal
stays one folder of standard-library Python. Edit the package's file.
python/ci.sh compares body_bytes with the binary's on 5,000 generated
cases in each format.

What the binary refuses to read, `body_bytes` refuses too (`NotJSON`, a
ValueError naming where and what): NaN and ±Infinity (not JSON), a lone
surrogate in a string or a key (not UTF-8), a key that is not a string, an
object JSON has no spelling for, and nesting as deep as MAX_DEPTH. The
messages are read as `ctxgate body history.json` reads a history (the
messages array is its first level, a message its second) and the envelope
as `--envelope envelope.json` reads it (the envelope its first level): the
rules of the npm package's bodyBytes too.
"""

import base64
import json
import math
import re
import struct

ENGINE_FIELDS = ("role", "content", "toolCalls", "toolCallId", "pinned")
CALL_FIELDS = ("id", "name", "arguments")
IMAGE_FIELDS = ("type", "mediaType", "data", "url")
FORMATS = ("engine", "openai", "anthropic")
DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}


MAX_DEPTH = 128
"""The binary reads JSON with serde_json's nesting limit: a document holds
fewer than MAX_DEPTH nested arrays and objects (127 at most, the document
itself the first); a deeper one is refused (src/model/document.rs)."""


class NotJSON(ValueError):
    """A value the ctxgate binary would not read as JSON; the message says
    where in it (`messages[3].content[0].text`) and what is wrong."""


_SURROGATE = re.compile("[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def where_of(root, path):
    """`root` and the keys of `path` (a linked (parent, key) pair, or None)
    written as `root[0].content["a b"]`; keys JSON-escaped (ASCII, no
    control characters) and cut short, the middle of a deep path elided."""
    keys = []
    while path is not None:
        path, key = path
        keys.append(key)
    keys.reverse()

    def one(k):
        if isinstance(k, int) and not isinstance(k, bool):
            return f"[{k}]"
        if isinstance(k, str) and _NAME.match(k) and len(k) <= 40:
            return f".{k}"
        shown = json.dumps(k if isinstance(k, str) else repr(k))
        return f"[{shown[:40]}…]" if len(shown) > 40 else f"[{shown}]"

    if len(keys) > 8:
        return root + "".join(map(one, keys[:4])) + f"…({len(keys) - 8} more)…" + "".join(map(one, keys[-4:]))
    return root + "".join(map(one, keys))


def json_problem(value, level=1):
    """None if the binary reads `value` as JSON, else (path, problem): the
    first thing in it (in document order) it refuses. `level` is how deep
    `value` sits in its document (1: it is the document). A path is a
    linked (parent, key) pair for `where_of`. Walks with a stack of its
    own: no depth of nesting (nor a list that holds itself) overflows it."""
    stack = [(value, level, None)]
    pop, push = stack.pop, stack.append
    while stack:
        v, lvl, path = pop()
        if isinstance(v, str):
            if not v.isascii():
                bad = _SURROGATE.search(v)
                if bad:
                    return path, (f"a lone surrogate (U+{ord(bad.group()):04X}) in a string: not UTF-8, "
                                  f"so not JSON")
        elif isinstance(v, dict):
            if lvl >= MAX_DEPTH:
                return path, _too_deep(lvl)
            for k, x in reversed(v.items()):
                if not isinstance(k, str):
                    return path, f"a key that is not a string ({type(k).__name__} {_short(k)}): JSON keys are strings"
                if not k.isascii() and _SURROGATE.search(k):
                    return (path, k), "a lone surrogate in this key: not UTF-8, so not JSON"
                push((x, lvl + 1, (path, k)))
        elif isinstance(v, (list, tuple)):
            if lvl >= MAX_DEPTH:
                return path, _too_deep(lvl)
            for i in range(len(v) - 1, -1, -1):
                push((v[i], lvl + 1, (path, i)))
        elif isinstance(v, float):
            if not math.isfinite(v):
                return path, f"{v!r} is not a JSON number (JSON has no NaN or Infinity)"
        elif v is not None and not isinstance(v, int):  # (bool is an int)
            return path, f"a {type(v).__name__} is not JSON ({_short(v)})"
    return None


def _too_deep(level):
    return (f"nested {level} levels deep: ctxgate reads JSON nested at most {MAX_DEPTH - 1} levels "
            f"(or the value holds itself)")


def _short(v):
    try:
        text = repr(v)
    except Exception:  # a __repr__ that raises says nothing more
        return f"<{type(v).__name__}>"
    text = json.dumps(text)[1:-1]  # control characters and surrogates escaped
    return text if len(text) <= 60 else text[:60] + "…"


def check_json(value, root, level=1):
    """Raise NotJSON naming `root`'s path to what the binary refuses in `value`."""
    problem = json_problem(value, level)
    if problem is not None:
        raise NotJSON(f"{where_of(root, problem[0])}: {problem[1]}")


def loads(text):
    """Python's own json.loads: numbers come back as Python writes them
    (653.50 as 653.5), which ctxgate accepts: it compares JSON values, and
    sends only numbers every JSON library writes back the same."""
    return json.loads(text)


def dumps(value):
    """Compact JSON, non-ASCII unescaped: the body's serialisation (SPEC §2).
    NaN and ±Infinity raise ValueError (JSON has no spelling for them)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def nbytes(text):
    return len(text.encode("utf-8"))


def _extra(obj, named):
    """The fields of an engine object other than the named ones, in order."""
    return [(k, v) for k, v in obj.items() if k not in named]


def _add(to, fields):
    """Add fields that are not there yet (the fields already written win)."""
    for k, v in fields:
        to.setdefault(k, v)
    return to


def _content_into(obj, msg, key="content"):
    """Copy `content` as it is: absent stays absent, null stays null."""
    if "content" in msg:
        obj[key] = msg["content"]


def _is_json_text(s):
    def refuse(_):
        raise ValueError("not JSON")

    try:
        json.loads(s, parse_constant=refuse)  # (serde_json, like JSON, has no NaN)
        return True
    except ValueError:
        return False


# --- content parts and images (SPEC §1.4) ------------------------------------------
#
# Engine parts: {"type": "text", "text"}, {"type": "image", "mediaType", "data"}
# (inline base64) or {"type": "image", "url"} (remote); any other part as it is.


def is_image(part):
    return isinstance(part, dict) and part.get("type") == "image"


def images_of(msg):
    content = msg.get("content")
    return [p for p in content if is_image(p)] if isinstance(content, list) else []


def text_of(msg):
    """The text: the string, or the text parts joined (images are never text)."""
    content = msg.get("content")
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def _image_extra(part):
    return [(k, v) for k, v in part.items() if k not in IMAGE_FIELDS]


_PIXELS = {}


def image_pixels(part):
    """(width, height) from an inline image's header (PNG, JPEG, GIF, WebP),
    or None: a remote URL, an unknown or broken header. Read as ctxgate reads
    it (the `imagesize` crate's rules), cached by the data string."""
    data = part.get("data")
    if not isinstance(data, str):
        return None
    if data not in _PIXELS:
        _PIXELS[data] = _read_pixels(data)
    return _PIXELS[data]


def _b64(data, nbytes_wanted=None):
    chars = data if nbytes_wanted is None else data[: (nbytes_wanted + 2) // 3 * 4]
    chars = chars.split("=")[0]
    try:
        return base64.b64decode(chars + "=" * (-len(chars) % 4), altchars=None, validate=True)
    except ValueError:
        return b""


def _read_pixels(data):
    head = _b64(data, 64)
    w = h = None
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        w, h = struct.unpack(">II", head[16:24])
    elif head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        w, h = struct.unpack("<HH", head[6:10])
    elif head[:4] == b"RIFF" and head[8:12] == b"WEBP" and len(head) >= 30:
        tag = head[15:16]
        if tag == b"X":
            w = 1 + int.from_bytes(head[24:27], "little")
            h = 1 + int.from_bytes(head[27:30], "little")
        elif tag == b"L":
            dims = int.from_bytes(head[21:25], "little")
            w, h = (dims & 0x3FFF) + 1, ((dims >> 14) & 0x3FFF) + 1
        elif tag == b" ":
            w, h = struct.unpack("<HH", head[26:30])
    elif head[:3] == b"\xff\xd8\xff":
        w, h = _jpeg_size(_b64(data))
    if not w or not h:
        return None
    return (w, h)


def _jpeg_size(buf):
    """The first SOFn marker's size outside nested images (imagesize's walk)."""
    pos, depth = 2, 0
    while pos + 4 <= len(buf):
        if buf[pos] != 0xFF:
            return None, None
        page = buf[pos + 1]
        if page in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF) and depth == 0:
            if pos + 9 > len(buf):
                return None, None
            h, w = struct.unpack(">HH", buf[pos + 5:pos + 9])
            return w, h
        if page == 0xD8:
            depth += 1
        elif page == 0xD9:
            depth -= 1
            if depth < 0:
                return None, None
        pos += 2 + struct.unpack(">H", buf[pos + 2:pos + 4])[0]
    return None, None


def image_tokens(part, fmt):
    """SPEC §3: by the image's pixels, never its base64."""
    if fmt == "openai" and part.get("detail") == "low":
        return 85
    dims = image_pixels(part)
    if fmt == "openai":
        return 85 + 170 * 8 if dims is None else _openai_tokens(*dims)
    return 1534 if dims is None else _anthropic_tokens(*dims)


def _isqrt_scaled(x, num, den):
    """floor(x * sqrt(num / den)), exactly."""
    import math
    return math.isqrt(x * x * num // den)


def _anthropic_tokens(w, h):
    long, area = max(w, h), w * h
    by_long, by_area = long > 1568, area > 1_150_000
    long_smaller = 1568 * 1568 * area <= 1_150_000 * long * long
    if by_long and (not by_area or long_smaller):
        w, h = w * 1568 // long, h * 1568 // long
    elif by_area:
        w, h = _isqrt_scaled(w, 1_150_000, area), _isqrt_scaled(h, 1_150_000, area)
    return -(-(w * h) // 750)


def _openai_tokens(w, h):
    long = max(w, h)
    if long > 2048:
        w, h = w * 2048 // long, h * 2048 // long
    short = min(w, h)
    if short > 768:
        w, h = w * 768 // short, h * 768 // short
    return 85 + 170 * (-(-w // 512)) * (-(-h // 512))


def elision_text(part):
    """[image elided: M, W×H, N bytes], at most 200 bytes (SPEC §4 step 4)."""
    dims = image_pixels(part)
    pixels = f"{dims[0]}×{dims[1]}" if dims else "?×?"
    media = part.get("mediaType", "remote")[:64]
    text = f"[image elided: {media}, {pixels}, {len(part.get('data', ''))} bytes]"
    return text.encode("utf-8")[:200].decode("utf-8", errors="ignore")


# --- openai (Chat Completions) --------------------------------------------------


def _openai_part(p):
    if not is_image(p):
        return p
    url = p["url"] if "url" in p else f"data:{p['mediaType']};base64,{p['data']}"
    inner = {"url": url}
    if "detail" in p:
        inner["detail"] = p["detail"]
    return _add({"type": "image_url", "image_url": inner},
                [(k, v) for k, v in _image_extra(p) if k != "detail"])


def _openai_arguments(args):
    # A string that is not itself JSON text was kept as a string: written raw.
    if isinstance(args, str) and not _is_json_text(args):
        return args
    return dumps(args)


def openai_messages(m):
    """The openai messages one engine message is written as: itself, and for a
    tool message with images, a user message carrying them (Chat Completions
    tool messages hold text only; ctxgate writes it after the run of results,
    which moves no byte: the body is the same sum)."""
    if m.get("role") != "tool" or not images_of(m):
        return [openai_message(m)]
    rest = [p for p in m["content"] if not is_image(p)]
    tool = {**m, "content": rest if rest else ""}
    user = {"role": "user", "content": images_of(m)}
    if m.get("pinned") is True:
        user["pinned"] = True
    return [openai_message(tool), openai_message(user)]


def openai_message(m):
    obj = {"role": m["role"]}
    _content_into(obj, m)
    if isinstance(obj.get("content"), list):
        obj["content"] = [_openai_part(p) for p in obj["content"]]
    if "toolCalls" in m:
        obj["tool_calls"] = [
            _add({"id": c["id"], "type": "function",
                  "function": {"name": c["name"], "arguments": _openai_arguments(c["arguments"])}},
                 _extra(c, CALL_FIELDS))
            for c in m["toolCalls"]
        ]
    if "toolCallId" in m:
        obj["tool_call_id"] = m["toolCallId"]
    if "pinned" in m:
        obj["pinned"] = m["pinned"]
    return _add(obj, _extra(m, ENGINE_FIELDS))


# --- anthropic (Messages) ---------------------------------------------------------


def _text_block(text):
    return {"type": "text", "text": text}


def _anthropic_block(p):
    if not is_image(p):
        return p
    if "url" in p:
        source = {"type": "url", "url": p["url"]}
    else:
        source = {"type": "base64", "media_type": p["mediaType"], "data": p["data"]}
    return _add({"type": "image", "source": source}, _image_extra(p))


def _blocks(content):
    """Engine content as anthropic content: parts become blocks."""
    if isinstance(content, list):
        return [_anthropic_block(p) for p in content]
    return content


def anthropic_messages(msgs):
    """(system or None, messages) for engine messages."""
    head = 0
    while head < len(msgs) and msgs[head]["role"] == "system":
        head += 1
    system = None
    if head == 1 and "pinned" not in msgs[0] and not _extra(msgs[0], ENGINE_FIELDS):
        system = msgs[0].get("content") or ""
    elif head:
        system = []
        for m in msgs[:head]:
            b = _text_block(m.get("content") or "")
            if "pinned" in m:
                b["pinned"] = m["pinned"]
            system.append(_add(b, _extra(m, ENGINE_FIELDS)))

    out, draft, prev_tool = [], None, False

    def flush():
        if draft is not None:
            obj = {"role": draft["role"]}
            if draft["content"] is not _ABSENT:
                obj["content"] = draft["content"]
            if draft["pinned"] is not None:
                obj["pinned"] = draft["pinned"]
            out.append(_add(obj, draft["extra"]))

    def start(role, content, m):
        flush()
        return {"role": role, "content": content, "pinned": m.get("pinned"),
                "extra": _extra(m, ENGINE_FIELDS), "blocks": isinstance(content, list)}

    for m in msgs[head:]:
        role = m["role"]
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": m["toolCallId"]}
            _content_into(block, m)
            if "content" in block:
                block["content"] = _blocks(block["content"])
            _add(block, _extra(m, ENGINE_FIELDS))
            if prev_tool and draft is not None and draft["role"] == "user" and draft["blocks"]:
                draft["content"].append(block)
                a, b = draft["pinned"], m.get("pinned")
                draft["pinned"] = True if True in (a, b) else (a if a is not None else b)
            else:
                draft = start("user", [block], m)
                draft["extra"] = []  # a tool message's own fields went into its block
        elif role == "user":
            draft = start("user", _blocks(m["content"]) if "content" in m else _ABSENT, m)
        elif role == "assistant":
            if m.get("toolCalls"):
                content = m.get("content")
                if isinstance(content, list):
                    blocks = _blocks(content)
                else:
                    blocks = [_text_block(content)] if content else []
                for c in m["toolCalls"]:
                    blocks.append(_add({"type": "tool_use", "id": c["id"], "name": c["name"],
                                        "input": c["arguments"]}, _extra(c, CALL_FIELDS)))
                draft = start("assistant", blocks, m)
            else:
                draft = start("assistant", _blocks(m["content"]) if "content" in m else _ABSENT, m)
        else:  # a system message after the head: a user message with one text block
            content = m.get("content")
            blocks = _blocks(content) if isinstance(content, list) else [_text_block(content or "")]
            draft = start("user", blocks, m)
        prev_tool = role == "tool"
    flush()
    return system, out


_ABSENT = object()


# --- the body ---------------------------------------------------------------------


class Body:
    """body(msgs) = the exact byte size of envelope + messages in `wireFormat`.

    For engine and openai every message has a size of its own, measured
    once; anthropic groups neighbours (tool results share a user message),
    so its body is written out whole."""

    def __init__(self, config):
        self.format = config["wireFormat"]
        self.envelope = config["envelope"]
        if not isinstance(self.envelope, dict):
            raise NotJSON(f"config.envelope must be an object, found {type(self.envelope).__name__}")
        check_json(self.envelope, "config.envelope")  # as `--envelope FILE` reads it
        own = {k: v for k, v in self.envelope.items() if k != "messages"}
        self.fixed = (nbytes(dumps(own)) + 1 if own else 2) + nbytes('"messages":')
        self.sizes = {}
        self.valid = {}
        self.write = openai_messages if self.format == "openai" else (lambda m: [m])

    def checked(self, msgs):
        """`msgs`, each message checked once for what the binary refuses."""
        if not isinstance(msgs, (list, tuple)):
            raise NotJSON(f"messages must be a list of message objects, found {type(msgs).__name__}")
        for i, m in enumerate(msgs):
            self.check(m, f"messages[{i}]")
        return msgs

    def check(self, m, root="message"):
        if id(m) not in self.valid:
            if not isinstance(m, dict):
                raise NotJSON(f"{root} must be a message object, found {type(m).__name__}")
            check_json(m, root, level=2)  # in a history document's messages array
            self.valid[id(m)] = m  # kept alive, so that its id() is never reused

    def size(self, m):
        key = id(m)
        if key not in self.sizes:
            self.check(m)
            # A tool message's images go in a user message of their own
            # (openai): both count, and the comma between them.
            written = self.write(m)
            size = sum(nbytes(dumps(w)) for w in written) + len(written) - 1
            # Keep m alive with its size, so that its id() is never reused.
            self.sizes[key] = (size, m)
        return self.sizes[key][0]

    def __call__(self, msgs):
        self.checked(msgs)
        if self.format == "anthropic":
            system, arr = anthropic_messages(msgs)
            body = {k: v for k, v in self.envelope.items()
                    if k != "messages" and not (system is not None and k == "system")}
            if system is not None:
                body["system"] = system
            body["messages"] = arr
            return nbytes(dumps(body))
        return self.fixed + 2 + sum(self.size(m) for m in msgs) + max(len(msgs) - 1, 0)


def body_bytes(messages, config=None):
    """The exact size in bytes of the request body for engine `messages`
    (SPEC §2): `config`'s envelope with the messages added, written in its
    `wireFormat`. `config` is a SPEC §2 object; fields left out keep their
    defaults (so `body_bytes(msgs)` is the engine body with no envelope)."""
    if config is not None and not isinstance(config, dict):
        raise NotJSON(f"config must be an object, found {type(config).__name__}")
    cfg = {**DEFAULTS, **(config or {})}
    if cfg["wireFormat"] not in FORMATS:
        raise ValueError(f"config: unknown wireFormat {cfg['wireFormat']!r} (engine, openai, anthropic)")
    return Body(cfg)(messages)


def tool_calls_floor(message, bytes_per_token=4):
    """ADR 0098's floor for one message's estimate: the tokens of its
    serialised `toolCalls`, ceil(bytes / bytesPerToken) (0 without calls).
    ctxgate's `estimate-covers-tool-calls` holds an estimate to it."""
    calls = message.get("toolCalls")
    if not calls:
        return 0
    return -(-nbytes(dumps(calls)) // bytes_per_token)
