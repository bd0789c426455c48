#!/usr/bin/env python3
"""Differential test of two ctxgate subjects: same requests, same answers?

Standard library only. Cases come from `ctxgate gen` (one {"config", "messages"}
object a line); each is sent to both subjects, over the subject protocol v1, as

  1. a `compact` of the history and an `estimate` of it;
  2. with --loop (the default), a simulated ToolLoop like ctxgate's: from the
     head, append the case's iterations one at a time and `compact` before each
     "send", carrying subject A's answer into the next turn (up to 60 turns) —
     this is what exercises the folding of an earlier summary.

Answers are compared as parsed JSON values: numbers by value (1.0 == 1),
objects regardless of key order, booleans distinct from numbers, strings and
arrays exactly. The first disagreement is printed with its case, and the exit
code is 1. Exit 0 when every answer agreed; 2 on bad usage.

Numbers: two stock JSON libraries re-spell some numbers differently (Python
writes the float 52.00 as 52.0, JavaScript as 52; Python writes 1e16 and
1e-05 with exponents where JavaScript does not), and the spelling counts in
the bytes each subject measures. So, unless --as-generated is given, every
case is first re-written with only numbers both languages spell alike:
integral floats become integers. Numbers that cannot be made alike (floats
outside [1e-4, 1e16), integers beyond 2^53) are counted and left as they are.

Usage:

    python3 differential.py CTXGATE --seeds 1,2,3 --cases 1000 \\
        --a 'node adapters/node-minimal/compactor.mjs' \\
        --b 'python3 /tmp/stock/compactor.py' [--no-loop] [--as-generated] [--timeout 30]
"""

import argparse
import json
import math
import shlex
import signal
import subprocess
import sys


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


