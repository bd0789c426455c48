"""What the Python SDK agents share: the task, the one tool, and a strict
reading of every answer.

The official Python SDKs build their response objects without validating
them (pydantic's `construct`), so a field of the wrong type or a missing
required one reads "without error" and breaks an agent later. `strict`
validates an object, as received, against the SDK's own type: what the
provider promises is what ctxgate must send.
"""

import json
import os
import sys

from pydantic import TypeAdapter, ValidationError

MODEL = os.environ.get("CTXGATE_SDK_MODEL", "ctxgate-model")
SYSTEM = ("You are a careful coding agent. Read the files the task needs with "
          "read_file, then answer.")
TOOL_DESCRIPTION = "Read a text file and return its content."
TOOL_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}},
               "required": ["path"], "additionalProperties": False}
MAX_STEPS = 200


class WireError(Exception):
    """An answer the SDK read, but not as its own types say it must be."""


def task():
    return os.environ["CTXGATE_AGENT_PROMPT"]


def read_file(arguments):
    """The tool: `arguments` is the call's input, a dict or its JSON text."""
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    path = arguments["path"]
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except OSError as e:
        return f"error: {e}"


_adapters = {}


def strict(kind, value, what):
    """Validate `value` (an SDK object, as it was read) against `kind`."""
    adapter = _adapters.get(kind)
    if adapter is None:
        adapter = _adapters[kind] = TypeAdapter(kind)
    raw = value.to_dict() if hasattr(value, "to_dict") else value
    try:
        adapter.validate_python(raw)
    except ValidationError as e:
        raise WireError(f"{what} does not match the SDK's type {getattr(kind, '__name__', kind)}:\n"
                        f"{e}\nreceived: {json.dumps(raw)[:2000]}") from e


def by_type(union):
    """The members of a union of event types (`Annotated[Union[...], …]`)
    by their `type` literal: an event is validated against its own class,
    not the union (whose errors would name every member)."""
    from typing import get_args
    while get_args(union) and not hasattr(union, "model_fields"):
        members = get_args(union)
        if all(hasattr(m, "model_fields") for m in members):
            return {get_args(m.model_fields["type"].annotation)[0]: m for m in members}
        union = members[0]
    raise TypeError(f"not a union of event types: {union}")


def strict_event(classes, event):
    kind = classes.get(event.type)
    if kind is None:
        raise WireError(f"an event of type {event.type!r}, which the SDK does not know")
    strict(kind, event, f"a {event.type} event")


def expect(ok, why):
    if not ok:
        raise WireError(why)


def main(run):
    """Run the agent loop `run()`; print the final answer, exit 0; any
    SDK error (or a strict-reading failure) is printed, exit 1."""
    try:
        answer = run()
    except Exception as e:  # every SDK error is a failure of the wire
        print(f"sdk agent: {type(e).__module__}.{type(e).__name__}: {e}", file=sys.stderr)
        print(f"sdk agent error: {type(e).__name__}: {e}")
        return 1
    print(answer)
    return 0
