"""A pytest example: an agent that runs inside the test process, checked by
`ctxgate.agent.check` — ctxgate plays the model, and judges every request
the agent sends (SPEC §9; docs/agent.md, "In-process agents").

    pytest python/examples/test_agent_inproc.py

The agent here is a stand-in for yours (an OpenAI Agents SDK, LangGraph or
pydantic-ai agent built in the test): a ToolLoop over OpenAI Chat
Completions with one tool, `read_file`, standard library only, that
compacts its history as ADR 0098 says — the estimate checked before every
request, a summary asked of the model, the system prompt, the task and the
last turn kept, a 413 or a context-length error answered by compacting.

CTXGATE_EXAMPLE_BUG=NAME plants one of the 2026 bugs of this class, and the
test fails naming the invariant, the shrunk fixture and how to replay it:

    drops-system-prompt  the system prompt is lost at compaction (pinned-kept)
    resend-on-413        a 413 is answered by sending the same body again
                         (recovers-after-refusal; QwenLM/qwen-code#10380)

CTXGATE_CASES sets the number of cases (default 8), CTXGATE_SEED the seed.
"""

import json
import os
import urllib.error
import urllib.request

import pytest

import ctxgate.agent

# What the agent was configured with (its own settings, as it ships).
OWN_LIMITS = {"window": 32000, "threshold": 0.7, "ceiling": 100 * 1024, "tool_output_max": 16 * 1024}
# ADR 0098's production case: configured for a 128k window and no ceiling
# of its own (10 MB), deployed behind an Express gateway's 100 KB.
NO_CEILING = {**OWN_LIMITS, "window": 128000, "ceiling": 10_000_000}


def config(limits, ceiling=None):
    """What ctxgate is told: the limits the agent really meets (SPEC §2's
    fields, and the agent's own cut of a long tool result)."""
    return {"contextWindow": limits["window"], "threshold": limits["threshold"],
            "transportMaxBodyBytes": ceiling or limits["ceiling"], "toolOutputMaxBytes": limits["tool_output_max"]}


SYSTEM = "You are a careful coding agent. Read the files the task needs with read_file, then answer."
SUMMARY_ASK = "Summarize the conversation so far for a handoff."
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a text file and return its content.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


class Refused(Exception):
    """The model (or a gateway before it) refused the request: 413, or over the window."""

    def __init__(self, message, too_large_bytes=None):
        super().__init__(message)
        self.too_large_bytes = too_large_bytes  # a 413's body size: the ceiling is below it


