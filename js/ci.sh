#!/usr/bin/env bash
# CI for the ctxgate npm package (issue 29, item 2). Run from anywhere after
# `cargo build --release`; needs Node ≥ 18 and the npm registry (for vitest
# and typescript only: the packages under test are installed from their
# tarballs, nothing is published).
#
#   1. the package's tests (node --test), with the binary: the serve loop's
#      hostile battery (over pipes and under ctxgate check), bodyBytes'
#      refusals against ctxgate body, SIGTERM/SIGINT/SIGHUP to the command
#      and to check() with no process of the tree left; none may be skipped;
#   2. `npm pack` of ctxgate and of @ctxgate/linux-x64-gnu (assembled from
#      target/release/ctxgate), installed into a fresh npm project; install
#      and first-run times printed; `npx ctxgate check --cases 300` passes,
#      and so does a subject written with serve() (examples/keep-all.mjs);
#   3. the types check (tsc --strict over examples/typed.ts); the vitest
#      example passes over adapters/node-minimal, and fails over a copy with
#      a planted defect, showing the failure, the fixture path and the
#      replay line; the in-process agent example (checkAgent over
#      examples/vitest/tiny-agent.js) passes, and fails with a planted
#      dropped system prompt, naming pinned-kept and its fixture;
#   4. a platform package of another version is refused, naming both;
#      without its platform package, `npx ctxgate` names the platform;
#   5. bodyBytes equals the binary's body size on 5,000 generated cases in
#      each wire format (and toolCallsFloor + imageTokens its adr-0098
#      count per message), with `ctxgate estimate --lines`.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BIN=${CTXGATE_BIN:-$REPO/target/release/ctxgate} # (a debug build, to try this script out)
VITEST=vitest@3.2.4 # 3.x: still runs on Node 18 and 20
TYPESCRIPT=typescript@5.9.3
CASES=${CTXGATE_JS_BODY_CASES:-5000}

# vitest colours its output when FORCE_COLOR is set (as CI services set it),
# and the checks below read that output: plain text, whatever the caller set.
unset FORCE_COLOR
export NO_COLOR=1
plain() { sed -E 's/\x1b\[[0-9;]*[A-Za-z]//g' "$1" > "$1.plain" && mv "$1.plain" "$1"; }

step() { printf '\n== js: %s == (at %d s)\n' "$*" "$SECONDS"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
# A path as one word of a subject's command line (CTXGATE_SUBJECT, split as
# POSIX words): single-quoted, so that a checkout or a TMPDIR with a space,
# a quote or `$(` in its name stays one path.
word() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

[ -x "$BIN" ] || { echo "js/ci.sh: no $BIN: run \`cargo build --release\` first"; exit 2; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
case "$(node -p 'process.platform + "-" + process.arch')" in
  linux-x64) ;;
  *) echo "js/ci.sh: packs the linux-x64-gnu package, so it runs on linux-x64 only"; exit 2 ;;
esac
T=$(mktemp -d "${TMPDIR:-/tmp}/ctxgate-js-ci.XXXXXX")
trap 'rm -rf "$T"' EXIT
VERSION=$(node -p 'require("./js/package.json").version')

step "tests (node --test js/test/, with CTXGATE_BINARY=$BIN)"
(cd js && CTXGATE_BINARY=$BIN node --test test/ > "$T/node-test.txt" 2>&1) \
  || { grep -E '^not ok' -A 30 "$T/node-test.txt" | head -120; echo "js/ci.sh: node --test failed"; exit 1; }
grep -E '^# (tests|pass|fail|skipped)' "$T/node-test.txt"
grep -q '^# skipped 0$' "$T/node-test.txt" \
  || { grep -E '^ok .* # SKIP' "$T/node-test.txt"; echo "js/ci.sh: tests were skipped (they need the binary and /proc)"; exit 1; }

step "npm pack: ctxgate and @ctxgate/linux-x64-gnu"
# The release profile keeps line tables (68 MB); platform-package.mjs strips
# the binary it packs (14 MB), as the wheel's is, so the install timed here
# is a user's. Stripped: stripping it again changes nothing.
node js/scripts/platform-package.mjs --binary "$BIN" --package @ctxgate/linux-x64-gnu --out "$T/linux-x64-gnu" >/dev/null
strip -o "$T/restripped" "$T/linux-x64-gnu/bin/ctxgate"
cmp -s "$T/restripped" "$T/linux-x64-gnu/bin/ctxgate" \
  || { echo "js/ci.sh: the platform package's binary is not stripped"; exit 1; }
