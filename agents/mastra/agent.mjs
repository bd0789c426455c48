// A Mastra agent as its docs build one, pointed at ctxgate.
//
// An `Agent` with one tool that reads a file (`createTool`), run with
// `agent.generate` on the task until the model answers (`maxSteps`), and
// Mastra's own context handling turned on: the `TokenLimiterProcessor` input
// processor, which before each model call trims the prompt to its token
// limit, dropping the oldest messages first and a tool call only with its
// results. The model is an OpenAI-compatible endpoint given by URL, as the
// docs' custom-provider config does. The final answer is printed.
import { readFile } from 'node:fs/promises';
import { Agent } from '@mastra/core/agent';
import { TokenLimiterProcessor } from '@mastra/core/processors';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';

const WINDOW = 64_000; // agent.json's contextWindow
const TRIGGER = 0.5; // agent.json's threshold: the limiter's budget

const agent = new Agent({
  id: 'reader',
  name: 'Reader',
  instructions: 'You are a careful assistant. Read the files the task names with read_file, then answer.',
  model: { providerId: 'ctxgate', modelId: 'ctxgate-model', url: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY },
  tools: {
    read_file: createTool({
      id: 'read_file',
      description: 'Read a text file and return its contents.',
      inputSchema: z.object({ path: z.string().describe('The path of the file to read.') }),
      execute: async ({ path }) => readFile(path, 'utf8'),
    }),
  },
  inputProcessors: [new TokenLimiterProcessor({ limit: TRIGGER * WINDOW })],
});

const result = await agent.generate(process.env.CTXGATE_AGENT_PROMPT, { maxSteps: 1000 });
console.log(result.text);
