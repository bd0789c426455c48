#!/usr/bin/env python3
"""LangChain's `trim_messages` as a ctxgate subject (protocol v1, engine format).

What is under test is the call a LangChain user writes, as the docstring of
`trim_messages` recommends it (langchain-core 1.8):

    trim_messages(
        messages,
        max_tokens=<the compaction trigger>,
        strategy="last",                      # keep the most recent messages
        token_counter=count_tokens_approximately,  # "recommended on the hot path"
        start_on="human",                     # history starts with a HumanMessage
        include_system=True,                  # keep the SystemMessage at index 0
        allow_partial=False,
    )

with `count_tokens_approximately(chars_per_token=config.bytesPerToken)`, so
that its budget is the config's: `max_tokens` is SPEC §2's trigger,
round(threshold × min(contextWindow, floor(transportMaxBodyBytes / bytesPerToken))).
`estimate` answers with the same counter, per message and in total.

This file only converts: engine messages become SystemMessage, HumanMessage,
AIMessage (with `tool_calls`) and ToolMessage; each carries its index as its
LangChain `id`, so that every message `trim_messages` keeps is written back
exactly as it came in. It claims what a trimmer should hold; no summary
invariants (it writes no summary), as SPEC §5 says of a trimmer.

Environment (optional), to try the variants users write:
  CTXGATE_LANGCHAIN_START_ON=""           no `start_on` (the call without it)
  CTXGATE_LANGCHAIN_END_ON="human,tool"   the `end_on` the LangGraph memory guide adds
"""

import functools
import json
import os
import sys

import langchain_core
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages

CLAIMS = [
    "tool-pairing",
    "estimate-covers-tool-calls",
    "estimate-monotone",
    "body-under-ceiling",
    "no-premature-compaction",
    "progress",
    "verbatim-suffix",
    "order-preserved",
    "pinned-kept",
    "deterministic",
    "idempotent",
    "session-never-overflows",
]
DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}
START_ON = [t for t in os.environ.get("CTXGATE_LANGCHAIN_START_ON", "human").split(",") if t]
END_ON = [t for t in os.environ.get("CTXGATE_LANGCHAIN_END_ON", "").split(",") if t]


def trigger(cfg):
    window = min(cfg["contextWindow"], cfg["transportMaxBodyBytes"] // cfg["bytesPerToken"])
    x = cfg["threshold"] * window
    whole = int(x)  # x >= 0; SPEC rounds half away from zero, Python's round() to even
    return whole + (1 if x - whole >= 0.5 else 0)


def counter(cfg):
    return functools.partial(count_tokens_approximately, chars_per_token=cfg["bytesPerToken"])


def to_langchain(i, m):
    """One engine message as a LangChain message; `id` is its index."""
    content = m.get("content") or ""
    role, ident = m["role"], str(i)
    if role == "system":
        return SystemMessage(content=content, id=ident)
    if role == "user":
        return HumanMessage(content=content, id=ident)
    if role == "assistant":
        calls = [
            {"name": c["name"], "id": c["id"], "type": "tool_call",
             # LangChain's args are a dict; other JSON values are wrapped.
             "args": c["arguments"] if isinstance(c["arguments"], dict) else {"value": c["arguments"]}}
            for c in m.get("toolCalls") or []
        ]
        return AIMessage(content=content, tool_calls=calls, id=ident)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id=m["toolCallId"], id=ident)
    raise ValueError(f"unknown role {role!r}")


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_DECODER = json.JSONDecoder()


def _skip_ws(text, i):
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def raw_messages(line):
    """The JSON text of each element of the request's `messages`, as sent.

    ctxgate compares numbers as written (653.50 is not 653.5) and Python's
    json would re-spell some: the messages trim_messages keeps are written
    back as the very text they came in."""
    i = _skip_ws(line, 0) + 1  # past '{'
    while True:
        i = _skip_ws(line, i)
        key, i = _DECODER.raw_decode(line, i)
        i = _skip_ws(line, _skip_ws(line, i) + 1)  # past ':'
        if key != "messages":
            _, i = _DECODER.raw_decode(line, i)
            i = _skip_ws(line, i) + 1  # past ','
            continue
        out, i = [], i + 1  # past '['
        while True:
            i = _skip_ws(line, i)
            if line[i] == "]":
                return out
            _, end = _DECODER.raw_decode(line, i)
            out.append(line[i:end])
            i = _skip_ws(line, end)
            if line[i] == ",":
                i += 1


def to_engine(lc, originals, raw):
    """Back to engine JSON: the original text when LangChain kept the message as it was."""
    i = int(lc.id)
    original = originals[i]
    if lc.content == (original.get("content") or ""):
        return raw[i]
    # trim_messages changed it (only allow_partial does): what LangChain holds.
    out = {k: v for k, v in original.items() if k != "content"}
    out["content"] = lc.content if isinstance(lc.content, str) else dumps(lc.content)
    return dumps(out)


def compact(cfg, messages, raw):
    lc = [to_langchain(i, m) for i, m in enumerate(messages)]
    kept = trim_messages(
        lc,
        max_tokens=trigger(cfg),
        strategy="last",
        token_counter=counter(cfg),
        include_system=True,
        allow_partial=False,
        **({"start_on": START_ON} if START_ON else {}),
        **({"end_on": END_ON} if END_ON else {}),
    )
    return [to_engine(m, messages, raw) for m in kept]


def estimate(cfg, messages):
    count = counter(cfg)
    lc = [to_langchain(i, m) for i, m in enumerate(messages)]
    return {"tokens": count(lc), "perMessage": [count([m]) for m in lc]}


def answer(req, line):
    """The answer line (JSON text) to one request."""
    rid = req.get("id")
    op = req.get("op")
    if op == "hello":
        return {"op": "hello", "protocol": 1, "name": "langchain-core trim_messages",
                "version": langchain_core.__version__, "ops": ["compact", "estimate"],
                "format": "engine", "invariants": CLAIMS,
                # Text content only (SPEC §6): `content` goes to LangChain as a string.
                "contentParts": False}
    cfg = {**DEFAULTS, **(req.get("config") or {})}
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return {"id": rid, "error": {"kind": "invalid_input", "message": "`messages` must be an array of objects"}}
    try:
        if op == "compact":
            kept = compact(cfg, messages, raw_messages(line))
            return '{"id":' + dumps(rid) + ',"messages":[' + ",".join(kept) + "]}"
        if op == "estimate":
            return {"id": rid, **estimate(cfg, messages)}
    except Exception as e:  # LangChain refused the input: not an answer the protocol knows
        return {"id": rid, "error": {"kind": "langchain_error", "message": f"{type(e).__name__}: {e}"}}
    return {"id": rid, "error": {"kind": "invalid_input", "message": f"unknown op {op!r}"}}


def main():
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
            req = json.loads(text)
        except ValueError as e:
            reply = {"id": None, "error": {"kind": "invalid_input", "message": f"not JSON: {e}"}}
        else:
            reply = answer(req, text) if isinstance(req, dict) else {
                "id": None, "error": {"kind": "invalid_input", "message": "a request is a JSON object"}}
        out = reply if isinstance(reply, str) else dumps(reply)
        sys.stdout.buffer.write((out + "\n").encode("utf-8"))
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
