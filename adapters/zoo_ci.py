#!/usr/bin/env python3
"""The zoo in CI: each zoo adapter's recorded verdict, asserted on a short sampled run.

    python3 adapters/zoo_ci.py [--ctxgate target/release/ctxgate] [--only NAME] [--record | --install-only]

For every subject of adapters/zoo-verdicts.json, in order:

1. install its pinned release (`run.sh --install`; cached under
   $CTXGATE_VENV_ROOT, as CI sets it);
2. the round-trip test: `ctxgate gen` cases through the library's types (and
   its store, where it has one) and back must be the same JSON value
   (`run.sh --roundtrip`) — a lossy adapter would invent bugs;
3. `ctxgate check` on the recorded seed and number of cases (with the
   recorded `--gen-config`, where there is one), and the set of failing
   invariants and fault kinds compared with the recorded one.

A library upgrade that fixes or breaks something changes the set: the run
fails and says which invariant is new and which no longer fails, so the
verdict (and docs/findings.md) is looked at again, and re-recorded with
--record. Standard library only; the check's JSON reports are kept in
target/zoo/. Exit 0 when every verdict is as recorded.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VERDICTS = os.path.join(HERE, "zoo-verdicts.json")


def run(argv, env=None, stdin=None):
    """`argv` (a list: never a shell string — the checkout's path, a subject's
    name or an env value may hold spaces, quotes or `$(…)`), run from the
    checkout's root with `env` added."""
    return subprocess.run(argv, cwd=ROOT, env={**os.environ, **(env or {})}, input=stdin,
                          capture_output=True, text=True)


def verdict_of(report):
    failing = sorted(name for name, v in report["invariants"].items() if v["fail"] > 0)
    faults = sorted({f["kind"] for f in report["faults"]})
    return failing, faults


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctxgate", default=os.path.join(ROOT, "target", "release", "ctxgate"))
    ap.add_argument("--only", action="append", help="run only these subjects (repeatable)")
    ap.add_argument("--record", action="store_true", help="write the measured verdicts into zoo-verdicts.json")
    ap.add_argument("--install-only", action="store_true",
                    help="only install each subject's pinned release (CI does it in the background, early)")
    args = ap.parse_args()
    if os.sep in args.ctxgate:
        # The runs below start from the checkout's root, not from here.
        args.ctxgate = os.path.abspath(args.ctxgate)
    book = json.load(open(VERDICTS))
    for name, rec in book["subjects"].items():
        # A name becomes a file name (target/zoo/NAME.json), an env key a
        # word `env` reads as an assignment, and so does a run path after
        # one that holds `=`.
        bad = ("its name" if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) else
               "an env name" if any(not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in rec.get("env", {})) else
               "its run path (holds `=`, which env would read as a setting)" if rec.get("env") and "=" in rec["run"]
               else None)
        if bad:
            ap.error(f"{VERDICTS}: subject {name!r}: {bad} is not usable here")
    unknown = sorted(set(args.only or []) - set(book["subjects"]))
    if unknown:
        # A name that matches nothing would run nothing and pass.
        ap.error(f"--only {', '.join(unknown)}: not in {VERDICTS} (its subjects: {', '.join(book['subjects'])})")
    out_dir = os.path.join(ROOT, "target", "zoo")
    os.makedirs(out_dir, exist_ok=True)
    changed = []
    for name, rec in book["subjects"].items():
        if args.only and name not in args.only:
            continue
        env = rec.get("env", {})
        run_sh = rec["run"]
        t0 = time.time()
        r = run([os.path.join(ROOT, run_sh), "--install"], env)
        if r.returncode != 0:
            print(r.stderr[-3000:])
            sys.exit(f"zoo: {name}: install failed ({run_sh} --install)")
        t_install = time.time() - t0
        if args.install_only:
            print(f"zoo: {name}: installed [{t_install:.0f} s]", flush=True)
            continue

        t0 = time.time()
        # Text content only: the zoo adapters say contentParts: false, so
        # the harness sends them no parts (images are not theirs to map).
        gen = run([args.ctxgate, "gen", "--seed", str(rec["seed"]), "--cases", str(book["roundtripCases"]),
                   "--gen-config", os.path.join(HERE, "text-only-gen-config.json")])
        if gen.returncode != 0:
            print(gen.stderr[-3000:])
            sys.exit(f"zoo: {name}: ctxgate gen failed (exit {gen.returncode})")
        rt = run([os.path.join(ROOT, run_sh), "--roundtrip"], env, stdin=gen.stdout)
        t_rt = time.time() - t0
        if rt.returncode != 0:
            print(rt.stdout + rt.stderr[-3000:])
            sys.exit(f"zoo: {name}: the round trip is not lossless: the adapter would invent bugs")

        t0 = time.time()
        report_file = os.path.join(out_dir, f"{name}.json")
        # The subject after `--`, one argument a word (SPEC §8), so that no
        # splitter reads a path or a value: `env K=V… run.sh`.
        subject = (["env"] + [f"{k}={v}" for k, v in env.items()] if env else []) + [run_sh]
        gen_config = ["--gen-config", rec["genConfig"]] if rec.get("genConfig") else []
        chk = run([args.ctxgate, "check", "--cases", str(rec["cases"]), "--seed", str(rec["seed"]), *gen_config,
                   "--save", os.path.join(out_dir, "fixtures", name), "--report", "json", "--out", report_file,
                   "--", *subject])
        t_check = time.time() - t0
        if chk.returncode not in (0, 1) or not os.path.exists(report_file):
            print(chk.stdout[-2000:] + chk.stderr[-2000:])
            sys.exit(f"zoo: {name}: check did not run (exit {chk.returncode})")
        failing, faults = verdict_of(json.load(open(report_file)))
        line = (f"zoo: {name} ({rec['library']} {rec['version']}): {rt.stdout.strip().split(': ', 1)[-1]}; "
                f"{rec['cases']} cases, seed {rec['seed']}: fails {', '.join(failing) or 'nothing'}"
                f"{'; faults ' + ', '.join(faults) if faults else ''} "
                f"[install {t_install:.0f} s, round trip {t_rt:.0f} s, check {t_check:.0f} s]")
        print(line, flush=True)
        if args.record:
            rec["failing"], rec["faults"] = failing, faults
            continue
        new = sorted(set(failing) - set(rec["failing"])) + [f"fault {k}" for k in sorted(set(faults) - set(rec["faults"]))]
        gone = sorted(set(rec["failing"]) - set(failing)) + [f"fault {k}" for k in sorted(set(rec["faults"]) - set(faults))]
        if new or gone:
            changed.append(name)
            print(f"  VERDICT CHANGED for {name}: "
                  + (f"newly failing: {', '.join(new)} (a new bug, or an adapter change: see the shrunk cases in {out_dir}/fixtures/{name}); " if new else "")
                  + (f"no longer failing: {', '.join(gone)} (fixed upstream, or no longer reached by these cases)" if gone else "")
                  + f". Look again at docs/findings.md, then re-record: python3 adapters/zoo_ci.py --record --only {name}")
    if args.install_only:
        return
    if args.record:
        with open(VERDICTS, "w") as f:
            json.dump(book, f, indent=2)
            f.write("\n")
        print(f"zoo: verdicts recorded in {os.path.relpath(VERDICTS, ROOT)}")
        return
    if changed:
        sys.exit(f"zoo: {len(changed)} verdict(s) changed: {', '.join(changed)}")
    print("zoo: every recorded verdict reproduced")


if __name__ == "__main__":
    main()
