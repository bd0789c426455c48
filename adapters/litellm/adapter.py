#!/usr/bin/env python3
"""LiteLLM's `trim_messages` and `token_counter` as a ctxgate subject (protocol v1).

What is under test is what a LiteLLM user calls before `completion()`
(docs: "Trimming Input Messages"):

    trim_messages(messages, max_tokens=<the compaction trigger>)
    token_counter(messages=messages)          # the `estimate` op

Engine messages are converted to the OpenAI Chat Completions shape LiteLLM
takes (`tool_calls` with JSON-text `arguments`, `tool_call_id`); every
message trim_messages hands back unchanged is answered with the engine
message it came from, and one it changed (shortened, or the system messages
it merges into one) is converted back as LiteLLM wrote it. A trimmer claims
no summary invariants (SPEC §5). An exception that escapes LiteLLM is
answered as a `library_error`, which ctxgate reports as a fault.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ctxgate_subject import serve, trigger  # noqa: E402

import litellm  # noqa: E402
from litellm import token_counter  # noqa: E402
from litellm.utils import trim_messages  # noqa: E402

try:
    from importlib.metadata import version
    VERSION = version("litellm")
except Exception:  # pragma: no cover
    VERSION = getattr(litellm, "__version__", "unknown")

CLAIMS = ["tool-pairing", "estimate-covers-tool-calls", "estimate-monotone", "body-under-ceiling",
          "no-premature-compaction", "progress", "verbatim-suffix", "order-preserved",
          "pinned-kept", "deterministic", "idempotent", "session-never-overflows"]


def to_openai(m):
    out = {"role": m["role"], "content": m.get("content")}
    if m["role"] == "assistant" and m.get("toolCalls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"],
                          "arguments": json.dumps(c["arguments"], ensure_ascii=False, separators=(",", ":"))}}
            for c in m["toolCalls"]]
    if m["role"] == "tool":
        out["tool_call_id"] = m["toolCallId"]
    if out["content"] is None and m["role"] != "assistant":
        out["content"] = ""
    return out


def to_engine(o):
    """A message LiteLLM made or changed, back in the engine shape."""
    out = {"role": o["role"], "content": o.get("content")}
    if o.get("tool_calls"):
        out["toolCalls"] = [{"id": c["id"], "name": c["function"]["name"],
                             "arguments": json.loads(c["function"]["arguments"])} for c in o["tool_calls"]]
    if o.get("tool_call_id") is not None:
        out["toolCallId"] = o["tool_call_id"]
    return out


def compact(cfg, messages):
    sent = [to_openai(m) for m in messages]
    kept = trim_messages(sent, max_tokens=trigger(cfg))
    if isinstance(kept, tuple):
        kept = kept[0]
    out, at = [], 0
    for o in kept:
        # The next input message equal to what came back is the one kept.
        match = next((i for i in range(at, len(sent)) if sent[i] == o), None)
        if match is None:
            out.append(to_engine(o))
        else:
            out.append(messages[match])
            at = match + 1
    return out


def estimate(cfg, messages):
    sent = [to_openai(m) for m in messages]
    return {"tokens": token_counter(messages=sent),
            "perMessage": [token_counter(messages=[m]) for m in sent]}


if __name__ == "__main__":
    serve(compact, estimate, name="litellm trim_messages", version=VERSION, invariants=CLAIMS,
          # text content only (SPEC §6): the mapping gets no content parts
          content_parts=False)
