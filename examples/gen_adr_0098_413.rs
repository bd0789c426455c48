//! Writes `examples/adr-0098-413.json`: a synthetic engine-format ToolLoop
//! history in ADR 0098's story, deterministic, for the README's first command:
//!
//! ```text
//! cargo run --example gen_adr_0098_413 > examples/adr-0098-413.json
//! cargo run --release -- compact --config examples/express-100kb.config.json examples/adr-0098-413.json
//! ```
//!
//! The QA/SecOps gate reviews PR 412: it searches the workspace, reads
//! files and logs (tool results of a few KiB each), writes two test files
//! and posts a review, all through tool calls whose arguments are real
//! bytes in the request body. The content alone is under the Express
//! config's trigger (17,920 tokens), so the estimator before ADR 0098 would
//! not compact; the body is over Express's 102,400 bytes: a 413. Everything
//! here is invented; no real history is copied.

use serde_json::{json, Value};

fn main() {
    let history = history();
    let text = serde_json::to_string_pretty(&history).expect("a JSON value serialises");
    println!("{text}");
}

fn history() -> Value {
    let mut msgs = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": USER}),
    ];
    let mut n = 0;
    let mut call = |name: &str, arguments: Value| {
        n += 1;
        json!({"id": format!("call_{n}"), "name": name, "arguments": arguments})
    };
    // Each step: the assistant's text, its calls, and the result of each call.
    let steps: Vec<(&str, Vec<(Value, String)>)> = vec![
        (
            "Starting where the 413 surfaces: searching the workspace.",
            vec![
                (
                    call(
                        "search_workspace",
                        json!({"query": "413 request entity too large", "maxResults": 60}),
                    ),
                    search_results("413", 60),
                ),
                (
                    call(
                        "search_workspace",
                        json!({"query": "llm-turn", "maxResults": 60}),
                    ),
                    search_results("llm-turn", 60),
                ),
            ],
        ),
        (
            "",
            vec![
                (
                    call("read_file", json!({"path": "apps/api/src/main.ts"})),
                    numbered(MAIN_TS),
                ),
                (
                    call("read_file", json!({"path": "apps/engine/config/runtime.exs"})),
                    numbered(&runtime_exs()),
                ),
            ],
        ),
        (
            "The api never sets a JSON body limit. Checking the engine's compaction trigger and the gate's last run.",
            vec![
                (
                    call(
                        "read_file",
                        json!({"path": "apps/engine/lib/engine/harness/context_manager/default.ex"}),
                    ),
                    numbered(&context_manager_ex()),
                ),
                (
                    call(
                        "read_file",
                        json!({"path": "logs/gate/pr-412/run-7.log", "tail": 160}),
                    ),
                    gate_log(160),
                ),
            ],
        ),
        (
            "",
            vec![
                (
                    call(
                        "search_workspace",
                        json!({"query": "transport_max_body_bytes", "maxResults": 25}),
                    ),
                    search_results("transport_max_body_bytes", 25),
                ),
                (
                    call("read_file", json!({"path": "docker/docker-compose.yml"})),
                    numbered(&compose_yml()),
                ),
            ],
        ),
        (
            "",
            vec![
                (
                    call(
                        "read_file",
                        json!({"path": "apps/engine/lib/engine/actions/terminal_executor.ex"}),
                    ),
                    numbered(&terminal_executor_ex()),
                ),
                (
                    call(
                        "read_file",
                        json!({"path": "apps/api/src/internal/llm-turn.service.ts"}),
                    ),
                    numbered(&llm_turn_service_ts()),
                ),
            ],
        ),
        (
            "Adding an e2e test that posts bodies around the limit.",
            vec![{
                let content = e2e_spec();
                let result = format!(
                    "wrote apps/api/test/body-limit.e2e-spec.ts ({} bytes)",
                    content.len()
                );
                (
                    call(
                        "write_test_file",
                        json!({"path": "apps/api/test/body-limit.e2e-spec.ts", "content": content}),
                    ),
                    result,
                )
            }],
        ),
        (
            "And an ExUnit test for the effective window and the iteration-boundary cut.",
            vec![{
                let content = exunit_test();
                let result = format!(
                    "wrote apps/engine/test/engine/harness/context_manager_test.exs ({} bytes)",
                    content.len()
                );
                (
                    call(
                        "write_test_file",
                        json!({"path": "apps/engine/test/engine/harness/context_manager_test.exs", "content": content}),
                    ),
                    result,
                )
            }],
        ),
        (
            "",
            vec![(
                call(
                    "run_tests",
                    json!({"command": "mix test test/engine/harness/context_manager_test.exs && npm run test:e2e -- body-limit", "timeoutSeconds": 600}),
                ),
                test_output(),
            )],
        ),
        (
            "Posting the review.",
            vec![(
                call("comment_on_pr", json!({"pr": 412, "body": review()})),
                "comment 9182 posted on PR 412".to_owned(),
            )],
        ),
        (
            "Last, the failure classifier, before approving.",
            vec![(
                call(
                    "read_file",
                    json!({"path": "apps/engine/lib/engine/agents/falha_de_turno.ex"}),
                ),
                numbered(&falha_de_turno_ex()),
            )],
        ),
    ];
    for (text, calls) in steps {
        let (calls, results): (Vec<Value>, Vec<String>) = calls.into_iter().unzip();
        let ids: Vec<Value> = calls.iter().map(|c| c["id"].clone()).collect();
        msgs.push(json!({"role": "assistant", "content": text, "toolCalls": calls}));
        for (id, result) in ids.into_iter().zip(results) {
            msgs.push(json!({"role": "tool", "content": result, "toolCallId": id}));
        }
    }
    Value::Array(msgs)
}

