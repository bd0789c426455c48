#!/usr/bin/env python3
"""A small ToolLoop agent for ctxgate's own tests of agent mode: it talks to
a model over HTTP (OpenAI Chat Completions, OpenAI Responses or Anthropic
Messages, streamed or not), reads files with its one tool, and compacts its
history the way ADR 0098 says: estimate = bytes of the messages' JSON / 4
(tool calls included), compaction checked before *every* request, a summary
asked of the model, the system prompt and the task kept, the last turn kept
whole, and the transport ceiling respected besides the window.

With --bug NAME it carries one of the 2026 reports of this class instead:

  no-check-before-results  compaction is checked before a user turn only,
                           never between a tool result and the request that
                           carries it (earendil-works/pi#3609)
  resend-on-413            a 413 is not recognised: the same history is sent
                           again (QwenLM/qwen-code#10380)
  summary-over-ceiling     the summary request carries the whole history, so
                           it is itself over the ceiling (opencode #36589)
  drops-system-prompt      the system prompt is lost at compaction
  cuts-last-results        the last turn's results are cut to 100 bytes
  compacts-early           compacts at a tenth of the trigger
  flaky-drop               drops the system prompt at compaction, one run in two
                           (every other run with --run-counter FILE, at random
                           without)
  images-weightless        an image a tool returned weighs nothing in the body's
                           size: only its tokens are counted (openai/codex#41338)
  drops-current-turn       before each request, a turn whose results are over
                           8,000 bytes is left out of the prompt, its call and
                           its results together, newest first (Mastra's
                           TokenLimiterProcessor, mastra-ai/mastra#24110): the
                           model is asked the same again, and the agent loops
  chars-not-bytes          the body's size and the estimate count characters,
                           not UTF-8 bytes (a JavaScript `.length`, a Python
                           `len(str)`): text in CJK, emoji or other scripts
                           weighs less than it does on the wire
  off-by-one-ceiling       with --exact-ceiling, the body sent carries one byte
                           more than the one measured (a newline the client
                           adds): a body measured at exactly the ceiling goes
                           out one over

For ctxgate's own tests besides: --tool-name NAME advertises the tool
under another name; --check-env exits 3 when the environment ctxgate gives
is not SPEC §9's (dummy keys, no credentials of the user's, the task in a
variable and a file, the workspace as working directory);
--spawn-sleeper TOKEN leaves a detached process behind (its argv holds
TOKEN), which ctxgate must stop; --spawn-hopper TOKEN leaves one that,
its environment cleared, forks a successor and exits, over and over (each
one is re-parented to ctxgate only as its parent dies); --hang SECS waits
that long first;
--post-mib N first POSTs N MiB, in bodies of 32 MiB, to a path that is
not the model's (what ctxgate keeps only the start of, and stops at its
cap on request bytes); --poll N sends GET /v1/models N times first (no model request: what
ctxgate's cap on model requests must not count); --tool-name-later NAME
advertises the tool as NAME in every case but case 0.

--result-format shows each file as a real agent's tool does, none of it a
bug: `plain` (the file as read), `opencode-read` (opencode's read tool: the
lines numbered `N: ` between <path>/<type>/<content> tags, each line cut
at --line-max characters with "... (line truncated to N chars)"), or
`json-observation` (mini-swe-agent's observation: {"returncode": 0,
"output": "..."} as JSON with ASCII escapes, or output_head and
output_tail of --tool-output-max-bytes characters each when the output is
twice that or longer, in place of the byte cut).

--exact-ceiling: the window alone sets the trigger, and the ceiling is guarded
by the body's size to the byte, without a margin (correct, and what the
ceiling probe exists for).

Settings come from flags (the same values ctxgate's --config holds):
  --window TOKENS --threshold F --ceiling BYTES --dialect D [--stream]
  [--tool-output-max-bytes N]  (a result longer than N bytes is cut to N)

Standard library only. Exit 0 after the model's final answer; 2 when even
the smallest request cannot fit (it says so on stderr).
"""

