#!/usr/bin/env python3
"""AWS Strands Agents' conversation managers as a ctxgate subject (protocol v1).

CTXGATE_STRANDS_MANAGER picks the manager, each as shipped (defaults):

    sliding      SlidingWindowConversationManager(window_size=40, should_truncate_results=True,
                                                  proactive_compression={"compression_threshold": threshold})
    summarizing  SummarizingConversationManager(summary_ratio=0.3, preserve_recent_messages=10,
                                                proactive_compression={"compression_threshold": threshold})

and drives it the way Strands' agent loop does around one model call:

1. before the call, the manager's own proactive-compression hook with the
   agent loop's own projection (`_estimate_input_tokens`: the model's
   `count_tokens` heuristic, text chars/4 and JSON chars/2); the model's
   `context_window_limit` is the config's effective window expressed in that
   heuristic's 4-character tokens (effectiveWindow × bytesPerToken / 4), its
   threshold the config's;
2. the call itself: a provider whose window is the effective window (ADR
   0098's estimate, SPEC §3) raises ContextWindowOverflowException while the
   history is over it, and the loop calls `reduce_context(agent, e)` and
   retries, as Strands does; when the manager gives up (it raises), the
   answer is `cannot_fit`;
3. after the cycle, `apply_management(agent)` (the sliding window).

The summariser is the agent's own model, a deterministic fake that answers
one sentence cut to `summaryMaxBytes`.

Mapping (lossless, adapters/lib/zoo.py): Strands keeps the system prompt
outside the messages, so the head's system messages are the agent's
system prompt and never given to the manager (they come back as they were);
a system message later in the history (an earlier summary, a reminder) has
no Strands role and goes in as a user message of its text. An assistant
message is `[{"text"}] + [{"toolUse": {toolUseId, name, input}}]`; the tool
results of one iteration are one user message of `toolResult` blocks, as
Strands' agent writes them; `pinned: true` is Strands' own pin
(`metadata.custom.pinned`). Everything else is kept beside.
"""

import json
import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
from ctxgate_subject import CannotFit  # noqa: E402
from zoo import Refuse, calls_of, head_len, main, restore, side, text_of  # noqa: E402

from importlib.metadata import version  # noqa: E402

import logging  # noqa: E402
logging.disable(logging.CRITICAL)  # Strands logs warnings on stderr per reduction; stdout is the protocol's

from strands import Agent  # noqa: E402
from strands.agent.conversation_manager import (  # noqa: E402
    SlidingWindowConversationManager, SummarizingConversationManager)
from strands.event_loop.event_loop import _estimate_input_tokens  # noqa: E402
from strands.hooks import BeforeModelCallEvent  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.types.exceptions import ContextWindowOverflowException  # noqa: E402
from strands._async import run_async  # noqa: E402

VERSION = version("strands-agents")
MANAGER = os.environ.get("CTXGATE_STRANDS_MANAGER", "sliding")
SUMMARY = "Summary of the earlier turns: the user asked for a review; the agent read files and ran tools."
CLAIMS = {
    # Documented: "preserves tool usage pairs and avoids invalid window states"; pins are
    # Strands' own (metadata.custom.pinned, pin_first). Not promised, so not claimed: a token
    # budget (the window is 40 messages; a reactive reduction only has to get under the model's
    # window; proactive compression is "best-effort", one reduction per model call, so it is
    # not idempotent by design), and verbatim recent results (the sliding window truncates the
    # oldest tool results in place, documented). The summariser's length is the model's.
    "sliding": ["tool-pairing", "order-preserved", "pinned-kept", "deterministic"],
    # preserve_recent_messages: "Minimum number of recent messages to always keep".
    "summarizing": ["tool-pairing", "order-preserved", "pinned-kept", "verbatim-suffix", "deterministic"],
}[MANAGER]


class FakeModel(Model):
    """A deterministic model: answers one fixed text; its window is configured."""

    def __init__(self, window, answer):
        self.config = {"model_id": "ctxgate-fake", "context_window_limit": window}
        self.answer = answer

    def update_config(self, **model_config):
        self.config.update(model_config)

    def get_config(self):
        return self.config

    def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": self.answer}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


# --- mapping -----------------------------------------------------------------

