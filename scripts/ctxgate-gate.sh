#!/usr/bin/env bash
# The gate of the ctxgate GitHub Action (action.yml), runnable locally:
#
#   CTXGATE_SUBJECT='node dist/compactor-subject.mjs' \
#   CTXGATE_BASELINE='node base/dist/compactor-subject.mjs' \
#   scripts/ctxgate-gate.sh
#
# runs `ctxgate check` once on the subject (against the baseline when one is
# given, failing on regressions), and leaves in $CTXGATE_OUT:
#   fixtures/              a shrunk SPEC §7 fixture per failure (regression)
#   ctxgate-junit.xml      the JUnit report
#   ctxgate-report.md      the Markdown report (also appended to
#                          $GITHUB_STEP_SUMMARY when that is set)
#   ctxgate-report.json    the JSON report
#   ctxgate-report.txt     the human report (also on stdout)
#
# A run owns these, and only these: it first removes what the last run in
# $CTXGATE_OUT wrote (the report files above, and the fixtures that run
# saved, which it listed in $CTXGATE_OUT/.ctxgate-gate-files) — never the
# folder, nor any other file in it — so that its artifact, its summary and
# its outputs hold nothing of an earlier run: $GITHUB_STEP_SUMMARY gets the
# Markdown report, and $GITHUB_OUTPUT a report's path, only when this run
# wrote that report.
#
# Settings, all from the environment (the action's inputs):
#   CTXGATE_SUBJECT   required: the command that starts the compactor under test
#   CTXGATE_BASELINE  the command that starts the baseline (e.g. the base branch's build)
#   CTXGATE_CONFIG    a SPEC §2 config file every case uses       (--config)
#   CTXGATE_CORPUS    a folder of real histories used as seeds    (--corpus)
#   CTXGATE_SUITE     a folder of fixtures replayed first, on both sides with
#                     a baseline (--with-suite); `known-bugs`, exactly, is
#                     the suite shipped with this script (../suites/known-bugs;
#                     write ./known-bugs for a folder of yours of that name)
#   CTXGATE_TIME      seconds for the run, shrinking included     [120]
#   CTXGATE_CASES     at most this many cases                     [1000000]
#   CTXGATE_JOBS      subjects run at once     [the machine's cores]
#   CTXGATE_INVARIANTS  comma-separated invariants to check (--invariants)
#                     [all the subject claims]
#   CTXGATE_GEN_CONFIG  a GenConfig JSON file: the generator's settings
#                     (--gen-config)
#   CTXGATE_TIMEOUT   seconds the subject may take on one request (--timeout) [10]
#   CTXGATE_WIRE_FORMATS  comma-separated wire formats the request bodies are
#                     measured in: engine, openai, anthropic [all three, as the
#                     generator deals them]. Generated configs: a share each;
#                     with CTXGATE_CONFIG: one format (--wire-format).
#                     Not with CTXGATE_GEN_CONFIG: set `openaiPercent` and
#                     `anthropicPercent` in that file instead
#   CTXGATE_SEED      the seed   [GITHUB_RUN_ID, else ctxgate's random one]
#   CTXGATE_FAIL_ON   with a baseline: regressions|any-failure|never [regressions]
#   CTXGATE_OUT       where the results go                        [ctxgate-out]
#   CTXGATE           the ctxgate binary                          [ctxgate]
#   CTXGATE_DEFER_EXIT=1  exit 0 and leave the verdict in $GITHUB_OUTPUT
#                     (exit-code=N), so the action uploads before failing
#
# Exit code: ctxgate check's — 0 the gate passed, 1 it failed (a regression,
# or without a baseline any failure; or nothing was compared), 2 bad usage.
set -euo pipefail

: "${CTXGATE_SUBJECT:?set CTXGATE_SUBJECT to the command that starts the compactor under test}"
ctxgate=${CTXGATE:-ctxgate}
out=${CTXGATE_OUT:-ctxgate-out}
mkdir -p "$out/fixtures"

# What this script writes in $out: these reports, and the fixtures a run
# saved (named by ctxgate: fixtures/NAME.json), listed in $manifest.
reports=(ctxgate-junit.xml ctxgate-report.md ctxgate-report.json ctxgate-report.txt wire-formats.gen-config.json)
manifest=$out/.ctxgate-gate-files
ours() { [[ $1 =~ ^fixtures/[A-Za-z0-9._-]+\.json$ ]]; }
# The fixtures under $out/fixtures, one relative path a line, sorted.
fixtures() { (CDPATH='' cd -- "$out" && find fixtures -type f -name '*.json') | LC_ALL=C sort; }
if [ -f "$manifest" ]; then
  while IFS= read -r f; do
    if ours "$f"; then rm -f -- "${out:?}/$f"; fi
  done < "$manifest"
fi
for f in "${reports[@]}" .ctxgate-gate-files; do
  rm -f -- "${out:?}/$f"
  if [ -e "$out/$f" ]; then
    printf 'ctxgate gate: cannot remove %q, an earlier run'"'"'s output: this run'"'"'s would mix with it\n' "$out/$f" >&2
    exit 2
  fi
done
before=$(fixtures)

