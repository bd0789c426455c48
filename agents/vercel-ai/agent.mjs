// A Vercel AI SDK agent as its docs build one, pointed at ctxgate.
//
// `generateText` with one tool that reads a file, looping until the model
// answers (`stopWhen`), and the SDK's own context handling turned on in
// `prepareStep`: before each step, past the trigger (a fraction of the
// model's window), `pruneMessages` removes the tool calls and results older
// than the last two messages, and the pruned list carries forward. The
// conversation is measured as the larger of the last step's reported input
// tokens and its JSON text / 4. The endpoint and key come from the
// environment (OPENAI_BASE_URL, OPENAI_API_KEY). The final answer is printed.
import { readFile } from 'node:fs/promises';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, pruneMessages, stepCountIs, tool } from 'ai';
import { z } from 'zod';

const WINDOW = 64_000; // agent.json's contextWindow
const TRIGGER = 0.5; // agent.json's threshold

const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });

const result = await generateText({
  model: openai('ctxgate-model'),
  system: 'You are a careful assistant. Read the files the task names with read_file, then answer.',
  prompt: process.env.CTXGATE_AGENT_PROMPT,
  tools: {
    read_file: tool({
      description: 'Read a text file and return its contents.',
      inputSchema: z.object({ path: z.string().describe('The path of the file to read.') }),
      execute: async ({ path }) => readFile(path, 'utf8'),
    }),
  },
  stopWhen: stepCountIs(1000),
  prepareStep: ({ steps, messages }) => {
    const used = Math.max(steps.at(-1)?.usage.inputTokens ?? 0, JSON.stringify(messages).length / 4);
    if (used > TRIGGER * WINDOW) {
      return { messages: pruneMessages({ messages, toolCalls: 'before-last-2-messages', emptyMessages: 'remove' }) };
    }
    return {};
  },
});
console.log(result.text);
