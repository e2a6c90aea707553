"""Reads what `kiln mcp` serves besides tools with the official Python MCP SDK (`mcp` 2.x):
resources, a resource template, prompts, a completion and a form a tool asks for; then writes
SCRIPTS_DIR/added.rhai (a new resource) and waits for the resource-list notification.

usage: mcp_served.py ARGV_JSON MODE SCRIPTS_DIR
  ARGV_JSON: the argv that starts kiln mcp over stdio
  MODE:      2025-11-25 (the SDK's legacy mode) | 2026-07-28
Prints what it saw as JSON.
"""
import json, os, sys
import anyio
import mcp_types as t
from mcp import Client, StdioServerParameters

ADDED = ('resource("notes://added").description("Added while serving")'
         '.handler(|args| "new note");\n')


def texts(blocks):
    return [b.text for b in blocks if getattr(b, "text", None) is not None]


async def main(argv, mode, scripts):
    out = {"forms": []}
    changed = anyio.Event()

    async def on_message(m):  # 2025-11-25: unscoped notifications arrive here
        if isinstance(m, t.ResourceListChangedNotification):
            changed.set()

    async def on_form(context, params):
        out["forms"].append({"message": params.message,
                             "schema": params.requested_schema})
        return t.ElicitResult(action="accept", content={"name": "Ada", "age": 36, "score": 99.5,
                                                        "status": "pending", "verified": False})

    server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    sdk_mode = "legacy" if mode == "2025-11-25" else mode
    async with Client(server, mode=sdk_mode, message_handler=on_message,
                      elicitation_callback=on_form) as c:
        out["protocol"] = c.protocol_version
        out["resources"] = [r.uri for r in (await c.list_resources()).resources]
        out["templates"] = [x.uri_template for x in
                            (await c.list_resource_templates()).resource_templates]
        out["text"] = texts((await c.read_resource("test://static-text")).contents)
        out["from_template"] = texts((await c.read_resource("test://template/7/data")).contents)
        blob = (await c.read_resource("test://static-binary")).contents[0]
        out["blob"] = {"mime": blob.mime_type, "has_bytes": bool(getattr(blob, "blob", ""))}
        try:
            await c.read_resource("test://nowhere")
            out["missing"] = "no error"
        except Exception as e:
            out["missing"] = str(e)
        out["prompts"] = [p.name for p in (await c.list_prompts()).prompts]
        got = await c.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        out["prompt"] = [m.content.text for m in got.messages]
        done = await c.complete(t.PromptReference(type="ref/prompt",
                                                  name="test_prompt_with_arguments"),
                                {"name": "arg1", "value": "par"})
        out["completed"] = done.completion.values
        r = await c.call_tool("test_elicitation_sep1034_defaults", {})
        out["form_result"] = {"text": texts(r.content), "is_error": bool(r.is_error)}

        def add_script():
            with open(os.path.join(scripts, "added.rhai"), "w") as f:
                f.write(ADDED)

        if c.protocol_version >= "2026-07-28":
            async with c.listen(resources_list_changed=True) as sub:
                add_script()
                with anyio.fail_after(20):
                    out["notified"] = type(await sub.__anext__()).__name__
        else:
            add_script()
            with anyio.fail_after(20):
                await changed.wait()
            out["notified"] = "ResourceListChangedNotification"
        out["resources_after"] = [r.uri for r in (await c.list_resources()).resources]
    print(json.dumps(out))


anyio.run(main, json.loads(sys.argv[1]), *sys.argv[2:])
