#!/usr/bin/env python3
"""ctxgate.body_bytes and ctxgate.tool_calls_floor against the binary's, on
generated cases in each wire format.

    python body_bytes_vs_binary.py [--ctxgate PATH] [--cases 5000] [--seed 29]

One `ctxgate gen` streams the cases; each line goes to three long-lived
`ctxgate estimate --lines --wire-format F` processes (engine, openai,
anthropic) and through ctxgate.body_bytes in the same format. Per case and
format, the body sizes must be equal, and so must each message's adr-0098
tokens: ceil(text bytes / bytesPerToken) + its images' tokens + for an
assistant message with calls, tool_calls_floor. Prints one line a format;
exit 1 on the first difference (the case index, the format, both numbers).
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time

import ctxgate
from ctxgate.wire import image_tokens, images_of, nbytes, text_of

FORMATS = ("engine", "openai", "anthropic")


def adr_tokens(m, bpt, fmt):
    n = -(-nbytes(text_of(m)) // bpt) + sum(image_tokens(p, fmt) for p in images_of(m))
    if m.get("role") == "assistant":
        n += ctxgate.tool_calls_floor(m, bpt)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ctxgate", default=None, help="the binary [default: ctxgate.binary()]")
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=29)
    args = ap.parse_args()
    exe = args.ctxgate or ctxgate.binary()
    started = time.monotonic()
    gen = subprocess.Popen([exe, "gen", "--seed", str(args.seed), "--cases", str(args.cases)],
                           stdout=subprocess.PIPE)
    outs = {f: tempfile.TemporaryFile() for f in FORMATS}
    estimates = {f: subprocess.Popen([exe, "estimate", "--lines", "--wire-format", f, "-"],
                                     stdin=subprocess.PIPE, stdout=outs[f]) for f in FORMATS}
    ours = {f: [] for f in FORMATS}
    for line in gen.stdout:
        for f in FORMATS:
            estimates[f].stdin.write(line)
        case = json.loads(line)
        for f in FORMATS:
            cfg = {**case["config"], "wireFormat": f}
            bpt = cfg.get("bytesPerToken", 4)
            ours[f].append((ctxgate.body_bytes(case["messages"], cfg),
                            [adr_tokens(m, bpt, f) for m in case["messages"]]))
    if gen.wait() != 0:
        sys.exit(f"ctxgate gen exited {gen.returncode}")
    failed = False
    for f in FORMATS:
        estimates[f].stdin.close()
        if estimates[f].wait() != 0:
            sys.exit(f"ctxgate estimate --lines --wire-format {f} exited {estimates[f].returncode}")
        outs[f].seek(0)
        theirs = [json.loads(line) for line in outs[f]]
        if len(theirs) != len(ours[f]):
            sys.exit(f"{f}: the binary measured {len(theirs)} cases, body_bytes {len(ours[f])}")
        bad = [(i, b, t) for i, ((b, per), t) in enumerate(zip(ours[f], theirs))
               if b != t["bodyBytes"] or per != t["perMessage"]]
        total = sum(t["bodyBytes"] for t in theirs)
        if bad:
            failed = True
            i, (b, per), t = bad[0][0], ours[f][bad[0][0]], bad[0][2]
            print(f"{f}: {len(bad)} of {len(theirs)} cases differ; first: case {i} (ctxgate gen --seed "
                  f"{args.seed} --cases {i + 1} | tail -1): body_bytes {b}, binary {t['bodyBytes']}; "
                  f"tokens per message {per} vs the binary's {t['perMessage']}")
        else:
            print(f"{f}: body_bytes and tool_calls_floor equal the binary's on all {len(theirs)} cases "
                  f"({total / 1e6:.1f} MB of bodies)")
    print(f"compared in {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
