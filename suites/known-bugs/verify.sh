#!/usr/bin/env bash
# Each known bug against the versions it concerns: the fixture must fail
# against the release the bug was reported on (replay --expect-failures) and
# hold against the release that fixed it, where one was released. The table
# below is the one in README.md; CI runs this script.
#
#   suites/known-bugs/verify.sh [CTXGATE]      # default: target/release/ctxgate
#   suites/known-bugs/verify.sh --install-only # install every pinned version, verify nothing
#
# The adapters install their pinned versions on first use (into
# $CTXGATE_VENV_ROOT when set, as CI does, else beside each adapter).
set -euo pipefail
cd "$(dirname "$0")/../.."
install_only=false
if [ "${1:-}" = --install-only ]; then install_only=true; shift; fi
ctxgate=${1:-target/release/ctxgate}
suite=suites/known-bugs

# fixture | subject on the affected release | subject on the fixed release ("-": none released).
# A bug that came back has a row for each time: llamaindex-13715 fixed in
# 0.11.14, back since 0.14.15 (see the README's table).
table=(
  "litellm-4931-trim-drops-the-tool-call|adapters/litellm/run.sh 1.14.4|adapters/litellm/run.sh 1.110.2"
  "litellm-6505-tool-results-dropped-when-nothing-is-due|adapters/litellm/run.sh 1.60.0|adapters/litellm/run.sh 1.110.2"
  "langchain-core-33245-trim-messages-keeps-an-orphan-tool-result|env CTXGATE_LANGCHAIN_START_ON= adapters/langchain/run.sh|-"
  "langchain-33856-summarization-drops-the-system-prompt|adapters/langchain-summarization/run.sh 1.5.2|-"
  "langchain-34282-summarization-cut-inside-parallel-results|adapters/langchain-summarization/run.sh 1.1.0|adapters/langchain-summarization/run.sh 1.2.0"
  "deepagents-270-summarization-leaves-orphan-tool-responses|env CTXGATE_LC_KEEP=6 adapters/langchain-summarization/run.sh 1.1.0|env CTXGATE_LC_KEEP=6 adapters/langchain-summarization/run.sh 1.2.0"
  "llamaindex-13715-memory-starts-with-a-tool-result|adapters/llama-index/run.sh 0.11.13|adapters/llama-index/run.sh 0.11.14"
  "llamaindex-13715-memory-starts-with-a-tool-result|adapters/llama-index/run.sh 0.14.25|-"
  "openai-agents-4322-limited-session-replays-an-orphan-tool-output|adapters/openai-agents/run.sh 0.19.4|adapters/openai-agents/run.sh 0.20.0"
  "llamaindex-21950-memory-leaves-tool-calls-out-of-its-token-count|adapters/llama-index-memory/run.sh 0.14.19|-"
  "langmem-126-summarization-splits-parallel-tool-results|adapters/langmem/run.sh 0.0.30|-"
)

# Install every pinned version first: a subject's first hello must not wait on pip.
for row in "${table[@]}"; do
  IFS='|' read -r _ affected fixed <<<"$row"
  for cmd in "$affected" "$fixed"; do
    [ "$cmd" = "-" ] && continue
    read -r -a words <<<"$cmd"
    while [ "${words[0]}" = env ] || [[ "${words[0]}" == *=* ]]; do words=("${words[@]:1}"); done
    "${words[0]}" --install "${words[@]:1}" >&2
  done
done
if $install_only; then exit 0; fi

# Whether the replay in log $1 ran the release command $2 names (its last
# word, when it is a version): each adapter's hello says the version of the
# library it imported, which replay prints. An install that is not what its
# stamp says must not verify a row.
ran_version() {
  local want=${2##* }
  [[ $want =~ ^[0-9]+(\.[0-9]+)+$ ]] || return 0
  grep -qE " against .* ${want//./\\.}(, as expected)?\$" "$1"
}

failed=0
# Each replay's output, shown when it is not what the row says (a file of
# this run's own: two runs at once must not read each other's).
log=$(mktemp "${TMPDIR:-/tmp}/ctxgate-known-bug.XXXXXX")
trap 'rm -f -- "$log"' EXIT
for row in "${table[@]}"; do
  IFS='|' read -r name affected fixed <<<"$row"
  file="$suite/$name.json"
  if ! "$ctxgate" replay "$file" --expect-failures --subject "$affected" > "$log" 2>&1; then
    cat "$log"; echo "FAIL  $name was not seen to fail against $affected (the replay above says why)"; failed=$((failed + 1))
  elif ! ran_version "$log" "$affected"; then
    cat "$log"; echo "FAIL  $name: the replay did not run the release $affected names"; failed=$((failed + 1))
  else
    echo "ok    $name fails against $affected, as reported"
  fi
  if [ "$fixed" != "-" ]; then
    if ! "$ctxgate" replay "$file" --subject "$fixed" > "$log" 2>&1; then
      cat "$log"; echo "FAIL  $name fails against $fixed, which fixed it"; failed=$((failed + 1))
    elif ! ran_version "$log" "$fixed"; then
      cat "$log"; echo "FAIL  $name: the replay did not run the release $fixed names"; failed=$((failed + 1))
    else
      echo "ok    $name holds against $fixed, the fix"
    fi
  fi
done
# A bug that came back has two rows: count the fixtures.
bugs=$(printf '%s\n' "${table[@]}" | cut -d'|' -f1 | sort -u | wc -l)
echo "known-bugs: $bugs verified bug(s) in ${#table[@]} row(s), $failed failed"
[ "$failed" -eq 0 ]
