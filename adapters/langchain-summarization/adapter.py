#!/usr/bin/env python3
"""LangChain's `SummarizationMiddleware` as a ctxgate subject (protocol v1).

What is under test is the middleware a `create_agent` user adds, run the way
the agent runs it before every model call — `before_model(state)` on the
state's messages — with the config's budget:

    SummarizationMiddleware(model=<a fake chat model that always answers the
                                    same one-line summary>,
                            trigger=("tokens", <the compaction trigger>),
                            keep=("messages", CTXGATE_LC_KEEP or 20),
                            token_counter=count_tokens_approximately(chars_per_token=bytesPerToken))

The model is the only stand-in: the summary's text is not what ctxgate
judges, where the middleware cuts is. Its answer — `RemoveMessage(ALL)`,
the summary message, the preserved messages — is the compacted history:
preserved messages come back as the engine messages they were, the summary
as the message LangChain made (a user message). Messages are converted as in
adapters/langchain/adapter.py. `estimate` answers with the same counter.

CTXGATE_LC_KEEP sets `keep=("messages", N)`: deepagents 0.2 built the
middleware with 6 (and a 170k-token trigger), LangChain's default is 20.
"""

import functools
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
sys.path.insert(0, os.path.join(here, "..", "langchain"))
from ctxgate_subject import serve, trigger  # noqa: E402
from adapter import to_langchain  # noqa: E402  (adapters/langchain/adapter.py)

from importlib.metadata import version  # noqa: E402
from langchain.agents.middleware.summarization import SummarizationMiddleware  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import RemoveMessage  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402

KEEP = int(os.environ.get("CTXGATE_LC_KEEP", "20"))
SUMMARY = "Earlier turns: the agent read files and ran tools."


def counter(cfg):
    return functools.partial(count_tokens_approximately, chars_per_token=cfg["bytesPerToken"])


def middleware(cfg):
    return SummarizationMiddleware(
        model=FakeListChatModel(responses=[SUMMARY]),
        trigger=("tokens", trigger(cfg)),
        keep=("messages", KEEP),
        token_counter=counter(cfg),
    )


def to_engine(lc, messages):
    if lc.id is not None and lc.id.isdigit() and int(lc.id) < len(messages):
        return messages[int(lc.id)]
    role = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}[lc.type]
    content = lc.content if isinstance(lc.content, str) else str(lc.content)
    return {"role": role, "content": content}


def compact(cfg, messages):
    lc = [to_langchain(i, m) for i, m in enumerate(messages)]
    update = middleware(cfg).before_model({"messages": lc}, None)
    if update is None:
        return messages
    out = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
    return [to_engine(m, messages) for m in out]


def estimate(cfg, messages):
    count = counter(cfg)
    lc = [to_langchain(i, m) for i, m in enumerate(messages)]
    return {"tokens": count(lc), "perMessage": [count([m]) for m in lc]}


if __name__ == "__main__":
    serve(compact, estimate, name="langchain SummarizationMiddleware", version=version("langchain"),
          invariants=["tool-pairing", "estimate-covers-tool-calls", "estimate-monotone",
                      "body-under-ceiling", "no-premature-compaction", "progress",
                      "verbatim-suffix", "order-preserved", "pinned-kept",
                      "single-bounded-summary", "deterministic", "idempotent",
                      "session-never-overflows"],
          # text content only (SPEC §6): the mapping gets no content parts
          content_parts=False)
