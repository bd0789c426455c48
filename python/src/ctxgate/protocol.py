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

The loop answers every request line with one JSON line, whatever the line
holds, and goes on: a line that is not UTF-8, not JSON, not an object, or
holds what the binary would refuse (NaN, a lone surrogate, nesting as deep
as wire.MAX_DEPTH) is answered `invalid_input`; whatever the functions
raise or return — an exception whose str() raises, a generator, an answer
JSON cannot hold — is answered `library_error`, naming it. Only
KeyboardInterrupt and SystemExit end it. While it serves the process's own
stdout, anything else written there (a library's print) goes to stderr.

Standard library only.
"""

import inspect
import json
import os
import sys
import traceback

from .wire import MAX_DEPTH, json_problem, where_of

DEFAULTS = {"contextWindow": 128000, "threshold": 0.7, "transportMaxBodyBytes": 8388608,
            "bytesPerToken": 4, "keepRecent": 2, "summaryMaxBytes": 4096,
            "wireFormat": "engine", "envelope": {}}

MESSAGE_LIMIT = 4000
"""Characters of an error message kept in an answer (the rest is counted)."""


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
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def check_signature(fn, role, who="serve"):
    """Refuse, before anything runs, a `role` function (compact, estimate)
    that cannot be called as fn(config, messages): a call the harness makes
    wrongly must never come back as a fault of the library (and be saved as
    a failure). A callable whose signature Python cannot read is taken as it
    is."""
    if not callable(fn):
        raise TypeError(f"{who}: {role} must be a function fn(config, messages), not {_short(fn)}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(dict(DEFAULTS), [])
    except TypeError as e:
        name = getattr(fn, "__qualname__", None) or _short(fn)
        raise TypeError(f"{who}: {role} must take two arguments, {role}(config, messages); "
                        f"{name}{signature} cannot be called so ({e})") from None


def hello_of(ops, *, name, version, invariants=None, wire_formats=None, content_parts=None):
    """The hello answer (SPEC §6). Fields left at None are left out: the
    harness's defaults (every invariant that applies, all three wire
    formats, content parts sent) are the subject's — and a subject that
    faults on a case with content parts without having said
    `contentParts` is told the field that opts out."""
    hello = {"op": "hello", "protocol": 1, "name": str(name), "version": str(version),
             "ops": list(ops), "format": "engine"}
    if content_parts is not None:
        hello["contentParts"] = bool(content_parts)
    if invariants is not None:
        hello["invariants"] = list(invariants)
    if wire_formats is not None:
        hello["wireFormats"] = list(wire_formats)
    problem = json_problem(hello)
    if problem is not None:
        raise ValueError(f"serve: the hello cannot be sent: {where_of('hello', problem[0])}: {problem[1]}")
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


class _Wrong(Exception):
    """What a function returned is not an answer (said as a library_error)."""


def _short(value, limit=80):
    """repr(value) for a message: escaped (no control character, no lone
    surrogate) and cut short; never raises."""
    try:
        text = repr(value)
    except BaseException:  # a __repr__ that raises
        return f"<{type(value).__name__} whose repr() raised>"
    return _clean(text, limit)


def _clean(text, limit=MESSAGE_LIMIT):
    """Text safe in a JSON answer: lone surrogates escaped, cut at `limit`."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return text


def _text(e):
    """str(e), or what can be said of e when its __str__ raises."""
    try:
        text = str(e)
    except BaseException as inner:
        text = f"<str() of the exception raised {type(inner).__name__}>"
    return _clean(text if isinstance(text, str) else repr(text))


def _raised(e):
    """`Type: message (at file:line)` of an exception from the library."""
    text = f"{type(e).__name__}: {_text(e)}"
    try:
        where = traceback.extract_tb(e.__traceback__)[-1]
        text += f" (at {_clean(str(where.filename), 500)}:{where.lineno})"
    except Exception:  # no traceback, or one that cannot be read: the message alone
        pass
    return text


def _error(rid, kind, message):
    return {"id": rid, "error": {"kind": kind, "message": message}}


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _messages_of(result):
    """compact's result as a list: a tuple or any iterable of messages (a
    generator, a map) listed; anything else is not an answer."""
    if isinstance(result, list):
        return result
    if isinstance(result, (dict, str, bytes, bytearray)) or result is None or not hasattr(result, "__iter__"):
        raise _Wrong(f"compact returned {type(result).__name__} {_short(result)}, not a list of messages")
    return list(result)


def _estimate_of(result):
    """estimate's result as answer fields: {"tokens": n} for a count alone."""
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k != "id"}
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        return {"tokens": result}
    raise _Wrong(f'estimate returned {type(result).__name__} {_short(result)}, not a token count '
                 f'or {{"tokens": n, "perMessage": [...]}}')


