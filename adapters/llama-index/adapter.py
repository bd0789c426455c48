#!/usr/bin/env python3
"""LlamaIndex's `ChatMemoryBuffer` as a ctxgate subject (protocol v1).

What is under test is the memory every LlamaIndex agent and chat engine uses
by default: the history is put in a buffer with the config's budget and
`get()` returns what the agent sends —

    ChatMemoryBuffer.from_defaults(chat_history=messages,
                                   token_limit=<the compaction trigger>,
                                   tokenizer_fn=<bytes / bytesPerToken>)

The tokenizer is the only stand-in (LlamaIndex's default loads tiktoken's
BPE over the network): one token per `bytesPerToken` UTF-8 bytes, SPEC §3's
heuristic, so the buffer's budget is the config's. Engine messages become
`ChatMessage`s with the tool calls and call ids in `additional_kwargs`, as
LlamaIndex's OpenAI integration stores them; `get()` returns a slice of the
buffer, answered as the engine messages it holds. A buffer claims no summary
invariants; it has no estimate op.
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ctxgate_subject import serve, trigger  # noqa: E402

from importlib.metadata import version  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, MessageRole  # noqa: E402
from llama_index.core.memory import ChatMemoryBuffer  # noqa: E402

ROLES = {"system": MessageRole.SYSTEM, "user": MessageRole.USER,
         "assistant": MessageRole.ASSISTANT, "tool": MessageRole.TOOL}


def to_llama(m):
    kwargs = {}
    if m.get("toolCalls"):
        kwargs["tool_calls"] = [{"id": c["id"], "type": "function",
                                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                for c in m["toolCalls"]]
    if m["role"] == "tool":
        kwargs["tool_call_id"] = m["toolCallId"]
    return ChatMessage(role=ROLES[m["role"]], content=m.get("content"), additional_kwargs=kwargs)


def compact(cfg, messages):
    held = [to_llama(m) for m in messages]
    bpt = cfg["bytesPerToken"]
    memory = ChatMemoryBuffer.from_defaults(
        # token_limit must be positive (pydantic refuses 0): a trigger of 0 is a budget of 1.
        chat_history=list(held), token_limit=max(1, trigger(cfg)),
        tokenizer_fn=lambda text: [0] * math.ceil(len(text.encode("utf-8")) / bpt))
    index = {id(m): i for i, m in enumerate(held)}
    return [messages[index[id(m)]] for m in memory.get()]


if __name__ == "__main__":
    serve(compact, name="llama-index ChatMemoryBuffer", version=version("llama-index-core"),
          invariants=["tool-pairing", "body-under-ceiling", "no-premature-compaction", "progress",
                      "verbatim-suffix", "order-preserved", "pinned-kept", "deterministic",
                      "idempotent", "session-never-overflows"],
          # text content only (SPEC §6): the mapping gets no content parts
          content_parts=False)