const SYSTEM: &str = "You are the QA/SecOps gate (qa_performance_seguranca_agent) of an \
engineering platform. You review pull requests before they merge: read the diff and the \
files it touches, search the workspace for related code, run the relevant tests, and write \
tests where coverage is missing. You may call search_workspace, read_file, write_test_file, \
run_tests and comment_on_pr. Each tool result is capped at 32 KiB (RN-150). Report findings \
as a single review comment on the PR: a verdict (approve, request changes), the evidence, \
and the tests you added. Be precise about causes: an HTTP status from our own api is a code \
failure, not a model failure, and must be attributed to the component that produced it. \
Never approve a PR whose tests you could not run; say what blocked you instead. Keep your \
own messages short: the history you accumulate is sent in full on every turn.";

const USER: &str = "Review PR 412 (fix/rn-412-awaiting-gate). The last gate run on it died \
with `413 request entity too large` after iteration 23; comments in the code blame the LLM \
provider. Find the real cause, check that the PR closes it on both ends (api body limit and \
engine compaction), add tests where they are missing, and post your verdict.";

const PATHS: [&str; 10] = [
    "apps/api/src/main.ts",
    "apps/api/src/internal/sessions.controller.ts",
    "apps/api/src/internal/llm-turn.service.ts",
    "apps/engine/config/runtime.exs",
    "apps/engine/lib/engine/actions/terminal_executor.ex",
    "apps/engine/lib/engine/agents/falha_de_turno.ex",
    "apps/engine/lib/engine/harness/context_manager/default.ex",
    "apps/engine/lib/engine/harness/tokenizer.ex",
    "apps/engine/lib/engine/transport/api_client.ex",
    "docker/docker-compose.yml",
];

