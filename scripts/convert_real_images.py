#!/usr/bin/env python3
"""Derive tests/real-images/ from public agent runs with screenshots.

Reads two files of bytedance/UI-TARS-desktop (Apache-2.0) from a git
directory (the `fetch` tool's mirror, or a clone) at a given commit and
writes OpenAI Chat Completions histories in the shape of
../shared/data/real-histories: {"source", "license", "format": "openai",
"messages"}. Screenshots are kept byte for byte (real JPEG headers, real
pixel sizes, real payloads); the histories are trimmed, see SOURCES.md.

    python3 scripts/convert_real_images.py GIT_DIR COMMIT
"""

import json
import subprocess
import sys
from pathlib import Path

REPO = "bytedance/UI-TARS-desktop"
LICENSE = "Apache-2.0"
BROWSER = "multimodal/tarko/agent/tests/agent/__fixtures__/event-stream-with-many-images.jsonl"
NVIDIA = "multimodal/agent-tars/core/snapshot/research/nvidia-stock/loop-3/llm-request.jsonl"
# The browser run is cut after this many tool iterations (three screenshots).
BROWSER_ITERATIONS = 3
OUT = Path(__file__).resolve().parent.parent / "tests/real-images"


def show(git_dir, commit, path):
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
        check=True, capture_output=True,
    )
    return json.loads(out.stdout)


def browser_run(events):
    """Tarko event stream -> Chat Completions messages.

    user_message -> user (its parts as they are: text and image_url data
    URLs); assistant_message -> assistant with its content and toolCalls
    (already Chat Completions calls); tool_call events repeat the calls and
    are dropped; tool_result -> tool, its object content as JSON text.
    """
    messages, iterations = [], 0
    for e in events:
        kind = e["type"]
        if kind == "user_message":
            if iterations == BROWSER_ITERATIONS:
                break
            messages.append({"role": "user", "content": e["content"]})
        elif kind == "assistant_message":
            m = {"role": "assistant", "content": e["content"]}
            if e.get("toolCalls"):
                m["tool_calls"] = e["toolCalls"]
            messages.append(m)
        elif kind == "tool_result":
            messages.append({
                "role": "tool",
                "tool_call_id": e["toolCallId"],
                "content": json.dumps(e["content"], ensure_ascii=False),
            })
            iterations += 1
        elif kind != "tool_call":
            raise SystemExit(f"{BROWSER}: unexpected event type {kind!r}")
    return messages


def write(name, source, messages):
    doc = {"source": source, "license": LICENSE, "format": "openai", "messages": messages}
    path = OUT / name
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{path}: {len(messages)} messages, {path.stat().st_size} bytes")


def main():
    git_dir, commit = sys.argv[1], sys.argv[2]
    short = commit[:7]
    OUT.mkdir(parents=True, exist_ok=True)
    write(
        "agent-tars-browser.json",
        f"{REPO}@{short}:{BROWSER}#first {BROWSER_ITERATIONS} iterations",
        browser_run(show(git_dir, commit, BROWSER)),
    )
    request = show(git_dir, commit, NVIDIA)["request"]
    write(
        "agent-tars-nvidia-stock.json",
        f"{REPO}@{short}:{NVIDIA}#request.messages",
        request["messages"],
    )


if __name__ == "__main__":
    main()
