#!/usr/bin/env python3
"""An estimator subject that is right and slow, for compare-estimators' gate.

Usage: slow_estimator.py SECONDS

It answers `estimate` as adr-0098 does (tokens of content plus tokens of the
compact JSON of toolCalls, per message), after sleeping SECONDS on every
request; `compact` returns the history unchanged.
"""
import json
import sys
import time

delay = float(sys.argv[1])


def tokens(text, bpt):
    return -(-len(text.encode("utf-8")) // bpt)


def message_tokens(m, bpt):
    content = m.get("content") if isinstance(m.get("content"), str) else ""
    n = tokens(content, bpt)
    if m.get("role") == "assistant" and m.get("toolCalls"):
        n += tokens(json.dumps(m["toolCalls"], ensure_ascii=False, separators=(",", ":")), bpt)
    return n


for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "hello":
        reply = {"op": "hello", "protocol": 1, "name": "slow-estimator", "version": str(delay),
                 "ops": ["compact", "estimate"], "format": "engine"}
    elif op == "estimate":
        time.sleep(delay)
        bpt = (req.get("config") or {}).get("bytesPerToken", 4)
        per = [message_tokens(m, bpt) for m in req["messages"]]
        reply = {"id": rid, "tokens": sum(per), "perMessage": per}
    else:
        reply = {"id": rid, "messages": req["messages"]}
    print(json.dumps(reply, ensure_ascii=False), flush=True)
