"""openai-agents driving `kiln mock` (Chat Completions wire) with one tool.
Usage: openai_agents_loop.py BASE_URL"""

import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)


@function_tool
def calculator(expression: str) -> str:
    """Evaluates an arithmetic expression."""
    return expression


client = AsyncOpenAI(base_url=sys.argv[1], api_key="sk-bench")
agent = Agent(name="bench", instructions=None, tools=[calculator],
              model=OpenAIChatCompletionsModel(model="m", openai_client=client))
result = Runner.run_sync(agent, "go", max_turns=1000)
print(result.final_output)
