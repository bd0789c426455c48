#!/usr/bin/env python3
"""A token limiter that refuses, over the protocol (issue 46 item 6).

    limiter.py MODE SCALE

A trimmer timed by its own count — SCALE × ADR 0098's estimate, which it
answers `estimate` with — that keeps the head, the pinned iterations and
as many recent iterations as fit under the trigger, and answers
`cannot_fit` when even head + pinned + last iteration is over its LIMIT:

- `trigger`: the trigger itself — LiteLLM's `trim_messages` and other
  limiters refuse so when the last message alone is over `max_tokens`. By
  `progress` that minimal output is an answer, so such a refusal is wrong
  whenever the output would fit the window and the ceiling.
- `window`: the effective window (SPEC §2): by its own count the minimal
  output cannot be sent to the model, a refusal on its own terms.

It never measures the body, so it claims neither ceiling invariant: its
refusals are judged by `progress` alone (docs/contract-notes.md note 42).
"""
import json
import sys

MODE, SCALE = sys.argv[1], int(sys.argv[2])
DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}
CLAIMS = ["tool-pairing", "estimate-covers-tool-calls", "estimate-monotone",
          "no-premature-compaction", "progress", "verbatim-suffix", "order-preserved",
          "pinned-kept", "deterministic", "idempotent"]


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def tokens(text, bpt):
    return -(-len(text.encode("utf-8")) // bpt)


def per_message(msgs, bpt):
    per = []
    for m in msgs:
        n = tokens(m.get("content") or "", bpt)
        if m.get("toolCalls"):
            n += tokens(dumps(m["toolCalls"]), bpt)
        per.append(SCALE * n)
    return per


def estimate(msgs, bpt):
    return sum(per_message(msgs, bpt))


def window(c):
    return min(c["contextWindow"], c["transportMaxBodyBytes"] // c["bytesPerToken"])


def trigger(c):
    x = c["threshold"] * window(c)
    return int(x) + (x - int(x) >= 0.5)


def iterations(msgs, i):
    spans = []
    while i < len(msgs):
        j, ids = i + 1, {c["id"] for c in msgs[i].get("toolCalls") or []}
        while ids and j < len(msgs) and msgs[j]["role"] == "tool" and msgs[j]["toolCallId"] in ids:
            j += 1
        spans.append((i, j))
        i = j
    return spans


def compact(c, msgs):
    bpt, limit = c["bytesPerToken"], trigger(c)
    if estimate(msgs, bpt) <= limit:
        return msgs
    head = 0
    while head < len(msgs) and msgs[head]["role"] == "system":
        head += 1
    spans = iterations(msgs, head)
    if not spans:
        return msgs
    pinned = [s for s in spans[:-1] if any(m.get("pinned") is True for m in msgs[s[0]:s[1]])]
    minimal = msgs[:head] + [m for s in pinned + spans[-1:] for m in msgs[s[0]:s[1]]]
    refuse_over = limit if MODE == "trigger" else window(c)
    if estimate(minimal, bpt) > refuse_over:
        return None
    for k in range(min(c["keepRecent"], len(spans)), 0, -1):
        recent = spans[-k:]
        keep = [s for s in pinned if s[0] < recent[0][0]] + recent
        out = msgs[:head] + [m for s in keep for m in msgs[s[0]:s[1]]]
        if k == 1 or estimate(out, bpt) <= limit:
            return out
    return msgs


def answer(req):
    c = {**DEFAULTS, **(req.get("config") or {})}
    if req["op"] == "hello":
        return {"op": "hello", "protocol": 1, "name": f"limiter-{MODE}-x{SCALE}",
                "version": "0.1.0", "ops": ["compact", "estimate"], "format": "engine",
                "invariants": CLAIMS, "contentParts": False}
    if req["op"] == "compact":
        out = compact(c, req["messages"])
        if out is None:
            return {"id": req["id"], "error": {"kind": "cannot_fit",
                                               "message": "the last iteration alone is over the limit"}}
        return {"id": req["id"], "messages": out}
    if req["op"] == "estimate":
        per = per_message(req["messages"], c["bytesPerToken"])
        return {"id": req["id"], "tokens": sum(per), "perMessage": per}
    return {"id": req.get("id"), "error": {"kind": "invalid_input", "message": "unknown op"}}


sys.stdin.reconfigure(encoding="utf-8")
sys.stdout.reconfigure(encoding="utf-8")
for line in sys.stdin:
    if line.strip():
        print(dumps(answer(json.loads(line))), flush=True)