args=(check --subject "$CTXGATE_SUBJECT"
  --time "${CTXGATE_TIME:-120}" --cases "${CTXGATE_CASES:-1000000}"
  --save "$out/fixtures" --report human
  --also-report "junit=$out/ctxgate-junit.xml"
  --also-report "markdown=$out/ctxgate-report.md"
  --also-report "json=$out/ctxgate-report.json")
seed=${CTXGATE_SEED:-${GITHUB_RUN_ID:-}}
[ -n "$seed" ] && args+=(--seed "$seed")
[ -n "${CTXGATE_JOBS:-}" ] && args+=(--jobs "$CTXGATE_JOBS")
if [ -n "${CTXGATE_BASELINE:-}" ]; then
  args+=(--baseline "$CTXGATE_BASELINE" --fail-on "${CTXGATE_FAIL_ON:-regressions}")
fi
[ -n "${CTXGATE_CONFIG:-}" ] && args+=(--config "$CTXGATE_CONFIG")
[ -n "${CTXGATE_CORPUS:-}" ] && args+=(--corpus "$CTXGATE_CORPUS")
[ -n "${CTXGATE_INVARIANTS:-}" ] && args+=(--invariants "$CTXGATE_INVARIANTS")
[ -n "${CTXGATE_TIMEOUT:-}" ] && args+=(--timeout "$CTXGATE_TIMEOUT")
[ -n "${CTXGATE_GEN_CONFIG:-}" ] && args+=(--gen-config "$CTXGATE_GEN_CONFIG")
suite=${CTXGATE_SUITE:-}
[ "$suite" = known-bugs ] && suite="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/suites/known-bugs"
[ -n "$suite" ] && args+=(--with-suite "$suite")
if [ -n "${CTXGATE_WIRE_FORMATS:-}" ]; then
  # Checked here, before anything runs: a share of each format named.
  engine=0 openai=0 anthropic=0
  # One line: `read` stops at a newline, and nothing may be left unread.
  IFS=', ' read -r -a listed <<< "${CTXGATE_WIRE_FORMATS//$'\n'/,}"
  for f in ${listed[@]+"${listed[@]}"}; do
    case "$f" in
      engine) engine=1 ;;
      openai) openai=1 ;;
      anthropic) anthropic=1 ;;
      '') ;; # `openai,,anthropic`, a trailing comma
      *) printf 'ctxgate gate: CTXGATE_WIRE_FORMATS (the wire-formats input): %q is not a wire format (engine, openai, anthropic)\n' "$f" >&2
         exit 2 ;;
    esac
  done
  named=$((engine + openai + anthropic))
  if [ "$named" -eq 0 ]; then
    echo "ctxgate gate: CTXGATE_WIRE_FORMATS names no wire format (engine, openai, anthropic)" >&2
    exit 2
  fi
  if [ -n "${CTXGATE_GEN_CONFIG:-}" ]; then
    echo "ctxgate gate: CTXGATE_WIRE_FORMATS and CTXGATE_GEN_CONFIG both given: set openaiPercent and anthropicPercent in the gen-config file instead" >&2
    exit 2
  fi
  if [ -n "${CTXGATE_CONFIG:-}" ]; then
    if [ "$named" -ne 1 ]; then
      echo "ctxgate gate: CTXGATE_CONFIG fixes one config, so CTXGATE_WIRE_FORMATS may name one format, not $named" >&2
      exit 2
    fi
    case 1 in
      "$openai") args+=(--wire-format openai) ;;
      "$anthropic") args+=(--wire-format anthropic) ;;
      *) args+=(--wire-format engine) ;;
    esac
  else
    # The generator deals each case's format by these percentages, the
    # rest engine (GenConfig's openaiPercent and anthropicPercent).
    share=$((100 / named))
    printf '{"openaiPercent": %d, "anthropicPercent": %d}\n' \
      $((openai * share)) $((anthropic * share)) > "$out/wire-formats.gen-config.json"
    args+=(--gen-config "$out/wire-formats.gen-config.json")
  fi
fi

printf 'ctxgate gate:'; printf ' %q' "$ctxgate" "${args[@]}"; printf '\n'
set +e
"$ctxgate" "${args[@]}" | tee "$out/ctxgate-report.txt"
rc=${PIPESTATUS[0]}
set -e

# The fixtures this run saved: those that were not there before it.
LC_ALL=C comm -13 <(printf '%s\n' "$before") <(fixtures) | while IFS= read -r f; do
  if ours "$f"; then printf '%s\n' "$f"; fi
done > "$manifest"

# Every report file was removed above: one that exists now, this run wrote.
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -s "$out/ctxgate-report.md" ]; then
  cat "$out/ctxgate-report.md" >> "$GITHUB_STEP_SUMMARY"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$rc"
    echo "out-dir=$out"
    [ -s "$out/ctxgate-junit.xml" ] && echo "junit=$out/ctxgate-junit.xml"
    [ -s "$out/ctxgate-report.md" ] && echo "markdown=$out/ctxgate-report.md"
    [ -s "$out/ctxgate-report.json" ] && echo "json=$out/ctxgate-report.json"
    true
  } >> "$GITHUB_OUTPUT"
fi
echo "ctxgate gate: exit $rc; reports and fixtures in $out/"
if [ "${CTXGATE_DEFER_EXIT:-}" = 1 ]; then
  exit 0
fi
exit "$rc"
