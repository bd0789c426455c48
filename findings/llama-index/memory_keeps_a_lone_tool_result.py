"""LlamaIndex Memory can hand the LLM a tool result without its call.

Standalone: only llama-index-core. When the queue holds no user message (a
ToolLoop whose user request was flushed in an earlier turn, or a memory
seeded with an agent's own history), the waterfall in Memory._manage_queue
"keeps at least one message regardless of token count" — and that message
can be the last of a batch of parallel tool results, whose assistant call it
has just archived. OpenAI and Anthropic reject the history ("messages with
role 'tool' must be a response to a preceding message with 'tool_calls'").

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

history = [
    ChatMessage(role="assistant", blocks=[TextBlock(text="Reading both files."),
                                          ToolCallBlock(tool_call_id="call_a", tool_name="read_file", tool_kwargs={"path": "a.py"}),
                                          ToolCallBlock(tool_call_id="call_b", tool_name="read_file", tool_kwargs={"path": "b.py"})]),
    ChatMessage(role="tool", blocks=[TextBlock(text="A" * 400)], additional_kwargs={"tool_call_id": "call_a"}),
    ChatMessage(role="tool", blocks=[TextBlock(text="B" * 400)], additional_kwargs={"tool_call_id": "call_b"}),
]


async def main():
    memory = Memory.from_defaults(session_id="repro", token_limit=100, tokenizer_fn=tokenizer)
    for m in history:
        await memory.aput(m)
    got = await memory.aget()
    print("the memory hands the LLM:", [(m.role.value, m.additional_kwargs.get("tool_call_id")) for m in got])
    orphan = bool(got) and got[0].role.value == "tool"
    if orphan:
        print(f"message 0 answers {got[0].additional_kwargs['tool_call_id']!r}, whose call was archived")
    return orphan


if __name__ == "__main__":
    verdict(asyncio.run(main()))
