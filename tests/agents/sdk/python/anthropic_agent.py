#!/usr/bin/env python3
"""A tool-loop agent on the official `anthropic` Python SDK, for ctxgate's
test that every answer of `ctxgate agent` reads without error (SPEC §9).

    anthropic_agent.py [--stream]

The client takes its base URL and key from ANTHROPIC_BASE_URL and
ANTHROPIC_API_KEY, as an agent shipped on the SDK does. The agent
advertises one tool, `read_file(path)`, loops until the model answers
without a `tool_use`, prints that answer and exits 0. Not streamed, it
calls `messages.create`; streamed, the SDK's helper `messages.stream` …
`get_final_message()`, which accumulates the events and checks their
order. Every answer, raw event and final message is then validated against
the SDK's own types (wire.py). Any error: printed, exit 1.
"""

import argparse
import sys

import anthropic
from anthropic.types import Message, RawMessageStreamEvent

import wire

RAW_EVENTS = wire.by_type(RawMessageStreamEvent)


def loop(client, stream):
    tools = [{"name": "read_file", "description": wire.TOOL_DESCRIPTION,
              "input_schema": wire.TOOL_SCHEMA}]
    messages = [{"role": "user", "content": wire.task()}]
    for _ in range(wire.MAX_STEPS):
        args = dict(model=wire.MODEL, max_tokens=1024, system=wire.SYSTEM,
                    messages=messages, tools=tools)
        if stream:
            with client.messages.stream(**args) as s:
                for event in s:
                    # The helper also yields events of its own (`text`,
                    # `input_json`); the raw ones are validated.
                    if event.type in RAW_EVENTS:
                        wire.strict_event(RAW_EVENTS, event)
                message = s.get_final_message()
        else:
            message = client.messages.create(**args)
        wire.strict(Message, message, "the message")
        calls = [b for b in message.content if b.type == "tool_use"]
        wire.expect(message.stop_reason == ("tool_use" if calls else "end_turn"),
                    f"stop_reason {message.stop_reason!r} with {len(calls)} tool_use block(s)")
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text")
        # As Anthropic's tool-use guide does: the content goes back as read.
        messages.append({"role": "assistant", "content": message.content})
        results = []
        for c in calls:
            wire.expect(c.name == "read_file", f"a call of {c.name!r}")
            results.append({"type": "tool_result", "tool_use_id": c.id,
                            "content": wire.read_file(c.input)})
        messages.append({"role": "user", "content": results})
    raise wire.WireError("no final answer")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stream", action="store_true")
    a = p.parse_args()

    def run():
        # No retries: an answer the SDK cannot read must show, not be retried.
        return loop(anthropic.Anthropic(max_retries=0, timeout=60), a.stream)

    return wire.main(run)


if __name__ == "__main__":
    sys.exit(main())
