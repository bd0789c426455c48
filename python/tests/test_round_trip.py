"""ctxgate.round_trip: `ctxgate gen`'s cases through an adapter's own
conversion and back, equal by value (SPEC §5), the first difference named
by its path; and its equality, on values made to differ in each way."""

import copy
import json
from decimal import Decimal

import pytest

import ctxgate
from ctxgate.round_trip import first_difference


class Message:
    """An adapter's own message type: a role, text, and what it keeps."""

    def __init__(self, m, keep_extra=True):
        self.role = m["role"]
        self.content = m.get("content", "<absent>")
        self.rest = {k: v for k, v in m.items() if k not in ("role", "content")} if keep_extra else {
            k: v for k, v in m.items() if k in ("toolCalls", "toolCallId")}

    def to_engine(self):
        out = {"role": self.role}
        if self.content != "<absent>":
            out["content"] = self.content
        out.update(self.rest)
        return out


def faithful(messages):
    return [Message(m) for m in messages]


def back(own):
    return [m.to_engine() for m in own]


def test_a_faithful_conversion_comes_back_equal():
    assert ctxgate.round_trip(faithful, back, cases=120, seed=3) == 120


def test_json_text_from_serialise_is_read_back():
    # Key order changed and numbers re-spelled (json.dumps writes 4 as 4,
    # a float as Python does): equal by value all the same.
    def as_text(own):
        return json.dumps([dict(reversed(list(m.to_engine().items()))) for m in own], sort_keys=True)

    assert ctxgate.round_trip(faithful, as_text, cases=60, seed=4) == 60
    assert ctxgate.round_trip(faithful, lambda own: as_text(own).encode(), cases=10, seed=4) == 10


def test_a_dropped_field_is_named_with_its_case_and_path():
    # Keeps role, content and the tool fields only: `pinned` and the extra
    # fields ctxgate sends are lost.
    lossy = lambda messages: [Message(m, keep_extra=False) for m in messages]  # noqa: E731
    with pytest.raises(ctxgate.RoundTripMismatch) as e:
        ctxgate.round_trip(lossy, back, cases=200, seed=3)
    err = e.value
    assert isinstance(err, AssertionError)
    assert err.path.startswith("messages[") and err.path.count(".") == 1, err.path
    field = err.path.split(".")[1]
    assert field not in ("role", "content", "toolCalls", "toolCallId")
    assert f"case {err.case} of `ctxgate gen --cases 200 --seed 3`" in str(err)
    assert f"{err.path}: missing (expected " in str(err)
    # The whole command that prints the case, pipe and all, is one code span
    # to copy (as python/README.md and the npm package's roundTrip write it).
    assert f"(print it: `ctxgate gen --cases 200 --seed 3 | sed -n {err.case + 1}p`)" in str(err)


def test_a_changed_text_is_named_deep_in_its_message():
    def upper_first_text(own):
        out = back(own)
        for m in out:
            if isinstance(m.get("content"), str) and m["content"]:
                m["content"] = m["content"].upper() if m["content"] != m["content"].upper() else m["content"] + "!"
                break
        return out

    with pytest.raises(ctxgate.RoundTripMismatch) as e:
        ctxgate.round_trip(faithful, upper_first_text, cases=5, seed=1)
    assert e.value.case == 0 and e.value.path.endswith(".content"), str(e.value)
    assert "expected \"" in str(e.value) and ", got \"" in str(e.value)


def test_a_text_only_adapter_passes_on_text_only_cases_and_says_where_parts_break_it():
    # Written before images: content is a string (or none), and that is all.
    def text_only(messages):
        for m in messages:
            c = m.get("content")
            if c is not None and not isinstance(c, str):
                raise TypeError(f"content must be a string, found {type(c).__name__}")
        return faithful(messages)

    assert ctxgate.round_trip(text_only, back, cases=300, seed=8, text_only=True) == 300
    with pytest.raises(ctxgate.RoundTripMismatch) as e:
        ctxgate.round_trip(text_only, back, cases=300, seed=8)
    assert "parse raised TypeError: content must be a string, found list" in str(e.value)
    assert isinstance(e.value.__cause__, TypeError)


def test_parse_gets_a_copy_of_its_own():
    def destructive(messages):
        own = copy.deepcopy(messages)
        messages.clear()  # what parse does with its argument is its business
        return own

    assert ctxgate.round_trip(destructive, lambda own: own, cases=20, seed=2) == 20


def test_not_json_text_and_a_bad_gen_are_said():
    with pytest.raises(ctxgate.RoundTripMismatch, match="serialise returned text that is not JSON"):
        ctxgate.round_trip(faithful, lambda own: "[{", cases=1)
    with pytest.raises(RuntimeError, match="exited with 2"):
        ctxgate.round_trip(faithful, back, cases=1, config="/no/such/config.json")
    with pytest.raises(TypeError, match="both must be functions"):
        ctxgate.round_trip(faithful, None)


@pytest.mark.parametrize("expected, got, path, what", [
    ({"a": 1}, {"a": 1.0}, None, None),
    ({"a": 1.5}, {"a": Decimal("1.50")}, None, None),
    ({"a": 1, "b": [True, None, "x"]}, {"b": [True, None, "x"], "a": 1}, None, None),
    ({"a": True}, {"a": 1}, "messages.a", "expected true, got 1"),
    ({"a": 0}, {"a": False}, "messages.a", "expected 0, got false"),
    ({"a": None}, {}, "messages.a", "missing (expected null)"),
    ({}, {"a": None}, "messages.a", "not expected (got null)"),
    ({"a": 2 ** 53 + 1}, {"a": float(2 ** 53 + 1)}, "messages.a", "expected 9007199254740993, got 9007199254740992.0"),
    ([1, [2, "x"]], [1, [2, "y"]], "messages[1][1]", 'expected "x", got "y"'),
    ([1, 2, 3], [1, 2], "messages", "expected an array of 3 item(s), got 2"),
    ([1, 2, 3], [1, 5], "messages[1]", "expected 2, got 5"),
    ({"a b": "x"}, {"a b": ["x"]}, 'messages["a b"]', 'expected "x", got ["x"]'),
    ({"z": 1, "a": 2}, {"z": 2, "a": 3}, "messages.z", "expected 1, got 2"),
    ({"z": 1, "a": 2}, {"a": 2}, "messages.z", "missing (expected 1)"),
    ("\u2028", "\u2028", None, None),
])
def test_equality_is_specs(expected, got, path, what):
    diff = first_difference(expected, got)
    assert diff == (None if path is None else (path, what))


def test_deep_values_do_not_overflow():
    def nest(leaf, extra):
        v = leaf
        for _ in range(5000):
            v = [v, extra] if extra else [v]
        return v

    assert first_difference(nest("x", None), nest("x", None)) is None
    path, what = first_difference(nest("x", None), nest("y", None))
    assert what == 'expected "x", got "y"' and "more)" in path
    assert first_difference(nest("x", None), nest("x", 1))[1] == "expected an array of 1 item(s), got 2"
