"""The serve loop answers every request line, whatever it holds, and goes on
(issue 44 §3): a battery of hostile requests and hostile compactors fed to
`ctxgate.serve` in a process of its own over real pipes, one line at a
time. Each request gets exactly one answer line that is strict JSON (UTF-8,
no NaN, no lone surrogate, nested less than the binary reads) with the kind
its class calls for, and the loop answers a plain request afterwards."""

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

from ctxgate.wire import MAX_DEPTH, json_problem

SRC = Path(__file__).resolve().parents[1] / "src"

# The subject: compact and estimate do what the first message's content says.
SUBJECT = r'''
import asyncio, os, sys
sys.path.insert(0, sys.argv[1])
import ctxgate

class StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("no str for you")

class CannotFitStrRaises(ctxgate.CannotFit):
    def __str__(self):
        raise ValueError("nor for you")

class StrNotStr(Exception):
    def __str__(self):
        return 42

class ReprRaises:
    def __repr__(self):
        raise RuntimeError("no repr")

class Base(BaseException):
    pass

class UnreadableList(list):
    def __getitem__(self, i):
        raise RuntimeError("unreadable")
    def __iter__(self):
        raise RuntimeError("unreadable")

def deep(n):
    v = "bottom"
    for _ in range(n):
        v = [v]
    return v

def recurse(n):
    return recurse(n + 1) + 1

def cycle():
    c = []
    c.append(c)
    return c

def gen_raises(messages):
    yield messages[0]
    raise ValueError("in the middle of the generator")

async def async_nan(messages):
    return [{"role": "user", "content": "x", "n": float("nan")}]

def user(**extra):
    return [{"role": "user", "content": "x", **extra}]

def raise_(e):
    raise e

COMPACT = {
    "echo": lambda m: m,
    "deep-answer": lambda m: user(d=deep(100_000)),
    "deep-answer-128": lambda m: user(d=deep(128 - 3)),  # answer 1, messages 2, message 3
    "deep-answer-127": lambda m: user(d=deep(127 - 3)),
    "nan": lambda m: user(n=float("nan")),
    "inf": lambda m: user(n=float("inf")),
    "-inf": lambda m: user(n=float("-inf")),
    "surrogate": lambda m: [{"role": "user", "content": "\ud800"}],
    "surrogate-key": lambda m: user(**{"k\udfff": 1}),
    "int-key": lambda m: [{"role": "user", "content": "x", 1: 2}],
    "object": lambda m: [object()],
    "repr-raises": lambda m: [ReprRaises()],
    "bytes": lambda m: user(b=b"\xff"),
    "cycle": lambda m: cycle(),
    "unreadable-list": lambda m: UnreadableList([1]),
    "str-raises": lambda m: raise_(StrRaises()),
    "str-not-str": lambda m: raise_(StrNotStr()),
    "cannot-fit-str-raises": lambda m: raise_(CannotFitStrRaises()),
    "base-exception": lambda m: raise_(Base("a BaseException of its own")),
    "generator-exit": lambda m: raise_(GeneratorExit()),
    "cancelled": lambda m: raise_(asyncio.CancelledError()),
    "recursion": lambda m: recurse(0),
    "memory": lambda m: raise_(MemoryError()),
    "huge-message": lambda m: raise_(ValueError("x" * 5_000_000)),
    "surrogate-message": lambda m: raise_(ValueError("bad \ud800 text")),
    "surrogate-cannot-fit": lambda m: raise_(ctxgate.CannotFit("too big \udc00")),
    "dict": lambda m: {"messages": m},
    "str": lambda m: "messages",
    "none": lambda m: None,
    "int": lambda m: 3,
    "generator": lambda m: (x for x in m),
    "generator-raises": lambda m: gen_raises(m),
    "async-nan": async_nan,
    "print": lambda m: (print("noise on stdout"), os.write(1, b"raw noise on fd 1\n"), m)[-1],
}

ESTIMATE = {
    "count": lambda m: 7,
    "none": lambda m: None,
    "str": lambda m: "seven",
    "bool": lambda m: True,
    "list": lambda m: [1, 2],
    "nan": lambda m: float("nan"),
    "id": lambda m: {"tokens": 1, "id": "forged"},
    "object": lambda m: {"tokens": object()},
}

def what(messages):
    return messages[0].get("content") if messages else "echo"

def compact(config, messages):
    return COMPACT[what(messages)](messages)

def estimate(config, messages):
    return ESTIMATE[what(messages)](messages)

ctxgate.serve(compact, estimate, name="hostile", version="1")
'''


