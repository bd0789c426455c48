"""body_bytes refuses what the binary refuses, by the same rules (issue 44
§3): NaN and ±Infinity, a lone surrogate in a string or a key, nesting as
deep as MAX_DEPTH (128: src/model/document.rs) — and measures what it
reads. Each case is JSON text (Python's json reads NaN and lone surrogates
where the binary does not) handed to `ctxgate body` as a history file and
an envelope file, and to body_bytes as what Python's json makes of it."""

import json
import subprocess

import pytest

import ctxgate
from ctxgate.wire import MAX_DEPTH, NotJSON

FORMATS = ("engine", "openai", "anthropic")


def nested(levels):
    """JSON text of `levels` arrays, one in the other."""
    return "[" * levels + "1" + "]" * levels


def user(extra):
    return '[{"role":"user","content":"hi"' + extra + "}]"


def call(arguments):
    return ('[{"role":"user","content":"go"},{"role":"assistant","content":null,"toolCalls":'
            '[{"id":"c1","name":"f","arguments":' + arguments + '}]},'
            '{"role":"tool","toolCallId":"c1","content":"ok"}]')


# A message sits at level 2 of a history (the messages array is level 1):
# a field of it holding n nested arrays reaches level 2 + n.
EDGE = MAX_DEPTH - 1 - 2
HISTORIES = {
    "a lone high surrogate": '[{"role":"user","content":"a\\ud800b"}]',
    "a lone low surrogate": '[{"role":"user","content":"\\udc00"}]',
    "a surrogate pair": '[{"role":"user","content":"\\ud83d\\ude00 fine"}]',
    "a lone surrogate in a key": user(',"k\\udbff":1'),
    "a lone surrogate in a part": '[{"role":"user","content":[{"type":"text","text":"\\ud800"}]}]',
    "NaN": user(',"n":NaN'),
    "Infinity": user(',"n":Infinity'),
    "-Infinity": user(',"n":-Infinity'),
    "NaN in tool arguments": call('{"x":NaN}'),
    "a lone surrogate in tool arguments": call('{"x":"\\udfff"}'),
    "127 levels (the most the binary reads)": user(',"d":' + nested(EDGE)),
    "128 levels": user(',"d":' + nested(EDGE + 1)),
    "127 levels in tool arguments": call(nested(EDGE - 2)),  # (toolCalls 3, a call 4: arguments at 5)
    "128 levels in tool arguments": call(nested(EDGE - 1)),
    "128 levels in a part": '[{"role":"user","content":[{"type":"text","text":"x","d":' + nested(EDGE - 1) + "}]}]",
    "500 levels": user(',"d":' + nested(500)),
}

# The envelope is level 1, as `--envelope FILE` reads it (and the npm
# package's bodyBytes): a field of it holding n nested arrays reaches 1 + n.
ENVELOPES = {
    "NaN in the envelope": '{"temperature":NaN}',
    "a lone surrogate in the envelope": '{"model":"\\ud800"}',
    "a lone surrogate in an envelope key": '{"\\udc00":1}',
    "127 levels in the envelope": '{"d":' + nested(MAX_DEPTH - 1 - 1) + "}",
    "128 levels in the envelope": '{"d":' + nested(MAX_DEPTH - 1) + "}",
}


def binary_body(tmp_path, history, config):
    """`ctxgate body`'s size of history in config's wireFormat with its
    envelope, or None when it refuses them (exit 2)."""
    config = json.loads(config)  # (wireFormat and envelope, as this test writes them)
    (tmp_path / "history.json").write_text(history)
    command = [ctxgate.binary(), "body", "--format", "engine", "--wire-format", config["wireFormat"]]
    if "envelope" in config:
        (tmp_path / "envelope.json").write_text(config["envelope"])
        command += ["--envelope", str(tmp_path / "envelope.json")]
    done = subprocess.run(command + [str(tmp_path / "history.json")], capture_output=True)
    assert done.returncode in (0, 2), done.stderr
    return (len(done.stdout) - 1 if done.returncode == 0 else None), done.stderr.decode(errors="replace")


