#!/usr/bin/env python3
"""langmem's `summarize_messages` as a ctxgate subject (protocol v1).

What is under test is the short-term memory call langmem's docstring shows
before every model call, made statelessly on the whole history (no running
summary carried between calls: the history ctxgate sends already holds the
summary an earlier call wrote, as a LangGraph state that keeps the output
would):

    summarize_messages(messages, running_summary=None, model=<fake>,
                       max_tokens=<the trigger>,
                       max_summary_tokens=<the summary's budget>,
                       token_counter=count_tokens_approximately(chars_per_token=bytesPerToken))

`max_tokens` is SPEC §2's trigger ("Maximum number of tokens to return in
the final output"); `max_tokens_before_summary` defaults to it, as in the
docstring. The summariser is a deterministic fake chat model whose answer
is bounded the way the docstring asks a user to bound it
(`model.bind(max_tokens=max_summary_tokens)`): a fixed sentence cut to the
summary's budget, so that the message langmem writes ("Summary of the
conversation so far: …") is at most `summaryMaxBytes` where the prefix
leaves room (see `budget`). langmem promises no bound on that message
(max_summary_tokens "is not passed to the summary-generating LLM"), so
`single-bounded-summary` is not claimed; summaries piling up would still
show as `idempotent` and `order-preserved` failures.

Messages are LangChain's (SystemMessage, HumanMessage, AIMessage with
`tool_calls`, ToolMessage), each with its index as its `id` (langmem
requires ids, as LangGraph's add_messages gives them); what they cannot hold
is kept beside them (adapters/lib/zoo.py) and put back on what langmem
returns. `estimate` answers with the same counter.
"""

import functools
import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from ctxgate_subject import trigger  # noqa: E402
from zoo import Refuse, calls_of, main, restore, side, text_of  # noqa: E402

from importlib.metadata import version  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402
from langmem.short_term import summarize_messages  # noqa: E402

VERSION = version("langmem")
SUMMARY = "The earlier turns: the user asked for a review; the agent read files and ran tools."
PREFIX = "Summary of the conversation so far: "  # langmem's DEFAULT_FINAL_SUMMARY_PROMPT
CLAIMS = [
    "tool-pairing",                # any provider: a result without its call is a 400
    "estimate-covers-tool-calls",  # the counter is the library's default token_counter
    "estimate-monotone",
    "no-premature-compaction",     # "once the cumulative number of message tokens reaches max_tokens_before_summary"
    "progress",                    # max_tokens: "Maximum number of tokens to return in the final output"
    "verbatim-suffix",             # the result is [summary] + remaining_messages
    "order-preserved",
    "pinned-kept",                 # the system message is "excluded from summarization"; langmem has no other pin
    "deterministic",
    "idempotent",
]


def to_lc(i, m):
    role, text, ident = m.get("role"), text_of(m), str(i)
    if role == "system":
        return SystemMessage(content=text, id=ident)
    if role == "user":
        return HumanMessage(content=text, id=ident)
    if role == "assistant":
        calls = []
        for cid, name, args in calls_of(m):
            if not isinstance(args, dict):
                raise Refuse("LangChain tool-call args are an object")
            calls.append({"id": cid, "name": name, "args": args, "type": "tool_call"})
        return AIMessage(content=text, tool_calls=calls, id=ident)
    if role == "tool":
        return ToolMessage(content=text, tool_call_id=m["toolCallId"], id=ident)
    raise Refuse(f"unknown role {role!r}")


def from_lc(lc, sides):
    """Back to engine: rebuilt from what LangChain holds, with the side put back."""
    s = sides[int(lc.id)] if lc.id is not None and lc.id.isdigit() and int(lc.id) < len(sides) else None
    role = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}[lc.type]
    text = lc.content if isinstance(lc.content, str) else str(lc.content)
    calls = [(c["id"], c["name"], c["args"]) for c in getattr(lc, "tool_calls", None) or []]
    return restore(role, text, calls, getattr(lc, "tool_call_id", None), s)


def counter(cfg):
    return functools.partial(count_tokens_approximately, chars_per_token=cfg["bytesPerToken"])


def budget(cfg):
    """(max_tokens, max_summary_tokens, the fake model's answer).

    langmem raises ValueError unless max_summary_tokens < max_tokens, so a
    trigger of 0 is passed as max_tokens=1 (one token of leniency, only
    there); the summary's budget is min(256, the docstring's default;
    ceil(room / bytesPerToken); max_tokens // 2), where room is what
    summaryMaxBytes leaves after langmem's prefix (0 when the prefix alone
    is over it: then the fake model answers "")."""
    max_tokens = max(1, trigger(cfg))
    room = max(0, cfg["summaryMaxBytes"] - len(PREFIX.encode()))
    summary_tokens = min(256, math.ceil(room / cfg["bytesPerToken"]), max_tokens // 2)
    cut = SUMMARY.encode()[: min(room, summary_tokens * cfg["bytesPerToken"])].decode("utf-8", "ignore")
    return max_tokens, summary_tokens, cut


def compact(cfg, messages):
    sides = [side(m) for m in messages]
    lc = [to_lc(i, m) for i, m in enumerate(messages)]
    max_tokens, summary_tokens, answer = budget(cfg)
    result = summarize_messages(
        lc,
        running_summary=None,
        model=FakeListChatModel(responses=[answer]),
        max_tokens=max_tokens,
        max_summary_tokens=summary_tokens,
        token_counter=counter(cfg),
    )
    return [from_lc(m, sides) for m in result.messages]


def estimate(cfg, messages):
    count = counter(cfg)
    lc = [to_lc(i, m) for i, m in enumerate(messages)]
    return {"tokens": count(lc), "perMessage": [count([m]) for m in lc]}


def roundtrip(cfg, messages):
    sides = [side(m) for m in messages]
    return [from_lc(to_lc(i, m), sides) for i, m in enumerate(messages)]


if __name__ == "__main__":
    main(roundtrip, f"langmem {VERSION}", compact, estimate,
         name="langmem summarize_messages", version=VERSION, invariants=CLAIMS)
