#!/usr/bin/env python3
"""A tool-loop agent on the official `openai` Python SDK, for ctxgate's
test that every answer of `ctxgate agent` reads without error (SPEC §9).

    openai_agent.py --api chat|responses [--stream] [--chain]

The client takes its base URL and key from OPENAI_BASE_URL and
OPENAI_API_KEY, as an agent shipped on the SDK does. The agent advertises
one tool, `read_file(path)`, loops until the model answers without a call,
prints that answer and exits 0. Not streamed, it calls `create`; streamed,
the SDK's own helpers (`chat.completions.stream` …
`get_final_completion()`, `responses.stream` … `get_final_response()`),
which accumulate the events and check their order. Every answer, event
and final object is then validated against the SDK's own types (wire.py).
`--chain` (Responses) continues with `previous_response_id` instead of
sending the whole input again. Any error: printed, exit 1.
"""

import argparse
import sys

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

import wire

RESPONSE_EVENTS = wire.by_type(ResponseStreamEvent)


def chat(client, stream):
    tools = [{"type": "function", "function": {
        "name": "read_file", "description": wire.TOOL_DESCRIPTION,
        "parameters": wire.TOOL_SCHEMA}}]
    messages = [{"role": "system", "content": wire.SYSTEM},
                {"role": "user", "content": wire.task()}]
    for _ in range(wire.MAX_STEPS):
        if stream:
            with client.chat.completions.stream(
                    model=wire.MODEL, messages=messages, tools=tools,
                    stream_options={"include_usage": True}) as s:
                for event in s:
                    if event.type == "chunk":
                        wire.strict(ChatCompletionChunk, event.chunk, "a chat.completion.chunk")
                completion = s.get_final_completion()
            wire.expect(completion.usage is not None,
                        "include_usage was asked, but no chunk carried usage")
        else:
            completion = client.chat.completions.create(
                model=wire.MODEL, messages=messages, tools=tools)
        wire.strict(ChatCompletion, completion, "the chat.completion")
        choice = completion.choices[0]
        message = choice.message
        calls = message.tool_calls or []
        wire.expect(choice.finish_reason == ("tool_calls" if calls else "stop"),
                    f"finish_reason {choice.finish_reason!r} with {len(calls)} tool call(s)")
        if not calls:
            return message.content
        messages.append({"role": "assistant", "content": message.content,
                         "tool_calls": [{"id": c.id, "type": "function",
                                         "function": {"name": c.function.name,
                                                      "arguments": c.function.arguments}}
                                        for c in calls]})
        for c in calls:
            wire.expect(c.function.name == "read_file", f"a call of {c.function.name!r}")
            messages.append({"role": "tool", "tool_call_id": c.id,
                             "content": wire.read_file(c.function.arguments)})
    raise wire.WireError("no final answer")


def responses(client, stream, chain):
    tools = [{"type": "function", "name": "read_file", "description": wire.TOOL_DESCRIPTION,
              "parameters": wire.TOOL_SCHEMA, "strict": True}]
    items = [{"role": "user", "content": wire.task()}]
    previous = None
    for _ in range(wire.MAX_STEPS):
        args = dict(model=wire.MODEL, instructions=wire.SYSTEM, input=items, tools=tools)
        if chain and previous is not None:
            args["previous_response_id"] = previous
        if stream:
            with client.responses.stream(**args) as s:
                for event in s:
                    wire.strict_event(RESPONSE_EVENTS, event)
                response = s.get_final_response()
        else:
            response = client.responses.create(**args)
        wire.strict(Response, response, "the response")
        wire.expect(response.status == "completed", f"status {response.status!r}")
        calls = [o for o in response.output if o.type == "function_call"]
        if not calls:
            return response.output_text
        previous = response.id
        # As OpenAI's function-calling guide does: the output items go back
        # into the input as the SDK read them, then one output per call.
        items = [] if chain else items + list(response.output)
        for c in calls:
            wire.expect(c.name == "read_file", f"a call of {c.name!r}")
            items.append({"type": "function_call_output", "call_id": c.call_id,
                          "output": wire.read_file(c.arguments)})
    raise wire.WireError("no final answer")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", choices=["chat", "responses"], required=True)
    p.add_argument("--stream", action="store_true")
    p.add_argument("--chain", action="store_true")
    a = p.parse_args()

    def run():
        # No retries: an answer the SDK cannot read must show, not be retried.
        client = openai.OpenAI(max_retries=0, timeout=60)
        if a.api == "chat":
            return chat(client, a.stream)
        return responses(client, a.stream, a.chain)

    return wire.main(run)


if __name__ == "__main__":
    sys.exit(main())
