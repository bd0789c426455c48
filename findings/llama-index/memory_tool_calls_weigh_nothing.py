"""LlamaIndex Memory leaves tool-call arguments out of its token count (ADR 0098's incident).

Standalone: only llama-index-core. Memory._estimate_token_count filters
ToolCallBlock out before counting, so an assistant turn that is nothing but a
tool call (the way llama-index-llms-anthropic, and core's own
MockFunctionCallingLLM, write one) weighs 0 tokens however large its
arguments, and the FIFO queue is not flushed: the memory hands the LLM a
history far over token_limit. Reported as run-llama/llama_index#21950 (open).

Exit 10 (and the wrong numbers) while the bug is there; 11 once fixed; 2 (not
run) unless the pinned release is what imports (findings/pinned.py).
"""
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402

BODY = "x" * 40_000  # a write_file call with a 40 KB body
tokenizer = lambda text: [0] * ((len(text.encode()) + 3) // 4)  # 4 bytes a token, like the default's scale

call = ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="call_1", tool_name="write_file",
                                                            tool_kwargs={"path": "notes.md", "content": BODY})])
result = ChatMessage(role="tool", blocks=[TextBlock(text="ok")], additional_kwargs={"tool_call_id": "call_1"})


async def main():
    memory = Memory.from_defaults(session_id="repro", token_limit=1_000, tokenizer_fn=tokenizer)
    for m in [ChatMessage(role="user", content="Write the notes."), call, result]:
        await memory.aput(m)
    history = await memory.aget()
    estimate = memory._estimate_token_count(call)
    kwargs_tokens = len(tokenizer(json.dumps(call.blocks[0].tool_kwargs)))
    sent = sum(len(tokenizer(json.dumps(b.tool_kwargs) if isinstance(b, ToolCallBlock) else getattr(b, "text", "")))
               for m in history for b in m.blocks)
    print(f"estimate of the tool-call message: {estimate} tokens; its arguments alone: {kwargs_tokens} tokens")
    print(f"token_limit 1000 (flush past {memory.token_limit * memory.chat_history_token_ratio:.0f}); "
          f"the memory hands the LLM {len(history)} messages, about {sent} tokens")
    return estimate < kwargs_tokens


if __name__ == "__main__":
    verdict(asyncio.run(main()))
