"""The subject protocol v1 loop, shared by the Python adapters of real compactors.

An adapter supplies a hello (name, version, ops, claimed invariants) and one
function per op; this module reads requests from stdin, answers each on one
line of stdout, and turns an exception inside the library under test into an
error the harness reports as a fault (kind `library_error`) — a crash of the
compactor is a finding, never a hang. Nothing here judges anything.

    from ctxgate_subject import serve, trigger
    serve({"name": ..., "version": ..., "ops": ["compact"], "invariants": [...]},
          compact=lambda cfg, messages: [...])

`compact(cfg, messages)` returns the engine messages to answer with, or
raises `CannotFit(message)` (or `InvalidInput(message)` for a history the
library cannot represent). `estimate(cfg, messages)` returns
`{"tokens": n, "perMessage": [...]}` (perMessage optional). `cfg` is the
request's config over SPEC §2's defaults.
"""

import json
import sys
import traceback

DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}


class CannotFit(Exception):
    """Raised by an adapter's compact to answer `cannot_fit`."""


class InvalidInput(Exception):
    """Raised by an adapter for a history the library has no representation
    for (answered `invalid_input`: ctxgate counts the case as refused)."""


def trigger(cfg):
    """SPEC §2: round(threshold × min(contextWindow, floor(ceiling / bytesPerToken))), halves away from zero."""
    window = min(cfg["contextWindow"], cfg["transportMaxBodyBytes"] // cfg["bytesPerToken"])
    x = cfg["threshold"] * window
    whole = int(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _answer(req, hello, ops):
    rid = req.get("id")
    op = req.get("op")
    if op == "hello":
        # Text content only: these adapters hand `content` to their library
        # as a string (SPEC §6 `contentParts`); ctxgate sends them no image
        # parts and counts the image cases it left out.
        return {"op": "hello", "protocol": 1, "format": "engine", "contentParts": False, **hello}
    if op not in ops:
        return {"id": rid, "error": {"kind": "invalid_input", "message": f"unknown op {op!r}"}}
    cfg = {**DEFAULTS, **(req.get("config") or {})}
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return {"id": rid, "error": {"kind": "invalid_input", "message": "`messages` must be an array of objects"}}
    try:
        if op == "compact":
            return {"id": rid, "messages": ops[op](cfg, messages)}
        return {"id": rid, **ops[op](cfg, messages)}
    except CannotFit as e:
        return {"id": rid, "error": {"kind": "cannot_fit", "message": str(e)}}
    except InvalidInput as e:
        return {"id": rid, "error": {"kind": "invalid_input", "message": str(e)}}
    except Exception as e:  # the library under test crashed on this input: a finding
        where = traceback.extract_tb(e.__traceback__)[-1]
        return {"id": rid, "error": {"kind": "library_error",
                                     "message": f"{type(e).__name__}: {e} (at {where.filename}:{where.lineno})"}}


def serve(hello, compact=None, estimate=None):
    """Answer requests until stdin closes."""
    ops = {name: fn for name, fn in (("compact", compact), ("estimate", estimate)) if fn}
    hello = {**hello, "ops": list(ops)}
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            req = json.loads(line.decode("utf-8"))
        except ValueError as e:
            reply = {"id": None, "error": {"kind": "invalid_input", "message": f"not JSON: {e}"}}
        else:
            reply = _answer(req, hello, ops) if isinstance(req, dict) else {
                "id": None, "error": {"kind": "invalid_input", "message": "a request is a JSON object"}}
        sys.stdout.buffer.write((dumps(reply) + "\n").encode("utf-8"))
        sys.stdout.buffer.flush()
