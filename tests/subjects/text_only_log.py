#!/usr/bin/env python3
"""A text-only subject that logs what it is sent, for ctxgate's `gen
--text-only` and line-separator tests.

Usage: text_only_log.py LOGFILE

Its hello says "contentParts": false. It reads its input as a user's
adapter might: each request line decoded and split with str.splitlines(),
which splits at U+0085, U+2028 and U+2029 too; a request that is not one
line that way makes it exit 3, naming the character (ctxgate must escape
them). Each compact request's {"config", "messages"} is logged, one JSON
line each (ASCII). It claims only tool-pairing and answers every history
unchanged, which holds it.
"""
import json
import sys

log = open(sys.argv[1], "a")
hello = {"op": "hello", "protocol": 1, "name": "text-only-log", "version": "0",
         "ops": ["compact"], "invariants": ["tool-pairing"], "contentParts": False}
for raw in sys.stdin.buffer:
    text = raw.decode("utf-8")
    lines = text.splitlines()
    if len(lines) != 1:
        seps = sorted({hex(ord(c)) for c in text if c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})
        sys.stderr.write(f"text_only_log: a request split into {len(lines)} lines at {seps}\n")
        sys.exit(3)
    req = json.loads(lines[0])
    if req.get("op") == "hello":
        print(json.dumps(hello), flush=True)
        continue
    log.write(json.dumps({"config": req["config"], "messages": req["messages"]}) + "\n")
    log.flush()
    print(json.dumps({"id": req["id"], "messages": req["messages"]}, ensure_ascii=False), flush=True)
