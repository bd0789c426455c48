#!/usr/bin/env python3
"""LlamaIndex's current `Memory` (llama_index.core.memory.Memory) as a ctxgate subject.

What is under test is the short-term memory an agent (FunctionAgent,
AgentWorkflow) keeps: every message is `aput` into it as the agent does
(its FIFO queue is managed after each put: "If the queue exceeds the token
limit, it removes oldest messages first … keeping related messages
together … at least one complete conversation turn"), then `aget()` gives
the history for the next LLM call:

    Memory.from_defaults(session_id=…, token_limit=<effective window>,
                         chat_history_token_ratio=<threshold>,
                         tokenizer_fn=<bytes / bytesPerToken>)

so the queue is flushed past token_limit × ratio, SPEC §2's trigger; the
token_flush_size is the library's default (3,000, or 70% of the limit when
that is less). No memory blocks: flushed messages are archived, as with
the default Memory. `estimate` is Memory's own `_estimate_token_count` per
message, with the same tokenizer — what it counts is the library's, in the
config's units.

Mapping: LlamaIndex's own types, as its agents and LLM integrations write
them: ChatMessage(role, blocks=[TextBlock]); an assistant's calls are
`ToolCallBlock(tool_call_id, tool_name, tool_kwargs)` blocks (core's type;
the Anthropic integration writes nothing else); a result is
ChatMessage(role="tool", additional_kwargs={"tool_call_id": …}), as
FunctionAgent writes it. Agents keep the system prompt outside the memory,
so the head's system messages stay beside it; a later system message is a
ChatMessage(role="system"). The memory keeps a suffix of what it was given:
what comes back is mapped onto the input from the end, each message rebuilt
from the ChatMessage (the rest kept beside, adapters/lib/zoo.py). The
round-trip test goes through the SQL store (put, then get, nothing due).
"""

import asyncio
import math
import os
import sys
import uuid

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from zoo import Refuse, calls_of, head_len, main, restore, side, text_of  # noqa: E402

from importlib.metadata import version  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

VERSION = version("llama-index-core")
CLAIMS = [
    "tool-pairing",                # any provider; and "keeping related messages together"
    "estimate-covers-tool-calls",  # token_limit: "The overall token limit of the memory"
    "estimate-monotone",
    "no-premature-compaction",     # the queue is flushed only past token_limit × ratio
    "verbatim-suffix",             # a FIFO queue: the newest messages stay as they are
    "order-preserved",
    "deterministic",
    "idempotent",
    # not claimed: progress ("at least one complete conversation turn" is kept, whatever its
    # size), pinned-kept (no pins), the summary invariants (no summary), the body invariants.
]


def tokenizer(cfg):
    bpt = cfg["bytesPerToken"]
    return lambda text: [0] * math.ceil(len(text.encode("utf-8")) / bpt)


def to_li(m):
    role, text = m.get("role"), text_of(m)
    if role in ("system", "user"):
        return ChatMessage(role=role, blocks=[TextBlock(text=text)])
    if role == "assistant":
        blocks = [TextBlock(text=text)]
        for cid, name, args in calls_of(m):
            if not isinstance(args, dict):
                raise Refuse("ToolCallBlock kwargs are kept as an object")
            blocks.append(ToolCallBlock(tool_call_id=cid, tool_name=name, tool_kwargs=args))
        return ChatMessage(role="assistant", blocks=blocks)
    if role == "tool":
        return ChatMessage(role="tool", blocks=[TextBlock(text=text)],
                           additional_kwargs={"tool_call_id": m["toolCallId"]})
    raise Refuse(f"unknown role {role!r}")


def from_li(cm, s):
    role = cm.role.value if hasattr(cm.role, "value") else str(cm.role)
    text = "".join(b.text for b in cm.blocks if isinstance(b, TextBlock))
    calls = [(b.tool_call_id, b.tool_name, b.tool_kwargs) for b in cm.blocks if isinstance(b, ToolCallBlock)]
    return restore(role, text, calls, cm.additional_kwargs.get("tool_call_id"), s)


def memory(cfg, limit=None):
    window = min(cfg["contextWindow"], cfg["transportMaxBodyBytes"] // cfg["bytesPerToken"])
    return Memory.from_defaults(session_id=f"ctxgate-{uuid.uuid4().hex}",
                                token_limit=limit or max(1, window),
                                chat_history_token_ratio=cfg["threshold"],
                                tokenizer_fn=tokenizer(cfg))


async def through(mem, li):
    for cm in li:
        await mem.aput(cm)
    return await mem.aget()


def run(cfg, messages, limit=None):
    head = head_len(messages)
    rest = messages[head:]
    sides = [side(m) for m in rest]
    got = asyncio.run(through(memory(cfg, limit), [to_li(m) for m in rest]))
    if len(got) > len(rest):
        raise RuntimeError(f"Memory returned {len(got)} messages for {len(rest)}")
    # The memory keeps a suffix of the queue: align from the end.
    first = len(rest) - len(got)
    return messages[:head] + [from_li(cm, sides[first + k]) for k, cm in enumerate(got)]


def compact(cfg, messages):
    return run(cfg, messages)


def estimate(cfg, messages):
    mem = memory(cfg)
    per = [mem._estimate_token_count(to_li(m)) for m in messages]
    return {"tokens": sum(per), "perMessage": per}


def roundtrip(cfg, messages):
    # Through the SQL store, under a limit nothing reaches.
    return run(cfg, messages, limit=10 ** 12)


if __name__ == "__main__":
    main(roundtrip, f"llama-index-core Memory {VERSION}", compact, estimate,
         name="llama-index Memory", version=VERSION, invariants=CLAIMS)