def to_strands(messages):
    """(system prompt messages, Strands messages, origin: id(strands message) → engine indices).

    `origin` keys are object ids: it also holds every message it names (under
    the key "alive"), so that no message the manager deletes is freed and its
    id reused by one the manager makes (a summary would otherwise be taken for
    a deleted original and given its extra fields)."""
    head = head_len(messages)
    out, origin = [], {}
    i = head
    while i < len(messages):
        m = messages[i]
        role = m.get("role")
        if role == "tool":
            j = i
            blocks = []
            while j < len(messages) and messages[j].get("role") == "tool":
                blocks.append({"toolResult": {"toolUseId": messages[j]["toolCallId"], "status": "success",
                                              "content": [{"text": text_of(messages[j])}]}})
                j += 1
            msg = {"role": "user", "content": blocks}
            idx = list(range(i, j))
        else:
            text = text_of(m)
            if role in ("user", "system"):
                content = [{"text": text}]
            elif role == "assistant":
                uses = []
                for cid, name, args in calls_of(m):
                    if not isinstance(args, dict):
                        raise Refuse("Strands toolUse input is an object")
                    uses.append({"toolUse": {"toolUseId": cid, "name": name, "input": args}})
                content = ([{"text": text}] if text or not uses else []) + uses
            else:
                raise Refuse(f"unknown role {role!r}")
            msg = {"role": "assistant" if role == "assistant" else "user", "content": content}
            idx = [i]
            j = i + 1
        if any(messages[k].get("pinned") is True for k in idx):
            msg["metadata"] = {"custom": {"pinned": True}}
        out.append(msg)
        origin[id(msg)] = idx
        i = j
    origin["alive"] = list(out)
    return messages[:head], out, origin


def from_strands(msgs, messages, origin, sides):
    out = []
    for msg in msgs:
        idx = origin.get(id(msg))
        results = [b["toolResult"] for b in msg["content"] if "toolResult" in b]
        if results:
            for k, r in enumerate(results):
                s = sides[idx[k]] if idx and k < len(idx) else None
                text = "".join(item.get("text", "") for item in r.get("content", []))
                out.append(restore("tool", text, (), r["toolUseId"], s))
            continue
        s = sides[idx[0]] if idx else None
        text = "".join(b["text"] for b in msg["content"] if "text" in b)
        calls = [(b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"])
                 for b in msg["content"] if "toolUse" in b]
        role = msg["role"]
        if idx and messages[idx[0]].get("role") == "system":
            role = "system"
        out.append(restore(role, text, calls, None, s))
    return out


def roundtrip(cfg, messages):
    sides = [side(m) for m in messages]
    head, msgs, origin = to_strands(messages)
    # Through an Agent and back: what the manager is handed is agent.messages.
    agent = Agent(model=FakeModel(1000, ""), messages=msgs, callback_handler=None)
    return head + from_strands(agent.messages, messages, origin, sides)


# --- the agent loop around one model call --------------------------------------

def effective_window(cfg):
    return min(cfg["contextWindow"], cfg["transportMaxBodyBytes"] // cfg["bytesPerToken"])


def adr_tokens(cfg, messages):
    """SPEC §3's adr-0098 estimate: what the fake provider's window is measured in."""
    bpt = cfg["bytesPerToken"]
    n = 0
    for m in messages:
        n += math.ceil(len(text_of(m).encode()) / bpt)
        if m.get("role") == "assistant" and m.get("toolCalls"):
            n += math.ceil(len(json.dumps(m["toolCalls"], ensure_ascii=False, separators=(",", ":")).encode()) / bpt)
    return n


def manager(cfg):
    proactive = {"compression_threshold": cfg["threshold"]} if 0 < cfg["threshold"] <= 1 else None
    if MANAGER == "sliding":
        return SlidingWindowConversationManager(proactive_compression=proactive)
    return SummarizingConversationManager(proactive_compression=proactive)


def compact(cfg, messages):
    sides = [side(m) for m in messages]
    head, msgs, origin = to_strands(messages)
    answer = SUMMARY.encode()[: cfg["summaryMaxBytes"]].decode("utf-8", "ignore") or "."
    window = max(1, effective_window(cfg) * cfg["bytesPerToken"] // 4)
    system_prompt = "\n".join(text_of(m) for m in head) or None
    mgr = manager(cfg)
    agent = Agent(model=FakeModel(window, answer), messages=msgs, system_prompt=system_prompt,
                  conversation_manager=mgr, callback_handler=None)

    def now():
        return head + from_strands(agent.messages, messages, origin, sides)

    # 1. Before the model call: the manager's proactive-compression hook.
    projected = run_async(lambda: _estimate_input_tokens(agent))
    mgr._on_before_model_call_threshold(
        BeforeModelCallEvent(agent=agent, invocation_state={}, projected_input_tokens=projected))
    # 2. The call: overflow → reduce_context(e) → retry, until it fits or the manager gives up.
    for _ in range(1000):
        if adr_tokens(cfg, now()) <= effective_window(cfg):
            break
        overflow = ContextWindowOverflowException("input is over the model's window")
        try:
            mgr.reduce_context(agent, e=overflow)
        except Exception as e:
            raise CannotFit(f"Strands could not reduce the context: {type(e).__name__}: {e}")
    # 3. After the cycle.
    mgr.apply_management(agent)
    return now()


if __name__ == "__main__":
    main(roundtrip, f"strands-agents {VERSION}", compact,
         name=f"strands {MANAGER} conversation manager", version=VERSION, invariants=CLAIMS)
