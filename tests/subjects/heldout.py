#!/usr/bin/env python3
"""ADR 0098's compactor (adapters/python-minimal) with defects of the
subject's own yardstick, over the protocol (issue 46 item 1): held-out
compactors that ctxgate must catch without having been written for them.

    heldout.py [--chars] [--ge] [--scale S] [--compact-at F]

  --chars   its estimate counts the *characters* of each content where
            ADR 0098 counts UTF-8 bytes (the toolCalls JSON stays in bytes,
            as the floor asks): langchain's `count_tokens_approximately`
            bug, which under-counts CJK 3x and emoji 4x. It compacts by that
            count too.
  --ge      it compacts when its estimate is at the trigger (`>=`), where
            SPEC §2 says over it (`>`): an off-by-one in its own comparison.
  --scale S its count is ceil(S x ADR 0098's) a message: a count of its own
            (S > 1 is a conservative one, correct), so that its trigger is
            not where ctxgate's adr-0098 count puts it.
  --compact-at F
            its hello declares `"compactAt": F` and it compacts at
            floor(F x trigger): a correct compactor with a declared margin.

With no option it is python-minimal itself, a correct compactor. It answers
`estimate` (as python-minimal does), so it is timed by its own count
(SPEC §6).
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "adapters", "python-minimal"))

import compactor  # noqa: E402  (the path above first)
from wire import images_of, image_tokens, nbytes, text_of  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--chars", action="store_true")
parser.add_argument("--ge", action="store_true")
parser.add_argument("--scale", type=float, default=1.0)
parser.add_argument("--compact-at", type=float, default=None)
opts = parser.parse_args()


def message_tokens(msg, bpt, fmt):
    """ADR 0098, with characters for bytes under --chars, scaled."""
    text = text_of(msg)
    n = compactor.tokens(len(text) if opts.chars else nbytes(text), bpt)
    calls = msg.get("toolCalls")
    if msg.get("role") == "assistant" and calls:
        n += compactor.tokens(nbytes(compactor.dumps(calls)), bpt)
    n = math.ceil(n * opts.scale)
    return n + sum(image_tokens(p, fmt) for p in images_of(msg))


compactor.message_tokens = message_tokens
spec_trigger = compactor.trigger_of


def trigger_of(cfg):
    t = spec_trigger(cfg)
    if opts.compact_at is not None:
        t = math.floor(opts.compact_at * t)
    # `estimate <= t - 1` is `estimate < t`: compacting at `estimate >= t`.
    return t - 1 if opts.ge else t


compactor.trigger_of = trigger_of
spec_hello = compactor.hello


def hello():
    h = spec_hello()
    h["name"] = "heldout" + "".join(
        f"-{w}" for w, on in [("chars", opts.chars), ("ge", opts.ge)] if on)
    if opts.compact_at is not None:
        h["compactAt"] = opts.compact_at
    return h


compactor.hello = hello

if __name__ == "__main__":
    compactor.main()
