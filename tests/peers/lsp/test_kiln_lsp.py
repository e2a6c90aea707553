"""pytest-lsp (a real LSP client) drives `kiln lsp` over stdio.

Run from tests/it/commands/lsp.rs with KILN_BIN (the built binary) and KILN_REPO (the checkout):
    KILN_BIN=target/debug/kiln KILN_REPO=. python3 -m pytest tests/peers/lsp -q
"""

import asyncio
import os
import pathlib
import re
import subprocess
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

KILN = os.environ["KILN_BIN"]
REPO = pathlib.Path(os.environ["KILN_REPO"]).resolve()

WEATHER = """tool("weather")
    .description("Weather of a city")
    .param("city", "string", #{ desc: "City name" })
    .handler(|args| `sunny in ${args.city}`);

agent("forecaster")
    .provider("script")
    .tools(["weather"])
    .planner(|messages, tools| #{ text: "done" });
"""

BROKEN = WEATHER.replace('.param("city"', '.parm("city"')

THREE = """tool("w").description("Weather").parm("city", "string").handler(|args| "sunny");
agent("a").provider("opneai");
tool("x").param("n", "integer", #{ mni: 1 }).handler(|args| 1);
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[KILN, "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    (root / "scripts").mkdir()
    lsp_client.root = root
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def diagnostics_of(client: LanguageClient, uri: str, seen=None, timeout=30):
    """Waits for diagnostics of `uri` newer than `seen` (a list object last read)."""

    async def wait():
        while uri not in client.diagnostics or client.diagnostics[uri] is seen:
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return client.diagnostics[uri]

    return await asyncio.wait_for(wait(), timeout)


def open_file(client: LanguageClient, path: pathlib.Path, text: str, version=1):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="rhai", version=version, text=text
            )
        )
    )


def change(client: LanguageClient, path: pathlib.Path, text: str, version: int):
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=path.as_uri(), version=version
            ),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def check_positions(root: pathlib.Path):
    """(line, column, message) of each error `kiln check` prints, 1-based."""
    out = subprocess.run(
        [KILN, "check"], cwd=root, capture_output=True, text=True, timeout=60
    )
    found = []
    for line in out.stderr.splitlines():
        m = re.search(r"\.rhai:(\d+):(\d+): (.*)$", line)
        if m and "error" in line.split(":")[0]:
            found.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return found


def position_of(text: str, needle: str, offset: int = 0) -> types.Position:
    at = text.index(needle) + offset
    line = text.count("\n", 0, at)
    return types.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))


@pytest.mark.asyncio
async def test_diagnostics_match_kiln_check_and_clear_when_fixed(client: LanguageClient):
    path = client.root / "scripts" / "weather.rhai"
    path.write_text(BROKEN)
    open_file(client, path, BROKEN)
    found = await diagnostics_of(client, path.as_uri())
    told = check_positions(client.root)
    assert len(told) >= 1
    # The same problems at the same line and column as `kiln check`, with the same words.
    assert sorted(
        (d.range.start.line + 1, d.range.start.character + 1, d.message) for d in found
    ) == sorted(told)
    first = min(found, key=lambda d: d.range.start.line)
    assert "did you mean .param(name, type[, options])?" in first.message
    assert first.severity == types.DiagnosticSeverity.Error

    change(client, path, WEATHER, 2)
    cleared = await diagnostics_of(client, path.as_uri(), seen=found)
    assert list(cleared) == []


@pytest.mark.asyncio
async def test_three_mistakes_are_reported_at_once_with_suggestions(client: LanguageClient):
    path = client.root / "scripts" / "three.rhai"
    open_file(client, path, THREE)
    found = await diagnostics_of(client, path.as_uri())
    messages = sorted((d.range.start.line, d.message) for d in found)
    assert [line for line, _ in messages] == [0, 1, 2], messages
    assert all("did you mean" in m for _, m in messages), messages
    assert 'did you mean "openai"?' in messages[1][1]
    assert 'did you mean "min"?' in messages[2][1]


async def labels_after(client: LanguageClient, path: pathlib.Path, text: str, version: int):
    """The completion labels at the end of `text`, sent as the file's new content."""
    change(client, path, text, version)
    end = types.Position(line=text.count("\n"), character=len(text.rsplit("\n", 1)[-1]))
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=end
        )
    )
    return {i.label for i in (items.items if hasattr(items, "items") else items)}