echo "platform package binary: $(wc -c < "$T/linux-x64-gnu/bin/ctxgate") bytes, stripped (release build: $(wc -c < "$BIN") bytes)"
(cd js && npm pack --silent --pack-destination "$T" >/dev/null)
(cd "$T/linux-x64-gnu" && npm pack --silent --pack-destination "$T" >/dev/null)
MAIN_TGZ=$T/ctxgate-$VERSION.tgz
PLATFORM_TGZ=$T/ctxgate-linux-x64-gnu-$VERSION.tgz
ls -l "$MAIN_TGZ" "$PLATFORM_TGZ" | awk '{ printf "%s  %d bytes\n", $NF, $5 }'

step "install into a fresh npm project, from the tarballs"
mkdir "$T/project"
cd "$T/project"
npm init -y >/dev/null
t=$(now)
# The other platforms' packages are optional: npm skips them (they are not
# published yet: 404), and the linux-x64-gnu tarball given here satisfies
# ctxgate's dependency on @ctxgate/linux-x64-gnu@$VERSION.
npm install --no-audit --no-fund --loglevel=error "$MAIN_TGZ" "$PLATFORM_TGZ"
echo "install: $(since "$t")"
t=$(now)
npx --no-install ctxgate --version
echo "first run (npx ctxgate --version): $(since "$t")"
t=$(now)
./node_modules/.bin/ctxgate --version >/dev/null
echo "again, without npx (node_modules/.bin/ctxgate --version): $(since "$t")"
t=$(now)
npx --no-install ctxgate check --cases 300 --seed 29 --save "$T/failures" > "$T/check.txt" 2>&1 \
  || { cat "$T/check.txt"; echo "js/ci.sh: npx ctxgate check failed"; exit 1; }
echo "npx ctxgate check --cases 300: $(tail -1 "$T/check.txt") ($(since "$t"))"

step "a serve() subject from the installed package passes its claims (examples/keep-all.mjs)"
cp "$REPO/js/examples/keep-all.mjs" .
npx --no-install ctxgate check --subject 'node keep-all.mjs' --cases 300 --seed 29 --save "$T/failures" > "$T/keep-all.txt" 2>&1 \
  || { cat "$T/keep-all.txt"; echo "js/ci.sh: examples/keep-all.mjs failed its claims"; exit 1; }
grep -E '^[0-9]+ cases in' "$T/keep-all.txt"

step "the types: examples/typed.ts passes tsc --strict against the installed package"
npm install --no-audit --no-fund --loglevel=error --save-dev "$VITEST" "$TYPESCRIPT"
cp "$REPO/js/examples/typed.ts" .
npx --no-install tsc --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 typed.ts
echo "tsc: no errors"

step "vitest example: passes over adapters/node-minimal"
cp "$REPO/js/examples/vitest/compactor.test.js" .
t=$(now)
CTXGATE_SUBJECT="node $(word "$REPO/adapters/node-minimal/compactor.mjs")" npx --no-install vitest run > "$T/vitest.txt" 2>&1 \
  || { cat "$T/vitest.txt"; echo "js/ci.sh: the vitest example failed over node-minimal"; exit 1; }
plain "$T/vitest.txt"
grep -E 'Tests +[0-9]+ passed' "$T/vitest.txt" \
  || { cat "$T/vitest.txt"; echo "js/ci.sh: vitest passed over node-minimal but its output has no 'Tests N passed' line"; exit 1; }
echo "vitest over node-minimal: $(since "$t")"

step "vitest example: fails over node-minimal with a planted defect (tool calls left out of its estimate)"
# A copy keeps its relative import of the package's wire.js.
mkdir -p "$T/planted/adapters" "$T/planted/js"
cp -r "$REPO/adapters/node-minimal" "$T/planted/adapters/"
cp -r "$REPO/js/lib" "$REPO/js/package.json" "$T/planted/js/"
PLANTED=$T/planted/adapters/node-minimal/compactor.mjs
sed -i 's/n += tokens(nbytes(dumps(calls)), bpt);/n += 0;/' "$PLANTED"
grep -q 'n += 0;' "$PLANTED" || { echo "js/ci.sh: the defect was not planted (compactor.mjs changed?)"; exit 1; }
set +e
CTXGATE_SUBJECT="node $(word "$PLANTED")" npx --no-install vitest run > "$T/vitest-planted.txt" 2>&1
rc=$?
set -e
plain "$T/vitest-planted.txt"
expect() {
  grep -qE "$1" "$T/vitest-planted.txt" \
    || { cat "$T/vitest-planted.txt"; echo "js/ci.sh: the failing vitest run does not show $2"; exit 1; }
}
[ "$rc" -ne 0 ] || { cat "$T/vitest-planted.txt"; echo "js/ci.sh: vitest passed over a planted defect"; exit 1; }
expect 'FAILED estimate-covers-tool-calls' "the failed invariant"
expect 'replay: ctxgate replay .*\.ctxgate/failures/estimate-covers-tool-calls-[0-9a-f]+\.json' "the replay line with the fixture path"
fixture=$(grep -oE '\S*\.ctxgate/failures/estimate-covers-tool-calls-[0-9a-f]+\.json' "$T/vitest-planted.txt" | head -1)
[ -f "$fixture" ] || { echo "js/ci.sh: the fixture $fixture named in the failure was not saved"; exit 1; }
grep -E 'FAILED|replay:' "$T/vitest-planted.txt" | head -4
echo "(vitest exit $rc, as expected)"

