#!/usr/bin/env bash
# Peak memory (maximum resident set, /usr/bin/time) of `ctxgate body` on
# four histories (issue 44): a million small messages, one message with
# a million fields, ~300 MB of real histories repeated (many messages and
# tool calls, openai), and ~330 MB in big strings. Peak memory, unlike
# time, hardly moves with a busy machine.
#
#   benches/memory.sh                       # this tree's release build
#   benches/memory.sh path/to/old/ctxgate   # another build, to compare
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  bin=$1
else
  cargo build --release --quiet
  bin=target/release/ctxgate
fi
[ -x /usr/bin/time ] || { echo "/usr/bin/time (GNU time) is not installed" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" ../shared/data/real-histories <<'PY'
import glob, json, os, random, sys
out, real = sys.argv[1], sys.argv[2]
def write(name, text):
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
write("small.json", "[" + ",".join('{"role":"%s","content":"m%d"}' % (("user", "assistant")[i % 2], i) for i in range(1_000_000)) + "]")
write("fields.json", '[{"role":"user","content":"x",' + ",".join('"f%d":%d' % (i, i) for i in range(1_000_000)) + "}]")
docs = []
for p in sorted(glob.glob(os.path.join(real, "*", "*.json"))):
    d = json.load(open(p))
    m = d.get("messages") or []
    if d.get("format") == "openai" and m and not (m[-1].get("role") == "assistant" and m[-1].get("tool_calls")):
        docs.append(m)
with open(os.path.join(out, "real.json"), "w") as f:
    f.write('{"format":"openai","messages":[')
    size, rep, first = 0, 0, True
    while docs and size < 300_000_000:
        for msgs in docs:
            for m in msgs:
                m = dict(m)
                if m.get("tool_calls"):
                    m["tool_calls"] = [dict(c, id=f"{c['id']}_{rep}") for c in m["tool_calls"]]
                if "tool_call_id" in m:
                    m["tool_call_id"] = f"{m['tool_call_id']}_{rep}"
                s = ("" if first else ",") + json.dumps(m, ensure_ascii=False, separators=(",", ":"))
                f.write(s)
                size, first = size + len(s.encode()), False
        rep += 1
    f.write("]}")
random.seed(1)
msgs, size, i = [{"role": "system", "content": "be brief"}], 0, 0
while size < 300_000_000:
    i += 1
    t = "".join(random.choice('abcdefghij klmnop\n"é') for _ in range(1000)) * 1000
    msgs += [{"role": "assistant", "content": None, "toolCalls": [{"id": f"c{i}", "name": "read", "arguments": {"path": f"/f{i}"}}]},
             {"role": "tool", "toolCallId": f"c{i}", "content": t}]
    size += len(t.encode()) + 100
write("strings.json", json.dumps(msgs, ensure_ascii=False, separators=(",", ":")))
PY
printf '%-14s %10s %10s %8s %8s\n' history "input MB" "peak MiB" ratio seconds
for name in small fields real strings; do
  file="$dir/$name.json"
  [ -s "$file" ] || continue
  /usr/bin/time -f '%M %e' -o "$dir/time" "$bin" body --max-input-bytes 400000000 "$file" >/dev/null 2>"$dir/err" ||
    { cat "$dir/err" >&2; exit 1; }
  read -r kb secs <"$dir/time"
  bytes=$(stat -c %s "$file")
  python3 -c 'import sys; n, b, kb, s = sys.argv[1:]; print("%-14s %10.1f %10.0f %7.1fx %8s" % (n, int(b) / 1e6, int(kb) / 1024, int(kb) * 1024 / int(b), s))' "$name" "$bytes" "$kb" "$secs"
done
