// A tool-loop agent on the official `@anthropic-ai/sdk` JS SDK, for
// ctxgate's test that every answer of `ctxgate agent` reads without error
// (SPEC §9).
//
//   node anthropic_agent.mjs [--stream]
//
// The client takes its base URL and key from ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY, as an agent shipped on the SDK does. One tool,
// read_file(path); the loop runs until the model answers without a
// tool_use, prints that answer, exits 0. Not streamed: `messages.create`;
// streamed: the SDK's helper `messages.stream(…).finalMessage()`, which
// accumulates the events and throws on one out of order. Any error:
// printed, exit 1.
import Anthropic from "@anthropic-ai/sdk";
import * as wire from "./wire.mjs";

async function loop(client, stream) {
  const tools = [{ name: "read_file", description: wire.TOOL_DESCRIPTION, input_schema: wire.TOOL_SCHEMA }];
  const messages = [{ role: "user", content: wire.task() }];
  for (let step = 0; step < wire.MAX_STEPS; step++) {
    const body = { model: wire.MODEL, max_tokens: 1024, system: wire.SYSTEM, messages, tools };
    let message;
    if (stream) {
      const s = client.messages.stream(body);
      for await (const event of s) wire.expect(typeof event.type === "string", "an event without a type");
      message = await s.finalMessage();
    } else {
      message = await client.messages.create(body);
    }
    const calls = message.content.filter((b) => b.type === "tool_use");
    wire.expect(
      message.stop_reason === (calls.length ? "tool_use" : "end_turn"),
      `stop_reason ${message.stop_reason} with ${calls.length} tool_use block(s)`,
    );
    wire.expect(message.usage && typeof message.usage.input_tokens === "number", "no usage.input_tokens");
    if (!calls.length) return message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    // As Anthropic's tool-use guide does: the content goes back as read.
    messages.push({ role: "assistant", content: message.content });
    messages.push({
      role: "user",
      content: calls.map((c) => {
        wire.expect(c.name === "read_file", `a call of ${c.name}`);
        return { type: "tool_result", tool_use_id: c.id, content: wire.readFile(c.input) };
      }),
    });
  }
  throw new wire.WireError("no final answer");
}

await wire.main(() =>
  // No retries: an answer the SDK cannot read must show, not be retried.
  loop(new Anthropic({ maxRetries: 0, timeout: 60_000 }), wire.flag("stream")),
);