def request(op="compact", rid=1, content="echo", **extra):
    line = {"op": op, "id": rid, "messages": [{"role": "user", "content": content}], **extra}
    return json.dumps(line).encode()


def deep_text(n):
    return "[" * n + "]" * n


# (line, the answer's error kind or None for an answer, a piece of its message)
HOSTILE_REQUESTS = [
    (b"not json", "invalid_input", "not JSON"),
    (b"\xff\xfe{}", "invalid_input", "not UTF-8 (byte 0"),
    (b'{"op":"compact","id":1,"messages":[{"role":"user","content":"\xed\xa0\x80"}]}', "invalid_input",
     "not UTF-8"),  # a surrogate written as UTF-8 bytes
    (b"[1,2]", "invalid_input", "a request is a JSON object, not list"),
    (b"3", "invalid_input", "not int"),
    (b'"hello"', "invalid_input", "not str"),
    (b"null", "invalid_input", "not NoneType"),
    (b"{}", "invalid_input", "unknown op None"),
    (b'{"op":"hello"} trailing', "invalid_input", "not JSON"),
    (b'{"op":"compact","id":1,"messages":[{"role":"user","content":"a\x00b"}]}', "invalid_input", "not JSON"),
    (b'{"op":"compact","id":5,"messages":[{"role":"user","content":"\\ud800"}]}', "invalid_input",
     "request.messages[0].content: a lone surrogate (U+D800)"),
    (b'{"op":"compact","id":"\\udc00","messages":[]}', "invalid_input", "request.id: a lone surrogate"),
    (b'{"op":"compact","id":6,"messages":[],"config":{"k\\udbff":1}}', "invalid_input",
     "a lone surrogate in this key"),
    (('{"op":"compact","id":7,"messages":[' + deep_text(100_000) + "]}").encode(), "invalid_input",
     "nested deeper than 127 levels"),
    (('{"op":"compact","id":8,"messages":[' + deep_text(MAX_DEPTH) + "]}").encode(), "invalid_input",
     "nested 128 levels deep"),
    (b'{"op":"compact","id":9,"config":{"threshold":NaN},"messages":[]}', "invalid_input", "NaN is not JSON"),
    (b'{"op":"compact","id":9,"config":{"threshold":Infinity},"messages":[]}', "invalid_input",
     "Infinity is not JSON"),
    (b'{"op":"compact","id":9,"config":{"threshold":-Infinity},"messages":[]}', "invalid_input",
     "-Infinity is not JSON"),
    (b'{"op":3,"id":1,"messages":[]}', "invalid_input", "unknown op 3"),
    (b'{"op":["compact"],"id":1,"messages":[]}', "invalid_input", "unknown op ['compact']"),
    (b'{"op":{"a":1},"id":1,"messages":[]}', "invalid_input", "unknown op"),
    (b'{"op":"nope","id":1,"messages":[]}', "invalid_input", "unknown op 'nope'"),
    (('{"op":"' + "x" * 1_000_000 + '","id":1,"messages":[]}').encode(), "invalid_input", "more characters"),
    (request(rid={"a": [1]}), None, None),
    (request(rid=[1, 2]), None, None),
    (request(rid=1.5), None, None),
    (request(rid=10 ** 40), None, None),
    (request(rid=True), None, None),
    (request(rid=None), None, None),
    (request(config=[]), "invalid_input", "`config` must be an object, not list"),
    (request(config="x"), "invalid_input", "`config` must be an object, not str"),
    (request(config=3), "invalid_input", "`config` must be an object, not int"),
    (request(config=None), None, None),  # SPEC §2's defaults
    (b'{"op":"compact","id":1}', "invalid_input", "`messages` must be an array of objects"),
    (b'{"op":"compact","id":1,"messages":"x"}', "invalid_input", "`messages` must be an array of objects"),
    (b'{"op":"compact","id":1,"messages":[1]}', "invalid_input", "`messages` must be an array of objects"),
    (b'{"op":"compact","id":1,"messages":[[]]}', "invalid_input", "`messages` must be an array of objects"),
    (request(content="z" * 20_000_000), "library_error", "KeyError"),  # 20 MB: read, answered
    (b"x" * 5_000_000, "invalid_input", "not JSON"),
    (b'{"op":"hello","protocol":1}\r', None, None),
]

