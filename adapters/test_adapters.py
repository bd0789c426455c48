#!/usr/bin/env python3
"""The adapters, driven over the protocol by hand (standard library only).

    python3 adapters/test_adapters.py            # all; LangChain / AI SDK only if installed
    adapters/langchain/run.sh --install && adapters/vercel-ai/run.sh --install

These do not replace `ctxgate check` (which generates and shrinks); they pin
the protocol basics of each adapter and the concrete findings quoted in
adapters/README.md, each on a small history written out in full, so that a
finding that stops reproducing (a new LangChain or AI SDK version, a change
in an adapter) is noticed.
"""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MINIMAL = [sys.executable, os.path.join(HERE, "python-minimal", "compactor.py")]
CONTENT_ONLY = [sys.executable, os.path.join(HERE, "python-minimal", "content_only.py")]
NODE_MINIMAL = ["node", os.path.join(HERE, "node-minimal", "compactor.mjs")]
LANGCHAIN = [os.path.join(HERE, "langchain", "run.sh")]
VERCEL = [os.path.join(HERE, "vercel-ai", "run.sh")]
LANGCHAIN_READY = os.path.exists(os.path.join(HERE, "langchain", ".venv", ".ctxgate-requirements"))
VERCEL_READY = os.path.exists(os.path.join(HERE, "vercel-ai", "node_modules", ".ctxgate-package-lock.json"))


def exchange(cmd, requests, env=None):
    """hello + requests; the answers to the requests (the hello's first)."""
    lines = [{"op": "hello", "protocol": 1}] + requests
    proc = subprocess.run(
        cmd,
        input="".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines).encode("utf-8"),
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=True,
    )
    answers = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]
    assert len(answers) == len(lines), (answers, proc.stderr.decode())
    return answers


def compact(cmd, config, messages, env=None):
    answer = exchange(cmd, [{"op": "compact", "id": 1, "config": config, "messages": messages}], env)[1]
    assert answer["id"] == 1
    return answer


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


SYSTEM = {"role": "system", "content": "You are the QA gate."}
USER = {"role": "user", "content": "Review PR 412"}


def iteration(n, result_bytes=400):
    return [
        {"role": "assistant", "content": "",
         "toolCalls": [{"id": f"call_{n}", "name": "read_file", "arguments": {"path": f"apps/f{n}.ts"}}]},
        {"role": "tool", "toolCallId": f"call_{n}", "content": "x" * result_bytes},
    ]


# The ADR's gate: one request, then a long ToolLoop.
TOOL_LOOP = [SYSTEM, USER] + sum((iteration(i) for i in range(10)), [])
PARALLEL = [
    SYSTEM, USER,
    {"role": "assistant", "content": "", "toolCalls": [
        {"id": "a", "name": "read_file", "arguments": {"path": "a"}},
        {"id": "b", "name": "read_file", "arguments": {"path": "b"}}]},
    {"role": "tool", "toolCallId": "a", "content": "A" * 400},
    {"role": "tool", "toolCallId": "b", "content": "B" * 100},
    {"role": "assistant", "content": "done"},
]


