"""The OpenAI Agents SDK's session input preparation breaks a history whose call ids repeat.

Standalone: only openai-agents. The Runner reads the session
(prepare_input_with_session) and, since PR #4324, prunes tool items whose
counterpart it cannot find — matching function_call and
function_call_output by call_id across the whole history, and de-duplicates items by call_id.
Models that number their calls per turn (call_1 on every turn, as some
non-OpenAI models do through the SDK's LiteLLM and any-llm providers) give
two turns the same call_id, and with no limit at all — nothing to trim —
the preparation drops the first turn's call and output and moves the second
turn's call ahead of the user message that asked for it: the model is sent
[user, edit_file call, user, output] instead of the six items stored.

Exit 10 (and the items) while the bug is there; 11 once fixed; 2 (not run)
unless the pinned release is what imports (findings/pinned.py).
"""
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from agents import SQLiteSession  # noqa: E402
from agents.memory import SessionSettings  # noqa: E402
from agents.run_internal.session_persistence import prepare_input_with_session  # noqa: E402

items = [
    {"role": "user", "content": "Post a review comment, then fix the file."},
    {"type": "function_call", "call_id": "call_1", "name": "post_review_comment", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "posted"},
    {"role": "user", "content": "Now edit it."},
    {"type": "function_call", "call_id": "call_1", "name": "edit_file", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "edited"},
]


def pairs(seq):
    """Each call answered by the next output of its id, before another call of that id."""
    bad, pending = [], {}
    for k, it in enumerate(seq):
        if it.get("type") == "function_call":
            if it["call_id"] in pending:
                bad.append(f"item {pending[it['call_id']]}: call {it['call_id']} never answered")
            pending[it["call_id"]] = k
        elif it.get("type") == "function_call_output":
            if pending.pop(it["call_id"], None) is None:
                bad.append(f"item {k}: output for {it['call_id']} without its call")
    bad += [f"item {k}: call {cid} never answered" for cid, k in pending.items()]
    return bad


async def main():
    session = SQLiteSession("repro-all")
    await session.add_items(items)
    prepared, _ = await prepare_input_with_session([], session, None)
    session.close()
    shape = [(i.get("type", i.get("role")), i.get("call_id"), i.get("name")) for i in prepared]
    print(f"no limit: stored {len(items)} items, the model would be sent {len(prepared)}: {shape}")
    if prepared != items:
        lost = [i for i in items if i not in prepared]
        print("  lost:", [(i.get("type", i.get("role")), i.get("call_id"), i.get("name")) for i in lost])
        return True
    for limit in (5,):
        session = SQLiteSession(f"repro-{limit}", session_settings=SessionSettings(limit=limit))
        await session.add_items(items)
        prepared, _ = await prepare_input_with_session([], session, None)
        session.close()
        shape = [(i.get("type", i.get("role")), i.get("call_id"), i.get("name")) for i in prepared]
        print(f"limit={limit}: the model would be sent {shape}")
        problems = pairs(prepared)
        if problems:
            print("  broken:", "; ".join(problems))
            return True
    return False


if __name__ == "__main__":
    verdict(asyncio.run(main()))
