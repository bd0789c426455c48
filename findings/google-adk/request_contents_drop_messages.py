"""What Google ADK's request contents leave out of a session, that ctxgate's invariants flag.

Standalone: only google-adk. ADK builds each LLM request from the session's
events (flows/llm_flows/context/_contents._get_contents). Three things a
compactor is not expected to do happen there, with nothing due:

1. an event whose text is empty ("" — an assistant turn that ended with no
   text, an empty user message) is left out (_contains_empty_content):
   no-premature-compaction;
2. a trailing function call still awaiting its response (a long-running or
   approval-gated tool) is left out: verbatim-suffix;
3. of parallel calls only partly answered, the unanswered one is dropped
   from the model content, which then differs from the recorded one.

Gemini rejects empty parts and calls without responses, so these are
deliberate: docs/findings.md classifies them outside the library's contract.
Exit 1 while all three still show; exit 0 if any changed.
"""
import asyncio

from google.adk.events import Event
from google.adk.flows.llm_flows.context import _contents
from google.adk.sessions import InMemorySessionService
from google.genai import types


def ev(author, role, parts, t):
    return Event(author=author, invocation_id="inv", timestamp=t, content=types.Content(role=role, parts=parts))


def call(cid, name):
    return types.Part(function_call=types.FunctionCall(id=cid, name=name, args={}))


def response(cid, name):
    return types.Part(function_response=types.FunctionResponse(id=cid, name=name, response={"result": "ok"}))


async def contents(events):
    service = InMemorySessionService()
    session = await service.create_session(app_name="repro", user_id="u")
    for e in events:
        await service.append_event(session=session, event=e)
    return _contents._get_contents(None, session.events, "agent")


def shape(cs):
    return [(c.role, [("text" if p.text is not None else "call" if p.function_call else "response") for p in c.parts]) for c in cs]


seen = 0
evs = [ev("user", "user", [types.Part(text="Review PR 412")], 1.0), ev("agent", "model", [types.Part(text="")], 2.0),
       ev("user", "user", [types.Part(text="go on")], 3.0)]
got = asyncio.run(contents(evs))
print("1. user, model '', user ->", shape(got))
seen += len(got) == 2

evs = [ev("user", "user", [types.Part(text="Deploy it")], 1.0), ev("agent", "model", [call("c1", "deploy")], 2.0)]
got = asyncio.run(contents(evs))
print("2. user, model call (pending) ->", shape(got))
seen += len(got) == 1

evs = [ev("user", "user", [types.Part(text="Check both")], 1.0),
       ev("agent", "model", [call("c1", "http_request"), call("c2", "query_db")], 2.0),
       ev("agent", "user", [response("c1", "http_request")], 3.0)]
got = asyncio.run(contents(evs))
print("3. two calls, one answered ->", shape(got))
seen += len(got) >= 2 and len(got[1].parts) == 1

print(f"{seen} of 3 behaviours shown")
raise SystemExit(1 if seen == 3 else 0)