const SNIPPETS: [&str; 8] = [
    "# 413 here comes from the LLM provider when the prompt is too long",
    "Logger.warning(\"llm-turn failed\", status: status, session_id: session_id)",
    "@Post(':sessionId/llm-turn') async llmTurn(@Param('sessionId') id: string, @Body() body: LlmTurnDto)",
    "def origem({413, _}), do: \"codigo\"",
    "{:error, %{status: 413, body: \"request entity too large\"}} -> {:retry, :provider}",
    "const app = await NestFactory.create(AppModule);",
    "transport_max_body_bytes: String.to_integer(System.get_env(\"TRANSPORT_MAX_BODY_BYTES\", \"8388608\"))",
    "if estimate(messages) > threshold * context_window, do: compact(messages), else: messages",
];

fn search_results(query: &str, n: usize) -> String {
    let mut out = format!("{n} matches for {query:?} (showing {n}):\n");
    for i in 0..n {
        let path = PATHS[(i * 7 + query.len()) % PATHS.len()];
        let line = 12 + (i * 37 + query.len() * 11) % 480;
        let snippet = SNIPPETS[(i * 3 + query.len()) % SNIPPETS.len()];
        out.push_str(&format!("{path}:{line}:    {snippet}\n"));
    }
    out
}

/// A file as read_file returns it: numbered lines.
fn numbered(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| format!("{:>5}  {l}\n", i + 1))
        .collect()
}

const MAIN_TS: &str = r#"import { NestFactory } from '@nestjs/core';
import { ValidationPipe, Logger } from '@nestjs/common';
import { AppModule } from './app.module';
import { InternalAuthGuard } from './internal/internal-auth.guard';

// NOTE: 413s on /internal/sessions/:id/llm-turn come from the LLM provider
// (prompt too long); nothing to do on our side.
async function bootstrap() {
  const app = await NestFactory.create(AppModule);
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, transform: true }));
  app.useGlobalGuards(new InternalAuthGuard(app.get('INTERNAL_TOKEN')));
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port);
  Logger.log(`api listening on ${port}`, 'bootstrap');
}

bootstrap().catch((err) => {
  Logger.error(err, 'bootstrap');
  process.exit(1);
});
"#;

fn runtime_exs() -> String {
    let mut out = String::from("import Config\n\n# Runtime configuration for the engine.\n");
    let agents = [
        "qa_automacao_agent",
        "qa_performance_seguranca_agent",
        "qa_estrategia_agent",
        "appsec_agent",
        "dev_agent_server",
    ];
    for agent in agents {
        out.push_str(&format!(
            "\nconfig :engine, Engine.Agents.{agent},\n  model: System.get_env(\"{}_MODEL\", \"default\"),\n  context_window: 128_000,\n  threshold: 0.7,\n  max_iterations: 60,\n  tool_result_cap_bytes: 32_768,\n  # the provider rejects prompts over the window with a 413\n  retry_on: [429, 500, 502, 503, 413]\n",
            agent.to_uppercase()
        ));
    }
    out.push_str("\nconfig :engine, EngineWeb.Endpoint,\n  http: [port: String.to_integer(System.get_env(\"PORT\", \"4000\"))],\n  # Phoenix accepts request bodies up to 8 MB\n  body_reader_length: 8_000_000\n\nconfig :engine, Engine.Transport.ApiClient,\n  base_url: System.get_env(\"API_INTERNAL_URL\", \"http://api:3000/internal\"),\n  receive_timeout: 120_000\n");
    out
}

