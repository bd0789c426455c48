"""The pure-Python package: the protocol loop, the body helpers, the subject
runner and the plugin's function references. (body_bytes against the
binary on thousands of cases: python/body_bytes_vs_binary.py.)"""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import ctxgate
from ctxgate.pytest_plugin import Checker, failure_text, function_ref, replay_flags
from ctxgate.subject import load

ROOT = Path(__file__).resolve().parents[2]
TOOL_CALL = {"role": "assistant", "content": None,
             "toolCalls": [{"id": "c1", "name": "read_file", "arguments": {"path": "é.txt"}}]}


def talk(requests, compact=None, estimate=None, **hello):
    """Each request's answer, through serve on in-memory pipes."""
    lines = [(json.dumps(r) if isinstance(r, dict) else r).encode() + b"\n" for r in requests]
    out = io.BytesIO()
    ctxgate.serve(compact, estimate, stdin=lines, stdout=out, **{"name": "t", "version": "1", **hello})
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_hello_says_what_the_subject_claims():
    [hello] = talk([{"op": "hello", "protocol": 1}], compact=lambda c, m: m,
                   invariants=["tool-pairing"], wire_formats=["openai"], content_parts=False)
    assert hello == {"op": "hello", "protocol": 1, "name": "t", "version": "1", "ops": ["compact"],
                     "format": "engine", "contentParts": False, "invariants": ["tool-pairing"],
                     "wireFormats": ["openai"]}
    [hello] = talk([{"op": "hello", "protocol": 1}], compact=lambda c, m: m, estimate=lambda c, m: {"tokens": 0})
    assert hello["ops"] == ["compact", "estimate"]
    # Not given, not said: ctxgate sends content parts, and if the subject
    # faults on them, names the field that opts out (`contentParts`).
    assert "contentParts" not in hello
    [hello] = talk([{"op": "hello", "protocol": 1}], compact=lambda c, m: m, content_parts=True)
    assert hello["contentParts"] is True
    assert "invariants" not in hello and "wireFormats" not in hello


def test_answers_errors_and_faults():
    def compact(cfg, messages):
        if len(messages) == 2:
            raise ctxgate.CannotFit("too big")
        if len(messages) == 3:
            raise ctxgate.InvalidInput("no such role")
        if len(messages) == 4:
            raise KeyError("oops")
        return messages[-1:] if cfg["keepRecent"] == 2 else []

    user = {"role": "user", "content": "hi"}
    answers = talk([{"op": "compact", "id": n, "messages": [user] * n} for n in (1, 2, 3, 4)]
                   + [{"op": "estimate", "id": 5, "messages": []}, "{not json", "[1]",
                      {"op": "compact", "id": 6, "messages": "nope"}], compact=compact)
    assert answers[0] == {"id": 1, "messages": [user]}  # config over SPEC §2's defaults
    assert answers[1]["error"] == {"kind": "cannot_fit", "message": "too big"}
    assert answers[2]["error"] == {"kind": "invalid_input", "message": "no such role"}
    assert answers[3]["error"]["kind"] == "library_error"
    assert answers[3]["error"]["message"].startswith("KeyError: 'oops' (at ") and "test_package.py" in answers[3]["error"]["message"]
    assert answers[4]["error"] == {"kind": "invalid_input",
                                   "message": "unknown op 'estimate' (this subject answers hello, compact)"}
    assert answers[5]["error"]["kind"] == "invalid_input" and answers[5]["id"] is None
    assert answers[6]["error"]["message"] == "a request is a JSON object, not list"
    assert answers[7]["error"]["message"] == "`messages` must be an array of objects"


def test_async_functions_are_awaited():
    async def compact(cfg, messages):
        if len(messages) == 2:
            raise ctxgate.CannotFit("too big")
        return messages[-1:]

    async def estimate(cfg, messages):
        return len(messages)  # the count alone: {"tokens": n}

    user = {"role": "user", "content": "hi"}
    answers = talk([{"op": "compact", "id": 1, "messages": [user]},
                    {"op": "compact", "id": 2, "messages": [user, user]},
                    {"op": "estimate", "id": 3, "messages": [user] * 3}],
                   compact=compact, estimate=estimate)
    assert answers[0] == {"id": 1, "messages": [user]}
    assert answers[1]["error"] == {"kind": "cannot_fit", "message": "too big"}
    assert answers[2] == {"id": 3, "tokens": 3}


def test_generators_are_listed_and_what_is_not_json_is_a_library_error():
    class HumanMessage:  # what a LangChain compactor returns before it converts back
        pass

    def compact(cfg, messages):
        if len(messages) == 2:
            return [HumanMessage()]
        return (m for m in messages)

    user = {"role": "user", "content": "hi"}
    answers = talk([{"op": "compact", "id": 1, "messages": [user]},
                    {"op": "compact", "id": 2, "messages": [user, user]},
                    {"op": "compact", "id": 3, "messages": [user]}], compact=compact)
    assert answers[0] == {"id": 1, "messages": [user]}
    assert answers[1]["id"] == 2 and answers[1]["error"]["kind"] == "library_error"
    assert "not JSON" in answers[1]["error"]["message"] and "HumanMessage" in answers[1]["error"]["message"]
    assert answers[2] == {"id": 3, "messages": [user]}  # served on