import argparse
import base64
import random
import subprocess
import json
import os
import sys
import urllib.error
import urllib.request

SYSTEM = ("You are a careful coding agent. Read the files the task needs with "
          "read_file, one turn at a time, then answer.")
SUMMARY_ASK = "Summarize the conversation so far for a handoff."

READ_FILE = {
    "name": "read_file",
    "description": "Read a text file and return its content.",
    "schema": {"type": "object", "properties": {"path": {"type": "string"}},
               "required": ["path"]},
}


class TooLarge(Exception):
    pass


class OverWindow(Exception):
    pass


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


# --- the three dialects: a conversation of neutral messages in, a turn out ---
# A neutral message: {"role": system|user|assistant|tool, "content": str,
#                     "calls": [{"id", "name", "args"}], "id": call id (tool),
#                     "image": base64 PNG (tool, when the file read is one)}
# An image result travels as each dialect lets a tool's result carry one:
# Anthropic's tool_result and Responses' function_call_output hold image
# parts; Chat Completions' tool messages hold text only, so the images of a
# turn's results follow them in one user message (as agents do).

def data_url(b64):
    return "data:image/png;base64," + b64

def tool_name():
    return READ_FILE["name"]


def chat_body(msgs, tools, stream, max_tokens):
    out, images = [], []
    for m in msgs:
        if m["role"] != "tool" and images:
            out.append({"role": "user", "content": images})
            images = []
        if m["role"] == "assistant" and m.get("calls"):
            out.append({"role": "assistant", "content": m["content"] or None,
                        "tool_calls": [{"id": c["id"], "type": "function",
                                        "function": {"name": c["name"], "arguments": dumps(c["args"])}}
                                       for c in m["calls"]]})
        elif m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["id"], "content": m["content"]})
            if m.get("image"):
                images.append({"type": "image_url", "image_url": {"url": data_url(m["image"])}})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    if images:
        out.append({"role": "user", "content": images})
    body = {"model": "test-model", "messages": out, "stream": stream, "max_tokens": max_tokens}
    if tools:
        body["tools"] = [{"type": "function", "function": {"name": tool_name(),
                          "description": READ_FILE["description"], "parameters": READ_FILE["schema"]}}]
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def responses_body(msgs, tools, stream, max_tokens):
    items, instructions = [], None
    for m in msgs:
        if m["role"] == "system" and instructions is None:
            instructions = m["content"]
        elif m["role"] == "assistant" and m.get("calls"):
            if m["content"]:
                items.append({"role": "assistant", "content": m["content"]})
            for c in m["calls"]:
                items.append({"type": "function_call", "call_id": c["id"], "name": c["name"],
                              "arguments": dumps(c["args"])})
        elif m["role"] == "tool":
            output = m["content"]
            if m.get("image"):
                output = [{"type": "input_image", "image_url": data_url(m["image"])}]
            items.append({"type": "function_call_output", "call_id": m["id"], "output": output})
        else:
            items.append({"role": m["role"], "content": m["content"]})
    body = {"model": "test-model", "input": items, "stream": stream, "max_output_tokens": max_tokens}
    if instructions is not None:
        body["instructions"] = instructions
    if tools:
        body["tools"] = [{"type": "function", "name": tool_name(),
                          "description": READ_FILE["description"], "parameters": READ_FILE["schema"]}]
    return body


def anthropic_body(msgs, tools, stream, max_tokens):
    system = "\n".join(m["content"] for m in msgs if m["role"] == "system")
    out = []
    for m in msgs:
        if m["role"] == "system":
            continue
        if m["role"] == "assistant" and m.get("calls"):
            blocks = [{"type": "text", "text": m["content"]}] if m["content"] else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                       for c in m["calls"]]
            out.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            content = m["content"]
            if m.get("image"):
                content = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                        "data": m["image"]}}]
            block = {"type": "tool_result", "tool_use_id": m["id"], "content": content}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
                    and out[-1]["content"] and out[-1]["content"][0].get("type") == "tool_result":
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    body = {"model": "test-model", "messages": out, "stream": stream, "max_tokens": max_tokens}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [{"name": tool_name(), "description": READ_FILE["description"],
                          "input_schema": READ_FILE["schema"]}]
    return body


