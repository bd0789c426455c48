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
  and of the real histories (their fields other than `messages`).

Files are named by content hash, so running it twice adds nothing.
"""

import argparse
import hashlib
import json
import pathlib
import random

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGETS = ["compact", "estimate", "parse", "wire_roundtrip", "body_size"]


def put(target: str, data: bytes) -> None:
    out = ROOT / "fuzz" / "corpus" / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)


def compact(v) -> bytes:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


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
    for t in TARGETS:
        n = len(list((ROOT / "fuzz" / "corpus" / t).iterdir()))
        print(f"fuzz/corpus/{t}: {n} files")
    print(f"({used} of {len(files)} fixture and history files under {args.max_bytes} bytes)")


if __name__ == "__main__":
    main()
