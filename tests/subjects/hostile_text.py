#!/usr/bin/env python3
"""A subject whose every word is hostile text, for tests/hostile_text.rs.

Its hello `name` and `version`, its answers, its error answers and its
stderr carry terminal escapes (ESC, BEL, CR, C1, a bidi override), lines
that would be GitHub workflow commands (`::error::…`, `##[error]`), a
Markdown heading, HTML (`<details open>`), a link and table pipes. Which
it does depends on the history alone (its length), so that shrinking
keeps what it found:

  length % 4 == 0   writes hostile lines on stderr and exits (a crash)
  length % 4 == 1   answers an error of a hostile kind with a hostile message
  otherwise         answers the history with its last message's content
                    replaced by hostile text (an invariant fails)
"""
import json
import sys

HOSTILE = (
    "EVILMARK\x1b]0;pwned\x07\x1b[2J\r\n::error title=forged::all invariants held\n"
    "## FORGED heading\n<details open><summary>x</summary>[click](http://evil.example) "
    "| cell | `code` ```\n~~~\n\u202egnp.exe \u009b2J ##[error]legacy ##vso[task.complete]"
)

for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "hello":
        print(json.dumps({"op": "hello", "protocol": 1, "name": HOSTILE,
                          "version": HOSTILE, "ops": ["compact"]}), flush=True)
        continue
    messages = req["messages"]
    if len(messages) % 4 == 0:
        sys.stderr.write(HOSTILE + "\n" + HOSTILE + "\n")
        sys.stderr.flush()
        sys.exit(3)
    if len(messages) % 4 == 1:
        answer = {"id": req["id"], "error": {"kind": HOSTILE, "message": HOSTILE}}
    else:
        out = [dict(m) for m in messages]
        if out:
            out[-1]["content"] = HOSTILE
        answer = {"id": req["id"], "messages": out}
    print(json.dumps(answer), flush=True)
