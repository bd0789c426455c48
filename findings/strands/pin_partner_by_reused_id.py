"""Strands' sliding window keeps a toolResult whose toolUse it removed, when a tool id is reused.

Standalone: only strands-agents. Pinning protects a message's "tool-pair
partner": is_pinned(messages, i) is true when an *adjacent* message is pinned
and shares a toolUseId with message i. Models that number their calls per
turn (call_0 on every turn, as SPEC §1.2 notes; Strands' LlamaCppModel keeps
whatever id the server sends) make an old toolResult share its id with the
next, pinned, toolUse — so the old result is protected while its own toolUse is
trimmed: the history starts with an orphan toolResult, which Bedrock,
Anthropic and OpenAI reject.

The summarizing manager shares the pin logic (partition_pinned keeps the
"protected" old toolResult and summarises its toolUse): shown second, with
the summariser model replaced by a fixed answer.

Exit 10 (and the messages) while the bug is there; 11 once fixed; 2 (not run)
unless the pinned release is what imports (findings/pinned.py).
"""
from unittest.mock import MagicMock

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager  # noqa: E402

def use(i, name):
    return {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_0", "name": name, "input": {}}}]}

def result(text):
    return {"role": "user", "content": [{"toolResult": {"toolUseId": "call_0", "status": "success", "content": [{"text": text}]}}]}

def history():
    return [
        {"role": "user", "content": [{"text": "Review PR 412."}]},
        use(1, "list_dir"), result("src/ tests/"),
        dict(use(2, "read_file"), metadata={"custom": {"pinned": True}}), result("fn main() {}"),
        use(3, "run_tests"), result("12 passed"),
    ]


def orphan(messages, label):
    shape = [(m["role"], next(iter(m["content"][0])), m.get("metadata", {}).get("custom", {}).get("pinned", False))
             for m in messages]
    print(f"{label}:", shape)
    uses = [i for i, m in enumerate(messages) if any("toolUse" in b for b in m["content"])]
    results = [i for i, m in enumerate(messages) if any("toolResult" in b for b in m["content"])]
    bad = bool(results) and (not uses or results[0] < uses[0])
    if bad:
        print(f"  message {results[0]} is a toolResult before any toolUse: its call was removed")
    return bad


agent = MagicMock()
agent.messages = history()
SlidingWindowConversationManager(window_size=4).apply_management(agent)
sliding = orphan(agent.messages, "sliding window, apply_management(window_size=4)")


class FixedSummary(SummarizingConversationManager):
    def _generate_summary(self, messages, agent):  # the summariser model, replaced
        return {"role": "user", "content": [{"text": "Summary: the agent listed the repository."}]}


agent = MagicMock()
agent.messages = history()
FixedSummary(summary_ratio=0.3, preserve_recent_messages=2).reduce_context(agent)
summarizing = orphan(agent.messages, "summarizing, reduce_context()")
verdict(sliding and summarizing)