def _answer(line, hello, ops):
    """The answer to one request line (bytes or str); raises nothing but
    KeyboardInterrupt and SystemExit."""
    try:
        text = line.decode("utf-8") if isinstance(line, (bytes, bytearray)) else line
    except UnicodeDecodeError as e:
        return _error(None, "invalid_input", f"the request is not UTF-8 (byte {e.start} of the line)")
    try:
        req = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return _error(None, "invalid_input",
                      f"not JSON ctxgate writes: nested deeper than {MAX_DEPTH - 1} levels")
    except Exception as e:  # ValueError (not JSON), MemoryError, ...
        return _error(None, "invalid_input", f"not JSON: {type(e).__name__}: {_text(e)}")
    if not isinstance(req, dict):
        return _error(None, "invalid_input", f"a request is a JSON object, not {type(req).__name__}")
    rid = req.get("id")
    problem = json_problem(req)
    if problem is not None:
        if json_problem(rid, 2) is not None:
            rid = None
        return _error(rid, "invalid_input",
                      f"not JSON ctxgate writes: {where_of('request', problem[0])}: {problem[1]}")
    op = req.get("op")
    if op == "hello":
        return hello
    if not isinstance(op, str) or op not in ops:
        return _error(rid, "invalid_input", f"unknown op {_short(op)} (this subject answers "
                                            f"{', '.join(['hello', *ops])})")
    config = req.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        return _error(rid, "invalid_input", f"`config` must be an object, not {type(config).__name__}")
    messages = req.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return _error(rid, "invalid_input", "`messages` must be an array of objects")
    try:
        result = _settled(ops[op]({**DEFAULTS, **config}, messages))
        reply = {"id": rid, **({"messages": _messages_of(result)} if op == "compact" else _estimate_of(result))}
    except CannotFit as e:
        return _error(rid, "cannot_fit", _text(e))
    except InvalidInput as e:
        return _error(rid, "invalid_input", _text(e))
    except _Wrong as e:
        return _error(rid, "library_error", str(e))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # the library under test crashed on this input: a finding
        return _error(rid, "library_error", _raised(e))
    return reply


def _line(reply, rid):
    """The reply's JSON line; an answer that is not JSON ctxgate reads (a
    LangChain message object left unconverted, a NaN, a lone surrogate,
    nesting past MAX_DEPTH) is a library_error naming what and where."""
    try:
        problem = json_problem(reply)
        if problem is None:
            return (dumps(reply) + "\n").encode("utf-8")
        why = f"{where_of('answer', problem[0])}: {problem[1]}"
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a list or dict subclass that cannot be read, ...
        why = f"it cannot be read: {_raised(e)}"
    if json_problem(rid, 2) is not None:
        rid = None
    return (dumps(_error(rid, "library_error", f"the answer is not JSON: {why}")) + "\n").encode("utf-8")


def _protocol_stdout():
    """The process's stdout for the protocol alone: a duplicate of fd 1 for
    the answers, and fd 1 (so print() and a C library's writes) pointed at
    stderr. (out, restore), or (sys.stdout.buffer, None) where stdout is no
    file descriptor."""
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
        saved = os.dup(fd)
        os.dup2(sys.stderr.fileno(), fd)
    except (AttributeError, OSError, ValueError):
        return getattr(sys.stdout, "buffer", sys.stdout), None

    def restore():
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, fd)
        os.close(saved)

    return os.fdopen(os.dup(saved), "wb"), restore


def serve(compact, estimate=None, *, name, version, invariants=None, wire_formats=None,
          content_parts=None, stdin=None, stdout=None):
    """Answer requests until stdin closes.

    `invariants`: the SPEC §5 names the subject claims (default: all that
    apply to its ops). `wire_formats`: the formats whose body it measures
    (default: all three). `content_parts=False`: it takes text content
    only, and ctxgate sends it no parts or images (and counts the cases it
    left out); True: it takes them; None (the default): the hello does not
    say, and ctxgate sends them. `compact` may be None for an estimator alone. A function
    that cannot be called as fn(config, messages) is refused (TypeError)
    before any request is read."""
    ops = {op: fn for op, fn in (("compact", compact), ("estimate", estimate)) if fn is not None}
    if not ops:
        raise ValueError("serve: give a compact function, an estimate function or both")
    for op, fn in ops.items():
        check_signature(fn, op)
    hello = hello_of(ops, name=name, version=version, invariants=invariants,
                     wire_formats=wire_formats, content_parts=content_parts)
    lines = stdin if stdin is not None else sys.stdin.buffer
    out, restore = (stdout, None) if stdout is not None else _protocol_stdout()
    try:
        for line in lines:
            if not line.strip():
                continue
            try:
                reply = _answer(line, hello, ops)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # a fault of this loop's own: still one answer
                reply = _error(None, "library_error", f"ctxgate.serve could not answer: {_raised(e)}")
            text = _line(reply, reply.get("id"))
            try:
                out.write(text)
                out.flush()
            except BrokenPipeError:  # the harness is gone: nobody to answer
                return
    finally:
        if restore is not None:
            if out is not stdout:
                try:
                    out.close()
                except OSError:
                    pass
            restore()
