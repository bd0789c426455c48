"""langmem's summarize_messages cuts between the results of parallel tool calls.

Standalone: only langmem (and the langchain-core it runs on). The cut falls
where the running token count reaches max_tokens_before_summary; langmem only
pulls the tool results in when the *last* summarised message is the AIMessage
with tool_calls. When the count crosses the limit on the first ToolMessage,
that result is summarised and the next one is kept: a tool result whose call
has been summarised away (reported as langchain-ai/langmem#126, open).

Exit 10 (and the kept messages) while the bug is there; 11 once fixed; 2 (not
run) unless the pinned release is what imports (findings/pinned.py).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langmem.short_term import summarize_messages  # noqa: E402

messages = [
    HumanMessage(content="Read both configuration files.", id="1"),
    AIMessage(content="", id="2", tool_calls=[
        {"id": "call_a", "name": "read_file", "args": {"path": "a.toml"}, "type": "tool_call"},
        {"id": "call_b", "name": "read_file", "args": {"path": "b.toml"}, "type": "tool_call"}]),
    ToolMessage(content="a" * 2000, tool_call_id="call_a", id="3"),
    ToolMessage(content="b" * 200, tool_call_id="call_b", id="4"),
    AIMessage(content="Both files set the limit to 100 KB.", id="5"),
]

result = summarize_messages(messages, running_summary=None, max_tokens=300, max_summary_tokens=64,
                            model=FakeListChatModel(responses=["The user asked for two files; the agent read them."]))
kept = [(type(m).__name__, getattr(m, "tool_call_id", None)) for m in result.messages]
print("summarize_messages returns:", kept)
calls = {c["id"] for m in result.messages if isinstance(m, AIMessage) for c in m.tool_calls}
orphans = [m.tool_call_id for m in result.messages if isinstance(m, ToolMessage) and m.tool_call_id not in calls]
if orphans:
    print("tool results without their call:", orphans)
verdict(orphans)
