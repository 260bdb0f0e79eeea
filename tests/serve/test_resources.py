"""Resources: list/read, the two resource tools and @server:uri attachments, against real peers
(server-everything, the official SDK's server, the demo server) and in-process ToolServers."""
from __future__ import annotations

import base64
import json
import sys

import pytest

from raider_sync import McpServer
from raider_sync.errors import McpError, NotConnected, RaiderError, UnknownServer
from raider_sync.serve.resources import (
    DO_NOT_READ_AGAIN,
    FULL_CONTENTS,
    LIST_TOOL,
    NO_RESOURCES,
    READ_TOOL,
    Resources,
    attachment,
    contents_text,
)
from raider_sync.serve.toolserver import ToolServer

from conftest import SDK_SERVER, config_of

EVERYTHING_DOC = "demo://resource/static/document/architecture.md"
EVERYTHING_BLOB = "demo://resource/dynamic/blob/1"
GUIDE_START = "# raider_sync demo"
BARE_SERVER = ("from raider_sync.serve.toolserver import ToolServer\n"
               "tools = ToolServer('bare')\n"
               "tools.add_tool('ping', lambda: 'pong')\n"
               "tools.serve_stdio()\n")


def entries(everything_js: str | None) -> dict:
    demo = {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}
    found = {"sdk": {"command": sys.executable, "args": [SDK_SERVER, "stdio"]},
             "demo": demo,
             "plugin:kit:docs": demo,
             "bare": {"command": sys.executable, "args": ["-c", BARE_SERVER]},
             "broken": {"command": "sh", "args": ["-c", "echo no luck >&2; exit 1"]}}
    if everything_js:
        found["everything"] = {"command": "node", "args": [everything_js, "stdio"]}
    return found


@pytest.fixture
def start(request):
    """``start("sdk", "demo", ...)``: those servers, started in parallel, stopped after the test."""
    started: list = []

    def start_servers(*names: str) -> list:
        js = request.getfixturevalue("everything_js") if "everything" in names else None
        config = config_of({name: entries(js)[name] for name in names})
        servers = [McpServer(config.server(name), kill_grace=0.5) for name in names]
        started.extend(servers)
        for server in servers:
            server.start_f()
        for server in servers:
            server.start_f().result(60)
        return servers

    yield start_servers
    for server in started:
        server.stop()


@pytest.fixture
def local():
    """An in-process ToolServer with resources: text, bytes, a failing one, odd URIs."""
    tools = ToolServer("local")
    tools.add_resource("local://note.txt", lambda: "a note", description="A note")
    tools.add_resource("local://pixel.png", lambda: b"\x89PNG\r\n\x1a\n", mime_type="image/png")
    tools.add_resource("local://odd.", lambda: "the odd one, dot included")
    tools.add_resource("local://broken", _raise)
    yield tools
    tools.close()


def _raise():
    raise OSError("the disk is gone")


def tool_text(result: dict) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


@pytest.fixture
def resources():
    made: list[Resources] = []

    def make(servers) -> Resources:
        res = Resources(servers=servers if callable(servers) else lambda: servers)
        made.append(res)
        return res

    yield make
    for res in made:
        res.close()


# -- list ---------------------------------------------------------------------------------

def test_list_every_connected_server_with_resources(start, resources):
    servers = start("everything", "sdk", "demo", "bare", "broken")
    assert [s.status for s in servers] == ["connected"] * 4 + ["failed"]
    items = resources(servers).list()
    by_server: dict[str, list[str]] = {}
    for item in items:
        assert set(item) == {"server", "uri", "name", "mimeType", "description"}
        by_server.setdefault(item["server"], []).append(item["uri"])
    assert set(by_server) == {"everything", "sdk", "demo"}
    assert len(by_server["everything"]) == 7
    assert EVERYTHING_DOC in by_server["everything"]
    assert by_server["sdk"] == ["test://hello"] and by_server["demo"] == ["demo://guide.md"]
    hello = next(i for i in items if i["uri"] == "test://hello")
    assert hello == {"server": "sdk", "uri": "test://hello", "name": "hello",
                     "mimeType": "text/plain", "description": "A greeting."}


def test_list_one_server_by_configured_name_or_key(start, resources):
    servers = start("sdk", "plugin:kit:docs", "broken")
    res = resources(servers)
    assert [i["uri"] for i in res.list("sdk")] == ["test://hello"]
    by_name = res.list("plugin:kit:docs")
    assert by_name == res.list("plugin_kit_docs")
    assert [(i["server"], i["uri"]) for i in by_name] == [("plugin:kit:docs", "demo://guide.md")]
    assert res.list("broken") == []  # configured but not connected: nothing to list


