#!/usr/bin/env python3
"""Build the seed corpus under fuzz/corpus/<target>/ (gitignored).

    python3 fuzz/seed_corpus.py [--shared ../shared] [--max-bytes 65536]

Reads tests/fixtures/ and ../shared/data/real-histories/ in place (nothing
is copied into the repository):

- parse: every fixture and real history as it is on disk (histories in the
  three wire formats, fixtures), plus what the protocol and the config
  reader see: each history as a compact answer line, each fixture's config,
  a hello answer and the two error answers;
- compact, estimate, wire_roundtrip: seeded byte strings (the generators
  turn any bytes into a well-formed case, so short varied seeds are enough);
- body_size: seeded bytes followed by the JSON envelopes of the fixtures
  and of the real histories (their fields other than `messages`);
- agent_request: request bodies of the three dialects as
  tests/agents/toolloop.py builds them (its own functions), from the
  fixtures' and real histories' conversations — streamed or not, with the
  tool or without, a summary asked or not — each behind a stage byte;
- answer: seeded choices and case bytes, then either nothing (the target
  makes its answer from the request's history) or a real answer line (the
  fixtures' and real histories' messages as a compact answer, the error
  and estimate answers) read as the line itself.

Files are named by content hash, so running it twice adds nothing.
"""

import argparse
import hashlib
import json
import pathlib
import random
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGETS = ["compact", "estimate", "parse", "wire_roundtrip", "body_size", "answer",
           "agent_request"]


def put(target: str, data: bytes) -> None:
    out = ROOT / "fuzz" / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)


def compact(v) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


def put_answer_line(prefix: bytes, line: bytes) -> None:
    """An `answer` input whose line is `line` itself (mode 7: raw), sent
    as request 1 of an engine compact of the case `prefix` makes."""
    case = prefix[:510]
    put("answer", bytes([0, 0, 7, len(case) // 2]) + case[: len(case) // 2 * 2] + line)


def load_toolloop():
    """tests/agents/toolloop.py, whose body builders make the agent_request
    seeds (standard library only; its main() is not run)."""
    sys.path.insert(0, str(ROOT / "tests" / "agents"))
    try:
        import toolloop  # noqa: E402
    except Exception as e:  # a seed source, not a requirement
        print(f"note: tests/agents/toolloop.py not importable ({e}); no agent_request bodies")
        return None
    finally:
        sys.path.pop(0)
    return toolloop


def neutral(msgs):
    """Engine messages as toolloop.py's neutral messages (text content)."""
    def text(c):
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            return "".join(p.get("text", "") for p in c if isinstance(p, dict))
        return ""
    out = []
    for m in msgs:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            continue
        n = {"role": m["role"], "content": text(m.get("content"))}
        calls = m.get("toolCalls") or m.get("tool_calls")
        if m["role"] == "assistant" and isinstance(calls, list):
            n["calls"] = [{"id": str(c.get("id", "")), "name": str(c.get("name", "read_file")),
                           "args": c.get("arguments") if isinstance(c.get("arguments"), dict) else {}}
                          for c in calls if isinstance(c, dict)]
        if m["role"] == "tool":
            n["id"] = str(m.get("toolCallId") or m.get("tool_call_id") or "")
        out.append(n)
    return out


def put_agent_bodies(toolloop, msgs, k: int) -> None:
    """Each dialect's request body for `msgs` behind a stage byte, streamed
    or not, then again with a summary asked."""
    conv = neutral(msgs)[:24]
    if not conv:
        return
    asked = conv + [{"role": "user", "content": "Summarize the conversation so far."}]
    for dialect, build in sorted(toolloop.BODIES.items()):
        for i, c in enumerate([conv, asked]):
            body = build(c, tools=(i == 0), stream=bool((k + i) % 2), max_tokens=512)
            stage = (k * 7 + i) % 256
            put("agent_request", bytes([stage]) + compact(body))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--max-bytes", type=int, default=65536,
                    help="skip larger files (they slow the fuzzer down)")
    args = ap.parse_args()

    files = sorted((ROOT / "tests" / "fixtures").rglob("*.json"))
    real = pathlib.Path(args.shared) / "data" / "real-histories"
    if real.is_dir():
        files += sorted(real.rglob("*.json"))
    else:
        print(f"note: {real} not found; seeding from tests/fixtures only")

    rng = random.Random(0xC7C6A7E)
    prefixes = [rng.randbytes(n) for n in [8, 16, 32, 64, 128, 256, 512, 1024] for _ in range(8)]
    for t in ["compact", "estimate", "wire_roundtrip", "body_size"]:
        for p in prefixes:
            put(t, p)
    # answer: pick (engine compact), ids, mode (shaped: the target's own
    # answers), case length (in pairs of bytes), the case's bytes.
    for k, p in enumerate(prefixes):
        put("answer", bytes([k % 64, k % 12, (k * 8) % 256, len(p) // 2 % 256]) + p)
    toolloop = load_toolloop()

    put("parse", compact({"op": "hello", "protocol": 1, "name": "s", "version": "1",
                          "ops": ["compact", "estimate"], "format": "engine",
                          "invariants": ["tool-pairing"]}))
    put("parse", compact({"id": 1, "error": {"kind": "cannot_fit", "message": "m"}}))
    put("parse", compact({"id": 2, "error": {"kind": "invalid_input", "message": "m"}}))
    put("parse", compact({"id": 3, "tokens": 12, "perMessage": [4, 8]}))

    used = 0
    for path in files:
        raw = path.read_bytes()
        try:
            doc = json.loads(raw)
        except ValueError:
            continue
        if len(raw) <= args.max_bytes:
            put("parse", raw)
            used += 1
        if not isinstance(doc, dict):
            continue
        envelope = {k: v for k, v in doc.items() if k not in ("messages", "config")}
        if isinstance(doc.get("config"), dict):
            put("parse", compact(doc["config"]))
            envelope = doc["config"].get("envelope") or envelope
        body = compact(envelope)
        if len(body) <= args.max_bytes:
            put("body_size", prefixes[used % len(prefixes)] + body)
        msgs = doc.get("messages")
        if isinstance(msgs, list):
            answer = {"id": 1, "messages": msgs}
            if "system" in doc:
                answer["system"] = doc["system"]
            line = compact(answer)
            if len(line) <= args.max_bytes:
                put("parse", line)
                put_answer_line(prefixes[used % len(prefixes)], line)
            if toolloop is not None and len(line) <= args.max_bytes:
                put_agent_bodies(toolloop, msgs, used)
    for line in [{"id": 1, "error": {"kind": "cannot_fit", "message": "m"}},
                 {"id": 1, "error": None, "messages": []},
                 {"id": 1, "tokens": 12, "perMessage": [4, 8]},
                 {"id": 1, "error": {"kind": "library_error", "message": "m"}}]:
        for p in prefixes[:8]:
            put_answer_line(p, compact(line))
    for t in TARGETS:
        n = len(list((ROOT / "fuzz" / "corpus" / t).iterdir()))
        print(f"fuzz/corpus/{t}: {n} files")
    print(f"({used} of {len(files)} fixture and history files under {args.max_bytes} bytes)")


if __name__ == "__main__":
    main()
