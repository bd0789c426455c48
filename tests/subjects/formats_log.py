#!/usr/bin/env python3
"""A subject that logs the config of every compact request it is sent, for
ctxgate's wire-format tests.

Usage: formats_log.py LOGFILE [FORMATS]

  LOGFILE  one JSON line per compact request: its config's wireFormat,
           contextWindow, transportMaxBodyBytes and threshold
  FORMATS  comma-separated wire formats for the hello's `wireFormats`
           (left out: the hello does not say, so all three)

It claims only tool-pairing and answers every history unchanged, which
holds it.
"""
import json
import sys

log = open(sys.argv[1], "a")
hello = {"op": "hello", "protocol": 1, "name": "formats-log", "version": "0",
         "ops": ["compact"], "invariants": ["tool-pairing"]}
if len(sys.argv) > 2:
    hello["wireFormats"] = sys.argv[2].split(",")
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "hello":
        print(json.dumps(hello), flush=True)
        continue
    c = req["config"]
    log.write(json.dumps({k: c.get(k) for k in
                          ("wireFormat", "contextWindow", "transportMaxBodyBytes", "threshold")}) + "\n")
    log.flush()
    print(json.dumps({"id": req["id"], "messages": req["messages"]}), flush=True)
