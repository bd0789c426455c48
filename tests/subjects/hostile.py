#!/usr/bin/env python3
"""Subjects that attack the harness, for tests/hostile.rs.

Usage: hostile.py KIND MARKER

Each answers hello (claiming only no-premature-compaction) and, unless its
KIND says otherwise, answers compact with the history unchanged. MARKER is
put in the command line of every process it leaves behind, so that a test
can scan /proc for survivors.

  closed-stdout   after the hello, closes its stdout and reads stdin for ever
  daemon          double-forks a grandchild into its own session (setsid)
                  that sleeps for an hour; a second one with an emptied
                  environment; then crashes on the 2nd compact, so that
                  every restart leaves more
  unsolicited     answers the 2nd compact twice (an answer nobody asked for)
  hang            never answers a compact
  escapes         a hello name and stderr full of terminal escapes
  error-beside    answers every compact with its history handed back byte
                  for byte *and* an error cannot_fit: no answer at all
  long-words      a hello name and version of a megabyte each, and every
                  compact answered cannot_fit with a message of 2 MB
  unended         writes its answers without their line break (and waits)
  per-message-off also estimates, generously, with one perMessage figure
                  too many: figures that fit no message
"""
import json
import os
import sys
import time

kind, marker = sys.argv[1], sys.argv[2]
sys.stdin.reconfigure(encoding="utf-8")
sys.stdout.reconfigure(encoding="utf-8")


def sleeper(clear_env):
    """A grandchild in a session of its own, sleeping for an hour."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            env = {} if clear_env else dict(os.environ)
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(3600)", marker], env)
        os._exit(0)


if kind == "daemon":
    sleeper(False)
    sleeper(True)
    os.wait()
    os.wait()

name = "hostile-" + kind
if kind == "escapes":
    name = "evil\x1b[31m\x1b]0;pwned\x07\nFAKE: OK"
LONG = "\u202e" + "W" * 1_000_000 + "TAIL"
if kind == "long-words":
    name = LONG
compacts = 0
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "hello":
        print(json.dumps({"op": "hello", "protocol": 1, "name": name,
                          "version": LONG if kind == "long-words" else "0",
                          "ops": ["compact", "estimate"] if kind == "per-message-off" else ["compact"],
                          "invariants": ["no-premature-compaction"]}), flush=True)
        if kind == "closed-stdout":
            os.close(1)
            while True:
                sys.stdin.readline() or time.sleep(0.05)
        continue
    if req.get("op") == "estimate":
        per = [len(line)] * (len(req["messages"]) + 1)
        print(json.dumps({"id": req["id"], "tokens": len(line), "perMessage": per}), flush=True)
        continue
    compacts += 1
    if kind == "escapes":
        sys.stderr.write("\x1b[2J\x1b[Hcleared your screen\n")
        sys.stderr.flush()
    if kind == "hang":
        time.sleep(3600)
    if kind == "daemon" and compacts == 2:
        sys.exit(3)
    answer = json.dumps({"id": req["id"], "messages": req["messages"]})
    if kind == "error-beside":
        # The request's own messages text, so that the answer repeats it
        # byte for byte (the harness's fast path for a history handed back).
        echoed = line.rstrip("\n")[line.index('"messages":') + len('"messages":'):-1]
        answer = '{"id":%d,"error":{"kind":"cannot_fit","message":"x"},"messages":%s}' % (req["id"], echoed)
    if kind == "long-words":
        answer = json.dumps({"id": req["id"], "error": {"kind": "cannot_fit", "message": LONG * 2}})
    if kind == "unsolicited" and compacts == 2:
        answer = answer + "\n" + answer
    print(answer, end="" if kind == "unended" else "\n", flush=True)
