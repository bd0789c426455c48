"""Round trips: ctxgate's generated histories through an adapter's own
message conversion, and back, equal by value.

An adapter turns ctxgate's engine messages into its library's types and
its library's answer back into engine messages. Every field it drops or
re-spells on the way is a failure ctxgate's invariants then report far
from its cause (`verbatim-suffix`, `pinned-kept`, `tool-pairing`). This
runs `ctxgate gen`'s cases through both conversions first:

    from ctxgate import round_trip
    round_trip(to_library, from_library, cases=200)

Equality is SPEC §5's: numbers by value (`1` = `1.0`), object members in
any order, strings, arrays, `true`/`false` and `null` exactly, a member
left out is not a member set to `null`. The first difference raises
RoundTripMismatch, an AssertionError naming the case, the path in it
(`messages[3].content[0].text`), both values, and the `ctxgate gen` line
that prints the case again.
"""

import decimal
import json
import numbers
import subprocess

from .wire import where_of

__all__ = ["RoundTripMismatch", "round_trip", "first_difference"]


class RoundTripMismatch(AssertionError):
    """A case came back different, or a conversion raised; the message
    says which case, where in it and what, and how to print it again."""

    def __init__(self, message, *, case=None, path=None, command=None):
        super().__init__(message)
        #: The index of the case in `ctxgate gen`'s output.
        self.case = case
        #: Where the values differ: `messages[3].content[0].text`.
        self.path = path
        #: The `ctxgate gen` arguments that print the cases again.
        self.command = command


