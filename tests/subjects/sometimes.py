#!/usr/bin/env python3
"""A subject that is deterministic only some of the time, for ctxgate's tests.

Usage: sometimes.py

Claims `deterministic` alone. It counts the compact requests it answers;
every fourth (the 4th, 8th, …) gets the history with " (differs N)" added
to the last message's text, the others the history unchanged. `replay`
runs one subject process, sending its fixtures in order: a replay that
sent each fixture's pair once would see a difference in half of a run of
identical fixtures (requests 3 and 4 of 4), one that tries until they
differ sees it in every one. Counted, not drawn at random: the outcome is
the same on every run.
"""
import json
import sys

answered = 0
for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "hello":
        print(json.dumps({"op": "hello", "protocol": 1, "name": "sometimes", "version": "0",
                          "ops": ["compact"], "invariants": ["deterministic"]}), flush=True)
        continue
    messages = req["messages"]
    answered += 1
    if answered % 4 == 0 and messages and isinstance(messages[-1].get("content"), str):
        messages[-1]["content"] += f" (differs {answered})"
    print(json.dumps({"id": rid, "messages": messages}), flush=True)
