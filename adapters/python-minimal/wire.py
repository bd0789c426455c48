"""The exact size of a request body (ctxgate SPEC §2), in the three wire formats.

The compactor reads and writes engine messages (that is what it told ctxgate
in its hello), but `config.wireFormat` says in which format the body goes on
the wire — and so in which format it must fit under `transportMaxBodyBytes`.
This module writes engine messages as `openai` or `anthropic` the way ctxgate
does (SPEC §1.3) and measures the compact JSON of envelope + messages.

The body is compact JSON: no insignificant whitespace, non-ASCII left
unescaped, escapes only for `"`, `\\` and control characters. That is
`json.dumps(..., ensure_ascii=False, separators=(",", ":"))`.
"""

import json

ENGINE_FIELDS = ("role", "content", "toolCalls", "toolCallId", "pinned")
CALL_FIELDS = ("id", "name", "arguments")


def loads(text):
    """Python's own json.loads: numbers come back as Python writes them
    (653.50 as 653.5), which ctxgate accepts: it compares JSON values, and
    sends only numbers every JSON library writes back the same."""
    return json.loads(text)


def dumps(value):
    """Compact JSON, non-ASCII unescaped: the body's serialisation (SPEC §2)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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


# --- openai (Chat Completions) --------------------------------------------------


def _openai_arguments(args):
    # A string that is not itself JSON text was kept as a string: written raw.
    if isinstance(args, str) and not _is_json_text(args):
        return args
    return dumps(args)


def openai_message(m):
    obj = {"role": m["role"]}
    _content_into(obj, m)
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
            _add(block, _extra(m, ENGINE_FIELDS))
            if prev_tool and draft is not None and draft["role"] == "user" and draft["blocks"]:
                draft["content"].append(block)
                a, b = draft["pinned"], m.get("pinned")
                draft["pinned"] = True if True in (a, b) else (a if a is not None else b)
            else:
                draft = start("user", [block], m)
                draft["extra"] = []  # a tool message's own fields went into its block
        elif role == "user":
            draft = start("user", m["content"] if "content" in m else _ABSENT, m)
        elif role == "assistant":
            if m.get("toolCalls"):
                blocks = [_text_block(m["content"])] if m.get("content") else []
                for c in m["toolCalls"]:
                    blocks.append(_add({"type": "tool_use", "id": c["id"], "name": c["name"],
                                        "input": c["arguments"]}, _extra(c, CALL_FIELDS)))
                draft = start("assistant", blocks, m)
            else:
                draft = start("assistant", m["content"] if "content" in m else _ABSENT, m)
        else:  # a system message after the head: a user message with one text block
            draft = start("user", [_text_block(m.get("content") or "")], m)
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
        own = {k: v for k, v in self.envelope.items() if k != "messages"}
        self.fixed = (nbytes(dumps(own)) + 1 if own else 2) + nbytes('"messages":')
        self.sizes = {}
        self.write = openai_message if self.format == "openai" else (lambda m: m)

    def size(self, m):
        key = id(m)
        if key not in self.sizes:
            # Keep m alive with its size, so that its id() is never reused.
            self.sizes[key] = (nbytes(dumps(self.write(m))), m)
        return self.sizes[key][0]

    def __call__(self, msgs):
        if self.format == "anthropic":
            system, arr = anthropic_messages(msgs)
            body = {k: v for k, v in self.envelope.items()
                    if k != "messages" and not (system is not None and k == "system")}
            if system is not None:
                body["system"] = system
            body["messages"] = arr
            return nbytes(dumps(body))
        return self.fixed + 2 + sum(self.size(m) for m in msgs) + max(len(msgs) - 1, 0)