def test_unknown_server_names_the_available_ones(start, resources):
    servers = start("sdk", "plugin:kit:docs")
    res = resources(servers)
    expected = 'Server "nope" not found. Available servers: sdk, plugin:kit:docs'
    with pytest.raises(UnknownServer) as info:
        res.list("nope")
    assert str(info.value) == expected
    with pytest.raises(UnknownServer, match="Available servers"):
        res.read("nope", "test://hello")
    listed = res.tool_server.call_tool(LIST_TOOL, {"server": "nope"})
    read = res.tool_server.call_tool(READ_TOOL, {"server": "nope", "uri": "test://hello"})
    assert listed == {"content": [{"type": "text", "text": expected}], "isError": True}
    assert read == {"content": [{"type": "text", "text": expected}], "isError": True}


def test_server_without_resources(start, resources):
    servers = start("bare", "broken")
    res = resources(servers)
    assert servers[0].status == "connected" and not servers[0].has_resources
    assert res.list() == [] and res.list("bare") == []
    with pytest.raises(RaiderError) as info:
        res.read("bare", "x://y")
    assert str(info.value) == 'Server "bare" does not support resources'
    with pytest.raises(NotConnected, match='Server "broken" is not connected .failed: .*no luck'):
        res.read("broken", "x://y")
    none = res.tool_server.call_tool(LIST_TOOL, {})
    assert none == {"content": [{"type": "text", "text": NO_RESOURCES}]}
    read = res.tool_server.call_tool(READ_TOOL, {"server": "bare", "uri": "x://y"})
    assert read["isError"] and tool_text(read) == 'Server "bare" does not support resources'


# -- read -----------------------------------------------------------------------------------

def test_read_the_text_of_each_peer_directly_and_through_the_tool(start, resources):
    servers = start("everything", "sdk", "demo")
    res = resources(servers)
    doc = res.read("everything", EVERYTHING_DOC)
    assert doc.startswith("# Everything Server")
    assert res.read("sdk", "test://hello") == "hello from the sdk"
    assert res.read("demo", "demo://guide.md").startswith(GUIDE_START)
    for server, uri, text in (("everything", EVERYTHING_DOC, doc),
                              ("sdk", "test://hello", "hello from the sdk")):
        result = res.tool_server.call_tool(READ_TOOL, {"server": server, "uri": uri})
        assert result == {"content": [{"type": "text", "text": text}]}
    listed = json.loads(tool_text(res.tool_server.call_tool(LIST_TOOL, {})))
    assert {i["server"] for i in listed} == {"everything", "sdk", "demo"}
    assert all(i["server"] and i["uri"] for i in listed)
    assert json.loads(tool_text(res.tool_server.call_tool(LIST_TOOL, {"server": "sdk"}))) == [
        {"server": "sdk", "uri": "test://hello", "name": "hello", "mimeType": "text/plain",
         "description": "A greeting."}]


def test_a_failing_read_is_an_error(start, resources, local):
    servers = start("everything", "sdk")
    res = resources([*servers, local])
    with pytest.raises(McpError) as info:
        res.read("everything", "demo://resource/static/document/none.md")
    assert info.value.code in (-32002, -32602)
    with pytest.raises(McpError, match="test://nope"):
        res.read("sdk", "test://nope")
    with pytest.raises(OSError, match="the disk is gone"):
        res.read("local", "local://broken")
    result = res.tool_server.call_tool(READ_TOOL, {"server": "sdk", "uri": "test://nope"})
    assert result["isError"] is True
    assert tool_text(result).startswith('Error reading resource "test://nope" from server "sdk": ')


def test_blobs_are_notes_with_size_and_type(start, resources, local):
    [everything] = start("everything")
    [raw] = everything.read_resource(EVERYTHING_BLOB)
    size = len(base64.b64decode(raw["blob"]))
    res = resources([everything, local])
    note = f"[Binary content: {raw['mimeType']}, {size} bytes]"
    assert res.read("everything", EVERYTHING_BLOB) == note
    assert res.read("local", "local://pixel.png") == "[Binary content: image/png, 8 bytes]"
    result = res.tool_server.call_tool(READ_TOOL, {"server": "local", "uri": "local://pixel.png"})
    assert tool_text(result) == "[Binary content: image/png, 8 bytes]"


def test_contents_text_joins_items_and_notes_blobs():
    contents = [{"uri": "a", "text": "one"}, {"uri": "b", "blob": base64.b64encode(b"xyz").decode()},
                {"uri": "c", "text": "two"}, {"uri": "d"}, "junk"]
    assert contents_text(contents) == "one\n[Binary content: application/octet-stream, 3 bytes]\ntwo"
    assert contents_text([]) == ""


# -- attachments ---------------------------------------------------------------------------

def test_attachment_is_two_system_reminders():
    assert attachment("the text") == (
        "<system-reminder>\nFull contents of resource:\nthe text\n</system-reminder>\n"
        "<system-reminder>\nDo NOT read this resource again unless you think it may have "
        "changed, since you already have the full contents.\n</system-reminder>")
    assert FULL_CONTENTS == "Full contents of resource:"
    assert DO_NOT_READ_AGAIN.startswith("Do NOT read this resource again")