step "vitest agent example: an agent in the test process, checked by checkAgent, passes"
cp "$REPO/js/examples/vitest/agent.test.js" "$REPO/js/examples/vitest/tiny-agent.js" .
t=$(now)
CTXGATE_SEED=45 npx --no-install vitest run agent.test.js > "$T/vitest-agent.txt" 2>&1 \
  || { plain "$T/vitest-agent.txt"; cat "$T/vitest-agent.txt"; echo "js/ci.sh: the in-process agent example failed"; exit 1; }
plain "$T/vitest-agent.txt"
grep -E 'Tests +2 passed' "$T/vitest-agent.txt" \
  || { cat "$T/vitest-agent.txt"; echo "js/ci.sh: the agent example passed but not as 'Tests 2 passed'"; exit 1; }
echo "vitest agent example: $(since "$t")"

step "vitest agent example with a planted bug (the system prompt dropped at compaction): fails on pinned-kept"
set +e
CTXGATE_EXAMPLE_BUG=drops-system-prompt CTXGATE_SEED=45 npx --no-install vitest run agent.test.js > "$T/vitest-agent-planted.txt" 2>&1
rc=$?
set -e
plain "$T/vitest-agent-planted.txt"
[ "$rc" -ne 0 ] || { cat "$T/vitest-agent-planted.txt"; echo "js/ci.sh: vitest passed over the planted agent bug"; exit 1; }
grep -qE 'FAILED pinned-kept \(case [0-9]+\)' "$T/vitest-agent-planted.txt" \
  || { cat "$T/vitest-agent-planted.txt"; echo "js/ci.sh: the failing agent run does not name pinned-kept"; exit 1; }
fixture=$(grep -oE '/\S*\.ctxgate/agent-failures/pinned-kept-[0-9a-f]+\.json' "$T/vitest-agent-planted.txt" | head -1)
[ -n "$fixture" ] && [ -f "$fixture" ] \
  || { cat "$T/vitest-agent-planted.txt"; echo "js/ci.sh: the failing agent run names no saved fixture ($fixture)"; exit 1; }
grep -E 'FAILED pinned-kept|fixture:|replay:' "$T/vitest-agent-planted.txt" | head -3
echo "(vitest exit $rc, as expected)"

step "a platform package of another version is refused, naming both versions"
MANIFEST=node_modules/@ctxgate/linux-x64-gnu/package.json
cp "$MANIFEST" "$T/manifest.json"
node -e 'const f = process.argv[1]; const m = JSON.parse(require("fs").readFileSync(f)); m.version = "0.0.0-skew"; require("fs").writeFileSync(f, JSON.stringify(m))' "$MANIFEST"
set +e
npx --no-install ctxgate --version > "$T/skew.txt" 2>&1
rc=$?
set -e
grep -q "ctxgate: @ctxgate/linux-x64-gnu is version 0.0.0-skew, and ctxgate is $VERSION" "$T/skew.txt" && [ "$rc" -eq 2 ] \
  || { cat "$T/skew.txt"; echo "js/ci.sh: expected exit 2 and both versions named, got $rc"; exit 1; }
cut -c1-160 "$T/skew.txt"
cp "$T/manifest.json" "$MANIFEST"

step "without its platform package, npx ctxgate names the platform"
rm -rf node_modules/@ctxgate/linux-x64-gnu
set +e
npx --no-install ctxgate --version > "$T/missing.txt" 2>&1
rc=$?
set -e
grep -q 'ctxgate: this platform (linux-x64-glibc) needs the package @ctxgate/linux-x64-gnu' "$T/missing.txt" && [ "$rc" -eq 2 ] \
  || { cat "$T/missing.txt"; echo "js/ci.sh: expected exit 2 and a message naming the platform, got $rc"; exit 1; }
cat "$T/missing.txt"
cd "$REPO"

step "bodyBytes equals the binary's body size: $CASES generated cases in each wire format"
# One gen and three `estimate --lines` processes, whatever the case count.
node js/scripts/compare-body.mjs --binary "$BIN" --cases "$CASES"

step "done in $SECONDS s"
