#!/usr/bin/env python3
"""Google ADK's event compaction as a ctxgate subject (protocol v1).

What is under test is ADK's token-threshold compaction of a session's events
and the request contents ADK builds from them, as its LLM flow does before a
model call (the CompactionRequestProcessor, then the contents processor):

    EventsCompactionConfig(token_threshold=<the trigger>,
                           event_retention_size=CTXGATE_ADK_RETAIN (default 2),
                           summarizer=LlmEventSummarizer(llm=<fake>))
    await _run_compaction_for_token_threshold_config(config=…, session=…,
                                                     agent=…, agent_name="agent")
    contents = _contents._get_contents(None, session.events, "agent")

CTXGATE_ADK_PATH=post-invocation runs the Runner's post-invocation path
instead (`_run_compaction_for_token_threshold(app, …)`, which passes
agent_name=""): see findings/google-adk, whose fallback estimate there
renders the agent's own events as another agent's context.

The trigger is given to ADK in its own estimate's units (4 characters a
token): token_threshold = trigger × bytesPerToken / 4. The summariser is
ADK's own LlmEventSummarizer with its model replaced by a deterministic fake that answers one sentence cut to `summaryMaxBytes` (at
least ".": a model does not answer a summary request with nothing). The
trigger is the config's; ADK measures it with its own estimate (the request
contents' characters / 4, JSON of call arguments and responses included;
with no usage metadata recorded, as here, that is what it reads).

Mapping: one Event per message, as ADK records them — a user message is
`Content(role="user", parts=[Part(text)])` by author "user", starting a new
invocation; an assistant message is `Content(role="model")` by the agent,
its text a text part and each call a `FunctionCall(id, name, args)` part;
the results of one iteration are one event of `FunctionResponse(id, name,
response={"result": text})` parts (role "user", by the agent), as ADK's
function-calling flow writes them. The head's system messages are the
agent's instruction (outside the events; they come back as they were); a
later system message has no ADK role and is a user event of its text. The
contents ADK returns are mapped back onto the events they came from (each
content matched, in order, to the next event whose content it equals; one
that matches none — the summary — is new), rebuilt from the parts, the rest
kept beside (adapters/lib/zoo.py).
"""

import asyncio
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from ctxgate_subject import trigger  # noqa: E402
from zoo import Refuse, calls_of, head_len, main, restore, side, text_of  # noqa: E402

import logging  # noqa: E402
logging.disable(logging.CRITICAL)

from importlib.metadata import version  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps._configs import EventsCompactionConfig  # noqa: E402
from google.adk.apps.compaction import _run_compaction_for_token_threshold_config  # noqa: E402
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer  # noqa: E402
from google.adk.events import Event  # noqa: E402
from google.adk.flows.llm_flows.context import _contents  # noqa: E402
from google.adk.models import BaseLlm, LlmResponse  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

VERSION = version("google-adk")
RETAIN = int(os.environ.get("CTXGATE_ADK_RETAIN", "2"))
PATH = os.environ.get("CTXGATE_ADK_PATH", "pre-request")
AGENT = "agent"
SUMMARY = "Summary of the earlier turns: the user asked for a review; the agent read files and ran tools."
CLAIMS = [
    "tool-pairing",            # any provider; and ADK shifts its split "to avoid orphaning retained tool responses"
    "no-premature-compaction", # compaction runs only when the prompt token count "meets or exceeds" token_threshold
    "verbatim-suffix",         # "keeps the last N raw events un-compacted"
    "order-preserved",
    # not claimed: single-bounded-summary (ADK puts no bound on the summary, the model's answer
    # is what it is; summaries piling up would still show as idempotent / order-preserved
    # failures), pinned-kept (no pins), progress and the body invariants (no promise).
    "deterministic",
    "idempotent",
]


class FakeLlm(BaseLlm):
    """A deterministic model: every request is answered with one fixed text."""
    answer: str = SUMMARY

    async def generate_content_async(self, llm_request, stream=False):
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=self.answer)]))