@pytest.mark.asyncio
async def test_completion_offers_param_types_methods_and_tools(client: LanguageClient):
    path = client.root / "scripts" / "weather.rhai"
    open_file(client, path, WEATHER)
    await diagnostics_of(client, path.as_uri())
    # Typing breaks the file; what it declared is still offered.
    labels = await labels_after(client, path, WEATHER + 'tool("y").param("x", "', 1)
    assert {"string", "integer", "number", "boolean", "array", "object"} <= labels, labels
    labels = await labels_after(client, path, WEATHER + 'agent("b").tools(["', 2)
    assert {"weather", "calculator"} <= labels, labels
    labels = await labels_after(client, path, WEATHER + 'tool("z")\n    .', 3)
    assert {"param", "description", "handler", "requires"} <= labels, labels
    assert "provider" not in labels, "agent methods are not offered on a tool"


@pytest.mark.asyncio
async def test_hover_shows_a_tool_s_schema_and_a_host_function_s_capability(
    client: LanguageClient,
):
    path = client.root / "scripts" / "weather.rhai"
    text = WEATHER + 'tool("f").requires("fs.read").handler(|args| read_file("a.txt"));\n'
    path.write_text(text)
    open_file(client, path, text)
    await diagnostics_of(client, path.as_uri())
    at = position_of(text, '.tools(["weather"', len('.tools(["we'))
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=at)
    )
    value = hover.contents.value
    assert "Weather of a city" in value and '"city"' in value and '"required"' in value, value

    at = position_of(text, "read_file(", 2)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=at)
    )
    assert "read_file(path)" in hover.contents.value and "`fs.read`" in hover.contents.value


@pytest.mark.asyncio
async def test_go_to_definition_lands_on_the_declaration(client: LanguageClient):
    tools = client.root / "scripts" / "tools.rhai"
    tools.write_text('\n\ntool("weather")\n    .description("Weather")\n    .handler(|args| "sunny");\n')
    path = client.root / "scripts" / "agents.rhai"
    text = 'agent("forecaster").provider("script").tools(["weather"]).planner(|m, t| #{ text: "ok" });\n'
    path.write_text(text)
    open_file(client, path, text)
    at = position_of(text, '["weather"', 3)
    found = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()), position=at
        )
    )
    location = found[0] if isinstance(found, list) else found
    assert pathlib.Path(location.uri.removeprefix("file://")).resolve() == tools.resolve()
    assert location.range.start.line == 2 and location.range.start.character == 6

    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    assert [(s.name, s.detail) for s in symbols] == [("forecaster", "agent")]


@pytest.mark.asyncio
async def test_a_saved_module_s_mistake_shows_in_the_files_importing_it(client: LanguageClient):
    scripts = client.root / "scripts"
    lib = scripts / "lib.rhai"
    main = scripts / "main.rhai"
    lib.write_text("fn helper() { 1 }\n")
    main.write_text('import "lib" as lib;\ntool("m").description("M").handler(|args| lib::helper());\n')
    open_file(client, lib, lib.read_text())
    assert list(await diagnostics_of(client, lib.as_uri())) == []
    broken = "fn helper() { 1 \n"
    lib.write_text(broken)
    change(client, lib, broken, 2)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=lib.as_uri()))
    )
    found = await diagnostics_of(client, main.as_uri())
    assert any("lib" in d.message for d in found), found

    # Go to definition from an import lands on the module.
    text = main.read_text()
    open_file(client, main, text)
    at = position_of(text, 'import "lib"', len('import "l'))
    location = await client.text_document_definition_async(
        types.DefinitionParams(text_document=types.TextDocumentIdentifier(uri=main.as_uri()), position=at)
    )
    location = location[0] if isinstance(location, list) else location
    assert pathlib.Path(location.uri.removeprefix("file://")).resolve() == lib.resolve()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[KILN, "lsp"]))
async def repo_client(lsp_client: LanguageClient):
    # The pipelines example is run with the catalog's folder: the editor names both.
    folders = ["scripts", "examples/catalog", "examples/pipelines"]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=REPO.as_uri(),
            initialization_options={"scripts": folders},
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_every_shipped_script_gets_no_diagnostics(repo_client: LanguageClient):
    client = repo_client