class PythonMinimal(unittest.TestCase):
    def test_hello_claims_everything(self):
        hello = exchange(MINIMAL, [])[0]
        self.assertEqual(hello["protocol"], 1)
        self.assertEqual(hello["ops"], ["compact", "estimate"])
        self.assertNotIn("invariants", hello)

    def test_estimate_is_adr_0098(self):
        msgs = PARALLEL
        per = exchange(MINIMAL, [{"op": "estimate", "id": 4, "config": {}, "messages": msgs}])[1]
        calls = -(-len(dumps(msgs[2]["toolCalls"]).encode()) // 4)
        self.assertEqual(per["id"], 4)
        self.assertEqual(per["perMessage"], [5, 4, calls, 100, 25, 1])
        self.assertEqual(per["tokens"], sum(per["perMessage"]))

    def test_nothing_due_comes_back_unchanged(self):
        self.assertEqual(compact(MINIMAL, {}, TOOL_LOOP)["messages"], TOOL_LOOP)

    def test_tool_loop_keeps_head_summary_and_recent_iterations(self):
        out = compact(MINIMAL, {"contextWindow": 1000}, TOOL_LOOP)["messages"]
        self.assertEqual(out[0], SYSTEM)
        self.assertEqual(out[1]["role"], "system")
        self.assertTrue(out[1]["content"].startswith("[summary]"))
        self.assertEqual(out[2:], TOOL_LOOP[-4:])

    def test_summary_bounded_in_bytes_on_a_character_boundary(self):
        msgs = [SYSTEM, {"role": "user", "content": "请求" * 50}] + iteration(1) + iteration(2)
        out = compact(MINIMAL, {"contextWindow": 200, "keepRecent": 1, "summaryMaxBytes": 70}, msgs)["messages"]
        summary = out[1]["content"]
        self.assertLessEqual(len(summary.encode()), 70)
        self.assertEqual(out[-2:], msgs[-2:])

    def test_round_half_away_from_zero(self):
        # threshold 0.5 x window 33 = 16.5: the trigger is 17 (Python's round() says 16).
        msgs = [{"role": "user", "content": "x" * 16 * 4}, {"role": "assistant", "content": "y"}]
        out = compact(MINIMAL, {"contextWindow": 33, "threshold": 0.5}, msgs)
        self.assertEqual(out["messages"], msgs)

    def test_body_is_measured_in_the_configured_wire_format(self):
        # 26 tokens, under the trigger (53); 270 bytes as an engine body, but
        # 310 as openai (arguments as escaped JSON text): over the 300 ceiling.
        msgs = [USER] + iteration(1, 10) + [{"role": "assistant", "content": "ok"}]
        engine = compact(MINIMAL, {"transportMaxBodyBytes": 300, "wireFormat": "engine"}, msgs)
        self.assertEqual(engine["messages"], msgs)
        openai = compact(MINIMAL, {"transportMaxBodyBytes": 300, "wireFormat": "openai"}, msgs)
        self.assertNotEqual(openai["messages"], msgs)

    def test_numbers_come_back_as_python_writes_them(self):
        # Stock json: 653.50 comes back as 653.5, the same JSON value, which
        # is all ctxgate asks (SPEC §5); the first run of ctxgate compared
        # text and called that a changed message.
        line = ('{"op":"compact","id":1,"config":{},"messages":[{"role":"user","content":"go",'
                '"n":653.50,"e":1E+2,"z":-0}]}\n')
        proc = subprocess.run(MINIMAL, input=line.encode(), capture_output=True, check=True)
        self.assertIn('"n":653.5,"e":100.0,"z":0', proc.stdout.decode())
        self.assertEqual(json.loads(proc.stdout)["messages"], json.loads(line)["messages"])

    def test_cannot_fit_and_invalid_input(self):
        # head + last iteration alone is 103 bytes.
        tiny = compact(MINIMAL, {"transportMaxBodyBytes": 100}, PARALLEL)
        self.assertEqual(tiny["error"]["kind"], "cannot_fit")
        orphan = compact(MINIMAL, {}, [{"role": "tool", "toolCallId": "x", "content": ""}])
        self.assertEqual(orphan["error"]["kind"], "invalid_input")

    def test_an_earlier_summary_is_folded_not_piled(self):
        cfg = {"contextWindow": 1000, "keepRecent": 1}
        first = compact(MINIMAL, cfg, TOOL_LOOP)["messages"]
        second = compact(MINIMAL, cfg, first + iteration(10))["messages"]
        self.assertEqual(sum(1 for m in second if m["content"].startswith("[summary]")), 1)
        self.assertEqual(compact(MINIMAL, cfg, second)["messages"], second)

    def test_bad_lines_are_answers_not_crashes(self):
        proc = subprocess.run(MINIMAL, input=b'not json\n[1]\n{"op":"nope","id":3}\n',
                              capture_output=True, check=True)
        kinds = [json.loads(line)["error"]["kind"] for line in proc.stdout.splitlines()]
        self.assertEqual(kinds, ["invalid_input"] * 3)


class PythonMinimalContentOnly(unittest.TestCase):
    """The pre-ADR estimator variant (docs/estimators.md): only `estimate` differs."""

    def test_hello_names_the_variant(self):
        hello = exchange(CONTENT_ONLY, [])[0]
        self.assertEqual((hello["name"], hello["version"]), ("python-minimal-content-only", "0.9.0"))
        self.assertEqual(hello["ops"], ["compact", "estimate"])

    def test_tool_calls_weigh_nothing(self):
        per = exchange(CONTENT_ONLY, [{"op": "estimate", "id": 4, "config": {}, "messages": PARALLEL}])[1]
        self.assertEqual(per["perMessage"], [5, 4, 0, 100, 25, 1])
        self.assertEqual(per["tokens"], sum(per["perMessage"]))

    def test_compaction_is_python_minimal_s(self):
        for config, msgs in [({}, TOOL_LOOP), ({"contextWindow": 1000}, TOOL_LOOP),
                             ({"transportMaxBodyBytes": 100}, PARALLEL)]:
            req = [{"op": "compact", "id": 1, "config": config, "messages": msgs}]
            self.assertEqual(exchange(CONTENT_ONLY, req)[1], exchange(MINIMAL, req)[1], config)


@unittest.skipUnless(LANGCHAIN_READY, "run adapters/langchain/run.sh --install first")
class LangChainTrimMessages(unittest.TestCase):
    """langchain-core 1.8.3, trim_messages as its docstring recommends."""

    def test_long_tool_loop_is_trimmed_to_the_system_prompt(self):
        # verbatim-suffix: over budget, start_on="human" finds no human
        # message among the recent ones and drops everything.
        out = compact(LANGCHAIN, {"contextWindow": 1000}, TOOL_LOOP)["messages"]
        self.assertEqual(out, [SYSTEM])

    def test_without_start_on_a_tool_result_loses_its_call(self):
        # tool-pairing: the cut falls between a call and its results.
        env = {"CTXGATE_LANGCHAIN_START_ON": ""}
        out = compact(LANGCHAIN, {"contextWindow": 100}, PARALLEL, env)["messages"]
        self.assertEqual(out, [SYSTEM, PARALLEL[4], PARALLEL[5]])

    def test_second_system_prompt_dropped_when_nothing_is_due(self):
        # no-premature-compaction and pinned-kept: include_system keeps only
        # messages[0]; start_on="human" drops what stands before the human
        # message even when everything fits.
        rules = {"role": "system", "content": "Repository rules: never merge on red."}
        msgs = [SYSTEM, rules, USER, {"role": "assistant", "content": "On it."}]
        out = compact(LANGCHAIN, {}, msgs)["messages"]
        self.assertNotIn(rules, out)
        self.assertEqual(len(out), 3)

    def test_approximate_counter_undercounts_non_ascii_tool_calls(self):
        # estimate-covers-tool-calls: characters of repr(), not bytes of JSON.
        calls = [{"id": "c1", "name": "search_workspace", "arguments": {"query": "请求体过大 413 错误" * 4}}]
        msgs = [USER, {"role": "assistant", "content": "", "toolCalls": calls}]
        est = exchange(LANGCHAIN, [{"op": "estimate", "id": 1, "config": {}, "messages": msgs}])[1]
        floor = -(-len(dumps(calls).encode()) // 4)
        self.assertEqual(floor, 42)
        self.assertLess(est["perMessage"][1], floor)

    def test_body_over_the_ceiling_under_the_token_budget(self):
        # body-under-ceiling: 200 control characters are 50 tokens to the
        # counter and 1,200 bytes of JSON escapes on the wire.
        msgs = [USER, {"role": "assistant", "content": "\u0001" * 200}]
        out = compact(LANGCHAIN, {"transportMaxBodyBytes": 1000}, msgs)["messages"]
        self.assertEqual(out, msgs)
        self.assertGreater(len(dumps({"messages": out}).encode()), 1000)


@unittest.skipUnless(VERCEL_READY, "run adapters/vercel-ai/run.sh --install first")
class VercelPruneMessages(unittest.TestCase):
    """ai 6.0.325, pruneMessages as its reference page calls it."""

    def test_prunes_tool_calls_when_nothing_is_due(self):
        # no-premature-compaction: there is no budget to consult.
        msgs = [SYSTEM, USER] + iteration(0, 10) + iteration(1, 10) + iteration(2, 10) + [
            {"role": "assistant", "content": "ok"}]
        out = compact(VERCEL, {}, msgs)["messages"]
        self.assertEqual(out, [SYSTEM, USER] + iteration(2, 10) + [msgs[-1]])

    def test_drops_messages_with_empty_text(self):
        # verbatim-suffix (and pinned-kept for an empty system prompt):
        # emptyMessages "remove" drops any message whose content is "".
        msgs = [SYSTEM, USER, {"role": "assistant", "content": ""}]
        self.assertEqual(compact(VERCEL, {}, msgs)["messages"], msgs[:2])

    def test_keeps_a_body_over_the_ceiling(self):
        # body-under-ceiling, progress: nothing is dropped but tool parts.
        msgs = [SYSTEM, {"role": "user", "content": "x" * 2000}]
        out = compact(VERCEL, {"transportMaxBodyBytes": 1000}, msgs)["messages"]
        self.assertEqual(out, msgs)

    def test_numbers_keep_their_spelling(self):
        msgs = [{"role": "user", "content": "go", "n": 12.0, "big": 12345678901234567890}]
        line = ('{"op":"compact","id":1,"config":{},"messages":[{"role":"user","content":"go",'
                '"n":12.0,"big":12345678901234567890}]}\n')
        proc = subprocess.run(VERCEL, input=line.encode(), capture_output=True, check=True)
        self.assertIn('"n":12.0,"big":12345678901234567890', proc.stdout.decode())
        self.assertEqual(json.loads(proc.stdout)["messages"], msgs)


class NodeMinimal(unittest.TestCase):
    """The JavaScript twin of python-minimal: the same answers, stock JSON."""

    def test_hello_claims_everything(self):
        hello = exchange(NODE_MINIMAL, [])[0]
        self.assertEqual((hello["name"], hello["format"]), ("node-minimal", "engine"))
        self.assertNotIn("invariants", hello)
        self.assertNotIn("numbers", hello)

    def test_same_answers_as_python_minimal(self):
        cases = [
            ({"contextWindow": 40, "keepRecent": 1, "summaryMaxBytes": 48}, [SYSTEM] + TOOL_LOOP),
            ({"transportMaxBodyBytes": 100}, PARALLEL),
            ({"contextWindow": 33, "threshold": 0.5}, [{"role": "user", "content": "x" * 64}]),
            ({"contextWindow": 200, "keepRecent": 1, "summaryMaxBytes": 70},
             [SYSTEM, {"role": "user", "content": "请求🦀" * 30}] + iteration(1) + iteration(2)),
            ({"transportMaxBodyBytes": 300, "wireFormat": "openai"}, [USER] + iteration(1, 10)),
            ({}, [{"role": "tool", "toolCallId": "x", "content": ""}]),
        ]
        for config, msgs in cases:
            for op in ("compact", "estimate"):
                req = [{"op": op, "id": 1, "config": config, "messages": msgs}]
                self.assertEqual(exchange(NODE_MINIMAL, req)[1], exchange(MINIMAL, req)[1], (op, config))

    def test_a_line_that_is_not_json_is_answered(self):
        proc = subprocess.run(NODE_MINIMAL, input=b'{"op":"hello","protocol":1}\nnot json\n',
                              capture_output=True, check=True, timeout=60)
        answers = [json.loads(l) for l in proc.stdout.decode().splitlines()]
        self.assertEqual(answers[1]["error"]["kind"], "invalid_input")
        self.assertIsNone(answers[1]["id"])


class ZooMapping(unittest.TestCase):
    """adapters/lib/zoo.py: what a library cannot carry is put back, and only that."""

    def setUp(self):
        sys.path.insert(0, os.path.join(HERE, "lib"))
        import zoo
        self.zoo = zoo

    def test_what_no_library_holds_comes_back(self):
        z = self.zoo
        cases = [
            {"role": "user"},                                         # content absent
            {"role": "assistant", "content": None, "toolCalls": []},  # null content, empty calls
            {"role": "assistant", "content": "", "x_trace_id": "t1", "pinned": False,
             "toolCalls": [{"id": "c1", "name": "read", "arguments": {"p": 1.5}, "approval": {"by": "lead"}}]},
            {"role": "tool", "toolCallId": "c1", "content": "ok", "annotations": [1]},
        ]
        for m in cases:
            calls = z.calls_of(m)
            back = z.restore(m["role"], z.text_of(m), calls, m.get("toolCallId"), z.side(m))
            self.assertEqual(back, m)

    def test_a_change_the_library_made_shows(self):
        z = self.zoo
        m = {"role": "tool", "toolCallId": "c1", "content": "x" * 500, "annotations": [1]}
        back = z.restore("tool", "x" * 200 + "[truncated]", (), "c1", z.side(m))
        self.assertNotEqual(back, m)
        self.assertEqual(back["annotations"], [1])  # the side is still put back
        call = {"role": "assistant", "content": "", "toolCalls": [
            {"id": "a", "name": "f", "arguments": {}}, {"id": "b", "name": "g", "arguments": {}}]}
        dropped = z.restore("assistant", "", [("a", "f", {})], None, z.side(call))
        self.assertEqual([c["id"] for c in dropped["toolCalls"]], ["a"])

    def test_a_message_the_library_made_has_no_side(self):
        z = self.zoo
        self.assertEqual(z.restore("system", "Summary", ()), {"role": "system", "content": "Summary"})

    def test_content_parts_are_refused_not_flattened(self):
        z = self.zoo
        with self.assertRaises(z.Refuse):
            z.text_of({"role": "user", "content": [{"type": "text", "text": "hi"}]})


class ZooCi(unittest.TestCase):
    """adapters/zoo_ci.py: a run that would check nothing does not pass."""

    def test_an_only_that_names_no_subject_is_a_usage_error(self):
        proc = subprocess.run([sys.executable, os.path.join(HERE, "zoo_ci.py"), "--only", "no-such-subject"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("no-such-subject", proc.stderr)
        self.assertNotIn("reproduced", proc.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
