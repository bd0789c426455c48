#!/usr/bin/env python3
"""Subjects that would make a careless gate say OK, for ctxgate's tests.

Usage: vacuous.py KIND

  claims-nothing   hello claims no invariant ("invariants": []) and deletes
                   every history
  refuses          answers invalid_input to every compact, claiming only
                   structural invariants (tool-pairing, order-preserved)
  refuses-estimate estimates nothing: invalid_input to every estimate, while
                   compacting correctly enough (identity) for what it claims
  gives-up         answers cannot_fit to every compact, claiming only
                   tool-pairing and order-preserved (which then never apply)
"""
import json
import sys

kind = sys.argv[1]
claims = {
    "claims-nothing": [],
    "refuses": ["tool-pairing", "order-preserved"],
    "refuses-estimate": ["estimate-covers-tool-calls", "estimate-monotone"],
    "gives-up": ["tool-pairing", "order-preserved"],
}[kind]
for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "hello":
        ops = ["compact", "estimate"] if kind == "refuses-estimate" else ["compact"]
        print(json.dumps({"op": "hello", "protocol": 1, "name": kind, "version": "0",
                          "ops": ops, "invariants": claims}), flush=True)
    elif kind == "claims-nothing":
        print(json.dumps({"id": rid, "messages": []}), flush=True)
    elif kind == "refuses" or (kind == "refuses-estimate" and op == "estimate"):
        print(json.dumps({"id": rid, "error": {"kind": "invalid_input", "message": "no"}}), flush=True)
    elif kind == "gives-up":
        print(json.dumps({"id": rid, "error": {"kind": "cannot_fit", "message": "never"}}), flush=True)
    else:
        print(json.dumps({"id": rid, "messages": req["messages"]}), flush=True)
