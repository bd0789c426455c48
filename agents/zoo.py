#!/usr/bin/env python3
"""The agent zoo: real agents, as released, against `ctxgate agent`, each verdict as recorded.

    python3 agents/zoo.py [--ctxgate target/release/ctxgate] [--only NAME]... [--ci]
                          [--record | --install-only | --list]

Each agent has a recipe folder, agents/NAME/ (its recipe.json, install.sh,
the script or command a case runs, the settings it was configured with, and
a README saying why). agents/verdicts.json records, for each agent, a seed,
a number of cases and what `ctxgate agent` found on them: the invariants
that failed, those that failed only now and then (flaky), and how many cases
reached the final answer. For every agent of the book, in order:

1. install its pinned release (`run.sh --install`; cached under
   $CTXGATE_VENV_ROOT, outside the clone, as CI sets it);
2. `run.sh --cases N --seed S --report json --out …` — `ctxgate agent` on
   the recipe — and compare: a verdict that changed fails the run and says
   which invariant is new and which no longer fails, so that the findings
   (docs/findings.md, the recipe's README) are looked at again, and
   re-recorded with --record.

--ci runs only the agents the book marks `"ci": true` (installs cached,
a few cases each: CI's sample). Reports and the shrunk cases' fixtures are
kept in target/agent-zoo/. Standard library only. Exit 0 when every verdict
is as recorded, 1 when one is not, 2 on bad usage.
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
BOOK = os.path.join(HERE, "verdicts.json")
RECIPE_KEYS = {"name", "kind", "package", "version", "dialect", "docs", "claims", "why"}


def run(argv, env=None):
    """`argv` (a list, never a shell string), from the checkout's root."""
    return subprocess.run(argv, cwd=ROOT, env={**os.environ, **(env or {})},
                          capture_output=True, text=True)


def recipe_of(name):
    """The recipe of agents/NAME, checked: an error names the file and the field."""
    path = os.path.join(HERE, name, "recipe.json")
    try:
        with open(path, encoding="utf-8") as f:
            recipe = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"agent zoo: {os.path.relpath(path, ROOT)}: {e}")
    missing = sorted(RECIPE_KEYS - set(recipe))
    if missing:
        sys.exit(f"agent zoo: {os.path.relpath(path, ROOT)}: no {', '.join(missing)}")
    if recipe["name"] != name:
        sys.exit(f"agent zoo: {os.path.relpath(path, ROOT)}: name {recipe['name']!r} is not its folder's, {name!r}")
    if recipe["kind"] not in ("cli", "sdk"):
        sys.exit(f"agent zoo: {os.path.relpath(path, ROOT)}: kind {recipe['kind']!r}: cli or sdk")
    return recipe


