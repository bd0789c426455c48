#!/usr/bin/env python3
"""A subject with its own way of ending, for ctxgate's end-of-run tests.

Usage: ending.py MODE DIR

It answers hello, and every compact with the history unchanged (it claims
only tool-pairing). Each process writes its pid to DIR/pids (one a line).
When its stdin closes, per MODE:
  atexit    it exits; its atexit hook takes 0.3 s, then writes DIR/atexit-PID
            (what a coverage tool or `time` around a subject does at exit)
  term      it ignores the end of its input and sleeps; on SIGTERM it
            writes DIR/term-PID and exits
  stubborn  it ignores the end of its input and SIGTERM, and sleeps, with a
            child of its own that ignores SIGTERM too (its pid in DIR/pids)
  groups    at its start, ten children, each in a process group of its own,
            with an empty environment (no marker), ignoring SIGTERM, sleep
            (their pids in DIR/pids); it holds 768 MiB, written, so that its
            death takes a while; it answers a request each 0.1 s
"""
import atexit
import json
import os
import signal
import subprocess
import sys
import time

mode, out = sys.argv[1], sys.argv[2]


def note(name, text=""):
    with open(os.path.join(out, name), "a") as f:
        f.write(text)


note("pids", f"{os.getpid()}\n")
if mode == "atexit":
    def at_exit():
        time.sleep(0.3)
        note(f"atexit-{os.getpid()}", "done\n")
    atexit.register(at_exit)
elif mode == "term":
    def on_term(signum, frame):
        note(f"term-{os.getpid()}", "SIGTERM\n")
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
elif mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c",
                              "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    note("pids", f"{child.pid}\n")

elif mode == "groups":
    ballast = b"x" * (768 << 20)
    for _ in range(10):
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            os.execve(sys.executable, [sys.executable, "-c",
                      "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"], {})
        note("pids", f"{pid}\n")

for line in sys.stdin:
    if mode == "groups":
        time.sleep(0.1)
    req = json.loads(line)
    if req.get("op") == "hello":
        print(json.dumps({"op": "hello", "protocol": 1, "name": f"ending-{mode}", "version": "0",
                          "ops": ["compact"], "invariants": ["tool-pairing"]}), flush=True)
        continue
    print(json.dumps({"id": req["id"], "messages": req["messages"]}), flush=True)

if mode in ("term", "stubborn"):
    while True:
        time.sleep(1)
