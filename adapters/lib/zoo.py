"""What the zoo adapters share: a lossless mapping discipline and its round-trip test.

A library's message type cannot carry everything an engine message holds:
`content: null` and an absent `content` both become "" in most libraries,
extra fields (`annotations`, `x_trace_id`, a call's `approval`) have no
place, `pinned: false` is nothing to a library without pins. An adapter
that drops them invents bugs (ctxgate would see a kept message come back
changed). So every zoo adapter converts in two halves:

- `core(m)`: what the library carries (role, text, calls as (id, name,
  arguments), the result's call id) — the adapter builds library objects
  from this alone;
- `side(m)`: what it cannot, kept by the adapter *beside* the library's
  objects (keyed by the library's own message id where it has one, or by
  position), and put back by `restore` onto whatever the library returns
  for that message.

`restore` rebuilds a message from what the library returned, never from
the input: a library that changed a message's text, dropped a call or a
result, shows as changed. The side only fills in what the library cannot
hold; a message the library made itself (a summary) has no side.

`roundtrip_main(to_lib, back)` is the round-trip test every zoo adapter
runs (`adapter.py --roundtrip < cases.jsonl`, cases from `ctxgate gen`):
engine history → library types (through the library's own store where it
has one) → back must be the same JSON value, for every generated history
the adapter accepts; a history it refuses (a shape the library has no
representation for) is counted, with the reason, never silently passed.
`main(roundtrip, library, compact, ...)` is every adapter's entry point:
that test under `--roundtrip`, the protocol otherwise.
"""

import json
import sys

from ctxgate_subject import InvalidInput

CORE_KEYS = ("role", "content", "toolCalls", "toolCallId")
CALL_KEYS = ("id", "name", "arguments")


class Refuse(InvalidInput):
    """The library has no representation for this history: answered `invalid_input`."""


def text_of(m):
    c = m.get("content")
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    raise Refuse("content parts are not mapped by this adapter (text content only)")


def calls_of(m):
    """[(id, name, arguments)] of an assistant message (arguments as the JSON value they are)."""
    return [(c["id"], c["name"], c.get("arguments")) for c in (m.get("toolCalls") or [])]


def side(m):
    """What a library cannot carry of engine message `m`."""
    s = {"extra": {k: v for k, v in m.items() if k not in CORE_KEYS}}
    if "content" not in m:
        s["content"] = "absent"
    elif m["content"] is None:
        s["content"] = "null"
    else:
        s["content"] = "text"
    if "toolCalls" in m:
        s["toolCalls"] = [{k: v for k, v in c.items() if k not in CALL_KEYS} for c in m["toolCalls"]]
        s["emptyCalls"] = m["toolCalls"] == []
    return s


def restore(role, text, calls=(), tool_call_id=None, s=None):
    """An engine message from what the library returned, with side `s` put back.

    `text` is the library's text ("" for none), `calls` its [(id, name,
    arguments)], `tool_call_id` its result's call id. With no side (a
    message the library made), the plain message."""
    out = dict(s["extra"]) if s else {}
    out["role"] = role
    kind = s["content"] if s else "text"
    if text == "" and kind == "absent":
        pass
    elif text == "" and kind == "null":
        out["content"] = None
    else:
        out["content"] = text
    calls = list(calls)
    if calls:
        extras = (s or {}).get("toolCalls") or []
        out["toolCalls"] = [
            {**(extras[i] if i < len(extras) else {}), "id": cid, "name": name, "arguments": args}
            for i, (cid, name, args) in enumerate(calls)
        ]
    elif s and s.get("emptyCalls"):
        out["toolCalls"] = []
    if tool_call_id is not None:
        out["toolCallId"] = tool_call_id
    return out


def head_len(messages):
    """The leading run of system messages (SPEC §4's head)."""
    n = 0
    while n < len(messages) and messages[n].get("role") == "system":
        n += 1
    return n


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def roundtrip_main(roundtrip, name):
    """Run the round-trip test over `ctxgate gen` cases on stdin.

    `roundtrip(cfg, messages)` maps to the library's types (and through its
    store) and back, without compacting. Prints one summary line; exit 1 on
    the first history that does not come back as the same JSON value."""
    from ctxgate_subject import DEFAULTS

    cases = accepted = messages = 0
    refused = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        cases += 1
        cfg = {**DEFAULTS, **case.get("config", {})}
        try:
            back = roundtrip(cfg, case["messages"])
        except Refuse as e:
            refused[str(e)] = refused.get(str(e), 0) + 1
            continue
        if back != case["messages"]:
            print(f"roundtrip {name}: case {cases} is not lossless", file=sys.stderr)
            for i, (a, b) in enumerate(zip(case["messages"], back)):
                if a != b:
                    print(f"  message {i}: sent {dumps(a)}\n  came back {dumps(b)}", file=sys.stderr)
                    break
            else:
                print(f"  sent {len(case['messages'])} messages, {len(back)} came back", file=sys.stderr)
            sys.exit(1)
        accepted += 1
        messages += len(case["messages"])
    why = "; ".join(f"{n} {w}" for w, n in sorted(refused.items()))
    print(f"roundtrip {name}: {accepted} of {cases} histories ({messages} messages) came back identical"
          + (f"; refused {sum(refused.values())}: {why}" if refused else ""))
    if accepted == 0:
        sys.exit(1)


def main(roundtrip, library, compact, estimate=None, **hello):
    """A zoo adapter's entry point: `--roundtrip` runs `roundtrip_main` (its
    lines name `library`); otherwise it serves `compact` (and `estimate`)
    with the hello's `hello` fields (`name`, `version`, `invariants`). The
    mappings carry text content only, so the hello says so (SPEC §6:
    `contentParts: false`): the adapter gets no content parts."""
    if sys.argv[1:] == ["--roundtrip"]:
        roundtrip_main(roundtrip, library)
    else:
        from ctxgate_subject import serve

        serve(compact, estimate, content_parts=False, **hello)
