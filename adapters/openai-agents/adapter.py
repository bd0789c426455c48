#!/usr/bin/env python3
"""The OpenAI Agents SDK's session history limit as a ctxgate subject (protocol v1).

What is under test is the SDK's own way to bound the history a session
hands the model: `SessionSettings(limit=N)` on a session ("Maximum number
of items to retrieve … returns the latest N items in chronological order"),
which the Runner applies when it reads the session before each run, through
its own input preparation (which, since PR #4324, also prunes tool outputs
whose call the limit cut away):

    session = SQLiteSession(<id>, session_settings=SessionSettings(limit=N))
    await session.add_items(items)        # the history, as the Runner stores it
    prepared, _ = await prepare_input_with_session([], session, None)
                                          # what the next model call is given

N is CTXGATE_OAI_LIMIT (default 20). The SDK has no token budget, so the
config's trigger and ceiling are not used; the claims are those of a
bounded suffix and of any provider.

Mapping: Responses API input items, as the Runner stores them — a user or
later system message `{"role", "content"}`; an assistant's text a
`{"type": "message", "role": "assistant", "content": [{"type":
"output_text", "text", "annotations": []}]}` item, each of its calls a
`{"type": "function_call", "call_id", "name", "arguments": <JSON text>}`
item; a result `{"type": "function_call_output", "call_id", "output"}`.
The head's system messages are the agent's `instructions`, never in the
session (they come back as they were). The session returns a suffix of the
items; each returned item is mapped back onto the engine message it came
from (aligned from the end), rebuilt from the item, the rest kept beside
(adapters/lib/zoo.py). The round-trip test goes through the SQLite session
with no limit (not through the Runner's preparation: what that prunes is
the behaviour under test).
"""

import asyncio
import json
import os
import sys
import uuid

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from zoo import Refuse, calls_of, dumps, head_len, main, restore, side, text_of  # noqa: E402

from importlib.metadata import version  # noqa: E402
from agents import SQLiteSession  # noqa: E402
from agents.memory import SessionSettings  # noqa: E402
from agents.run_internal.session_persistence import prepare_input_with_session  # noqa: E402

VERSION = version("openai-agents")
LIMIT = int(os.environ.get("CTXGATE_OAI_LIMIT", "20"))
CLAIMS = [
    "tool-pairing",      # any provider: a function_call_output without its call is a 400
    "verbatim-suffix",   # "returns the latest N items in chronological order"
    "order-preserved",
    "deterministic",
    "idempotent",
]


def to_items(messages):
    """(items, origin: item index → engine index)."""
    items, origin = [], []
    for i, m in enumerate(messages):
        role, text = m.get("role"), text_of(m)
        if role in ("user", "system"):
            items.append({"role": role, "content": text})
            origin.append(i)
        elif role == "assistant":
            calls = calls_of(m)
            if text or not calls:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": text, "annotations": []}]})
                origin.append(i)
            for cid, name, args in calls:
                items.append({"type": "function_call", "call_id": cid, "name": name, "arguments": dumps(args)})
                origin.append(i)
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": m["toolCallId"], "output": text})
            origin.append(i)
        else:
            raise Refuse(f"unknown role {role!r}")
    return items, origin


def from_items(items, origin, sides):
    """Engine messages from a run of items, `origin[k]` the engine index of items[k]."""
    out, last = [], None
    for item, i in zip(items, origin):
        kind = item.get("type", "message")
        if kind == "function_call":
            call = (item["call_id"], item["name"], json.loads(item["arguments"]))
            if last is not None and last[0] == i and out[-1]["role"] == "assistant":
                last[1].append(call)
                out[-1] = restore("assistant", last[2], last[1], None, sides[i])
            else:  # the assistant's text item was cut away: its calls alone
                last = (i, [call], "")
                out.append(restore("assistant", "", [call], None, sides[i]))
            continue
        if kind == "function_call_output":
            out.append(restore("tool", item["output"], (), item["call_id"], sides[i]))
        elif item["role"] == "assistant":
            text = "".join(p.get("text", "") for p in item["content"])
            last = (i, [], text)
            out.append(restore("assistant", text, (), None, sides[i]))
            continue
        else:
            out.append(restore(item["role"], item["content"], (), None, sides[i]))
        last = None
    return out


async def through(items, limit, prepare=True):
    session = SQLiteSession(f"ctxgate-{uuid.uuid4().hex}", session_settings=SessionSettings(limit=limit))
    try:
        await session.add_items(items)
        if not prepare:
            return await session.get_items()
        prepared, _ = await prepare_input_with_session([], session, None)
        return prepared
    finally:
        session.close()


def run(messages, limit, prepare=True):
    head = head_len(messages)
    rest = messages[head:]
    sides = [side(m) for m in rest]
    items, origin = to_items(rest)
    got = asyncio.run(through(items, limit, prepare))
    # The Runner keeps a suffix of the items, less the ones it prunes: each item
    # it gives is matched to the first item it equals not matched yet (in
    # order when it keeps the order; where it reorders, ctxgate sees that).
    picked, used = [], set()
    for item in got:
        k = next((k for k in range(len(items)) if k not in used and items[k] == item), None)
        if k is None:
            raise RuntimeError(f"the Runner gave an item it was not given: {item!r}")
        used.add(k)
        picked.append(origin[k])
    return messages[:head] + from_items(got, picked, sides)


def compact(cfg, messages):
    return run(messages, LIMIT)


def roundtrip(cfg, messages):
    # Through the SQLite session (no limit), not the Runner's preparation,
    # whose pruning is the library's behaviour under test.
    return run(messages, None, prepare=False)


if __name__ == "__main__":
    main(roundtrip, f"openai-agents {VERSION}", compact,
         name=f"openai-agents session limit={LIMIT}", version=VERSION, invariants=CLAIMS)
