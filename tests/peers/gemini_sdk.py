"""Google's own google-genai SDK against `kiln mock` answering as Gemini: generate_content with a
function declaration and a function call round trip (the model turn sent back as the SDK got
it, thought signature included), then generate_content_stream the same way. Prints what the
SDK parsed, as JSON, for tests/it/wires/peers_gemini.rs to check.

usage: python3 gemini_sdk.py MOCK_URL MODEL
"""

import json
import sys

from google import genai
from google.genai import types

url, model = sys.argv[1], sys.argv[2]
lookup = types.FunctionDeclaration(
    name="lookup",
    description="Find a product",
    parameters_json_schema={
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": "^SKU-[0-9]+$"}},
        "required": ["sku"],
    },
)
config = types.GenerateContentConfig(
    system_instruction="You sell bricks.",
    tools=[types.Tool(function_declarations=[lookup])],
    tool_config=types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode="AUTO")
    ),
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
out = {}


def round_trip(client, contents, first):
    """The function calls of `first` answered, as the SDK's docs show."""
    contents.append(first.candidates[0].content)
    for call in first.function_calls or []:
        price = 4.5 if call.args.get("sku") == "SKU-1" else None
        contents.append(
            types.Content(
                role="user",
                parts=[types.Part.from_function_response(name=call.name, response={"price": price})],
            )
        )
    return contents


# The SDK's default API version (v1 in google-genai 3.x), not streamed.
client = genai.Client(api_key="sdk-test-key", http_options=types.HttpOptions(base_url=url))
contents = [types.Content(role="user", parts=[types.Part.from_text(text="Price of SKU-1?")])]
first = client.models.generate_content(model=model, contents=contents, config=config)
out["calls"] = [[c.name, c.args] for c in first.function_calls or []]
out["finish"] = first.candidates[0].finish_reason.value
out["signed"] = [p.thought_signature is not None for p in first.candidates[0].content.parts]
out["usage"] = [first.usage_metadata.prompt_token_count, first.usage_metadata.candidates_token_count]
second = client.models.generate_content(
    model=model, contents=round_trip(client, contents, first), config=config
)
out["text"] = second.text

# v1beta, streamed: text deltas, then the call whole, then its answer streamed too.
beta = genai.Client(
    api_key="sdk-test-key", http_options=types.HttpOptions(base_url=url, api_version="v1beta")
)
contents = [types.Content(role="user", parts=[types.Part.from_text(text="And SKU-3?")])]
chunks = list(beta.models.generate_content_stream(model=model, contents=contents, config=config))
out["stream_text"] = "".join(c.text or "" for c in chunks)
calls = [fc for c in chunks for fc in (c.function_calls or [])]
out["stream_calls"] = [[c.name, c.args] for c in calls]
out["stream_finish"] = chunks[-1].candidates[0].finish_reason.value
# The streamed model turn as one Content: its parts, signatures kept, in order.
parts = [p for c in chunks for p in (c.candidates[0].content.parts or []) if p.text or p.function_call or p.thought_signature]
contents.append(types.Content(role="model", parts=parts))
for call in calls:
    contents.append(
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name=call.name, response={"error": "no product"})],
        )
    )
answer = beta.models.generate_content_stream(model=model, contents=contents, config=config)
out["stream_answer"] = "".join(c.text or "" for c in answer)
print(json.dumps(out))
