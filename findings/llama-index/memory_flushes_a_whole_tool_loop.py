"""LlamaIndex Memory hands the LLM nothing when its queue holds no user message.

Standalone: only llama-index-core. Over the flush limit, the waterfall
"keeps removing messages until first remaining message is from user"; with
no user message in the queue (an agent's ToolLoop whose request was in an
earlier turn, or a memory set from an agent's own history) it removes them
all, the newest tool call and result included, and aget() returns an empty
history. docs/findings.md: verbatim-suffix; the docstring promises "at least
one complete conversation turn", which assumes a user message — classified
as a bug in that edge, found with its sibling memory_keeps_a_lone_tool_result.py.

Exit 10 (and the history) while the bug is there; 11 once fixed; 2 (not run)
unless the pinned release is what imports (findings/pinned.py).
"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

tokenizer = lambda text: [0] * ((len(text.encode()) + 3) // 4)


async def main():
    memory = Memory.from_defaults(session_id="repro", token_limit=50, tokenizer_fn=tokenizer)
    for n in range(3):
        await memory.aput(ChatMessage(role="assistant", blocks=[
            ToolCallBlock(tool_call_id=f"call_{n}", tool_name="read_file", tool_kwargs={"path": f"src/m{n}.py"})]))
        await memory.aput(ChatMessage(role="tool", blocks=[TextBlock(text="x" * 40)],
                                      additional_kwargs={"tool_call_id": f"call_{n}"}))
    got = await memory.aget()
    print(f"6 messages put (3 read_file iterations with 40-byte results), token_limit 50 (flush past 35): aget() returns {len(got)} messages")
    return len(got) == 0


if __name__ == "__main__":
    verdict(asyncio.run(main()))