def to_events(messages):
    """(head, events, origin: event index → engine indices)."""
    head = head_len(messages)
    events, origin = [], []
    invocation, names, t = "inv-0", {}, 0.0
    i = head
    while i < len(messages):
        m = messages[i]
        role = m.get("role")
        t += 1.0
        if role == "tool":
            j, parts = i, []
            while j < len(messages) and messages[j].get("role") == "tool":
                cid = messages[j]["toolCallId"]
                parts.append(types.Part(function_response=types.FunctionResponse(
                    id=cid, name=names.get(cid, ""), response={"result": text_of(messages[j])})))
                j += 1
            events.append(Event(author=AGENT, invocation_id=invocation, timestamp=t,
                                content=types.Content(role="user", parts=parts)))
            origin.append(list(range(i, j)))
            i = j
            continue
        text = text_of(m)
        if role in ("user", "system"):
            invocation = f"inv-{i}"
            content = types.Content(role="user", parts=[types.Part(text=text)])
            author = "user"
        elif role == "assistant":
            parts = [types.Part(text=text)] if text or not m.get("toolCalls") else []
            names = {}
            for cid, name, args in calls_of(m):
                if not isinstance(args, dict):
                    raise Refuse("ADK function-call args are an object")
                names[cid] = name
                parts.append(types.Part(function_call=types.FunctionCall(id=cid, name=name, args=args)))
            content = types.Content(role="model", parts=parts)
            author = AGENT
        else:
            raise Refuse(f"unknown role {role!r}")
        events.append(Event(author=author, invocation_id=invocation, timestamp=t, content=content))
        origin.append([i])
        i += 1
    return messages[:head], events, origin


def from_contents(contents, events, origin, messages, sides):
    out, at = [], 0
    for c in contents:
        k = next((k for k in range(at, len(events)) if events[k].content == c), None)
        idx = None
        if k is not None:
            idx, at = origin[k], k + 1
        responses = [p.function_response for p in c.parts or [] if p.function_response]
        if responses:
            for n, r in enumerate(responses):
                s = sides[idx[n]] if idx and n < len(idx) else None
                result = (r.response or {}).get("result", "")
                out.append(restore("tool", result if isinstance(result, str) else str(result), (), r.id, s))
            continue
        text = "".join(p.text for p in c.parts or [] if p.text is not None)
        calls = [(p.function_call.id, p.function_call.name, p.function_call.args or {})
                 for p in c.parts or [] if p.function_call]
        s = sides[idx[0]] if idx else None
        if idx:
            role = messages[idx[0]]["role"]
        else:
            role = "assistant" if c.role == "model" else "user"
        out.append(restore(role, text, calls, None, s))
    return out


async def build(cfg, events, compact_too):
    service = InMemorySessionService()
    session = await service.create_session(app_name="ctxgate", user_id="u")
    for e in events:
        await service.append_event(session=session, event=e.model_copy(deep=True))
    if compact_too:
        # A model never answers a summary request with nothing: at least ".".
        answer = SUMMARY.encode()[: cfg["summaryMaxBytes"]].decode("utf-8", "ignore") or "."
        # ADK estimates 4 characters a token whatever the model's tokenizer: the
        # trigger is given to it in those units (as the Strands adapter does).
        threshold = max(1, trigger(cfg) * cfg["bytesPerToken"] // 4)
        config = EventsCompactionConfig(token_threshold=threshold, event_retention_size=RETAIN,
                                        summarizer=LlmEventSummarizer(llm=FakeLlm(model="fake", answer=answer)))
        await _run_compaction_for_token_threshold_config(
            config=config, session=session, session_service=service,
            agent=LlmAgent(name=AGENT, model=FakeLlm(model="fake")),
            agent_name=AGENT if PATH == "pre-request" else "")
    if not compact_too:
        # The round trip: what the session stored, event by event (ADK's request
        # building, which `compact` goes through, is the library's behaviour).
        return [e.content for e in session.events]
    return _contents._get_contents(None, session.events, AGENT)


def run(cfg, messages, compact_too):
    sides = [side(m) if k >= head_len(messages) else None for k, m in enumerate(messages)]
    head, events, origin = to_events(messages)
    contents = asyncio.run(build(cfg, events, compact_too))
    return head + from_contents(contents, events, origin, messages, sides)


def compact(cfg, messages):
    return run(cfg, messages, True)


def roundtrip(cfg, messages):
    # Through ADK's types and its session store, with no compaction.
    return run(cfg, messages, False)


if __name__ == "__main__":
    main(roundtrip, f"google-adk {VERSION}", compact,
         name="google-adk event compaction", version=VERSION, invariants=CLAIMS)