def _shown(v):
    """A value in a message: its JSON, ASCII, cut to 120 characters."""
    try:
        text = json.dumps(v, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(v)
    if len(text) > 120:
        text = text[:119] + "…"
    return f"{type(v).__name__} {text}" if not _is_json_kind(v) else text


def _is_json_kind(v):
    return v is None or isinstance(v, (bool, str, list, dict)) or _is_number(v)


def _is_number(v):
    # Decimal too: what json.loads(..., parse_float=Decimal) reads.
    return isinstance(v, (numbers.Real, decimal.Decimal)) and not isinstance(v, bool)


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if _is_number(v):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return f"a {type(v).__name__} (not JSON)"


_ABSENT = object()
_LENGTHS = object()


def first_difference(expected, got, root="messages"):
    """None when `got` equals `expected` as JSON values (SPEC §5), else
    (path, what): where the first difference is, in document order, and
    what it is. Walks with a stack of its own (no depth overflows it)."""
    stack = [(expected, got, None)]
    while stack:
        a, b, path = stack.pop()
        where = lambda: where_of(root, path)  # noqa: E731
        if a is _LENGTHS:
            return where(), f"expected an array of {b[0]} item(s), got {b[1]}"
        if b is _ABSENT:
            return where(), f"missing (expected {_shown(a)})"
        if a is _ABSENT:
            return where(), f"not expected (got {_shown(b)})"
        if isinstance(a, bool) or isinstance(b, bool):
            if not (isinstance(a, bool) and isinstance(b, bool) and a == b):
                return where(), f"expected {_shown(a)}, got {_shown(b)}"
        elif _is_number(a) or _is_number(b):
            # int and float compare by value in Python (2**53 + 1 != 2.0**53).
            if not (_is_number(a) and _is_number(b) and a == b):
                return where(), f"expected {_shown(a)}, got {_shown(b)}"
        elif a is None or b is None:
            if not (a is None and b is None):
                return where(), f"expected {_shown(a)}, got {_shown(b)}"
        elif isinstance(a, str) or isinstance(b, str):
            if not (isinstance(a, str) and isinstance(b, str) and a == b):
                return where(), f"expected {_shown(a)}, got {_shown(b)}"
        elif isinstance(a, (list, tuple)):
            if not isinstance(b, (list, tuple)):
                return where(), f"expected {_kind(a)}, got {_kind(b)}: {_shown(b)}"
            if len(a) != len(b):
                # Said once the items both hold are compared: the first of
                # them that differs says more than the lengths.
                stack.append((_LENGTHS, (len(a), len(b)), path))
            for i in range(min(len(a), len(b)) - 1, -1, -1):
                stack.append((a[i], b[i], (path, i)))
        elif isinstance(a, dict):
            if not isinstance(b, dict):
                return where(), f"expected {_kind(a)}, got {_kind(b)}: {_shown(b)}"
            # In document order: `a`'s members, then the ones `b` added.
            for k in reversed([k for k in b if k not in a]):
                stack.append((_ABSENT, b[k], (path, k)))
            for k in reversed(list(a)):
                stack.append((a[k], b.get(k, _ABSENT), (path, k)))
        else:
            return where(), f"expected {_kind(a)}, got {_kind(b)}"
    return None


def _gen_args(cases, seed, text_only, exact_numbers, config, gen_config):
    args = ["gen", "--cases", str(cases), "--seed", str(seed)]
    if text_only:
        args.append("--text-only")
    if exact_numbers:
        args.append("--exact-numbers")
    if config is not None:
        args += ["--config", str(config)]
    if gen_config is not None:
        args += ["--gen-config", str(gen_config)]
    return args


def round_trip(parse, serialise, *, cases=200, seed=0, text_only=False, exact_numbers=False,
               config=None, gen_config=None, binary=None):
    """Run `ctxgate gen`'s cases through `serialise(parse(messages))` and
    assert each comes back equal by value (SPEC §5); returns how many
    cases were checked.

    `parse` takes a case's engine messages (a list of dicts, as
    `json.loads` reads them) and returns anything of the adapter's own;
    `serialise` takes that and returns engine messages again, as a list or
    as JSON text (str or bytes). Each call gets a copy of its own: `parse`
    may keep or change what it is given.

    `text_only=True`: the cases a subject whose hello says
    `"contentParts": false` is sent (no content parts, no images).
    `exact_numbers=True`: also numbers stock JSON libraries re-spell or
    round (`1.50`, 2^64), as a subject saying `"numbers": "exact"` is sent.
    `config`, `gen_config`: paths of JSON files, as `ctxgate gen` takes
    them. `binary`: a ctxgate binary (default: `ctxgate.binary()`).

    Raises RoundTripMismatch (an AssertionError) at the first difference,
    or when `parse` or `serialise` raises; its message names the case, the
    path, both values and the `ctxgate gen` command that prints the case.
    """
    if not callable(parse) or not callable(serialise):
        raise TypeError("round_trip(parse, serialise): both must be functions "
                        "(engine messages -> yours, and yours -> engine messages)")
    if binary is None:
        from . import binary as find_binary
        binary = find_binary()
    args = _gen_args(cases, seed, text_only, exact_numbers, config, gen_config)
    shown = "ctxgate " + " ".join(args)
    proc = subprocess.Popen([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    checked = 0
    try:
        # Lines end at b"\n" alone (gen escapes U+2028 and its kin anyway).
        for index, raw in enumerate(proc.stdout):
            line = raw.decode("utf-8")
            expected = json.loads(line)["messages"]
            mine = json.loads(line)["messages"]
            where = f"case {index} of `{shown}` (print it: `{shown} | sed -n {index + 1}p`)"
            try:
                own = parse(mine)
            except Exception as e:
                raise RoundTripMismatch(f"{where}: parse raised {type(e).__name__}: {e}",
                                        case=index, command=shown) from e
            try:
                back = serialise(own)
            except Exception as e:
                raise RoundTripMismatch(f"{where}: serialise raised {type(e).__name__}: {e}",
                                        case=index, command=shown) from e
            if isinstance(back, (bytes, bytearray)):
                back = back.decode("utf-8")
            if isinstance(back, str):
                try:
                    back = json.loads(back)
                except ValueError as e:
                    raise RoundTripMismatch(f"{where}: serialise returned text that is not JSON: {e}",
                                            case=index, command=shown) from e
            diff = first_difference(expected, back)
            if diff is not None:
                path, what = diff
                raise RoundTripMismatch(f"{where}: {path}: {what}", case=index, path=path, command=shown)
            checked += 1
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
    if proc.returncode != 0:
        detail = err.decode("utf-8", "replace").strip()
        raise RuntimeError(f"`{shown}` exited with {proc.returncode}: {detail}")
    return checked
