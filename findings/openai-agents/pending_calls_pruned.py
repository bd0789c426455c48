"""The OpenAI Agents SDK's session input preparation drops a pending tool call.

Standalone: only openai-agents. A history whose last turn is a function_call
still awaiting its output (a tool that needs approval, a long-running tool)
comes out of the Runner's prepare_input_with_session without that call: the
model input "removes a retained call when its output is absent" (issue
#4322's own words). ctxgate's verbatim-suffix asks that the last iteration,
pending or not, stay as it was; a provider rejects a call without its output,
so the SDK's pruning is deliberate — docs/findings.md classifies it outside
the library's contract.

Exit 10 (and the items) while this is so; 11 if it changed; 2 (not run) unless
the pinned release is what imports (findings/pinned.py).
"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from agents import SQLiteSession  # noqa: E402
from agents.run_internal.session_persistence import prepare_input_with_session  # noqa: E402

items = [
    {"role": "user", "content": "Deploy the fix."},
    {"type": "function_call", "call_id": "call_deploy", "name": "deploy", "arguments": "{\"env\": \"prod\"}"},
]


async def main():
    session = SQLiteSession("repro")
    await session.add_items(items)
    prepared, _ = await prepare_input_with_session([], session, None)
    session.close()
    print("stored:", [(i.get("type", i.get("role")), i.get("call_id")) for i in items])
    print("model input:", [(i.get("type", i.get("role")), i.get("call_id")) for i in prepared])
    return not any(i.get("type") == "function_call" for i in prepared)


if __name__ == "__main__":
    verdict(asyncio.run(main()))
