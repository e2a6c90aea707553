"""pydantic-ai driving `kiln mock` (OpenAI wire) with one tool. Usage: pydantic_ai_loop.py BASE_URL"""

import sys

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=sys.argv[1], api_key="sk-bench"))
agent = Agent(model)


@agent.tool_plain
def calculator(expression: str) -> str:
    """Evaluates an arithmetic expression."""
    return expression


result = agent.run_sync("go", usage_limits=UsageLimits(request_limit=1000))
print(result.output)
