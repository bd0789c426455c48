// A tool-loop agent on the Vercel AI SDK (`ai` with `@ai-sdk/openai` and
// `@ai-sdk/anthropic`), for ctxgate's test that every answer of
// `ctxgate agent` reads without error (SPEC §9). The AI SDK validates every
// answer and every streamed chunk with zod schemas of the provider's shapes,
// so it is the strictest of the clients.
//
//   node vercel_agent.mjs --provider openai-chat|openai-responses|anthropic [--stream]
//
// One tool, read_file({path}) (a zod schema); generateText — or streamText
// with --stream — runs the loop (stopWhen: stepCountIs) until the model
// answers without a call; the agent prints that answer and exits 0. A step
// that ends other than as the answer says ('tool-calls' with calls, 'stop'
// without), a step whose usage was not read, and any error or error part of
// the stream: printed, exit 1.
import { generateText, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";
import * as wire from "./wire.mjs";

function model(provider) {
  const strip = (u) => u.replace(/\/+$/, "");
  if (provider === "anthropic") {
    // The provider's baseURL is the API root with /v1 (its default is
    // https://api.anthropic.com/v1); ANTHROPIC_BASE_URL is without it.
    return createAnthropic({
      baseURL: `${strip(process.env.ANTHROPIC_BASE_URL)}/v1`,
      apiKey: process.env.ANTHROPIC_API_KEY,
    })(wire.MODEL);
  }
  const openai = createOpenAI({ baseURL: strip(process.env.OPENAI_BASE_URL), apiKey: process.env.OPENAI_API_KEY });
  if (provider === "openai-chat") return openai.chat(wire.MODEL);
  if (provider === "openai-responses") return openai.responses(wire.MODEL);
  throw new Error(`--provider openai-chat|openai-responses|anthropic, not ${provider}`);
}

function checkSteps(steps) {
  wire.expect(steps.length > 0, "no step");
  steps.forEach((step, i) => {
    const calls = step.toolCalls.length;
    const want = calls ? "tool-calls" : "stop";
    wire.expect(
      step.finishReason === want,
      `step ${i}: finishReason ${step.finishReason} (raw ${step.rawFinishReason}) with ${calls} call(s)`,
    );
    wire.expect(
      typeof step.usage?.inputTokens === "number",
      `step ${i}: the usage was not read (${JSON.stringify(step.usage)})`,
    );
    for (const r of step.content.filter((p) => p.type === "tool-error")) {
      throw new wire.WireError(`step ${i}: tool error ${r.toolName}: ${r.error}`);
    }
  });
}

await wire.main(async () => {
  const args = {
    model: model(wire.flag("provider", true)),
    system: wire.SYSTEM,
    prompt: wire.task(),
    tools: {
      read_file: tool({
        description: wire.TOOL_DESCRIPTION,
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => wire.readFile({ path }),
      }),
    },
    stopWhen: stepCountIs(wire.MAX_STEPS),
    maxRetries: 0,
  };
  if (!wire.flag("stream")) {
    const result = await generateText(args);
    checkSteps(result.steps);
    return result.text;
  }
  const errors = [];
  const result = streamText({ ...args, onError: ({ error }) => errors.push(error) });
  for await (const part of result.fullStream) {
    if (part.type === "error") errors.push(part.error);
  }
  if (errors.length) throw errors[0];
  checkSteps(await result.steps);
  return await result.text;
});
