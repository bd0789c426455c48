// What the JS SDK agents share: the task, the one tool, and how an agent
// ends — the final answer printed and exit 0, or any error printed and
// exit 1 (an answer of ctxgate an SDK cannot read).
import { readFileSync } from "node:fs";

export const MODEL = process.env.CTXGATE_SDK_MODEL || "ctxgate-model";
export const SYSTEM =
  "You are a careful coding agent. Read the files the task needs with read_file, then answer.";
export const TOOL_DESCRIPTION = "Read a text file and return its content.";
export const TOOL_SCHEMA = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
  additionalProperties: false,
};
export const MAX_STEPS = 200;

export class WireError extends Error {}

export function task() {
  return process.env.CTXGATE_AGENT_PROMPT;
}

/** The tool: `args` is the call's input, an object or its JSON text. */
export function readFile(args) {
  const { path } = typeof args === "string" ? JSON.parse(args) : args;
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    return `error: ${e.message}`;
  }
}

export function expect(ok, why) {
  if (!ok) throw new WireError(why);
}

/** The value of a flag `--name VALUE`, or whether `--name` is there. */
export function flag(name, withValue = false) {
  const i = process.argv.indexOf(`--${name}`);
  if (!withValue) return i >= 0;
  return i >= 0 ? process.argv[i + 1] : undefined;
}

export async function main(run) {
  try {
    const answer = await run();
    process.stdout.write(`${answer}\n`);
    process.exitCode = 0;
  } catch (e) {
    const detail = e?.stack || String(e);
    process.stderr.write(`sdk agent: ${detail}\n`);
    if (e?.cause) process.stderr.write(`cause: ${e.cause?.stack || JSON.stringify(e.cause)}\n`);
    process.stdout.write(`sdk agent error: ${e?.name}: ${e?.message}\n`);
    process.exitCode = 1;
  }
}