class Subject:
    """One subject process, spoken to one request at a time."""

    def __init__(self, cmd, timeout):
        self.cmd, self.timeout, self.next_id = cmd, timeout, 1
        self.proc = subprocess.Popen(shlex.split(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.hello = self.ask({"op": "hello", "protocol": 1}, with_id=False)

    def ask(self, request, with_id=True):
        """The parsed answer to one request (its id checked and removed)."""
        if with_id:
            request = {**request, "id": self.next_id}
            self.next_id += 1
        self.proc.stdin.write((dumps(request) + "\n").encode("utf-8"))
        self.proc.stdin.flush()
        signal.alarm(self.timeout)
        try:
            line = self.proc.stdout.readline()
        finally:
            signal.alarm(0)
        if not line.endswith(b"\n"):
            raise SystemExit(f"subject {self.cmd!r} died (or wrote a line without \\n): {line[:200]!r}")
        answer = json.loads(line.decode("utf-8"))
        if with_id:
            if not isinstance(answer, dict) or answer.get("id") != request["id"]:
                raise SystemExit(f"subject {self.cmd!r}: wrong id in {line[:200]!r}")
            del answer["id"]
        return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=self.timeout)


def same(a, b):
    """JSON value equality: numbers by value, bools apart from numbers, key order ignored."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def first_difference(a, b, path="$"):
    """Where two values first differ, as a path, for the report."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k} (only in {'A' if k in a else 'B'})"
            if not same(a[k], b[k]):
                return first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if not same(x, y):
                return first_difference(x, y, f"{path}[{i}]")
    return f"{path}: A {dumps(a)[:300]} / B {dumps(b)[:300]}"


class Respell:
    """Re-writes a case with numbers both languages spell alike; counts the rest."""

    def __init__(self):
        self.respelled = self.unalike = 0

    def __call__(self, v):
        if isinstance(v, dict):
            return {k: self(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self(x) for x in v]
        if isinstance(v, float):
            if math.isfinite(v) and v == int(v) and abs(v) < 2**53:
                self.respelled += 1
                return int(v)
            if not (1e-4 <= abs(v) < 1e16):
                self.unalike += 1
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**53:
            self.unalike += 1
        return v


def iterations(msgs, start):
    """SPEC §1.2 iterations of msgs[start:], as lists of messages."""
    out, i = [], start
    while i < len(msgs):
        j = i + 1
        calls = msgs[i].get("toolCalls") if msgs[i].get("role") == "assistant" else None
        if calls:
            ids = {c.get("id") for c in calls}
            while j < len(msgs) and msgs[j].get("role") == "tool" and msgs[j].get("toolCallId") in ids:
                j += 1
        out.append(msgs[i:j])
        i = j
    return out


def timed_out(*_):
    raise SystemExit("a subject did not answer in time")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ctxgate", help="the ctxgate binary (for `gen`)")
    ap.add_argument("--seeds", default="1", help="comma-separated seeds (default 1)")
    ap.add_argument("--cases", type=int, default=1000, help="cases per seed (default 1000)")
    ap.add_argument("--a", required=True, help="subject A's command line (its answers carry the ToolLoop)")
    ap.add_argument("--b", required=True, help="subject B's command line")
    ap.add_argument("--no-loop", action="store_true", help="only compact + estimate of each case")
    ap.add_argument("--as-generated", action="store_true", help="send the generator's numbers as written")
    ap.add_argument("--timeout", type=int, default=30, help="seconds per answer (default 30)")
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, timed_out)

    a, b = Subject(args.a, args.timeout), Subject(args.b, args.timeout)
    print(f"A: {a.hello.get('name')} {a.hello.get('version')}   B: {b.hello.get('name')} {b.hello.get('version')}")
    respell = Respell()
    total = {"cases": 0, "requests": 0, "compact": 0, "estimate": 0, "cannot_fit": 0, "invalid_input": 0, "changed": 0}

    def both(request, case, seed, what):
        """Ask both; stop at the first disagreement. Returns A's answer."""
        x, y = a.ask(request), b.ask(request)
        total["requests"] += 1
        total[request["op"]] += 1
        if not same(x, y):
            print(f"\nDISAGREEMENT, seed {seed}, case {total['cases']}, {what}: {first_difference(x, y)}")
            print(f"request: {dumps(request)}")
            print(f"A: {dumps(x)}")
            print(f"B: {dumps(y)}")
            print(f"case: {dumps(case)}")
            sys.exit(1)
        if "error" in x:
            total[x["error"]["kind"]] = total.get(x["error"]["kind"], 0) + 1
        return x

    for seed in [s.strip() for s in args.seeds.split(",") if s.strip()]:
        gen = subprocess.run([args.ctxgate, "gen", "--seed", seed, "--cases", str(args.cases)],
                             check=True, capture_output=True)
        for line in gen.stdout.decode("utf-8").split("\n"):  # not splitlines(): it also splits at U+2028, \x1c…
            if not line:
                continue
            case = json.loads(line)
            if not args.as_generated:
                case = respell(case)
            total["cases"] += 1
            cfg, msgs = case["config"], case["messages"]
            out = both({"op": "compact", "config": cfg, "messages": msgs}, case, seed, "compact")
            if "messages" in out and not same(out["messages"], msgs):
                total["changed"] += 1
            both({"op": "estimate", "config": cfg, "messages": msgs}, case, seed, "estimate")
            if args.no_loop:
                continue
            head = 0
            while head < len(msgs) and msgs[head].get("role") == "system":
                head += 1
            history = msgs[:head]
            for turn, it in enumerate(iterations(msgs, head)[:60]):
                history = history + it
                out = both({"op": "compact", "config": cfg, "messages": history}, case, seed, f"ToolLoop turn {turn}")
                if "messages" not in out:
                    break  # cannot_fit: the loop ends there, as it would in the engine
                history = out["messages"]
        print(f"seed {seed}: {args.cases} cases agreed (running total: {total['requests']} requests)", flush=True)

    a.close()
    b.close()
    print(f"all agreed: {total['cases']} cases, {total['requests']} requests "
          f"({total['compact']} compact, {total['estimate']} estimate); {total['changed']} cases compacted, "
          f"{total['cannot_fit']} cannot_fit, {total['invalid_input']} invalid_input answers")
    if not args.as_generated:
        print(f"numbers: {respell.respelled} integral floats written as integers; "
              f"{respell.unalike} numbers no spelling makes alike")


if __name__ == "__main__":
    main()
