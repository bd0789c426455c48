#!/usr/bin/env python3
"""A message-count trimmer over the protocol (issue 46 item 4).

    count_trimmer.py N [repeat-ids]

When compaction is due by the config (ADR 0098's estimate over the
trigger), it keeps the head, the pinned iterations and the last N messages
after the head, the cut moved forward to an iteration boundary (as
Semantic Kernel's truncation reducer keeps a call with its results) — and
at least the oldest iteration that is not pinned left out, so that a due
history always comes back smaller (docs/protocol.md §8, "Message-count
compactors"). It never measures the body and its output may still be
over the trigger, so it claims neither the ceiling invariants nor
`progress` and `idempotent`: it claims `trims-when-due` instead.

`repeat-ids` plants the bug issue 46 met: a trimmer that maps calls to
results by a global id lookup and, when an id repeats across iterations
(models that reuse `call_0` every turn), gives up and returns the history
unchanged. It passes everything else it claims; `trims-when-due` catches it.
"""
import json
import sys

N = int(sys.argv[1])
PLANTED = sys.argv[2:] == ["repeat-ids"]

DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}
CLAIMS = ["tool-pairing", "no-premature-compaction", "verbatim-suffix", "order-preserved",
          "pinned-kept", "deterministic", "trims-when-due"]


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def tokens(text, bpt):
    return -(-len(text.encode("utf-8")) // bpt)


def estimate(msgs, bpt):
    n = 0
    for m in msgs:
        n += tokens(m.get("content") or "", bpt)
        if m.get("toolCalls"):
            n += tokens(dumps(m["toolCalls"]), bpt)
    return n


def trigger(c):
    x = c["threshold"] * min(c["contextWindow"], c["transportMaxBodyBytes"] // c["bytesPerToken"])
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


def ids_repeat(spans, msgs):
    seen = {}
    for n, (i, _) in enumerate(spans):
        for c in msgs[i].get("toolCalls") or []:
            if seen.setdefault(c["id"], n) != n:
                return True
    return False


def compact(c, msgs):
    if estimate(msgs, c["bytesPerToken"]) <= trigger(c):
        return msgs
    head = 0
    while head < len(msgs) and msgs[head]["role"] == "system":
        head += 1
    spans = iterations(msgs, head)
    if PLANTED and ids_repeat(spans, msgs):
        return msgs
    pinned = [any(m.get("pinned") is True for m in msgs[i:j]) for i, j in spans]
    droppable = [k for k in range(len(spans) - 1) if not pinned[k]]
    if not droppable:
        return msgs
    # The last N messages, and at least the oldest droppable iteration gone.
    cut = max(len(msgs) - N, spans[droppable[0]][1])
    first = next(k for k, (i, _) in enumerate(spans) if i >= cut or k == len(spans) - 1)
    keep = [k for k in range(len(spans)) if k >= first or pinned[k]]
    return msgs[:head] + [m for k in keep for m in msgs[spans[k][0]:spans[k][1]]]


def answer(req):
    c = {**DEFAULTS, **(req.get("config") or {})}
    if req["op"] == "hello":
        name = "count-trimmer-repeat-ids" if PLANTED else "count-trimmer"
        return {"op": "hello", "protocol": 1, "name": name, "version": "0.1.0",
                "ops": ["compact"], "format": "engine", "invariants": CLAIMS,
                "contentParts": False}
    if req["op"] == "compact":
        return {"id": req["id"], "messages": compact(c, req["messages"])}
    return {"id": req.get("id"), "error": {"kind": "invalid_input", "message": "unknown op"}}


sys.stdin.reconfigure(encoding="utf-8")
sys.stdout.reconfigure(encoding="utf-8")
for line in sys.stdin:
    if line.strip():
        print(dumps(answer(json.loads(line))), flush=True)
