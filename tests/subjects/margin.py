#!/usr/bin/env python3
"""A compactor with a safety margin, over the protocol (issue 28 item 3).

    margin.py AT DECLARED PROGRAM ARGS...

Runs PROGRAM (`ctxgate serve`, the reference) and moves each compact
request's trigger to floor(AT × trigger), so that it compacts at AT of the
trigger by its own estimate (adr-0098, which `serve` answers `estimate`
with). Its hello declares `"compactAt": DECLARED`, or nothing when DECLARED
is `none`. Everything else passes through, line for line.
"""
import json
import math
import subprocess
import sys

at, declared, program = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
inner = subprocess.Popen(program, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         encoding="utf-8", bufsize=1)


def trigger(c):  # SPEC §2
    window = min(c["contextWindow"], c["transportMaxBodyBytes"] // c["bytesPerToken"])
    x = c["threshold"] * window
    return window, int(x) + (x - int(x) >= 0.5)


for line in sys.stdin:
    request = json.loads(line)
    if request.get("op") == "compact":
        config = request["config"]
        window, t = trigger(config)
        if window > 0:
            config["threshold"] = max(math.floor(at * t) / window, 5e-324)
    inner.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
    inner.stdin.flush()
    answer = json.loads(inner.stdout.readline())
    if request.get("op") == "hello":
        # Python re-spells exotic numbers: it is sent portable ones only.
        answer.pop("numbers", None)
        if declared != "none":
            answer["compactAt"] = float(declared)
    sys.stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    sys.stdout.flush()