def python_body(history, config):
    config = json.loads(config)
    if "envelope" in config:
        config["envelope"] = json.loads(config["envelope"])
    try:
        return ctxgate.body_bytes(json.loads(history), config), ""
    except NotJSON as e:
        return None, str(e)


@pytest.fixture(scope="module")
def has_binary():
    try:
        ctxgate.binary()
    except FileNotFoundError as e:
        pytest.skip(str(e))


def agree(tmp_path, history, config, name):
    theirs, their_error = binary_body(tmp_path, history, config)
    ours, our_error = python_body(history, config)
    assert ours == theirs, (f"{name}: body_bytes {ours} ({our_error or 'accepted'}), "
                            f"the binary {theirs} ({their_error.strip() or 'accepted'})")
    return ours, our_error


@pytest.mark.parametrize("name", HISTORIES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_body_bytes_refuses_the_histories_the_binary_refuses(tmp_path, has_binary, name, fmt):
    size, error = agree(tmp_path, HISTORIES[name], json.dumps({"wireFormat": fmt}), name)
    accepted = name.startswith(("a surrogate pair", "127 levels"))
    assert (size is not None) == accepted, (name, error)
    if not accepted:
        assert error.startswith("messages[") and ("surrogate" in error or "not a JSON number" in error
                                                  or "nested 128 levels deep" in error), error


@pytest.mark.parametrize("name", ENVELOPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_body_bytes_refuses_the_envelopes_the_binary_refuses(tmp_path, has_binary, name, fmt):
    config = json.dumps({"wireFormat": fmt, "envelope": ENVELOPES[name]})  # the envelope as text
    size, error = agree(tmp_path, '[{"role":"user","content":"hi"}]', config, name)
    assert (size is not None) == name.startswith("127 levels"), (name, error)
    if size is None:
        assert error.startswith("config.envelope"), error


def test_what_body_bytes_refuses_is_named():
    deep = [1]
    for _ in range(200):
        deep = [deep]
    loop = []
    loop.append(loop)
    for messages, config, said in [
        ([{"role": "user", "content": "x", "n": float("nan")}], None, "messages[0].n: nan is not a JSON number"),
        ([{"role": "user", "content": "ok"}, {"role": "user", "content": "\ud800"}], None,
         "messages[1].content: a lone surrogate (U+D800)"),
        ([{"role": "user", "content": "x", "a b\n": {"\udc00": 1}}], None,
         'messages[0]["a b\\n"]["\\udc00"]: a lone surrogate in this key'),
        ([{"role": "user", "content": "x", 7: 1}], None, "messages[0]: a key that is not a string (int 7)"),
        ([{"role": "user", "content": "x", "s": {1}}], None, "messages[0].s: a set is not JSON ({1})"),
        ([{"role": "user", "content": "x", "d": deep}], None, "…(118 more)…[0][0][0][0]: nested 128 levels deep"),
        ([{"role": "user", "content": "x", "loop": loop}], None, "or the value holds itself"),
        ([{"role": "user", "content": "x"}], {"envelope": {"t": float("inf")}}, "config.envelope.t: inf"),
        ([{"role": "user", "content": "x"}], {"envelope": []}, "config.envelope must be an object, found list"),
        ([{"role": "user", "content": "x"}], [], "config must be an object, found list"),
        ("not a list", None, "messages must be a list of message objects, found str"),
        ([["role", "user"]], None, "messages[0] must be a message object, found list"),
    ]:
        for fmt in FORMATS:
            with pytest.raises(NotJSON) as e:
                ctxgate.body_bytes(messages, {**(config or {}), "wireFormat": fmt}
                                   if isinstance(config, dict) or config is None else config)
            assert said in str(e.value), (fmt, str(e.value))
    assert issubclass(NotJSON, ValueError)