fn context_manager_ex() -> String {
    let mut out = String::from(
        "defmodule Engine.Harness.ContextManager.Default do\n  @moduledoc \"\"\"\n  Decides when to compact the history sent on every ToolLoop turn.\n  \"\"\"\n  @behaviour Engine.Harness.ContextManager\n\n  alias Engine.Harness.{Summarizer, Tokenizer}\n\n  @impl true\n  def maybe_compact(messages, opts) do\n    window = Keyword.fetch!(opts, :context_window)\n    threshold = Keyword.get(opts, :threshold, 0.7)\n\n    if estimate(messages) > threshold * window do\n      compact(messages, opts)\n    else\n      messages\n    end\n  end\n\n  @doc \"Estimated tokens of a history.\"\n  def estimate(messages) do\n    messages\n    |> Enum.map(fn m -> byte_size(m[\"content\"] || \"\") end)\n    |> Enum.sum()\n    |> div(4)\n  end\n\n  defp compact(messages, opts) do\n    keep = Keyword.get(opts, :keep_recent, 6)\n    {old, recent} = Enum.split(messages, length(messages) - keep)\n    [Summarizer.summarize(old) | recent]\n  end\n",
    );
    for (i, name) in [
        "system_prefix",
        "drop_empty",
        "merge_adjacent_user",
        "strip_reasoning",
        "cap_tool_result",
        "normalise_roles",
        "drop_stale_reminders",
        "dedupe_tool_results",
        "trim_trailing_whitespace",
        "tag_iteration",
        "redact_secrets",
        "order_by_turn",
    ]
    .iter()
    .enumerate()
    {
        out.push_str(&format!(
            "\n  @doc false\n  def {name}(messages) do\n    # step {} of the pre-send pipeline\n    Enum.reduce(messages, [], fn\n      %{{\"role\" => \"system\"}} = m, acc -> [m | acc]\n      %{{\"role\" => \"tool\", \"content\" => c}} = m, acc when byte_size(c) > 32_768 ->\n        [%{{m | \"content\" => binary_part(c, 0, 32_768)}} | acc]\n      m, acc -> [m | acc]\n    end)\n    |> Enum.reverse()\n  end\n",
            i + 1
        ));
    }
    out.push_str("end\n");
    out
}

fn gate_log(n: usize) -> String {
    let mut out = String::new();
    let mut body = 18_400u64;
    for i in 0..n {
        let s = 3 + i * 7;
        let (h, m, sec) = (10 + s / 3600, (s / 60) % 60, s % 60);
        let iteration = 1 + i / 4;
        match i % 4 {
            0 => out.push_str(&format!(
                "2026-08-18T{h:02}:{m:02}:{sec:02}Z [engine] tool_loop session=s-412 iteration={iteration} tools=2 estimate_tokens={}\n",
                body / 9
            )),
            1 => out.push_str(&format!(
                "2026-08-18T{h:02}:{m:02}:{sec:02}Z [engine] POST /internal/sessions/s-412/llm-turn body_bytes={body}\n"
            )),
            2 if body > 102_400 => out.push_str(&format!(
                "2026-08-18T{h:02}:{m:02}:{sec:02}Z [api] PayloadTooLargeError: request entity too large (limit=102400, length={body}) -> 413\n"
            )),
            2 => out.push_str(&format!(
                "2026-08-18T{h:02}:{m:02}:{sec:02}Z [api] 200 POST /internal/sessions/s-412/llm-turn {} ms\n",
                800 + (i * 131) % 2200
            )),
            _ => {
                out.push_str(&format!(
                    "2026-08-18T{h:02}:{m:02}:{sec:02}Z [engine] tool results appended: search_workspace {} B, read_file {} B\n",
                    1200 + (i * 977) % 6000,
                    2000 + (i * 1361) % 9000
                ));
                body += 3_700 + (i as u64 * 613) % 2_400;
            }
        }
    }
    out
}

fn compose_yml() -> String {
    let mut out = String::from("services:\n");
    for (svc, port) in [("api", 3000), ("engine", 4000), ("worker", 4100)] {
        out.push_str(&format!(
            "  {svc}:\n    build:\n      context: ..\n      dockerfile: docker/{svc}.Dockerfile\n    ports:\n      - \"{port}:{port}\"\n    environment:\n      NODE_ENV: production\n      PORT: \"{port}\"\n      API_INTERNAL_URL: http://api:3000/internal\n      # LLM provider limits: 413 means the prompt exceeded the model window\n      LLM_TIMEOUT_MS: \"120000\"\n    depends_on:\n      - postgres\n      - redis\n    healthcheck:\n      test: [\"CMD\", \"curl\", \"-f\", \"http://localhost:{port}/health\"]\n      interval: 10s\n      timeout: 3s\n      retries: 5\n\n"
        ));
    }
    out.push_str("  postgres:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: postgres\n  redis:\n    image: redis:7\n");
    out
}

