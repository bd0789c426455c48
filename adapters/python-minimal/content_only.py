#!/usr/bin/env python3
"""python-minimal with the estimator it would have had before ADR 0098.

An example subject for `ctxgate compare-estimators` (docs/estimators.md):
the same compactor as compactor.py, whose compaction it leaves untouched
(it imports it), with one change: its `estimate` op counts each message's
content and nothing else, the estimator the ADR's 413 shipped with. The
serialised toolCalls of an assistant message weigh nothing here.

    ctxgate compare-estimators \\
        --subject 'python3 adapters/python-minimal/compactor.py' \\
        --subject 'python3 adapters/python-minimal/content_only.py'

compactor.answer() looks `estimate` and `hello` up in its module when it is
called, so replacing those two functions is the whole variant.
"""

import compactor
from compactor import image_tokens, images_of, nbytes, text_of, tokens

NAME, VERSION = "python-minimal-content-only", "0.9.0"


def estimate(cfg, h):
    """Before ADR 0098: tokens(content) per message; toolCalls are free.
    (Images weigh their pixels, as SPEC §3's content-only counts them.)"""
    per = [tokens(nbytes(text_of(m)), cfg["bytesPerToken"])
           + sum(image_tokens(p, cfg["wireFormat"]) for p in images_of(m)) for m in h]
    return {"tokens": sum(per), "perMessage": per}


_compactor_hello = compactor.hello


def hello():
    return {**_compactor_hello(), "name": NAME, "version": VERSION}


compactor.estimate = estimate
compactor.hello = hello

if __name__ == "__main__":
    compactor.main()
