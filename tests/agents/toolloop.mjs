#!/usr/bin/env node
// A small ToolLoop agent for ctxgate's own tests of agent mode, in JS: the
// twin of toolloop.py. It talks to a model over HTTP (OpenAI Chat
// Completions, OpenAI Responses or Anthropic Messages, streamed or not),
// reads files with its one tool, and compacts its history the way ADR 0098
// says: estimate = bytes of the messages' JSON / 4 (tool calls included),
// compaction checked before *every* request, a summary asked of the model,
// the system prompt and the task kept, the last turn kept whole, and the
// transport ceiling respected besides the window.
//
// With --bug NAME it carries one of the 2026 reports of this class instead:
//
//   no-check-before-results  compaction is checked before a user turn only,
//                            never between a tool result and the request
//                            that carries it (earendil-works/pi#3609)
//   resend-on-413            a 413 is not recognised: the same history is
//                            sent again (QwenLM/qwen-code#10380)
//   summary-over-ceiling     the summary request carries the whole history,
//                            so it is itself over the ceiling (opencode #36589)
//   drops-system-prompt      the system prompt is lost at compaction
//   cuts-last-results        the last turn's results are cut to 100 characters
//   compacts-early           compacts at a tenth of the trigger
//
// What catches each, run as `ctxgate agent --config C -- node toolloop.mjs
// FLAGS` with C = {"contextWindow": 32000, "threshold": 0.7,
// "transportMaxBodyBytes": 102400, "toolOutputMaxBytes": 16384} and FLAGS
// the same values (--window 32000 --ceiling 102400 --tool-output-max-bytes
// 16384): request-under-ceiling (no-check-before-results), recovers-after-
// refusal (summary-over-ceiling; resend-on-413 where the agent is told a
// larger ceiling than the gateway's, --window 100000 --ceiling 1000000, so
// that it meets 413s), pinned-kept, results-delivered and no-premature-
// compaction (the last three). Its requests are toolloop.py's, byte for byte.
//
// Settings come from flags (the same values ctxgate's --config holds):
//   --window TOKENS --threshold F --ceiling BYTES --dialect D [--stream]
//   [--tool-output-max-bytes N]  (a result longer than N bytes is cut to N)
//
// Node 20 or later, no dependencies (fetch). Exit 0 after the model's final
// answer; 2 when even the smallest request cannot fit (it says so on
// stderr); 1 on any other error.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const SYSTEM =
  "You are a careful coding agent. Read the files the task needs with read_file, one turn at a time, then answer.";
const SUMMARY_ASK = "Summarize the conversation so far for a handoff.";
const READ_FILE = {
  name: "read_file",
  description: "Read a text file and return its content.",
  schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const BUGS = [
  "no-check-before-results",
  "resend-on-413",
  "summary-over-ceiling",
  "drops-system-prompt",
  "cuts-last-results",
  "compacts-early",
];

class TooLarge extends Error {}
class OverWindow extends Error {}

const dumps = (v) => JSON.stringify(v);
const bytes = (s) => Buffer.byteLength(s, "utf8");
/** The first `n` characters (code points, as Python's `s[:n]`). */
const chars = (s, n) => Array.from(s).slice(0, n).join("");

/** The first `n` bytes of `s` in UTF-8, a character cut in two left out. */
function cutBytes(s, n) {
  const buf = Buffer.from(s, "utf8");
  if (buf.length <= n) return s;
  let end = n;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString("utf8");
}

// --- the three dialects: a conversation of neutral messages in, a turn out ---
// A neutral message: {role: system|user|assistant|tool, content: string,
//                     calls: [{id, name, args}], id: call id (tool)}

function chatBody(msgs, tools, stream, maxTokens) {
  const out = msgs.map((m) => {
    if (m.role === "assistant" && m.calls?.length) {
      return {
        role: "assistant",
        content: m.content || null,
        tool_calls: m.calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: dumps(c.args) },
        })),
      };
    }
    if (m.role === "tool") return { role: "tool", tool_call_id: m.id, content: m.content };
    return { role: m.role, content: m.content };
  });
  const body = { model: "test-model", messages: out, stream, max_tokens: maxTokens };
  if (tools) {
    body.tools = [
      {
        type: "function",
        function: { name: READ_FILE.name, description: READ_FILE.description, parameters: READ_FILE.schema },
      },
    ];
  }
  if (stream) body.stream_options = { include_usage: true };
  return body;
}