BODIES = {"openai-chat": chat_body, "openai-responses": responses_body, "anthropic": anthropic_body}


def url_of(dialect):
    if dialect == "anthropic":
        return os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages"
    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    return base + ("/chat/completions" if dialect == "openai-chat" else "/responses")


def sse_events(raw):
    for block in raw.decode("utf-8").split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            yield "\n".join(data)


def read_turn(dialect, raw, stream):
    """The model's turn: (text, [calls])."""
    if not stream:
        r = json.loads(raw)
        if dialect == "openai-chat":
            m = r["choices"][0]["message"]
            calls = [{"id": c["id"], "name": c["function"]["name"],
                      "args": json.loads(c["function"]["arguments"])} for c in m.get("tool_calls") or []]
            return m.get("content") or "", calls
        if dialect == "openai-responses":
            text, calls = "", []
            for item in r["output"]:
                if item["type"] == "message":
                    text += "".join(p["text"] for p in item["content"] if p["type"] == "output_text")
                elif item["type"] == "function_call":
                    calls.append({"id": item["call_id"], "name": item["name"],
                                  "args": json.loads(item["arguments"])})
            return text, calls
        text = "".join(b["text"] for b in r["content"] if b["type"] == "text")
        calls = [{"id": b["id"], "name": b["name"], "args": b["input"]}
                 for b in r["content"] if b["type"] == "tool_use"]
        return text, calls
    text, calls = "", {}
    for data in sse_events(raw):
        if data == "[DONE]":
            break
        e = json.loads(data)
        if dialect == "openai-chat":
            for ch in e.get("choices", []):
                d = ch.get("delta", {})
                text += d.get("content") or ""
                for tc in d.get("tool_calls") or []:
                    c = calls.setdefault(tc["index"], {"id": None, "name": "", "args": ""})
                    c["id"] = tc.get("id") or c["id"]
                    f = tc.get("function", {})
                    c["name"] += f.get("name") or ""
                    c["args"] += f.get("arguments") or ""
        elif dialect == "openai-responses":
            if e["type"] == "response.output_text.delta":
                text += e["delta"]
            elif e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call":
                it = e["item"]
                calls[len(calls)] = {"id": it["call_id"], "name": it["name"], "args": it["arguments"]}
        else:
            if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
                b = e["content_block"]
                calls[e["index"]] = {"id": b["id"], "name": b["name"], "args": ""}
            elif e["type"] == "content_block_delta":
                d = e["delta"]
                if d["type"] == "text_delta":
                    text += d["text"]
                elif d["type"] == "input_json_delta":
                    calls[e["index"]]["args"] += d["partial_json"]
    out = [{"id": c["id"], "name": c["name"], "args": json.loads(c["args"] or "{}")}
           for _, c in sorted(calls.items())]
    return text, out


# What the client adds after the body it was given (off-by-one-ceiling: a
# newline, which the agent's own size never counted).
TRAILER = b""


