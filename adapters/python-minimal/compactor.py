#!/usr/bin/env python3
"""A small, correct context compactor behind the ctxgate subject protocol v1.

Standard library only. It speaks the engine wire format on stdin/stdout (one
JSON object a line) and implements ADR 0098 as ctxgate's SPEC §4 hardens it:

  1. Under the trigger and under the transport ceiling: return the history.
  2. Keep the head (the leading run of system messages, up to an earlier
     summary, which is folded into the new one); split the rest into
     iterations (an assistant message with toolCalls + the tool results that
     answer it travel together); an iteration with a pinned message is pinned.
  3. Keep the last keepRecent iterations verbatim; replace the earlier,
     unpinned ones by ONE summary message (role system, <= summaryMaxBytes
     bytes of UTF-8), placed after the pinned iterations of that span.
  4. Over the ceiling: elide the images of the recent iterations but the
     last (and pinned ones), oldest first, until it fits: each becomes one
     text part "[image elided: M, W×H, N bytes]". Still over the ceiling or
     the trigger: keep fewer recent iterations, down to one.
  5. One left and still over the ceiling: shorten the summary to the room
     that is left (on a character boundary), or drop it.
  6. head + pinned + last iteration alone over the ceiling: cannot_fit.

Run it by hand:

    echo '{"op":"hello","protocol":1}' | python3 adapters/python-minimal/compactor.py

or under ctxgate:

    ctxgate check --subject 'python3 adapters/python-minimal/compactor.py'

Content may be an array of parts (SPEC §1.4): text, images
({"type": "image", "mediaType", "data"} inline, or {"type": "image", "url"}),
and parts of other kinds, kept as they are. An image weighs its pixels in
tokens (SPEC §3: wire.image_tokens reads its header) and its base64 in the
body: a screenshot is ~1,600 tokens and ~1 MB.

JSON is Python's own `json` module: numbers come back as Python writes them
(653.50 as 653.5), which is fine, since ctxgate compares JSON values and only
sends numbers that every mainstream JSON library writes back unchanged.
"""

import json
import math
import sys

from wire import (  # exact body size in the three wire formats; images
    Body, dumps, elision_text, image_tokens, images_of, is_image, loads, nbytes, text_of,
)

NAME, VERSION = "python-minimal", "1.0.0"
SUMMARY_PREFIX = "[summary]"
DEFAULTS = {
    "contextWindow": 128000,
    "threshold": 0.7,
    "transportMaxBodyBytes": 8388608,
    "bytesPerToken": 4,
    "keepRecent": 2,
    "summaryMaxBytes": 4096,
    "wireFormat": "engine",
    "envelope": {},
}


class InvalidInput(Exception):
    """Answered as {"error": {"kind": "invalid_input"}}."""


class CannotFit(Exception):
    """Answered as {"error": {"kind": "cannot_fit"}}."""


# --- sizes -------------------------------------------------------------------