fn e2e_spec() -> String {
    let mut out = String::from(
        "import { Test } from '@nestjs/testing';\nimport * as request from 'supertest';\nimport { INestApplication } from '@nestjs/common';\nimport { AppModule } from '../src/app.module';\nimport { configureBodyParser } from '../src/body-parser';\n\n// ADR 0098: the api must accept what the engine sends (8 MiB), with headroom.\ndescribe('POST /internal/sessions/:id/llm-turn body limit', () => {\n  let app: INestApplication;\n\n  beforeAll(async () => {\n    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();\n    app = moduleRef.createNestApplication();\n    configureBodyParser(app, process.env.API_JSON_BODY_LIMIT ?? '10mb');\n    await app.init();\n  });\n\n  afterAll(() => app.close());\n\n  const history = (toolResults: number, resultBytes: number) => ({\n    sessionId: 's-e2e',\n    messages: Array.from({ length: toolResults }, (_, i) => ({\n      role: 'tool',\n      toolCallId: `call_${i}`,\n      content: 'x'.repeat(resultBytes),\n    })),\n  });\n",
    );
    let sizes: Vec<usize> = (1..=48).map(|i| i * i * 7 / 2).collect();
    for (i, kib) in sizes.iter().enumerate() {
        let results = 1 + kib / 32;
        let status = if *kib <= 8192 { 201 } else { 413 };
        out.push_str(&format!(
            "\n  it('accepts a history of about {kib} KiB ({results} tool results)', async () => {{\n    const body = history({results}, {});\n    const res = await request(app.getHttpServer())\n      .post('/internal/sessions/s-e2e-{i}/llm-turn')\n      .set('Authorization', `Bearer ${{process.env.INTERNAL_TOKEN}}`)\n      .send(body);\n    expect(res.status).toBe({status});\n    expect(res.body.error ?? null).toBeNull();\n    // the engine's own ceiling is 8 MiB; the api must never be the narrower end\n    expect(JSON.stringify(body).length).toBeLessThan(8 * 1024 * 1024);\n  }});\n",
            kib * 1024 / results
        ));
    }
    out.push_str(
        "\n  it('rejects a body over the configured limit with 413, not 500', async () => {\n    const res = await request(app.getHttpServer())\n      .post('/internal/sessions/s-e2e-over/llm-turn')\n      .send(history(400, 32 * 1024));\n    expect(res.status).toBe(413);\n  });\n});\n",
    );
    out
}

