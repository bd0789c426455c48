"""What langmem's summarize_messages does that ctxgate's invariants flag, but its docs allow.

Standalone: only langmem (and langchain-core), a fake chat model for the
summary. Each block prints what langmem returns; none of these is a bug of
langmem's contract — docs/findings.md classifies them "outside the
library's contract" (or, for the last, the adapter's stateless use):

1. no-premature-compaction: its default counter adds 3 tokens per message and
   counts role names and repr() of calls, so it summarises a history that is
   under max_tokens by its bytes (ctxgate's yardstick).
2. verbatim-suffix: when the newest tool iteration does not fit beside the
   summary budget, the cut moves past it and the newest call and its result
   are summarised away too — the model gets only the summary (langmem
   promises a summary of "all messages within max_tokens_before_summary",
   not to keep the newest).
3. pinned-kept: only messages[0] is "the system message"; a second leading
   system message (repository rules) is summarised.

Exit 10 while all three still show; 11 if any changed (then look again); 2
(not run) unless the pinned release is what imports (findings/pinned.py).
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langmem.short_term import summarize_messages  # noqa: E402


def run(messages, max_tokens, summary_tokens=16):
    return summarize_messages(messages, running_summary=None, max_tokens=max_tokens, max_summary_tokens=summary_tokens,
                              model=FakeListChatModel(responses=["Earlier: files were read."])).messages


def shape(ms):
    return [f"{type(m).__name__[:-7]}:{(m.content if isinstance(m.content, str) else '')[:24]!r}" for m in ms]


def nbytes(ms):  # ctxgate's yardstick: bytes of content and of the calls, 4 a token
    return sum(math.ceil(len(str(m.content).encode()) / 4) for m in ms)


seen = 0
# 1. summarised although under max_tokens by bytes
ms = [HumanMessage(content="hi", id=str(i)) if i % 2 == 0 else AIMessage(content="ok", id=str(i)) for i in range(12)]
out = run(ms, max_tokens=40)
print(f"1. {len(ms)} short messages, {nbytes(ms)} tokens by bytes, max_tokens 40 -> {len(out)} messages: {shape(out)[:2]}")
seen += len(out) != len(ms)

# 2. the newest tool result is summarised away; a too-large one leaves the output over max_tokens
ms = [HumanMessage(content="read it", id="0"),
      AIMessage(content="", id="1", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "a"}, "type": "tool_call"}]),
      ToolMessage(content="x" * 400, tool_call_id="c1", id="2")]
out = run(ms, max_tokens=60)
print(f"2a. newest result of 100 tokens, max_tokens 60 -> {shape(out)}")
seen += not any(isinstance(m, ToolMessage) for m in out)

# 3. the second system message is summarised
ms = [SystemMessage(content="You are the QA gate.", id="s0"),
      SystemMessage(content="Repository rules: never merge on red.", id="s1")] + \
     [HumanMessage(content="check " * 20, id=f"h{i}") for i in range(6)]
out = run(ms, max_tokens=120)
print(f"3. two system messages -> {shape(out)[:3]}")
seen += not any(m.content == "Repository rules: never merge on red." for m in out)

print(f"{seen} of 3 behaviours shown")
verdict(seen == 3)
