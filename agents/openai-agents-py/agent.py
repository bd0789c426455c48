"""An OpenAI Agents SDK agent as its docs build one, pointed at ctxgate.

One tool that reads a file, the SDK's own context handling turned on
(`ToolOutputTrimmer`, the built-in `call_model_input_filter` that shortens
old tool outputs before each model call), run once on the task, the final
answer printed. The endpoint and key come from the environment the OpenAI
client reads (OPENAI_BASE_URL, OPENAI_API_KEY); tracing is off, as the docs
say for a provider other than OpenAI.
"""

import asyncio
import os

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.extensions import ToolOutputTrimmer


@function_tool
def read_file(path: str) -> str:
    """Read a text file and return its contents.

    Args:
        path: The path of the file to read.
    """
    with open(path, encoding="utf-8") as f:
        return f.read()


async def main() -> None:
    set_tracing_disabled(True)
    agent = Agent(
        name="Reader",
        instructions="You are a careful assistant. Read the files the task names with read_file, then answer.",
        model=os.environ.get("AGENT_MODEL", "ctxgate-model"),
        tools=[read_file],
    )
    config = RunConfig(
        call_model_input_filter=ToolOutputTrimmer(recent_turns=2, max_output_chars=2000, preview_chars=500),
    )
    result = await Runner.run(agent, os.environ["CTXGATE_AGENT_PROMPT"], run_config=config, max_turns=1000)
    print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
