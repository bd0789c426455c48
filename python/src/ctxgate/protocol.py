"""The subject protocol v1 loop (ctxgate SPEC §6): a Python callable as a
compactor ctxgate can check.

The zoo's adapters, which run in venvs of their own without the package,
import this file from the checkout (adapters/lib/ctxgate_subject.py).

    from ctxgate import serve
    serve(compact, estimate, name="my-compactor", version="1.0.0")

`compact(config, messages)` returns the engine messages to answer with, or
raises `CannotFit(message)` (or `InvalidInput(message)` for a history the
library cannot represent); an `async def` compact (or estimate) is awaited,
on one event loop for the whole run. `estimate(config, messages)` returns
`{"tokens": n, "perMessage": [...]}` (perMessage optional), or `n` alone. `config` is the
request's config over SPEC §2's defaults. An exception inside the library
under test is answered as an error the harness reports as a fault (kind
`library_error`, with where it was raised): a crash of the compactor is a
finding, never a hang. Nothing here judges anything.

Standard library only.
"""

import inspect
import json
import sys
import traceback

DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}


class CannotFit(Exception):
    """Raised by a compact function to answer `cannot_fit`."""


class InvalidInput(Exception):
    """Raised for a history the library has no representation for (answered
    `invalid_input`: ctxgate counts the case as refused)."""


def trigger(cfg):
    """SPEC §2: round(threshold × min(contextWindow, floor(ceiling / bytesPerToken))), halves away from zero."""
    window = min(cfg["contextWindow"], cfg["transportMaxBodyBytes"] // cfg["bytesPerToken"])
    x = cfg["threshold"] * window
    whole = int(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def hello_of(ops, *, name, version, invariants=None, wire_formats=None, content_parts=True):
    """The hello answer (SPEC §6). Fields left at None are left out: the
    harness's defaults (every invariant that applies, all three wire
    formats) are the subject's."""
    hello = {"op": "hello", "protocol": 1, "name": str(name), "version": str(version),
             "ops": list(ops), "format": "engine", "contentParts": bool(content_parts)}
    if invariants is not None:
        hello["invariants"] = list(invariants)
    if wire_formats is not None:
        hello["wireFormats"] = list(wire_formats)
    return hello


_LOOP = []


def _settled(result):
    """An async function's result, awaited on the run's one event loop (a
    summariser that calls a model is often async); any other, as it is."""
    if not inspect.isawaitable(result):
        return result
    if not _LOOP:
        import asyncio  # only a subject that needs it pays for the import
        _LOOP.append(asyncio.new_event_loop())
    return _LOOP[0].run_until_complete(result)


def _answer(req, hello, ops):
    rid = req.get("id")
    op = req.get("op")
    if op == "hello":
        return hello
    if op not in ops:
        return {"id": rid, "error": {"kind": "invalid_input", "message": f"unknown op {op!r}"}}
    cfg = {**DEFAULTS, **(req.get("config") or {})}
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return {"id": rid, "error": {"kind": "invalid_input", "message": "`messages` must be an array of objects"}}
    try:
        result = _settled(ops[op](cfg, messages))
        if op == "compact":
            if hasattr(result, "__iter__") and not isinstance(result, (list, tuple, dict, str, bytes)):
                result = list(result)  # a generator, filter or map of messages
            return {"id": rid, "messages": result}
        if not isinstance(result, dict):  # the token count alone
            return {"id": rid, "tokens": result}
        return {"id": rid, **result}
    except CannotFit as e:
        return {"id": rid, "error": {"kind": "cannot_fit", "message": str(e)}}
    except InvalidInput as e:
        return {"id": rid, "error": {"kind": "invalid_input", "message": str(e)}}
    except Exception as e:  # the library under test crashed on this input: a finding
        where = traceback.extract_tb(e.__traceback__)[-1]
        return {"id": rid, "error": {"kind": "library_error",
                                     "message": f"{type(e).__name__}: {e} (at {where.filename}:{where.lineno})"}}


def serve(compact, estimate=None, *, name, version, invariants=None, wire_formats=None,
          content_parts=True, stdin=None, stdout=None):
    """Answer requests until stdin closes.

    `invariants`: the SPEC §5 names the subject claims (default: all that
    apply to its ops). `wire_formats`: the formats whose body it measures
    (default: all three). `content_parts=False`: it takes text content
    only, and ctxgate sends it no parts or images (and counts the cases it
    left out). `compact` may be None for an estimator alone."""
    ops = {op: fn for op, fn in (("compact", compact), ("estimate", estimate)) if fn}
    if not ops:
        raise ValueError("serve: give a compact function, an estimate function or both")
    hello = hello_of(ops, name=name, version=version, invariants=invariants,
                     wire_formats=wire_formats, content_parts=content_parts)
    lines = stdin if stdin is not None else sys.stdin.buffer
    out = stdout if stdout is not None else sys.stdout.buffer
    for line in lines:
        if not line.strip():
            continue
        try:
            req = json.loads(line.decode("utf-8") if isinstance(line, bytes) else line)
        except ValueError as e:
            reply = {"id": None, "error": {"kind": "invalid_input", "message": f"not JSON: {e}"}}
        else:
            reply = _answer(req, hello, ops) if isinstance(req, dict) else {
                "id": None, "error": {"kind": "invalid_input", "message": "a request is a JSON object"}}
        try:
            text = dumps(reply)
        except (TypeError, ValueError) as e:  # e.g. a LangChain message object, not a dict
            text = dumps({"id": reply.get("id"), "error": {
                "kind": "library_error", "message": f"the answer is not JSON: {type(e).__name__}: {e}"}})
        out.write((text + "\n").encode("utf-8"))
        out.flush()