class GaveUp(Exception):
    """Even the smallest request this agent can make does not fit."""


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class TinyAgent:
    def __init__(self, base_url, api_key, limits=OWN_LIMITS, bug=None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.window, self.ceiling, self.threshold = limits["window"], limits["ceiling"], limits["threshold"]
        self.tool_output_max = limits["tool_output_max"]
        self.bug = bug

    @property
    def trigger(self):
        return self.threshold * min(self.window, self.ceiling // 4)

    # --- the model, over HTTP -------------------------------------------------

    def body(self, messages, tools=True, max_tokens=1024):
        body = {"model": "test-model", "messages": messages, "max_tokens": max_tokens}
        if tools:
            body["tools"] = TOOLS
        return dumps(body).encode("utf-8")

    def ask(self, messages, tools=True, max_tokens=1024):
        """The model's answer: its message (content, tool_calls)."""
        body = self.body(messages, tools, max_tokens)
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={"content-type": "application/json",
                                                  "authorization": f"Bearer {self.api_key}"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())["choices"][0]["message"]
        except urllib.error.HTTPError as e:
            said = e.read().decode("utf-8", "replace")
            if e.code == 413:
                raise Refused(f"413: {said[:200]}", too_large_bytes=len(body)) from None
            if e.code == 400 and "context" in said:
                raise Refused(f"400: {said[:200]}") from None
            raise

    # --- the context ----------------------------------------------------------

    def estimate(self, messages):
        return sum(len(dumps(m).encode("utf-8")) for m in messages) / 4

    def fits(self, messages):
        return len(self.body(messages)) <= self.ceiling and self.estimate(messages) <= self.window

    def due(self, messages):
        return self.estimate(messages) > self.trigger or len(self.body(messages)) > self.ceiling * 0.9

    def compact(self, messages):
        """The system prompt and the task, a summary of the middle, the last turn whole."""
        system, task = messages[0], messages[1]
        last = max((i for i, m in enumerate(messages) if m.get("tool_calls")), default=len(messages))
        middle = messages[2:last]
        summary = None
        if middle:
            ask = [system]  # what the summariser is sent is bounded by the ceiling too
            for m in middle:
                piece = {"role": "assistant" if m["role"] == "assistant" else "user",
                         "content": (m.get("content") or dumps(m.get("tool_calls")))[:4000]}
                if len(self.body(ask + [piece], tools=False)) > self.ceiling // 2:
                    break
                ask.append(piece)
            ask.append({"role": "user", "content": SUMMARY_ASK})
            if ask[-2]["role"] == "user":
                ask[-2:] = [{"role": "user", "content": ask[-2]["content"] + "\n\n" + SUMMARY_ASK}]
            try:
                summary = (self.ask(ask, tools=False, max_tokens=256).get("content") or "")[:2000]
            except Refused:
                summary = "(earlier turns dropped)"
        head = [task] if self.bug == "drops-system-prompt" else [system, task]
        note = [{"role": "user", "content": "Earlier work, summarised: " + summary}] if summary else []
        recent = messages[last:]
        if recent and not self.fits(head + note + recent):
            # The model's own prose beside its calls can go; the calls and their results stay.
            recent = [{**recent[0], "content": (recent[0].get("content") or "")[:1000]}] + recent[1:]
        return head + note + recent

    # --- the loop ---------------------------------------------------------------

    def read_file(self, path):
        try:
            with open(path, encoding="utf-8", newline="") as f:
                text = f.read()
        except OSError as e:
            return f"error: {e}"
        return text.encode("utf-8")[:self.tool_output_max].decode("utf-8", "ignore")

    def run(self, task):
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
        for _ in range(200):
            if self.due(messages):
                messages = self.compact(messages)
                if not self.fits(messages):
                    raise GaveUp("the last turn alone does not fit")
            for tries in range(5):
                try:
                    answer = self.ask(messages)
                    break
                except Refused as refused:
                    if self.bug != "resend-on-413":
                        if refused.too_large_bytes:  # a gateway's limit below ours: learn it
                            self.ceiling = min(self.ceiling, refused.too_large_bytes * 9 // 10)
                        compacted = self.compact(messages)
                        if compacted == messages:  # nothing left to take out: the same body again would be refused again
                            raise GaveUp("the last turn alone does not fit") from None
                        messages = compacted
            else:
                raise GaveUp("the request does not fit, even compacted")
            calls = answer.get("tool_calls") or []
            if not calls:
                return answer.get("content") or ""
            messages.append({"role": "assistant", "content": answer.get("content"), "tool_calls": calls})
            for call in calls:
                path = json.loads(call["function"]["arguments"] or "{}").get("path", "")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": self.read_file(path)})
        raise GaveUp("too many turns")


def run_case(case, limits=OWN_LIMITS, bug=None):
    """One case: the agent pointed at ctxgate, given the task; its final answer."""
    return TinyAgent(case.base_url, case.api_key, limits=limits, bug=bug).run(case.prompt)


# Two deployments. With its own limits right, every request must be under
# them. Behind a gateway whose limit it was never told, the agent meets a
# 413 (ADR 0098's production case): what is judged then is everything else
# — above all that it recovers (`recovers-after-refusal`) and finishes.
ALL_BUT_THE_CEILING = ["request-within-window", "recovers-after-refusal", "tool-pairing", "results-delivered",
                       "pinned-kept", "order-preserved", "no-premature-compaction", "finishes"]
DEPLOYMENTS = {
    "own-limits": (OWN_LIMITS, config(OWN_LIMITS), None),
    "behind-express-100kb": (NO_CEILING, config(NO_CEILING, ceiling=100 * 1024), ALL_BUT_THE_CEILING),
}


@pytest.mark.parametrize("deployment", sorted(DEPLOYMENTS))
def test_tiny_agent_keeps_its_context(deployment):
    limits, settings, invariants = DEPLOYMENTS[deployment]
    bug = os.environ.get("CTXGATE_EXAMPLE_BUG") or None
    report = ctxgate.agent.check(lambda case: run_case(case, limits, bug), config=settings, invariants=invariants,
                                 cases=int(os.environ.get("CTXGATE_CASES", "8")))
    report.assert_ok()
