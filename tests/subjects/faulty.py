#!/usr/bin/env python3
"""A subject that misbehaves on purpose, for ctxgate's fault tests.

Usage: faulty.py KIND [PIDFILE]

It answers hello correctly, then on compact requests behaves per KIND:
  crash      exit(3) on the 2nd compact request (after printing to stderr)
  hang       never answer the 2nd compact request (sleeps for ever)
  garbage    print a non-JSON line on the 2nd compact request
  bad-utf8   answer the 2nd compact request with a line that is not UTF-8
  oversized  print a 3 MB line on the 2nd compact request
  wrong-id   answer the 2nd compact request with another id
  badkind    answer every compact request with an error of kind "internal"
  library    answer every compact request with an error of kind "library_error"
             (what the packages' serve answers when the library raised)
  flood      write 20 MB to stderr, then answer correctly (identity)
Otherwise it answers compact with the messages unchanged (identity), and
claims only no-premature-compaction, which identity satisfies.
Every pid it starts is appended to PIDFILE, so a test can check that none
is left running.
"""
import json
import os
import sys
import time

kind = sys.argv[1]
pidfile = sys.argv[2] if len(sys.argv) > 2 else None
if pidfile:
    with open(pidfile, "a") as f:
        f.write(f"{os.getpid()}\n")

compacts = 0
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "hello":
        print(json.dumps({"op": "hello", "protocol": 1, "name": f"faulty-{kind}", "version": "0",
                          "ops": ["compact"], "format": "engine",
                          "invariants": ["no-premature-compaction"]}), flush=True)
        continue
    compacts += 1
    rid = req["id"]
    second = compacts == 2
    if kind == "crash" and second:
        sys.stderr.write("faulty: crashing now\n")
        sys.stderr.flush()
        sys.exit(3)
    if kind == "hang" and second:
        time.sleep(3600)
    if kind == "garbage" and second:
        print("this is not json", flush=True)
        continue
    if kind == "bad-utf8" and second:
        sys.stdout.buffer.write(b'{"id":%d,"messages":[],"x":"caf\xe9"}\n' % rid)
        sys.stdout.flush()
        continue
    if kind == "oversized" and second:
        sys.stdout.write('{"id":%d,"pad":"%s"}\n' % (rid, "x" * 3_000_000))
        sys.stdout.flush()
        continue
    if kind == "wrong-id" and second:
        print(json.dumps({"id": rid + 1000, "messages": req["messages"]}), flush=True)
        continue
    if kind == "badkind":
        print(json.dumps({"id": rid, "error": {"kind": "internal", "message": "boom"}}), flush=True)
        continue
    if kind == "library":
        print(json.dumps({"id": rid, "error": {"kind": "library_error",
                                               "message": "ValueError: too long (at lib.py:3)"}}), flush=True)
        continue
    if kind == "flood" and compacts == 1:
        chunk = "e" * 1_000_000 + "\n"
        for _ in range(20):
            sys.stderr.write(chunk)
        sys.stderr.flush()
    print(json.dumps({"id": rid, "messages": req["messages"]}), flush=True)
