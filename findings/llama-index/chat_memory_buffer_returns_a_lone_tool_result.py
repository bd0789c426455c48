"""LlamaIndex's ChatMemoryBuffer hands the LLM a tool result without its call again.

Standalone: only llama-index-core. `ChatMemoryBuffer.get()` is the memory
every LlamaIndex chat engine and agent uses by default. Since 0.11.14 (#16214,
the fix of #13715) it never let the history it returns start with a TOOL
message: it dropped messages until a user message led, and returned nothing
when none fitted. Since 0.14.15 (#20729, "ensure at least one message ...
is returned") it returns the last message when no user message can lead
what fits — in a ToolLoop, a tool result whose call was cut, whether the
result is over the limit or fits it by itself; since 0.14.16 (#20914, a
bound on its inner loop) the second case takes its main path, with the
same answer. 0.14.14 returns [] for both histories below (an empty
history: the ToolLoop's request is lost either way).

OpenAI and Anthropic reject either history ("messages with role 'tool' must
be a response to a preceeding message with 'tool_calls'" — #13715's error).

Exit 10 (and the histories) while the bug is there; 11 once fixed; 2 (not run)
unless the pinned release is what imports (findings/pinned.py).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from llama_index.core.base.llms.types import ChatMessage  # noqa: E402
from llama_index.core.memory import ChatMemoryBuffer  # noqa: E402

tokenizer = lambda text: [0] * ((len(text.encode()) + 3) // 4)


def tool_loop(iterations, output):
    """One user request, then `iterations` calls, each answered."""
    history = [ChatMessage(role="user", content="The build fails; find out why and fix it.")]
    for i in range(iterations):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        history.append(ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [call]}))
        history.append(ChatMessage(role="tool", content=output, additional_kwargs={"tool_call_id": f"call_{i}"}))
    return history


def orphan(name, history, token_limit):
    memory = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=token_limit,
                                            tokenizer_fn=tokenizer)
    got = memory.get()
    print(f"{name}: get() returns", [(m.role.value, m.additional_kwargs.get("tool_call_id")) for m in got])
    return bool(got) and got[0].role.value == "tool"


if __name__ == "__main__":
    found = [
        # An ordinary ToolLoop past its limit (about 430 tokens for 200):
        # the one user message is cut, so nothing can lead what fits.
        orphan("a ToolLoop of five iterations", tool_loop(5, "ok " * 60), token_limit=200),
        # Nothing fits, not even the last result.
        orphan("a result over the limit", tool_loop(1, "E" * 1000), token_limit=50),
    ]
    if any(found):
        print("message 0 is a tool result whose call is not in the history")
    verdict(any(found))