def verdict_of(report):
    tally = report.get("tally", {})
    failing = sorted(n for n, t in tally.items() if t.get("fail", 0) > 0)
    flaky = sorted({f["invariant"] for f in report.get("flaky", [])})
    finishes = tally.get("finishes", {}).get("pass", 0)
    return failing, flaky, finishes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctxgate", default=os.path.join(ROOT, "target", "release", "ctxgate"))
    ap.add_argument("--only", action="append", help="run only these agents (repeatable)")
    ap.add_argument("--ci", action="store_true", help="only the agents the book marks for CI")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--record", action="store_true", help="write the verdicts seen into agents/verdicts.json")
    mode.add_argument("--install-only", action="store_true", help="only install each agent's pinned release")
    mode.add_argument("--list", action="store_true", help="print the agents, their releases and verdicts")
    args = ap.parse_args()
    ctxgate = os.path.abspath(args.ctxgate) if os.sep in args.ctxgate else args.ctxgate
    with open(BOOK, encoding="utf-8") as f:
        book = json.load(f)
    agents = book["agents"]
    for name in agents:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
            ap.error(f"{BOOK}: agent {name!r}: not a folder name this script uses")
    unknown = sorted(set(args.only or []) - set(agents))
    if unknown:
        ap.error(f"--only {', '.join(unknown)}: not in {os.path.relpath(BOOK, ROOT)} (its agents: {', '.join(agents)})")
    chosen = [n for n in agents
              if (not args.only or n in args.only) and (not args.ci or agents[n].get("ci"))]
    recipes = {n: recipe_of(n) for n in chosen}
    if args.list:
        for n in chosen:
            r, v = recipes[n], agents[n]
            print(f"{n:18} {r['kind']:3} {r['package']}@{r['version']} ({r['dialect']}): "
                  f"{v['cases']} cases, seed {v['seed']}: fails {', '.join(v['failing']) or 'nothing'}"
                  f"{'; flaky ' + ', '.join(v['flaky']) if v.get('flaky') else ''}")
        return
    out_dir = os.path.join(ROOT, "target", "agent-zoo")
    os.makedirs(out_dir, exist_ok=True)
    changed = []
    for name in chosen:
        rec, recipe = agents[name], recipes[name]
        run_sh = os.path.join(HERE, name, "run.sh")
        t0 = time.time()
        r = run([run_sh, "--install"])
        if r.returncode != 0:
            print(r.stdout[-2000:] + r.stderr[-3000:])
            sys.exit(f"agent zoo: {name}: install failed (agents/{name}/run.sh --install)")
        t_install = time.time() - t0
        if args.install_only:
            print(f"agent zoo: {name}: installed [{t_install:.0f} s]", flush=True)
            continue
        t0 = time.time()
        report_file = os.path.join(out_dir, f"{name}.json")
        if os.path.exists(report_file):
            os.remove(report_file)
        chk = run([run_sh, "--cases", str(rec["cases"]), "--seed", str(rec["seed"]), *rec.get("args", []),
                   "--save", os.path.join(out_dir, "fixtures", name),
                   "--report", "json", "--out", report_file], {"CTXGATE": ctxgate})
        t_run = time.time() - t0
        if chk.returncode not in (0, 1) or not os.path.exists(report_file):
            print(chk.stdout[-2000:] + chk.stderr[-3000:])
            sys.exit(f"agent zoo: {name}: ctxgate agent did not run (exit {chk.returncode})")
        with open(report_file, encoding="utf-8") as f:
            failing, flaky, finishes = verdict_of(json.load(f))
        print(f"agent zoo: {name} ({recipe['package']} {recipe['version']}, {recipe['dialect']}): "
              f"{rec['cases']} cases, seed {rec['seed']}: {finishes} finished; "
              f"fails {', '.join(failing) or 'nothing'}{'; flaky ' + ', '.join(flaky) if flaky else ''} "
              f"[install {t_install:.0f} s, run {t_run:.0f} s]", flush=True)
        if args.record:
            rec["failing"], rec["flaky"], rec["finished"] = failing, flaky, finishes
            continue
        new = sorted(set(failing) - set(rec["failing"]))
        gone = sorted(set(rec["failing"]) - set(failing))
        # A flaky verdict may come out failing or holding on a short run;
        # one recorded flaky is not a change either way.
        new = [n for n in new if n not in rec.get("flaky", [])]
        gone = [n for n in gone if n not in rec.get("flaky", [])]
        if new or gone:
            changed.append(name)
            print(f"  VERDICT CHANGED for {name}: "
                  + (f"newly failing: {', '.join(new)} (see target/agent-zoo/fixtures/{name}); " if new else "")
                  + (f"no longer failing: {', '.join(gone)}" if gone else "")
                  + f". Look again at agents/{name}/README.md and docs/findings.md, then re-record: "
                  f"python3 agents/zoo.py --record --only {name}")
    if args.install_only:
        return
    if args.record:
        with open(BOOK, "w", encoding="utf-8") as f:
            json.dump(book, f, indent=2)
            f.write("\n")
        print(f"agent zoo: verdicts recorded in {os.path.relpath(BOOK, ROOT)}")
        return
    if changed:
        print(f"agent zoo: {len(changed)} verdict(s) changed: {', '.join(changed)}")
        sys.exit(1)
    print(f"agent zoo: every recorded verdict reproduced ({len(chosen)} agent(s))")


if __name__ == "__main__":
    main()