fn exunit_test() -> String {
    let mut out = String::from(
        "defmodule Engine.Harness.ContextManagerTest do\n  use ExUnit.Case, async: true\n\n  alias Engine.Harness.ContextManager.Default, as: CM\n  alias Engine.Harness.Tokenizer\n\n  @express_limit 102_400\n\n  defp call(id, args), do: %{\"id\" => id, \"name\" => \"read_file\", \"arguments\" => args}\n\n  defp iteration(i, result_bytes) do\n    [\n      %{\"role\" => \"assistant\", \"content\" => \"\", \"toolCalls\" => [call(\"call_#{i}\", %{\"path\" => \"f#{i}.ex\"})]},\n      %{\"role\" => \"tool\", \"toolCallId\" => \"call_#{i}\", \"content\" => String.duplicate(\"x\", result_bytes)}\n    ]\n  end\n\n  defp history(n, result_bytes) do\n    [%{\"role\" => \"system\", \"content\" => \"gate\"}] ++ Enum.flat_map(1..n, &iteration(&1, result_bytes))\n  end\n\n  test \"estimate counts tool-call arguments\" do\n    m = %{\"role\" => \"assistant\", \"content\" => \"\", \"toolCalls\" => [call(\"c\", %{\"query\" => String.duplicate(\"q\", 4000)})]}\n    assert CM.estimate([m]) >= div(4000, Tokenizer.bytes_per_token())\n  end\n",
    );
    let cases = (1..=15).flat_map(|i| [(i * 4, 4_096), (i * 4, 32_768)]);
    for (n, bytes) in cases {
        out.push_str(&format!(
            "\n  test \"{n} iterations of {bytes}-byte results never overflow the transport ceiling\" do\n    opts = [context_window: 128_000, threshold: 0.7, transport_max_body_bytes: @express_limit, keep_recent: 2]\n    out = CM.maybe_compact(history({n}, {bytes}), opts)\n    assert byte_size(Jason.encode!(%{{\"messages\" => out}})) <= @express_limit\n    # the cut respects iteration boundaries: no tool result without its call\n    for {{%{{\"role\" => \"tool\", \"toolCallId\" => id}}, i}} <- Enum.with_index(out) do\n      prev = Enum.at(out, i - 1)\n      assert prev[\"role\"] in [\"assistant\", \"tool\"]\n      assert is_binary(id)\n    end\n  end\n"
        ));
    }
    out.push_str(
        "\n  test \"the effective window is min(context_window, transport ceiling)\" do\n    assert CM.effective_window(context_window: 128_000, transport_max_body_bytes: @express_limit) == 25_600\n    assert CM.effective_window(context_window: 128_000, transport_max_body_bytes: 8 * 1024 * 1024) == 128_000\n  end\nend\n",
    );
    out
}

fn test_output() -> String {
    let mut out = String::from("$ mix test test/engine/harness/context_manager_test.exs\nCompiling 3 files (.ex)\nRunning ExUnit with seed: 412, max_cases: 8\n\n");
    for i in 0..10 {
        out.push_str(&format!(
            "  * test iteration case {i} [L#{}] ({}.{}ms)\n",
            30 + i * 9,
            i % 3,
            (i * 37) % 100
        ));
    }
    out.push_str("\n  1) test 60 iterations of 32768-byte results never overflow the transport ceiling (Engine.Harness.ContextManagerTest)\n     test/engine/harness/context_manager_test.exs:71\n     Assertion with <= failed\n     code:  assert byte_size(Jason.encode!(%{\"messages\" => out})) <= @express_limit\n     left:  1966412\n     right: 102400\n     stacktrace:\n       test/engine/harness/context_manager_test.exs:74: (test)\n\nFinished in 0.4 seconds (0.4s async, 0.00s sync)\n10 tests, 1 failure\n\n$ npm run test:e2e -- body-limit\n\n> api@0.0.0 test:e2e\n> jest --config ./test/jest-e2e.json body-limit\n\n");
    for kib in [1, 16, 32, 64, 96, 100, 101, 128, 256, 512] {
        let mark = if kib <= 100 { "✓" } else { "✕" };
        out.push_str(&format!(
            "  {mark} accepts a history of about {kib} KiB ({} ms)\n",
            20 + kib / 8
        ));
    }
    out.push_str("\n  ● POST /internal/sessions/:id/llm-turn body limit › accepts a history of about 101 KiB\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 201\n    Received: 413\n\n      at Object.<anonymous> (test/body-limit.e2e-spec.ts:88:24)\n\nTests: 5 failed, 12 passed, 17 total\n");
    out
}

