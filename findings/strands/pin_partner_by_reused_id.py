"""Strands' sliding window keeps a toolResult whose toolUse it removed, when a tool id is reused.

Standalone: only strands-agents. Pinning protects a message's "tool-pair
partner": is_pinned(messages, i) is true when an *adjacent* message is pinned
and shares a toolUseId with message i. Models that number their calls per
turn (call_0 on every turn, as SPEC §1.2 notes; Strands' LlamaCppModel keeps
whatever id the server sends) make an old toolResult share its id with the
next, pinned, toolUse — so the old result is protected while its own toolUse is
trimmed: the history starts with an orphan toolResult, which Bedrock,
Anthropic and OpenAI reject.

Exit 1 (and the messages) while the bug is there; exit 0 once fixed.
"""
from unittest.mock import MagicMock

from strands.agent.conversation_manager import SlidingWindowConversationManager

def use(i, name):
    return {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_0", "name": name, "input": {}}}]}

def result(text):
    return {"role": "user", "content": [{"toolResult": {"toolUseId": "call_0", "status": "success", "content": [{"text": text}]}}]}

agent = MagicMock()
agent.messages = [
    {"role": "user", "content": [{"text": "Review PR 412."}]},
    use(1, "list_dir"), result("src/ tests/"),
    dict(use(2, "read_file"), metadata={"custom": {"pinned": True}}), result("fn main() {}"),
    use(3, "run_tests"), result("12 passed"),
]
manager = SlidingWindowConversationManager(window_size=4)
manager.apply_management(agent)
shape = [(m["role"], next(iter(m["content"][0])), m.get("metadata", {}).get("custom", {}).get("pinned", False))
         for m in agent.messages]
print("after apply_management(window_size=4):", shape)
first_use = next((i for i, m in enumerate(agent.messages) if "toolUse" in m["content"][0]), len(agent.messages))
first_result = next((i for i, m in enumerate(agent.messages) if "toolResult" in m["content"][0]), len(agent.messages))
orphan = first_result < first_use
if orphan:
    print(f"message {first_result} is a toolResult before any toolUse: its call was trimmed")
raise SystemExit(1 if orphan else 0)
