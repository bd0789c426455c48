#!/usr/bin/env python3
"""A compactor written before images, for ctxgate's content-parts tests.

Usage: text_content.py [SAYS]

It treats every message's content as a string (`content.encode()`), so a
history holding content parts (a list) makes it crash with
`'list' object has no attribute 'encode'`. SAYS sets its hello's
`contentParts`: `false` (it takes text only: ctxgate sends it none),
`true` (it claims to take them), or left out: the hello does not say.
It claims only tool-pairing and answers every history unchanged.
"""
import json
import sys

hello = {"op": "hello", "protocol": 1, "name": "text-content", "version": "0",
         "ops": ["compact"], "invariants": ["tool-pairing"]}
if len(sys.argv) > 1:
    hello["contentParts"] = {"true": True, "false": False}[sys.argv[1]]
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "hello":
        print(json.dumps(hello), flush=True)
        continue
    size = sum(len(m["content"].encode()) for m in req["messages"] if m.get("content") is not None)
    print(json.dumps({"id": req["id"], "messages": req["messages"]}), flush=True)
