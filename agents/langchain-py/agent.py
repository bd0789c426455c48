"""A LangChain agent (`create_agent`, on LangGraph) as its docs build one, pointed at ctxgate.

One tool that reads a file and the SDK's own context handling turned on:
`SummarizationMiddleware`, which before each model call counts the
conversation and, past its trigger, has the model summarise the older part
and keeps the recent messages. The chat model says its window in its
profile (`max_input_tokens`), so the trigger is a fraction of it, as the
middleware's docs show. The endpoint and key come from the environment
ChatOpenAI reads (OPENAI_BASE_URL, OPENAI_API_KEY). The final answer is
printed.
"""

import os

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain.tools import tool
from langchain_openai import ChatOpenAI

WINDOW = 64_000      # agent.json's contextWindow
TRIGGER = 0.5        # agent.json's threshold


@tool
def read_file(path: str) -> str:
    """Read a text file and return its contents.

    Args:
        path: The path of the file to read.
    """
    with open(path, encoding="utf-8") as f:
        return f.read()


def main() -> None:
    model = ChatOpenAI(model="ctxgate-model", timeout=60, profile={"max_input_tokens": WINDOW})
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt="You are a careful assistant. Read the files the task names with read_file, then answer.",
        middleware=[SummarizationMiddleware(model=model, trigger=("fraction", TRIGGER), keep=("fraction", 0.3))],
    )
    result = agent.invoke(
        {"messages": [{"role": "user", "content": os.environ["CTXGATE_AGENT_PROMPT"]}]},
        {"recursion_limit": 10_000},
    )
    print(result["messages"][-1].text)


if __name__ == "__main__":
    main()
