"""A Pydantic AI agent as its docs build one, pointed at ctxgate.

One tool that reads a file and the SDK's own context handling turned on:
`SummarizingCompaction` from pydantic-ai-harness (the official capability
library), which before each model request estimates the conversation and,
past a fraction of the model's window, has the model summarise the older
messages, keeping a recent tail and every tool call with its return. The
window is given as `context_window` (a local endpoint's model has no window
in the registry, as the harness's README says). The endpoint and key come
from the environment (OPENAI_BASE_URL, OPENAI_API_KEY), as OpenAIProvider
reads them. The final answer is printed.
"""

import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits
from pydantic_ai_harness.compaction import SummarizingCompaction

WINDOW = 64_000      # agent.json's contextWindow
TRIGGER = 0.5        # agent.json's threshold
KEEP_TOKENS = 10_000  # the recent tail kept whole, in tokens (a tool result can be 10k tokens alone)

model = OpenAIChatModel(
    "ctxgate-model",
    provider=OpenAIProvider(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"]),
)
agent = Agent(
    model,
    instructions="You are a careful assistant. Read the files the task names with read_file, then answer.",
    capabilities=[SummarizingCompaction(max_fraction=TRIGGER, context_window=WINDOW, keep_tokens=KEEP_TOKENS)],
)


@agent.tool_plain
def read_file(path: str) -> str:
    """Read a text file and return its contents.

    Args:
        path: The path of the file to read.
    """
    with open(path, encoding="utf-8") as f:
        return f.read()


if __name__ == "__main__":
    result = agent.run_sync(os.environ["CTXGATE_AGENT_PROMPT"], usage_limits=UsageLimits(request_limit=1000))
    print(result.output)
