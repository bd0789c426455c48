// A tool-loop agent on the official `openai` JS SDK, for ctxgate's test
// that every answer of `ctxgate agent` reads without error (SPEC §9).
//
//   node openai_agent.mjs --api chat|responses [--stream]
//
// The client takes its base URL and key from OPENAI_BASE_URL and
// OPENAI_API_KEY, as an agent shipped on the SDK does. One tool,
// read_file(path); the loop runs until the model answers without a call,
// prints that answer, exits 0. Not streamed: `create`; streamed: the SDK's
// helpers `chat.completions.stream(…).finalChatCompletion()` and
// `responses.stream(…).finalResponse()`, which accumulate the events and
// throw on one out of order. Any error: printed, exit 1.
import OpenAI from "openai";
import * as wire from "./wire.mjs";

async function chat(client, stream) {
  const tools = [
    {
      type: "function",
      function: { name: "read_file", description: wire.TOOL_DESCRIPTION, parameters: wire.TOOL_SCHEMA },
    },
  ];
  const messages = [
    { role: "system", content: wire.SYSTEM },
    { role: "user", content: wire.task() },
  ];
  for (let step = 0; step < wire.MAX_STEPS; step++) {
    let completion;
    if (stream) {
      const s = client.chat.completions.stream({
        model: wire.MODEL,
        messages,
        tools,
        stream_options: { include_usage: true },
      });
      for await (const chunk of s) wire.expect(chunk.object === "chat.completion.chunk", `a chunk of object ${chunk.object}`);
      completion = await s.finalChatCompletion();
      wire.expect(completion.usage != null, "include_usage was asked, but no chunk carried usage");
    } else {
      completion = await client.chat.completions.create({ model: wire.MODEL, messages, tools });
    }
    const choice = completion.choices[0];
    const message = choice.message;
    const calls = message.tool_calls ?? [];
    wire.expect(
      choice.finish_reason === (calls.length ? "tool_calls" : "stop"),
      `finish_reason ${choice.finish_reason} with ${calls.length} tool call(s)`,
    );
    if (!calls.length) return message.content;
    messages.push({
      role: "assistant",
      content: message.content,
      tool_calls: calls.map((c) => ({
        id: c.id,
        type: "function",
        function: { name: c.function.name, arguments: c.function.arguments },
      })),
    });
    for (const c of calls) {
      wire.expect(c.function.name === "read_file", `a call of ${c.function.name}`);
      messages.push({ role: "tool", tool_call_id: c.id, content: wire.readFile(c.function.arguments) });
    }
  }
  throw new wire.WireError("no final answer");
}

async function responses(client, stream) {
  const tools = [
    {
      type: "function",
      name: "read_file",
      description: wire.TOOL_DESCRIPTION,
      parameters: wire.TOOL_SCHEMA,
      strict: true,
    },
  ];
  let input = [{ role: "user", content: wire.task() }];
  for (let step = 0; step < wire.MAX_STEPS; step++) {
    const body = { model: wire.MODEL, instructions: wire.SYSTEM, input, tools };
    let response;
    if (stream) {
      const s = client.responses.stream(body);
      for await (const event of s) wire.expect(typeof event.sequence_number === "number", `${event.type} without sequence_number`);
      response = await s.finalResponse();
    } else {
      response = await client.responses.create(body);
    }
    wire.expect(response.status === "completed", `status ${response.status}`);
    const calls = response.output.filter((o) => o.type === "function_call");
    if (!calls.length) return response.output_text;
    // As OpenAI's function-calling guide does: the output items go back
    // into the input as read, then one output per call.
    input = [...input, ...response.output];
    for (const c of calls) {
      wire.expect(c.name === "read_file", `a call of ${c.name}`);
      input.push({ type: "function_call_output", call_id: c.call_id, output: wire.readFile(c.arguments) });
    }
  }
  throw new wire.WireError("no final answer");
}

await wire.main(async () => {
  const api = wire.flag("api", true);
  const stream = wire.flag("stream");
  // No retries: an answer the SDK cannot read must show, not be retried.
  const client = new OpenAI({ maxRetries: 0, timeout: 60_000 });
  if (api === "chat") return chat(client, stream);
  if (api === "responses") return responses(client, stream);
  throw new Error(`--api chat|responses, not ${api}`);
});
