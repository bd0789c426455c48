"""langmem, called again on its own output, summarises its own summary.

Standalone: only langmem. When the first call's output is still over
max_tokens by langmem's own counter (its summary message is a second
SystemMessage, which the next call does not treat as "the system message"),
the next call — made, as ctxgate's stateless adapter makes it, without the
RunningSummary that SummarizationNode keeps in graph state — summarises the
summary with what follows it. docs/findings.md: idempotent, classified
outside the library's contract (it expects the RunningSummary back).

Exit 10 (and both outputs) while this is so; 11 if it changed; 2 (not run)
unless the pinned release is what imports (findings/pinned.py).
"""
import os
import sys
from functools import partial

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pinned import library, verdict  # noqa: E402  (findings/pinned.py)

library()  # exit 2, "not run", unless the pinned release is what imports

from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402
from langmem.short_term import summarize_messages  # noqa: E402

counter = partial(count_tokens_approximately, chars_per_token=1)


def run(messages):
    return summarize_messages(messages, running_summary=None, max_tokens=91, max_summary_tokens=45,
                              token_counter=counter,
                              model=FakeListChatModel(responses=["The earlier turns: the user asked for a revie"])).messages


history = [SystemMessage(content="", id="0"),
           HumanMessage(content="lue window not 34% database write. \n\nIf could Liam you may use information so, ceili", id="1"),
           AIMessage(content="", id="2")]
first = run(history)
for i, m in enumerate(first):
    m.id = m.id or f"s{i}"
second = run(first)
show = lambda ms: [f"{type(m).__name__}:{m.content[:30]!r}" for m in ms]
print("first call: ", show(first))
print("second call:", show(second))
verdict(show(first) != show(second))
