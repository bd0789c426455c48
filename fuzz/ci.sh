#!/usr/bin/env bash
# The fuzz step of .ci/run: build every cargo-fuzz target and run each for
# FUZZ_SECONDS (30 by default) on its corpus (seeded by seed_corpus.py),
# built with FUZZ_SANITIZER (cargo-fuzz's `-s`: address by default, as
# cargo-fuzz; none, memory, thread, leak).
# Skips, and says why, without a nightly toolchain or when cargo-fuzz
# cannot be installed. A crash fails the step (its input is under
# fuzz/artifacts/<target>/; fuzz/README.md says how to make it a fixture).
set -uo pipefail
cd "$(dirname "$0")"
secs=${FUZZ_SECONDS:-30}
sanitizer=${FUZZ_SANITIZER:-address}

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzzing skipped: no nightly toolchain (\`cargo +nightly --version\` fails); cargo-fuzz needs nightly"
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked"
  if ! cargo install cargo-fuzz --locked; then
    echo "fuzzing skipped: \`cargo install cargo-fuzz --locked\` failed (see above)"
    exit 0
  fi
fi
set -e
if command -v python3 >/dev/null; then
  python3 seed_corpus.py
else
  echo "python3 not found: fuzzing from empty corpora"
fi
mkdir -p artifacts
build_log=artifacts/ci-build.log
if ! cargo +nightly fuzz build -O -s "$sanitizer" >"$build_log" 2>&1; then
  # cargo-fuzz ends with its own backtrace; the cause is cargo's first
  # error lines, so print those last, where a truncated CI log still shows
  # them, with the disk's free space (the ASAN build needs a few GB).
  tail -n 20 "$build_log"
  echo "-- the build's errors:"
  grep -E -A 6 '^error' "$build_log" | head -n 60 || true
  df -h . | tail -n 1 | awk '{print "-- disk: " $4 " free of " $2 " on " $6}'
  echo "fuzz build FAILED (the whole log: fuzz/$build_log)"
  exit 1
fi
grep -E '^ *Finished' "$build_log" || true
for t in $(cargo +nightly fuzz list); do
  echo "-- fuzz $t for ${secs}s (sanitizer: $sanitizer)"
  mkdir -p "corpus/$t"
  log="artifacts/ci-$t.log"
  mkdir -p artifacts
  if ! cargo +nightly fuzz run -O -s "$sanitizer" "$t" "corpus/$t" -- \
    -max_total_time="$secs" -dict=ctxgate.dict -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 >"$log" 2>&1; then
    tail -n 80 "$log"
    echo "fuzz target $t FAILED: the input is under fuzz/artifacts/$t/ (fuzz/README.md: make it a fixture)"
    exit 1
  fi
  grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|stat::average_exec_per_sec|stat::peak_rss_mb)' "$log" || tail -n 5 "$log"
done