def test_attachments_for_mentions_of_real_servers(start, resources):
    servers = start("everything", "sdk", "plugin:kit:docs")
    res = resources(servers)
    prompt = (f"Compare @everything:{EVERYTHING_DOC} with @sdk:test://hello. "
              f"Then @plugin:kit:docs:demo://guide.md, and again @plugin_kit_docs:demo://guide.md "
              f"and @sdk:test://hello")
    blocks = res.attachments(prompt)
    assert blocks == [attachment(res.read("everything", EVERYTHING_DOC)),
                      attachment("hello from the sdk"),
                      attachment(res.read("plugin:kit:docs", "demo://guide.md"))]
    assert blocks[1].count("<system-reminder>") == 2


def test_trailing_punctuation_is_tried_off_only_when_the_whole_does_not_read(resources, local):
    res = resources([local])
    note = attachment("a note")
    for prompt in ("See @local:local://note.txt.", "See @local:local://note.txt,",
                   "(see @local:local://note.txt).", "Is it @local:local://note.txt?!",
                   "Read @local:local://note.txt\tnow"):
        assert res.attachments(prompt) == [note], prompt
    # a URI that itself ends in a dot reads as a whole first
    assert res.attachments("Read @local:local://odd.") == [attachment("the odd one, dot included")]
    assert res.mentions("x @local:local://note.txt).")[0][1] == [
        "local://note.txt).", "local://note.txt)", "local://note.txt"]


def test_mentions_that_stay_text(start, resources, local):
    servers = start("bare", "broken")
    res = resources([*servers, local])
    prompt = ("@nope:local://note.txt @bare:x://y @broken:x://y @local:note.txt "
              "mail@local:local://note.txt (@local:local://note.txt) @local:local:// "
              "@local:local://broken @local:local://missing.")
    assert res.attachments(prompt) == []
    assert res.mentions(prompt) == [(local, ["local://broken"]),
                                    (local, ["local://missing.", "local://missing"])]


def test_attachments_distinct_blob_and_order(resources, local):
    other = ToolServer("other")
    other.add_resource("other://a", lambda: "from other")
    try:
        res = resources([local, other])
        blocks = res.attachments("@other:other://a @local:local://pixel.png @other:other://a, "
                                 "@local:local://note.txt")
        assert blocks == [attachment("from other"),
                          attachment("[Binary content: image/png, 8 bytes]"),
                          attachment("a note")]
        assert res.attachments("") == [] and res.attachments("no mentions here") == []
        assert res.attachments_f("@other:other://a").result(5) == [attachment("from other")]
    finally:
        other.close()


def test_servers_are_asked_on_every_use(resources, local):
    current: list = []
    res = resources(lambda: current)
    assert res.list() == [] and res.attachments("@local:local://note.txt") == []
    with pytest.raises(UnknownServer):
        res.read("local", "local://note.txt")
    current.append(local)
    assert [i["uri"] for i in res.list()] == ["local://note.txt", "local://pixel.png",
                                              "local://odd.", "local://broken"]
    assert res.read("local", "local://note.txt") == "a note"
    assert res.attachments("@local:local://note.txt") == [attachment("a note")]
    current.clear()
    assert res.list() == []


# -- the tool server ------------------------------------------------------------------------

def test_tool_server_offers_two_read_only_tools(resources, local):
    res = resources([local])
    tools = res.tool_server
    assert tools is res.tool_server  # built once
    assert tools.status == "connected" and tools.tool_names == [LIST_TOOL, READ_TOOL]
    definitions = {t["name"]: t for t in tools.list_tools()}
    assert definitions[READ_TOOL]["inputSchema"]["required"] == ["server", "uri"]
    assert "required" not in definitions[LIST_TOOL]["inputSchema"]
    assert all(t["annotations"] == {"readOnlyHint": True} for t in definitions.values())
    missing = tools.call_tool(READ_TOOL, {"server": "local"})
    assert missing["isError"] and "uri: Field required" in tool_text(missing)
    wrong = tools.call_tool(LIST_TOOL, {"server": 3})
    assert wrong["isError"] and "server: " in tool_text(wrong)
    extra = tools.call_tool(LIST_TOOL, {"servr": "local"})
    assert extra["isError"] and "servr" in tool_text(extra)
    listed = json.loads(tool_text(tools.call_tool(LIST_TOOL, {"server": "local"})))
    assert [i["uri"] for i in listed][:2] == ["local://note.txt", "local://pixel.png"]
    assert tool_text(tools.call_tool(READ_TOOL, {"server": "local", "uri": "local://note.txt"})) == "a note"
    broken = tools.call_tool(READ_TOOL, {"server": "local", "uri": "local://broken"})
    assert broken["isError"] and "the disk is gone" in tool_text(broken)


def test_resources_needs_a_callable():
    with pytest.raises(TypeError, match="callable"):
        Resources(servers=[])
