"""boto3's bedrock-runtime client against `kiln mock`: real SigV4 from botocore, real event
stream framing. Usage: bedrock_check.py MOCK_URL ACCESS_KEY SECRET_KEY SESSION_TOKEN MODEL_ID.
Prints one JSON object of what the SDK read (tests/it/wires/peers_bedrock.rs checks it)."""

import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

url, access_key, secret_key, token, model = sys.argv[1:6]


def client(secret):
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=access_key,
        aws_secret_access_key=secret,
        aws_session_token=token,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


bedrock = client(secret_key)
tools = {
    "tools": [
        {
            "toolSpec": {
                "name": "lookup",
                "description": "Find a product",
                "inputSchema": {"json": {"type": "object", "properties": {"sku": {"type": "string"}}}},
            }
        }
    ]
}
out = {}

# Round 1: a tool call; round 2: its result goes back, the answer comes.
question = {"role": "user", "content": [{"text": "Price of SKU-1?"}]}
first = bedrock.converse(modelId=model, messages=[question], toolConfig=tools)
out["stop"] = first["stopReason"]
calls = [b["toolUse"] for b in first["output"]["message"]["content"] if "toolUse" in b]
out["calls"] = [[c["name"], c["input"]] for c in calls]
results = {
    "role": "user",
    "content": [
        {"toolResult": {"toolUseId": c["toolUseId"], "content": [{"json": {"price": 4.5}}]}}
        for c in calls
    ],
}
second = bedrock.converse(
    modelId=model,
    messages=[question, first["output"]["message"], results],
    toolConfig=tools,
    inferenceConfig={"maxTokens": 100, "temperature": 0.5},
)
out["text"] = "".join(b.get("text", "") for b in second["output"]["message"]["content"])
out["usage"] = [second["usage"]["inputTokens"], second["usage"]["outputTokens"]]


def streamed(messages):
    reply = bedrock.converse_stream(modelId=model, messages=messages, toolConfig=tools)
    text, uses, stop, usage = "", {}, None, None
    for event in reply["stream"]:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]["start"]["toolUse"]
            uses[event["contentBlockStart"]["contentBlockIndex"]] = [start["toolUseId"], start["name"], ""]
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            if "text" in delta:
                text += delta["text"]
            else:
                uses[event["contentBlockDelta"]["contentBlockIndex"]][2] += delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
        elif "metadata" in event:
            usage = event["metadata"]["usage"]["outputTokens"]
    return text, list(uses.values()), stop, usage


# Streamed: text then a tool call, then its result and the answer.
text, uses, stop, _ = streamed([question])
out["stream_text"] = text
out["stream_calls"] = [[u[1], json.loads(u[2])] for u in uses]
out["stream_stop"] = stop
assistant = {
    "role": "assistant",
    "content": [{"text": text}]
    + [{"toolUse": {"toolUseId": u[0], "name": u[1], "input": json.loads(u[2])}} for u in uses],
}
answer = {
    "role": "user",
    "content": [{"toolResult": {"toolUseId": u[0], "content": [{"text": "4.50"}], "status": "error"}} for u in uses],
}
text, _, stop, usage = streamed([question, assistant, answer])
out["stream_answer"] = [text, stop, usage]

# A wrong secret: refused as AWS refuses it (botocore reads the type from x-amzn-ErrorType).
try:
    client(secret_key + "x").converse(modelId=model, messages=[question])
    out["wrong_secret"] = "accepted"
except ClientError as e:
    out["wrong_secret"] = [
        e.response["ResponseMetadata"]["HTTPStatusCode"],
        e.response["Error"]["Code"],
        e.response["Error"]["Message"],
    ]

# A result without its call: the mock's protocol check, in Bedrock's shape.
try:
    stray = {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_nope", "content": [{"text": "x"}]}}]}
    bedrock.converse(
        modelId=model,
        messages=[question, {"role": "assistant", "content": [{"text": "ok"}]}, stray],
        toolConfig=tools,
    )
    out["stray_result"] = "accepted"
except ClientError as e:
    out["stray_result"] = [e.response["Error"]["Code"], e.response["Error"]["Message"]]

print(json.dumps(out))