function responsesBody(msgs, tools, stream, maxTokens) {
  const items = [];
  let instructions;
  for (const m of msgs) {
    if (m.role === "system" && instructions === undefined) {
      instructions = m.content;
    } else if (m.role === "assistant" && m.calls?.length) {
      if (m.content) items.push({ role: "assistant", content: m.content });
      for (const c of m.calls) {
        items.push({ type: "function_call", call_id: c.id, name: c.name, arguments: dumps(c.args) });
      }
    } else if (m.role === "tool") {
      items.push({ type: "function_call_output", call_id: m.id, output: m.content });
    } else {
      items.push({ role: m.role, content: m.content });
    }
  }
  const body = { model: "test-model", input: items, stream, max_output_tokens: maxTokens };
  if (instructions !== undefined) body.instructions = instructions;
  if (tools) {
    body.tools = [
      { type: "function", name: READ_FILE.name, description: READ_FILE.description, parameters: READ_FILE.schema },
    ];
  }
  return body;
}

function anthropicBody(msgs, tools, stream, maxTokens) {
  const system = msgs.filter((m) => m.role === "system").map((m) => m.content).join("\n");
  const out = [];
  for (const m of msgs) {
    if (m.role === "system") continue;
    if (m.role === "assistant" && m.calls?.length) {
      const blocks = m.content ? [{ type: "text", text: m.content }] : [];
      for (const c of m.calls) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: c.args });
      out.push({ role: "assistant", content: blocks });
    } else if (m.role === "tool") {
      const block = { type: "tool_result", tool_use_id: m.id, content: m.content };
      const last = out.at(-1);
      if (last && last.role === "user" && Array.isArray(last.content) && last.content[0]?.type === "tool_result") {
        last.content.push(block);
      } else {
        out.push({ role: "user", content: [block] });
      }
    } else {
      out.push({ role: m.role, content: m.content });
    }
  }
  const body = { model: "test-model", messages: out, stream, max_tokens: maxTokens };
  if (system) body.system = system;
  if (tools) {
    body.tools = [{ name: READ_FILE.name, description: READ_FILE.description, input_schema: READ_FILE.schema }];
  }
  return body;
}

const BODIES = { "openai-chat": chatBody, "openai-responses": responsesBody, anthropic: anthropicBody };

function urlOf(dialect) {
  const strip = (u) => u.replace(/\/+$/, "");
  if (dialect === "anthropic") return `${strip(process.env.ANTHROPIC_BASE_URL)}/v1/messages`;
  const base = strip(process.env.OPENAI_BASE_URL);
  return base + (dialect === "openai-chat" ? "/chat/completions" : "/responses");
}

function* sseEvents(raw) {
  for (const block of raw.split("\n\n")) {
    const data = block
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6));
    if (data.length) yield data.join("\n");
  }
}

/** The model's turn: {text, calls}. */
function readTurn(dialect, raw, stream) {
  if (!stream) {
    const r = JSON.parse(raw);
    if (dialect === "openai-chat") {
      const m = r.choices[0].message;
      const calls = (m.tool_calls || []).map((c) => ({
        id: c.id,
        name: c.function.name,
        args: JSON.parse(c.function.arguments),
      }));
      return { text: m.content || "", calls };
    }
    if (dialect === "openai-responses") {
      let text = "";
      const calls = [];
      for (const item of r.output) {
        if (item.type === "message") {
          text += item.content.filter((p) => p.type === "output_text").map((p) => p.text).join("");
        } else if (item.type === "function_call") {
          calls.push({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) });
        }
      }
      return { text, calls };
    }
    const text = r.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    const calls = r.content.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, args: b.input }));
    return { text, calls };
  }
  let text = "";
  const calls = new Map();
  for (const data of sseEvents(raw)) {
    if (data === "[DONE]") break;
    const e = JSON.parse(data);
    if (dialect === "openai-chat") {
      for (const ch of e.choices || []) {
        const d = ch.delta || {};
        text += d.content || "";
        for (const tc of d.tool_calls || []) {
          if (!calls.has(tc.index)) calls.set(tc.index, { id: null, name: "", args: "" });
          const c = calls.get(tc.index);
          c.id = tc.id || c.id;
          c.name += tc.function?.name || "";
          c.args += tc.function?.arguments || "";
        }
      }
    } else if (dialect === "openai-responses") {
      if (e.type === "response.output_text.delta") {
        text += e.delta;
      } else if (e.type === "response.output_item.done" && e.item.type === "function_call") {
        calls.set(calls.size, { id: e.item.call_id, name: e.item.name, args: e.item.arguments });
      }
    } else if (e.type === "content_block_start" && e.content_block.type === "tool_use") {
      calls.set(e.index, { id: e.content_block.id, name: e.content_block.name, args: "" });
    } else if (e.type === "content_block_delta") {
      if (e.delta.type === "text_delta") text += e.delta.text;
      else if (e.delta.type === "input_json_delta") calls.get(e.index).args += e.delta.partial_json;
    }
  }
  const out = [...calls.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([, c]) => ({ id: c.id, name: c.name, args: JSON.parse(c.args || "{}") }));
  return { text, calls: out };
}

