#!/bin/bash -eu
# ClusterFuzzLite/OSS-Fuzz build: every cargo-fuzz target of fuzz/ into
# $OUT, each with the dictionary and a seed corpus. The builder sets the
# sanitizer flags; `cargo fuzz build -O` picks them up.
cd "$SRC/ctxgate"
cargo fuzz build -O --debug-assertions
# ../shared is not in the image: the corpus seeds from tests/fixtures only.
python3 fuzz/seed_corpus.py --shared /nonexistent || true
release=fuzz/target/x86_64-unknown-linux-gnu/release
for target in $(cargo fuzz list); do
  cp "$release/$target" "$OUT/"
  cp fuzz/ctxgate.dict "$OUT/$target.dict"
  printf '[libfuzzer]\ntimeout = 10\nrss_limit_mb = 2560\n' > "$OUT/$target.options"
  if [ -d "fuzz/corpus/$target" ]; then
    (cd "fuzz/corpus/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
  fi
done