def send(dialect, msgs, tools, stream, max_tokens=1024):
    body = dumps(BODIES[dialect](msgs, tools, stream, max_tokens)).encode("utf-8") + TRAILER
    req = urllib.request.Request(url_of(dialect), data=body, method="POST", headers={
        "content-type": "application/json",
        "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", ""),
        "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
        "anthropic-version": "2023-06-01"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return read_turn(dialect, resp.read(), stream)
    except urllib.error.HTTPError as e:
        text = e.read().decode("utf-8", "replace")
        if e.code == 413:
            raise TooLarge(text)
        if e.code == 400 and ("context" in text or "too long" in text):
            raise OverWindow(text)
        raise


def opencode_read(path, content, line_max):
    """opencode 1.18's read tool: numbered lines, long ones cut and marked."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown = []
    for i, line in enumerate(lines, 1):
        if len(line) > line_max:
            line = line[:line_max] + f"... (line truncated to {line_max} chars)"
        shown.append(f"{i}: {line}")
    return (f"<path>{path}</path>\n<type>file</type>\n<content>\n" + "\n".join(shown)
            + f"\n\n(End of file - total {len(lines)} lines)\n</content>")


def tojson(text):
    """Jinja's tojson, as mini-swe-agent's template uses it."""
    return (json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026").replace("'", "\\u0027"))


def json_observation(content, piece):
    """mini-swe-agent 2.4's observation of a command's output."""
    if len(content) < 2 * piece:
        return '{\n  "returncode": 0,\n  "output": ' + tojson(content) + "\n}"
    return ('{\n  "returncode": 0,\n  "output_head": ' + tojson(content[:piece])
            + ',\n  "output_tail": ' + tojson(content[-piece:])
            + f',\n  "elided_chars": {len(content) - 2 * piece},\n  "warning": "Output too long."\n}}')


class Agent:
    def __init__(self, a):
        self.a = a
        self.trigger = round(a.threshold * min(a.window, a.ceiling // 4))
        if a.bug == "compacts-early":
            self.trigger = max(1, self.trigger // 10)
        if a.exact_ceiling:
            # The window sets the trigger; the ceiling is guarded by the
            # body's size alone, to the byte.
            self.trigger = round(a.threshold * a.window)

    def size(self, msgs):
        if self.a.bug == "images-weightless":
            msgs = [{k: v for k, v in m.items() if k != "image"} for m in msgs]
        body = dumps(BODIES[self.a.dialect](msgs, True, self.a.stream, 1024))
        if self.a.bug == "chars-not-bytes":
            return len(body)
        return len(body.encode("utf-8"))

    def estimate(self, msgs):
        # An image weighs its pixels' tokens, not its base64: 1,600 each.
        weigh = len if self.a.bug == "chars-not-bytes" else (lambda t: len(t.encode("utf-8")))
        return sum(weigh(dumps({k: v for k, v in m.items() if k != "image"})) // 4
                   + (1600 if m.get("image") else 0) for m in msgs)

    def due(self, msgs):
        margin = 1.0 if self.a.exact_ceiling else 0.9
        return self.estimate(msgs) > self.trigger or self.size(msgs) > self.a.ceiling * margin

    def last_turn(self, msgs):
        """The index of the last assistant turn with calls."""
        for i in range(len(msgs) - 1, -1, -1):
            if msgs[i]["role"] == "assistant" and msgs[i].get("calls"):
                return i
        return len(msgs)

    def compact(self, msgs):
        system, task = msgs[0], msgs[1]
        start = self.last_turn(msgs)
        recent = msgs[start:]
        old = msgs[2:start]
        summary = ""
        if old:
            if self.a.bug == "summary-over-ceiling":
                ask = msgs + [{"role": "user", "content": SUMMARY_ASK}]
            else:
                # What the summariser is sent is bounded by the ceiling too.
                ask, budget = [system], self.a.ceiling // 2
                for m in old:
                    piece = {"role": "user" if m["role"] != "assistant" else "assistant",
                             "content": (m["content"] or dumps(m.get("calls")))[:4000]}
                    if self.size(ask + [piece]) > budget:
                        break
                    ask.append(piece)
                if ask[-1]["role"] == "user":
                    ask[-1] = dict(ask[-1], content=ask[-1]["content"] + "\n\n" + SUMMARY_ASK)
                else:
                    ask.append({"role": "user", "content": SUMMARY_ASK})
            try:
                summary, _ = send(self.a.dialect, ask, False, self.a.stream, max_tokens=256)
            except (TooLarge, OverWindow):
                if self.a.bug == "summary-over-ceiling":
                    raise
                summary = "(earlier turns dropped)"
            summary = summary[:2000]
        drop = self.a.bug == "drops-system-prompt" or (
            self.a.bug == "flaky-drop" and self.a.drop_this_run)
        head = [task] if drop else [system, task]
        note = [{"role": "user", "content": "Earlier work, summarised: " + summary}] if summary else []
        return head + note + recent

    def limited(self, msgs):
        """drops-current-turn: the prompt without the turns whose results
        are over the limiter's budget (best-fit: the others are kept)."""
        budget, out, skip = 8000, [], set()
        for i, m in enumerate(msgs):
            if m["role"] == "assistant" and m.get("calls"):
                ids = {c["id"] for c in m["calls"]}
                results = [j for j in range(i + 1, len(msgs))
                           if msgs[j]["role"] == "tool" and msgs[j]["id"] in ids]
                if sum(len(msgs[j]["content"].encode("utf-8")) for j in results) > budget:
                    skip.add(i)
                    skip.update(results)
        return [m for i, m in enumerate(msgs) if i not in skip]

    def fits(self, msgs):
        """Under the hard limits: the ceiling and the window."""
        return self.size(msgs) <= self.a.ceiling and self.estimate(msgs) <= self.a.window

    def run(self, task):
        msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
        for _ in range(200):
            if self.a.bug != "no-check-before-results" and self.due(msgs):
                msgs = self.compact(msgs)
                if not self.fits(msgs) and self.a.bug in (None, "chars-not-bytes", "off-by-one-ceiling"):
                    print("ctxgate test agent: the last turn alone does not fit", file=sys.stderr)
                    return 2
            tries = 0
            while True:
                try:
                    prompt = self.limited(msgs) if self.a.bug == "drops-current-turn" else msgs
                    text, calls = send(self.a.dialect, prompt, True, self.a.stream)
                    break
                except (TooLarge, OverWindow):
                    tries += 1
                    if tries > 4:
                        print("ctxgate test agent: the request does not fit, even compacted", file=sys.stderr)
                        return 2
                    if self.a.bug == "resend-on-413":
                        continue
                    msgs = self.compact(msgs)
            if not calls:
                print(text)
                return 0
            msgs.append({"role": "assistant", "content": text, "calls": calls})
            results = []
            for c in calls:
                path = c["args"].get("path", "")
                image = None
                try:
                    if path.endswith(".png"):
                        # The tool returns an image as one: its bytes, as base64.
                        with open(path, "rb") as f:
                            image = base64.b64encode(f.read()).decode("ascii")
                        content = f"[image {os.path.basename(path)}]"
                    else:
                        with open(path, encoding="utf-8", newline="") as f:
                            content = f.read()
                except OSError as e:
                    content = f"error: {e}"
                fmt = self.a.result_format
                if fmt == "json-observation" and image is None:
                    content = json_observation(content, self.a.tool_output_max_bytes or 5000)
                elif self.a.tool_output_max_bytes:
                    content = content.encode("utf-8")[:self.a.tool_output_max_bytes].decode("utf-8", "ignore")
                if fmt == "opencode-read" and image is None:
                    content = opencode_read(path, content, self.a.line_max)
                result = {"role": "tool", "id": c["id"], "content": content}
                if image is not None:
                    result["image"] = image
                results.append(result)
            if self.a.bug == "cuts-last-results":
                results = [dict(r, content=r["content"][:100]) for r in results]
            msgs.extend(results)
        print("ctxgate test agent: too many turns", file=sys.stderr)
        return 3


def check_env():
    """What SPEC §9 gives an agent; a list of what is not so."""
    env, problems = os.environ, []
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        if not env.get(key, "").startswith("sk-ctxgate"):
            problems.append(f"{key} is not ctxgate's dummy key")
    for leaked in ("AWS_SECRET_ACCESS_KEY", "MY_SERVICE_API_KEY", "HTTPS_PROXY"):
        if leaked in env:
            problems.append(f"{leaked} was passed on")
    url = env.get("CTXGATE_AGENT_URL", "")
    if not url.startswith("http://127.0.0.1:"):
        problems.append(f"CTXGATE_AGENT_URL is {url!r}")
    if env.get("OPENAI_BASE_URL") != url + "/v1" or env.get("ANTHROPIC_BASE_URL") != url:
        problems.append("the base URLs do not point at CTXGATE_AGENT_URL")
    if not env.get("CTXGATE_AGENT_CASE", "").isdigit():
        problems.append("CTXGATE_AGENT_CASE is not a case index")
    if not os.path.basename(os.getcwd()) == "workspace":
        problems.append(f"the working directory is {os.getcwd()}")
    return problems


def next_run_is_odd(path):
    """Counts this run in PATH (ctxgate runs an agent's cases and re-runs
    one at a time): the 1st, 3rd, 5th, ... run says yes."""
    try:
        with open(path, encoding="utf-8") as f:
            n = int(f.read() or "0")
    except FileNotFoundError:
        n = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(n + 1))
    return n % 2 == 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dialect", default="openai-chat", choices=sorted(BODIES))
    p.add_argument("--stream", action="store_true")
    p.add_argument("--window", type=int, default=128000)
    p.add_argument("--threshold", type=float, default=0.7)
    p.add_argument("--ceiling", type=int, default=8 * 1024 * 1024)
    p.add_argument("--bug", default=None)
    p.add_argument("--exact-ceiling", action="store_true")
    p.add_argument("--tool-output-max-bytes", type=int, default=0)
    p.add_argument("--tool-name", default="read_file")
    p.add_argument("--result-format", default="plain",
                   choices=["plain", "opencode-read", "json-observation"])
    p.add_argument("--line-max", type=int, default=2000)
    p.add_argument("--check-env", action="store_true")
    p.add_argument("--spawn-sleeper", default=None)
    p.add_argument("--spawn-hopper", default=None)
    p.add_argument("--hang", type=float, default=0)
    p.add_argument("--poll", type=int, default=0)
    p.add_argument("--post-mib", type=int, default=0)
    p.add_argument("--tool-name-later", default=None)
    p.add_argument("--run-counter", default=None,
                   help="a file counting this agent's runs: flaky-drop drops on every other run")
    a = p.parse_args()
    a.drop_this_run = next_run_is_odd(a.run_counter) if a.run_counter else random.random() < 0.5
    READ_FILE["name"] = a.tool_name
    if a.bug == "off-by-one-ceiling":
        global TRAILER
        TRAILER = b"\n"
    if a.tool_name_later and os.environ.get("CTXGATE_AGENT_CASE") != "0":
        READ_FILE["name"] = a.tool_name_later
    if a.check_env:
        problems = check_env()
        if problems:
            print("environment: " + "; ".join(problems), file=sys.stderr)
            return 3
    if a.spawn_hopper:
        hop = "import os\nwhile True:\n    if os.fork():\n        os._exit(0)\n"
        subprocess.Popen([sys.executable, "-c", hop, a.spawn_hopper], env={}, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if a.spawn_sleeper:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", a.spawn_sleeper],
                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    task = os.environ["CTXGATE_AGENT_PROMPT"]
    # newline="": the task may hold a bare "\r", which text mode would turn into "\n".
    with open(os.environ["CTXGATE_AGENT_PROMPT_FILE"], encoding="utf-8", newline="") as f:
        assert f.read() == task, "the prompt file holds the task"
    if a.hang:
        import time
        time.sleep(a.hang)
    chunk = b"x" * (32 << 20)
    for _ in range(-(-a.post_mib // 32)):
        req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/nothing", data=chunk, method="POST")
        try:
            urllib.request.urlopen(req, timeout=60).read()
        except urllib.error.HTTPError:
            pass
    for _ in range(a.poll):
        with urllib.request.urlopen(os.environ["OPENAI_BASE_URL"] + "/models", timeout=10) as r:
            r.read()
    return Agent(a).run(task)


if __name__ == "__main__":
    sys.exit(main())