# (the first message's content, op, the answer's kind or None, a piece of its message)
HOSTILE_FUNCTIONS = [
    ("deep-answer", "compact", "library_error", "answer.messages[0].d[0]"),
    ("deep-answer-128", "compact", "library_error", "nested 128 levels deep"),
    ("deep-answer-127", "compact", None, None),
    ("nan", "compact", "library_error", "answer.messages[0].n: nan is not a JSON number"),
    ("inf", "compact", "library_error", "inf is not a JSON number"),
    ("-inf", "compact", "library_error", "-inf is not a JSON number"),
    ("surrogate", "compact", "library_error", "answer.messages[0].content: a lone surrogate (U+D800)"),
    ("surrogate-key", "compact", "library_error", "a lone surrogate in this key"),
    ("int-key", "compact", "library_error", "a key that is not a string (int 1)"),
    ("object", "compact", "library_error", "answer.messages[0]: a object is not JSON"),
    ("repr-raises", "compact", "library_error", "a ReprRaises is not JSON (<ReprRaises>)"),
    ("bytes", "compact", "library_error", "a bytes is not JSON"),
    ("cycle", "compact", "library_error", "or the value holds itself"),
    ("unreadable-list", "compact", "library_error", "RuntimeError: unreadable"),
    ("str-raises", "compact", "library_error", "StrRaises: <str() of the exception raised RuntimeError>"),
    ("str-not-str", "compact", "library_error", "StrNotStr: <str() of the exception raised TypeError>"),
    ("cannot-fit-str-raises", "compact", "cannot_fit", "<str() of the exception raised ValueError>"),
    ("base-exception", "compact", "library_error", "Base: a BaseException of its own"),
    ("generator-exit", "compact", "library_error", "GeneratorExit"),
    ("cancelled", "compact", "library_error", "CancelledError"),
    ("recursion", "compact", "library_error", "RecursionError"),
    ("memory", "compact", "library_error", "MemoryError"),
    ("huge-message", "compact", "library_error", "(4996000 more characters)"),
    ("surrogate-message", "compact", "library_error", "bad \\ud800 text"),
    ("surrogate-cannot-fit", "compact", "cannot_fit", "too big \\udc00"),
    ("dict", "compact", "library_error", "compact returned dict"),
    ("str", "compact", "library_error", "compact returned str 'messages', not a list of messages"),
    ("none", "compact", "library_error", "compact returned NoneType"),
    ("int", "compact", "library_error", "compact returned int 3"),
    ("generator", "compact", None, None),
    ("generator-raises", "compact", "library_error", "ValueError: in the middle of the generator"),
    ("async-nan", "compact", "library_error", "nan is not a JSON number"),
    ("print", "compact", None, None),
    ("count", "estimate", None, None),
    ("none", "estimate", "library_error", "estimate returned NoneType"),
    ("str", "estimate", "library_error", "estimate returned str 'seven'"),
    ("bool", "estimate", "library_error", "estimate returned bool True"),
    ("list", "estimate", "library_error", "estimate returned list"),
    ("nan", "estimate", "library_error", "answer.tokens: nan"),
    ("id", "estimate", None, None),
    ("object", "estimate", "library_error", "answer.tokens: a object is not JSON"),
]


