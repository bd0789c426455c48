#!/usr/bin/env python3
"""A subject that is deterministic only half the time, for ctxgate's tests.

Usage: coinflip.py

Claims `deterministic` alone. Each compact, it flips an (unseeded) coin:
heads, it returns the history unchanged; tails, the same history with
" (tails N)" added to the last message's text, N a fresh random number.
Two runs on one input differ unless both are heads: 3 times in 4, so a
replay that sends the pair once holds 1 time in 4.
"""
import json
import random
import sys

for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "hello":
        print(json.dumps({"op": "hello", "protocol": 1, "name": "coinflip", "version": "0",
                          "ops": ["compact"], "invariants": ["deterministic"]}), flush=True)
        continue
    messages = req["messages"]
    if messages and random.random() < 0.5 and isinstance(messages[-1].get("content"), str):
        messages[-1]["content"] += f" (tails {random.random()})"
    print(json.dumps({"id": rid, "messages": messages}), flush=True)