def test_serve_needs_a_function():
    with pytest.raises(ValueError, match="compact function, an estimate function or both"):
        talk([], name="t")


def test_body_bytes_is_the_compact_json_of_envelope_and_messages():
    msgs = [{"role": "user", "content": "héllo"}, TOOL_CALL]
    engine = json.dumps({"messages": msgs}, ensure_ascii=False, separators=(",", ":")).encode()
    assert ctxgate.body_bytes(msgs) == len(engine)
    with_envelope = json.dumps({"model": "m", "messages": msgs}, ensure_ascii=False, separators=(",", ":"))
    assert ctxgate.body_bytes(msgs, {"envelope": {"model": "m"}}) == len(with_envelope.encode())
    # openai writes the call as a function with string arguments: longer than engine's
    assert ctxgate.body_bytes(msgs, {"wireFormat": "openai"}) > len(engine)
    with pytest.raises(ValueError, match="unknown wireFormat 'gemini'"):
        ctxgate.body_bytes(msgs, {"wireFormat": "gemini"})


def test_tool_calls_floor_counts_the_serialised_calls():
    calls = json.dumps(TOOL_CALL["toolCalls"], ensure_ascii=False, separators=(",", ":")).encode()
    assert ctxgate.tool_calls_floor(TOOL_CALL, 4) == -(-len(calls) // 4)
    assert ctxgate.tool_calls_floor(TOOL_CALL, 1) == len(calls)
    assert ctxgate.tool_calls_floor({"role": "assistant", "content": "x", "toolCalls": []}) == 0
    assert ctxgate.tool_calls_floor({"role": "user", "content": "x" * 100}) == 0


def test_python_minus_m_ctxgate_subject_serves_a_function(tmp_path):
    (tmp_path / "mine.py").write_text("def compact(cfg, m):\n    return m[-1:]\n")
    requests = b'{"op":"hello","protocol":1}\n{"op":"compact","id":1,"messages":[{"role":"user","content":"a"}]}\n'
    done = subprocess.run([sys.executable, "-m", "ctxgate.subject", "mine:compact", "--version", "2",
                           "--invariants", "tool-pairing,progress", "--text-only"],
                          input=requests, capture_output=True, cwd=tmp_path, check=True)
    hello, answer = [json.loads(line) for line in done.stdout.splitlines()]
    assert hello["name"] == "mine:compact" and hello["version"] == "2" and hello["contentParts"] is False
    assert hello["invariants"] == ["tool-pairing", "progress"]
    assert answer == {"id": 1, "messages": [{"role": "user", "content": "a"}]}
    bad = subprocess.run([sys.executable, "-m", "ctxgate.subject", "mine:nothing"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "'mine:nothing': mine has no nothing" in bad.stderr


def test_load_names_what_it_cannot_find(tmp_path):
    with pytest.raises(LookupError, match="expected module:function"):
        load("just_a_module")
    with pytest.raises(LookupError, match="cannot import no_such_module_29"):
        load("no_such_module_29:f")
    with pytest.raises(LookupError, match="no file"):
        load(str(tmp_path / "absent.py") + ":f")
    (tmp_path / "m.py").write_text("X = 1\ndef f(c, m):\n    return m\n")
    assert load(f"{tmp_path / 'm.py'}:f")({}, [1]) == [1]
    with pytest.raises(LookupError, match="X is not callable"):
        load(f"{tmp_path / 'm.py'}:X")


def test_check_refuses_what_a_subject_process_cannot_import():
    with pytest.raises(TypeError, match="compact must be a module-level function"):
        function_ref(lambda c, m: m, "compact")

    def local(c, m):
        return m

    with pytest.raises(TypeError, match="module-level"):
        function_ref(local, "estimate")
    ref, path = function_ref(replay_flags, "compact")  # (any module-level function of two arguments)
    assert ref == "ctxgate.pytest_plugin:replay_flags"
    assert (Path(path) / "ctxgate" / "pytest_plugin.py").is_file()
    command = Checker(Path("unused")).subject_command(replay_flags, name="n", content_parts=False)
    assert "-m ctxgate.subject ctxgate.pytest_plugin:replay_flags --path" in command
    assert command.endswith("--name n --version 0 --text-only")


def test_failure_text_keeps_each_failure_and_the_last_line():
    report = ("ctxgate check — subject s\ninvariant  pass\n\nFAILED tool-pairing (case 0)\n  why\n"
              "  replay: ctxgate replay f.json --subject s\n\nFAULT crash (1 case(s))\n  died\n\n"
              "FAILED: 1 invariant(s) broken, 1 fault kind(s); reproduce the run with --seed 7\n")
    text = failure_text(report)
    assert "FAILED tool-pairing (case 0)\n  why\n  replay: ctxgate replay f.json --subject s" in text
    assert "FAULT crash (1 case(s))\n  died" in text
    assert text.endswith("reproduce the run with --seed 7") and "invariant  pass" not in text


def test_the_adapters_copies_equal_the_package_modules():
    """python/sync.py writes them; edit the package's files, not the copies."""
    for source, copy in (("python/src/ctxgate/wire.py", "adapters/python-minimal/wire.py"),):
        assert (ROOT / source).read_bytes() == (ROOT / copy).read_bytes(), f"run python3 python/sync.py: {copy}"