fn review() -> String {
    let mut out = String::from("## QA/SecOps gate: request changes\n\n**The 413 is ours, not the provider's.** `Engine.Agents.FalhaDeTurno.origem({413, _})` already classifies it as `codigo`; the trail ends at the api: `apps/api/src/main.ts` never configures the JSON parser, so Express's implicit 100 KB limit applies on `POST /internal/sessions/:sessionId/llm-turn`, which receives the whole history on every ToolLoop iteration. Phoenix accepts 8 MB: the api is the narrower end by about 80×, by omission.\n\n**The engine cannot compact in time.** `estimate/1` sums `content` only; assistant messages with `toolCalls` have empty content, so tool-call arguments weigh nothing. The trigger is `0.7 * context_window` = 89,600 tokens, about 350 KB of estimated payload, far past the 100 KB the api accepts.\n\n### Evidence\n\n");
    for (i, line) in [
        "run 7 of the gate on this PR: body_bytes grows by 3.7–6 KB per iteration; first 413 at 104,9xx bytes (log lines 40–44)",
        "estimate_tokens at that point: ~11,600, far under the 89,600 trigger",
        "`retry_on: [..., 413]` in runtime.exs retries a deterministic failure five times",
        "comments in runtime.exs, terminal_executor.ex and docker-compose.yml blame the provider",
        "the new e2e test fails at 101 KiB with 413 (expected 201)",
        "the new ExUnit test: 60 iterations of 32 KiB results reach 1.9 MB without compacting",
    ]
    .iter()
    .enumerate()
    {
        out.push_str(&format!("{}. {line}\n", i + 1));
    }
    out.push_str("\n### What the PR must do (both ends, together)\n\n");
    for (item, detail) in [
        ("api", "`app.useBodyParser('json', { limit })` from `API_JSON_BODY_LIMIT`, default `10mb`, headroom over the engine's 8 MiB"),
        ("estimate", "count `content` of every message plus the JSON of `toolCalls`, with `Tokenizer.bytes_per_token/0` as the one constant"),
        ("window", "effective window `min(context_window, transport_max_body_bytes / bytes_per_token)`; `transport_max_body_bytes` a new config, default 8 MiB, not copied into the five agent files"),
        ("cut", "summarise old iterations, keep recent ones, and never split an assistant message from its tool results (`group_by_iteration/1`)"),
        ("retries", "drop 413 from `retry_on`: it is a code failure, retrying cannot help"),
    ] {
        out.push_str(&format!("- **{item}**: {detail}.\n"));
    }
    out.push_str("\n### Tests added\n\n- `apps/api/test/body-limit.e2e-spec.ts`: 48 cases from 3 KiB to 8 MiB, plus a 413 above the configured limit (not a 500).\n- `apps/engine/test/engine/harness/context_manager_test.exs`: the estimate counts arguments; 60-iteration sessions never exceed the ceiling; the cut keeps every tool result with its call; the effective window.\n\nBoth suites fail on this branch as it stands (5 e2e failures, 1 ExUnit failure). Fixing only one end postpones the overflow instead of resolving it.\n");
    for i in 0..40 {
        out.push_str(&format!(
            "\n<details><summary>failure {}</summary>\n\n```\nPOST /internal/sessions/s-412/llm-turn body_bytes={} -> 413 PayloadTooLargeError (limit=102400)\n```\n</details>\n",
            i + 1,
            102_400 + 1_337 * (i + 1)
        ));
    }
    out
}

fn falha_de_turno_ex() -> String {
    let mut out = String::from("defmodule Engine.Agents.FalhaDeTurno do\n  @moduledoc \"\"\"\n  Classifies why an agent turn failed: \"codigo\" (our code), \"modelo\" (the\n  model or its provider), \"ambiente\" (infrastructure).\n  \"\"\"\n\n  @type origem :: String.t()\n\n  @spec origem({integer() | atom(), term()}) :: origem\n");
    for (pat, origem, why) in [
        ("{413, _}", "codigo", "our own transport rejected the body"),
        (
            "{400, %{\"error\" => %{\"type\" => \"context_length_exceeded\"}}}",
            "modelo",
            "the model's window",
        ),
        ("{429, _}", "modelo", "provider rate limit"),
        ("{500, _}", "ambiente", "upstream error"),
        ("{502, _}", "ambiente", "gateway"),
        ("{503, _}", "ambiente", "unavailable"),
        ("{:timeout, _}", "ambiente", "receive_timeout elapsed"),
        ("{:closed, _}", "ambiente", "connection closed"),
    ] {
        out.push_str(&format!(
            "  # {why}\n  def origem({pat}), do: \"{origem}\"\n"
        ));
    }
    out.push_str("  def origem(_), do: \"codigo\"\n\n  @doc \"Whether a failure of this origin is worth retrying.\"\n  def retry?(\"ambiente\"), do: true\n  def retry?(\"modelo\"), do: true\n  def retry?(\"codigo\"), do: false\nend\n");
    out
}