def tokens(nb, bpt):
    """ceil(bytes / bytesPerToken), 0 for nothing."""
    return -(-nb // bpt)


def message_tokens(msg, bpt, fmt):
    """ADR 0098: tokens(content) + tokens(JSON of toolCalls); an image by its
    pixels, in the wire format's rule (SPEC §3)."""
    n = tokens(nbytes(text_of(msg)), bpt)
    n += sum(image_tokens(p, fmt) for p in images_of(msg))
    calls = msg.get("toolCalls")
    if msg.get("role") == "assistant" and calls:
        n += tokens(nbytes(dumps(calls)), bpt)
    return n


def round_half_away(x):
    """SPEC's round(): half away from zero (Python's round() is half-to-even)."""
    whole = math.floor(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def trigger_of(cfg):
    window = min(cfg["contextWindow"], cfg["transportMaxBodyBytes"] // cfg["bytesPerToken"])
    return round_half_away(cfg["threshold"] * window)


# --- iterations (SPEC §1.2) ----------------------------------------------------


def opens_iteration(msg):
    return msg.get("role") == "assistant" and bool(msg.get("toolCalls"))


def iterations(msgs, start=0):
    """[(begin, end)] index ranges, covering msgs[start:] in order."""
    out, i = [], start
    while i < len(msgs):
        begin, i = i, i + 1
        if opens_iteration(msgs[begin]):
            ids = {c.get("id") for c in msgs[begin]["toolCalls"]}
            while i < len(msgs) and msgs[i].get("role") == "tool" and msgs[i].get("toolCallId") in ids:
                i += 1
        out.append((begin, i))
    return out


def check_shape(msgs):
    """Each message on its own: a known role and fields of the right types."""
    if not isinstance(msgs, list):
        raise InvalidInput("`messages` must be an array")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise InvalidInput(f"message {i}: not a message with a known role")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InvalidInput(f"message {i}: `content` must be a string, null or an array of parts")
        for j, p in enumerate(content if isinstance(content, list) else []):
            if not isinstance(p, dict):
                raise InvalidInput(f"message {i}: content[{j}] must be a part object")
            if p.get("type") == "text" and not isinstance(p.get("text"), str):
                raise InvalidInput(f"message {i}: content[{j}]: a text part needs a string `text`")
            if p.get("type") == "image" and not (
                    isinstance(p.get("url"), str) or (isinstance(p.get("data"), str) and isinstance(p.get("mediaType"), str))):
                raise InvalidInput(f"message {i}: content[{j}]: an image needs `mediaType` and `data`, or `url`")
        if "toolCalls" in m:
            calls = m["toolCalls"]
            if m["role"] != "assistant" or not isinstance(calls, list):
                raise InvalidInput(f"message {i}: `toolCalls` must be an array on an assistant message")
            for c in calls:
                if not (isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"]
                        and isinstance(c.get("name"), str) and "arguments" in c):
                    raise InvalidInput(f"message {i}: a call needs a non-empty id, a name and arguments")
        if m["role"] == "tool" and not isinstance(m.get("toolCallId"), str):
            raise InvalidInput(f"message {i}: tool message without `toolCallId`")


def check_well_formed(msgs):
    """SPEC §1.2: results answer calls of their own iteration, once; only the
    last iteration may leave calls pending."""
    check_shape(msgs)
    spans = iterations(msgs)
    for n, (b, e) in enumerate(spans):
        if msgs[b]["role"] == "tool":
            raise InvalidInput(f"message {b}: tool result for {msgs[b]['toolCallId']!r} answers no call of its iteration")
        if not opens_iteration(msgs[b]):
            continue
        ids = [c["id"] for c in msgs[b]["toolCalls"]]
        if len(set(ids)) != len(ids):
            raise InvalidInput(f"message {b}: two calls with one id")
        answered = [m["toolCallId"] for m in msgs[b + 1:e]]
        if len(set(answered)) != len(answered):
            raise InvalidInput(f"message {b}: a call is answered twice")
        if n != len(spans) - 1 and set(answered) != set(ids):
            raise InvalidInput(f"message {b}: a call is never answered (only the last iteration may be pending)")


# --- the summariser --------------------------------------------------------------


def truncate_utf8(text, max_bytes):
    """The longest prefix of at most max_bytes UTF-8 bytes, on a character boundary."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def is_summary(msg):
    """A summary this compactor wrote (in an earlier turn of the ToolLoop)."""
    return msg.get("role") == "system" and text_of(msg).startswith(SUMMARY_PREFIX)


def summarise(replaced, max_bytes):
    """Deterministic digest. A lone system message that fits is kept as it is:
    that makes compaction idempotent when an earlier summary is replaced."""
    if (len(replaced) == 1 and replaced[0].get("role") == "system" and not images_of(replaced[0])
            and nbytes(text_of(replaced[0])) <= max_bytes):
        return text_of(replaced[0])
    roles, tools = {}, {}
    for m in replaced:
        roles[m["role"]] = roles.get(m["role"], 0) + 1
        for c in m.get("toolCalls") or []:
            tools[c["name"]] = tools.get(c["name"], 0) + 1
    text = f"{SUMMARY_PREFIX} {len(replaced)} earlier messages ("
    text += ", ".join(f"{n} {r}" for r, n in sorted(roles.items())) + ")"
    if tools:
        text += f"; {sum(tools.values())} tool calls: " + ", ".join(f"{k}×{v}" for k, v in sorted(tools.items()))
    text += "."
    users = [m for m in replaced if m["role"] == "user" and text_of(m)]
    if users:
        text += " Last user message: " + text_of(users[-1])
    return truncate_utf8(text, max_bytes)


# --- the compactor (SPEC §4) -----------------------------------------------------


def compact(cfg, h):
    check_well_formed(h)
    bpt, ceiling, trig = cfg["bytesPerToken"], cfg["transportMaxBodyBytes"], trigger_of(cfg)
    body = Body(cfg)

    def fits(msgs):
        return body(msgs) <= ceiling

    fmt = cfg["wireFormat"]

    def under_trigger(msgs):
        return sum(message_tokens(m, bpt, fmt) for m in msgs) <= trig

    # Step 1: nothing to do.
    if under_trigger(h) and fits(h):
        return h

    # Step 2: head and iterations.
    head = 0
    while head < len(h) and h[head]["role"] == "system" and not is_summary(h[head]):
        head += 1  # a summary of an earlier turn is not head: it is folded into the next one
    spans = iterations(h, head)
    if not spans:
        if fits(h):
            return h
        raise CannotFit(f"the history is all head: {body(h)} bytes, over the {ceiling}-byte ceiling")

    def pinned(span):
        return any(m.get("pinned") is True for m in h[span[0]:span[1]])

    # Steps 3-4: keep k recent iterations, from keepRecent down to one.
    n = len(spans)
    for k in range(min(cfg["keepRecent"], n), 0, -1):
        replaced, recent = spans[: n - k], spans[n - k:]
        kept_pinned = [m for s in replaced if pinned(s) for m in h[s[0]:s[1]]]
        to_summarise = [m for s in replaced if not pinned(s) for m in h[s[0]:s[1]]]
        summary = None
        if to_summarise and cfg["summaryMaxBytes"] > 0:
            text = truncate_utf8(summarise(to_summarise, cfg["summaryMaxBytes"]), cfg["summaryMaxBytes"])
            summary = {"role": "system", "content": text}

        def assemble(s):
            return h[:head] + kept_pinned + ([s] if s is not None else []) + h[recent[0][0]:]

        candidate = assemble(summary)
        if not fits(candidate):
            # Step 4: elide the images of the recent iterations but the last
            # (never pinned ones), oldest first, until it fits.
            elidable = [i for s in recent[:-1] if not pinned(s) for i in range(s[0], s[1])]
            candidate = elide(candidate, [len(candidate) - (len(h) - i) for i in elidable], fits)
        if fits(candidate) and (k == 1 or under_trigger(candidate)):
            return candidate
        if k > 1:
            continue

        # Steps 5-6: one recent iteration left, still over the ceiling.
        minimal = assemble(None)
        if not fits(minimal):
            raise CannotFit(
                f"head + pinned + last iteration, with no summary, is {body(minimal)} bytes, "
                f"over the {ceiling}-byte ceiling"
            )
        if summary is None:
            return minimal
        # The longest prefix of the summary that fits (binary search on characters).
        text = summary["content"]
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(assemble({"role": "system", "content": text[:mid]})):
                lo = mid
            else:
                hi = mid - 1
        shorter = {"role": "system", "content": text[:lo]}
        # Cut so short that it no longer reads as a summary, it would join the
        # head on the next turn: drop it instead.
        return assemble(shorter) if is_summary(shorter) else minimal


def elide(candidate, positions, fits):
    """Each inline image at `positions` (oldest first) becomes one text part,
    until the candidate fits (SPEC §4 step 4). Remote images stay: a URL is
    a few bytes, which a placeholder would hardly shorten."""
    out = list(candidate)
    for at in positions:
        parts = out[at].get("content")
        if not isinstance(parts, list):
            continue
        for j, p in enumerate(parts):
            if fits(out):
                return out
            if is_image(p) and "data" in p:
                parts = parts[:j] + [{"type": "text", "text": elision_text(p)}] + parts[j + 1:]
                out[at] = {**out[at], "content": parts}
    return out


def estimate(cfg, h):
    per = [message_tokens(m, cfg["bytesPerToken"], cfg["wireFormat"]) for m in h]
    return {"tokens": sum(per), "perMessage": per}


# --- the protocol (SPEC §6) -------------------------------------------------------


def hello():
    return {"op": "hello", "protocol": 1, "name": NAME, "version": VERSION,
            "ops": ["compact", "estimate"], "format": "engine"}  # no "invariants": it claims them all


def read_config(raw):
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidInput("config: expected a JSON object")
    if set(raw) - set(DEFAULTS):
        raise InvalidInput(f"config: unknown fields {sorted(set(raw) - set(DEFAULTS))}")
    cfg = {**DEFAULTS, **raw}
    for key in ("contextWindow", "threshold", "transportMaxBodyBytes", "bytesPerToken",
                "keepRecent", "summaryMaxBytes"):
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidInput(f"config: `{key}` must be a number")
        if key != "threshold":
            if value != int(value):
                raise InvalidInput(f"config: `{key}` must be a whole number")
            cfg[key] = int(value)  # 1E5 reads as the float 100000.0
    if not isinstance(cfg["envelope"], dict):
        raise InvalidInput("config: `envelope` must be an object")
    if cfg["wireFormat"] not in ("engine", "openai", "anthropic"):
        raise InvalidInput(f"config: unknown wireFormat {cfg['wireFormat']!r}")
    if not (0 < cfg["threshold"] <= 1) or min(cfg["contextWindow"], cfg["bytesPerToken"],
                                              cfg["transportMaxBodyBytes"], cfg["keepRecent"]) < 1:
        raise InvalidInput("config: a value is out of range")
    return cfg


def answer(request):
    rid = request.get("id")
    try:
        op = request.get("op")
        if op == "hello":
            return hello()
        cfg = read_config(request.get("config"))
        msgs = request.get("messages")
        if op == "compact":
            return {"id": rid, "messages": compact(cfg, msgs)}
        if op == "estimate":
            check_shape(msgs)  # any list of messages can be estimated, well formed or not
            return {"id": rid, **estimate(cfg, msgs)}
        raise InvalidInput(f"unknown op {op!r}")
    except InvalidInput as e:
        return {"id": rid, "error": {"kind": "invalid_input", "message": str(e)}}
    except CannotFit as e:
        return {"id": rid, "error": {"kind": "cannot_fit", "message": str(e)}}


def main():
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            request = loads(line.decode("utf-8"))
        except ValueError as e:
            reply = {"id": None, "error": {"kind": "invalid_input", "message": f"not JSON: {e}"}}
        else:
            reply = answer(request) if isinstance(request, dict) else {
                "id": None, "error": {"kind": "invalid_input", "message": "a request is a JSON object"}}
        sys.stdout.buffer.write((dumps(reply) + "\n").encode("utf-8"))
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