class Loop:
    """A serve process spoken to one line at a time, each answer awaited
    with a deadline (a dead or silent loop fails the test, never hangs it)."""

    def __init__(self, tmp_path):
        (tmp_path / "hostile.py").write_text(SUBJECT)
        self.proc = subprocess.Popen([sys.executable, str(tmp_path / "hostile.py"), str(SRC)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, line):
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        try:
            answer = self.lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"no answer in 60 s to {line[:200]!r}") from None
        assert answer is not None, f"the loop died on {line[:200]!r}: {b''.join(self.stderr)[-2000:]!r}"
        return strict_json(answer)

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        assert self.lines.get(timeout=10) is None, "an answer nobody asked for"
        return code


def strict_json(line):
    """The answer line as JSON read as strictly as the binary reads it."""
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    text = line.decode("utf-8")  # strict: no invalid byte, no encoded surrogate

    def refuse(name):
        raise AssertionError(f"{name} on the wire")

    value = json.loads(text, parse_constant=refuse)
    assert json_problem(value) is None, json_problem(value)
    assert isinstance(value, dict)
    return value


def expect(answer, kind, piece, context):
    if kind is None:
        assert "error" not in answer, (context, answer)
    else:
        assert answer.get("error", {}).get("kind") == kind, (context, answer)
        assert piece in answer["error"]["message"], (context, piece, answer["error"]["message"][:500])


def test_every_hostile_line_gets_one_answer_and_the_loop_goes_on(tmp_path):
    loop = Loop(tmp_path)
    assert loop.ask(b'{"op":"hello","protocol":1}')["name"] == "hostile"
    for line, kind, piece in HOSTILE_REQUESTS:
        expect(loop.ask(line), kind, piece, line[:100])
    # The answer echoes the request's id, whatever JSON it is.
    assert loop.ask(request(rid={"a": [1]}))["id"] == {"a": [1]}
    assert loop.ask(request(rid=10 ** 40))["id"] == 10 ** 40
    assert loop.ask(b'{"op":"compact","id":"\\udc00","messages":[]}')["id"] is None  # it cannot be echoed
    assert loop.ask(request(content="x", rid=3))["id"] == 3
    # Still alive: a plain request gets its plain answer, and stdin's end ends the loop.
    assert loop.ask(request(rid=99)) == {"id": 99, "messages": [{"role": "user", "content": "echo"}]}
    assert loop.close() == 0


def test_every_hostile_function_result_is_answered_and_the_loop_goes_on(tmp_path):
    loop = Loop(tmp_path)
    for n, (content, op, kind, piece) in enumerate(HOSTILE_FUNCTIONS):
        answer = loop.ask(request(op=op, rid=n, content=content))
        assert answer["id"] == n, (content, answer)
        expect(answer, kind, piece, f"{op} {content}")
        if kind == "library_error" and piece and "answer." not in piece and "returned" not in piece:
            assert "(at " in answer["error"]["message"] or "not JSON" in answer["error"]["message"], answer
    assert loop.ask(request(op="estimate", rid=1, content="id")) == {"id": 1, "tokens": 1}
    assert loop.ask(request(rid=99)) == {"id": 99, "messages": [{"role": "user", "content": "echo"}]}
    assert loop.close() == 0
    # A library's print and its raw writes to fd 1 went to stderr, not onto the protocol.
    stderr = b"".join(loop.stderr)
    assert b"noise on stdout" in stderr and b"raw noise on fd 1" in stderr


def test_the_loop_ends_quietly_when_the_harness_is_gone(tmp_path):
    """A closed stdout (the harness died) ends the loop without a traceback."""
    (tmp_path / "hostile.py").write_text(SUBJECT)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "hostile.py"), str(SRC)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    _, stderr = proc.communicate(request() + b"\n" + request() + b"\n", timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in stderr, stderr.decode(errors="replace")