fn terminal_executor_ex() -> String {
    let mut out = String::from("defmodule Engine.Actions.TerminalExecutor do\n  @moduledoc \"\"\"\n  Runs an agent's terminal commands in the sandbox and returns their output,\n  capped at 32 KiB (RN-150).\n  \"\"\"\n\n  require Logger\n  alias Engine.Sandbox\n\n  @cap 32_768\n\n  def run(session_id, command, opts \\\\ []) do\n    timeout = Keyword.get(opts, :timeout, 120_000)\n\n    case Sandbox.exec(session_id, command, timeout: timeout) do\n      {:ok, output} -> {:ok, cap(output)}\n      # a 413 here means the provider could not take the prompt: not ours\n      {:error, {413, _}} -> {:error, :provider_too_large}\n      {:error, reason} -> {:error, reason}\n    end\n  end\n\n  defp cap(output) when byte_size(output) <= @cap, do: output\n  defp cap(output), do: binary_part(output, 0, @cap) <> \"\\n[truncated]\"\n");
    for cmd in [
        "git_diff",
        "git_log",
        "mix_test",
        "npm_test",
        "grep",
        "ls",
        "cat",
        "rg",
        "docker_ps",
        "curl",
    ] {
        out.push_str(&format!(
            "\n  @doc \"Runs `{cmd}` with the session's working directory.\"\n  def {cmd}(session_id, args) do\n    Logger.debug(\"terminal {cmd}\", session_id: session_id, args: inspect(args))\n    run(session_id, [\"{cmd}\" | List.wrap(args)] |> Enum.join(\" \"))\n  end\n"
        ));
    }
    out.push_str("end\n");
    out
}

fn llm_turn_service_ts() -> String {
    let mut out = String::from("import { Injectable, Logger, PayloadTooLargeException } from '@nestjs/common';\nimport { LlmProvider } from '../llm/llm-provider';\nimport { LlmTurnDto, LlmTurnResult } from './llm-turn.dto';\n\n@Injectable()\nexport class LlmTurnService {\n  private readonly logger = new Logger(LlmTurnService.name);\n\n  constructor(private readonly provider: LlmProvider) {}\n\n  async turn(sessionId: string, dto: LlmTurnDto): Promise<LlmTurnResult> {\n    this.logger.debug(`llm-turn ${sessionId}: ${dto.messages.length} messages`);\n    try {\n      return await this.provider.complete(dto);\n    } catch (err) {\n      // the provider answers 413 when the prompt is over the model window\n      if (err?.status === 413) throw new PayloadTooLargeException('prompt too long for the model');\n      throw err;\n    }\n  }\n");
    for (name, field) in [
        ("countToolCalls", "toolCalls"),
        ("countToolResults", "toolCallId"),
        ("countSystem", "system"),
        ("countUser", "user"),
        ("countAssistant", "assistant"),
    ] {
        out.push_str(&format!(
            "\n  /** Metrics: how many messages carry `{field}`. */\n  {name}(dto: LlmTurnDto): number {{\n    return dto.messages.filter((m) => '{field}' in m || m.role === '{field}').length;\n  }}\n"
        ));
    }
    out.push_str("}\n");
    out
}