async function send(dialect, msgs, tools, stream, maxTokens = 1024) {
  const body = dumps(BODIES[dialect](msgs, tools, stream, maxTokens));
  const resp = await fetch(urlOf(dialect), {
    method: "POST",
    body,
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${process.env.OPENAI_API_KEY || ""}`,
      "x-api-key": process.env.ANTHROPIC_API_KEY || "",
      "anthropic-version": "2023-06-01",
    },
    signal: AbortSignal.timeout(60_000),
  });
  const raw = await resp.text();
  if (resp.ok) return readTurn(dialect, raw, stream);
  if (resp.status === 413) throw new TooLarge(raw);
  if (resp.status === 400 && (raw.includes("context") || raw.includes("too long"))) throw new OverWindow(raw);
  throw new Error(`HTTP ${resp.status}: ${raw.slice(0, 500)}`);
}

const refused = (e) => e instanceof TooLarge || e instanceof OverWindow;

class Agent {
  constructor(a) {
    this.a = a;
    this.trigger = Math.round(a.threshold * Math.min(a.window, Math.floor(a.ceiling / 4)));
    if (a.bug === "compacts-early") this.trigger = Math.max(1, Math.floor(this.trigger / 10));
  }

  size(msgs) {
    return bytes(dumps(BODIES[this.a.dialect](msgs, true, this.a.stream, 1024)));
  }

  estimate(msgs) {
    return Math.floor(msgs.reduce((n, m) => n + bytes(dumps(m)), 0) / 4);
  }

  due(msgs) {
    return this.estimate(msgs) > this.trigger || this.size(msgs) > this.a.ceiling * 0.9;
  }

  /** The index of the last assistant turn with calls. */
  lastTurn(msgs) {
    for (let i = msgs.length - 1; i >= 0; i--) {
      if (msgs[i].role === "assistant" && msgs[i].calls?.length) return i;
    }
    return msgs.length;
  }

  async compact(msgs) {
    const [system, task] = msgs;
    const start = this.lastTurn(msgs);
    const recent = msgs.slice(start);
    const old = msgs.slice(2, start);
    let summary = "";
    if (old.length) {
      let ask;
      if (this.a.bug === "summary-over-ceiling") {
        ask = [...msgs, { role: "user", content: SUMMARY_ASK }];
      } else {
        // What the summariser is sent is bounded by the ceiling too.
        ask = [system];
        const budget = Math.floor(this.a.ceiling / 2);
        for (const m of old) {
          const piece = {
            role: m.role !== "assistant" ? "user" : "assistant",
            content: chars(m.content || dumps(m.calls ?? null), 4000),
          };
          if (this.size([...ask, piece]) > budget) break;
          ask.push(piece);
        }
        const last = ask.at(-1);
        if (last.role === "user") ask[ask.length - 1] = { ...last, content: `${last.content}\n\n${SUMMARY_ASK}` };
        else ask.push({ role: "user", content: SUMMARY_ASK });
      }
      try {
        ({ text: summary } = await send(this.a.dialect, ask, false, this.a.stream, 256));
      } catch (e) {
        if (!refused(e) || this.a.bug === "summary-over-ceiling") throw e;
        summary = "(earlier turns dropped)";
      }
      summary = chars(summary, 2000);
    }
    const head = this.a.bug === "drops-system-prompt" ? [task] : [system, task];
    const note = summary ? [{ role: "user", content: `Earlier work, summarised: ${summary}` }] : [];
    return [...head, ...note, ...recent];
  }

  /** Under the hard limits: the ceiling and the window. */
  fits(msgs) {
    return this.size(msgs) <= this.a.ceiling && this.estimate(msgs) <= this.a.window;
  }

  async run(task) {
    let msgs = [
      { role: "system", content: SYSTEM },
      { role: "user", content: task },
    ];
    for (let step = 0; step < 200; step++) {
      if (this.a.bug !== "no-check-before-results" && this.due(msgs)) {
        msgs = await this.compact(msgs);
        if (!this.fits(msgs) && !this.a.bug) {
          process.stderr.write("ctxgate test agent: the last turn alone does not fit\n");
          return 2;
        }
      }
      let turn;
      for (let tries = 0; ; ) {
        try {
          turn = await send(this.a.dialect, msgs, true, this.a.stream);
          break;
        } catch (e) {
          if (!refused(e)) throw e;
          tries += 1;
          if (tries > 4) {
            process.stderr.write("ctxgate test agent: the request does not fit, even compacted\n");
            return 2;
          }
          if (this.a.bug === "resend-on-413") continue;
          msgs = await this.compact(msgs);
        }
      }
      const { text, calls } = turn;
      if (!calls.length) {
        process.stdout.write(`${text}\n`);
        return 0;
      }
      msgs.push({ role: "assistant", content: text, calls });
      let results = calls.map((c) => {
        let content;
        try {
          content = readFileSync(c.args.path ?? "", "utf8");
        } catch (e) {
          content = `error: ${e.message}`;
        }
        if (this.a.toolOutputMaxBytes) content = cutBytes(content, this.a.toolOutputMaxBytes);
        return { role: "tool", id: c.id, content };
      });
      if (this.a.bug === "cuts-last-results") results = results.map((r) => ({ ...r, content: chars(r.content, 100) }));
      msgs.push(...results);
    }
    process.stderr.write("ctxgate test agent: too many turns\n");
    return 3;
  }
}

function settings() {
  const { values } = parseArgs({
    options: {
      dialect: { type: "string", default: "openai-chat" },
      stream: { type: "boolean", default: false },
      window: { type: "string", default: "128000" },
      threshold: { type: "string", default: "0.7" },
      ceiling: { type: "string", default: String(8 * 1024 * 1024) },
      bug: { type: "string" },
      "tool-output-max-bytes": { type: "string", default: "0" },
    },
  });
  const number = (name, parse) => {
    const v = parse(values[name]);
    if (!Number.isFinite(v)) usage(`--${name} must be a number, not ${JSON.stringify(values[name])}`);
    return v;
  };
  if (!(values.dialect in BODIES)) usage(`--dialect must be one of ${Object.keys(BODIES).join(", ")}`);
  if (values.bug !== undefined && !BUGS.includes(values.bug)) usage(`--bug must be one of ${BUGS.join(", ")}`);
  return {
    dialect: values.dialect,
    stream: values.stream,
    window: number("window", (s) => parseInt(s, 10)),
    threshold: number("threshold", Number),
    ceiling: number("ceiling", (s) => parseInt(s, 10)),
    bug: values.bug ?? null,
    toolOutputMaxBytes: number("tool-output-max-bytes", (s) => parseInt(s, 10)),
  };
}

function usage(why) {
  process.stderr.write(`toolloop.mjs: ${why}\n`);
  process.exit(2);
}

async function main() {
  let a;
  try {
    a = settings();
  } catch (e) {
    usage(e.message);
  }
  const task = process.env.CTXGATE_AGENT_PROMPT;
  if (readFileSync(process.env.CTXGATE_AGENT_PROMPT_FILE, "utf8") !== task) {
    throw new Error("the prompt file does not hold the task");
  }
  return new Agent(a).run(task);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`ctxgate test agent: ${e?.stack || e}\n`);
    process.exitCode = 1;
  },
);
