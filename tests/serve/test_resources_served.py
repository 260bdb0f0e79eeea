"""What a ToolServer offers besides tools, served: resource templates read by URI, completions
of prompt arguments and template variables, and the handshake era's resource subscriptions
with their updates; raider_sync's client in both eras and the official SDK's over HTTP."""
from __future__ import annotations

import asyncio
import threading

import pytest

from raider_sync import McpError, ToolServer
from raider_sync.gateway.cli import Serving
from raider_sync.serve.serving_http import wsgi_app
from raider_sync.serve.templates import template_pattern

WAIT = 30.0
STATELESS = "2026-07-28"
LANGUAGES = ["perl", "python", "php", "rust"]


def catalog() -> ToolServer:
    tools = ToolServer("cat")

    @tools.resource("test://items/{id}/data", mime_type="application/json")
    def item(id: str) -> str:
        """One item by id."""
        return f'{{"id": "{id}"}}'

    @tools.resource("test://files/{+path}")
    def file(path: str) -> bytes:
        return path.encode()

    tools.add_resource("test://watched", lambda: "v1", name="watched")

    @tools.prompt()
    def greet(language: str, name: str = "you") -> str:
        """Greet in a language."""
        return f"Say hello to {name} in {language}"

    tools.add_completion("greet", "language", LANGUAGES)

    @tools.completion("test://items/{id}/data", "id")
    def item_ids(value: str, arguments: dict) -> list[str]:
        return [str(n) for n in range(1000) if str(n).startswith(value)]

    return tools


@pytest.fixture
def tools():
    server = catalog()
    yield server
    server.close()


@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_templates_are_listed_and_read_by_uri(tools, protocol):
    with tools.in_process_client(protocol=protocol) as client:
        templates = client.list_resource_templates(timeout=WAIT)
        assert [t["uriTemplate"] for t in templates] == ["test://items/{id}/data",
                                                         "test://files/{+path}"]
        assert templates[0]["mimeType"] == "application/json"
        assert templates[0]["description"] == "One item by id."
        contents = client.read_resource("test://items/42/data", timeout=WAIT)
        assert contents[0]["uri"] == "test://items/42/data" and '"42"' in contents[0]["text"]
        blob = client.read_resource("test://files/a/b%20c.txt", timeout=WAIT)[0]
        assert blob["blob"] == "YS9iIGMudHh0"  # base64 of a/b c.txt: decoded, slashes kept
        with pytest.raises(McpError) as caught:
            client.read_resource("test://items/42/other", timeout=WAIT)
    assert caught.value.data == {"uri": "test://items/42/other"}


@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_completions_of_a_prompt_argument_and_a_template_variable(tools, protocol):
    with tools.in_process_client(protocol=protocol) as client:
        assert client.complete("greet", ("language", "p"), timeout=WAIT) == {
            "values": ["perl", "python", "php"]}
        ids = client.complete("test://items/{id}/data", ("id", "1"), timeout=WAIT)
        assert len(ids["values"]) == 100 and ids["hasMore"] is True and ids["total"] == 1 + 10 + 100
        assert client.complete("greet", ("name", "x"), timeout=WAIT) == {"values": []}


def test_a_malformed_completion_request_is_invalid_params(tools):
    with pytest.raises(McpError) as caught:
        tools.complete({"type": "ref/other"}, {"name": "x", "value": ""})
    assert caught.value.code == -32602
    with pytest.raises(McpError):
        tools.complete({"type": "ref/prompt", "name": "greet"}, {"value": 3})


def test_a_subscribed_resource_is_announced_until_unsubscribed(tools):
    updates: list[str] = []
    seen = threading.Event()

    def updated(server, uri: str) -> None:
        updates.append(uri)
        seen.set()

    with tools.in_process_client(protocol="legacy", on_resource_updated=updated) as client:
        assert client.capabilities["resources"]["subscribe"] is True
        client.subscribe("test://watched", timeout=WAIT)
        tools.resource_updated("test://other")  # not subscribed: not announced
        tools.resource_updated("test://watched")
        assert seen.wait(WAIT)
        client.unsubscribe("test://watched", timeout=WAIT)
        seen.clear()
        tools.resource_updated("test://watched")
        client.ping(timeout=WAIT)  # anything sent before the ping's answer has arrived
    assert updates == ["test://watched"]


def test_unsupported_template_expressions_are_refused_when_registered():
    with pytest.raises(ValueError, match="only {name} and {\\+name}"):
        template_pattern("test://q{?page,size}")
    assert template_pattern("a://{x}/b").match("a://1/b") is not None
    assert template_pattern("a://{x}/b").match("a://1/2/b") is None


def test_the_sdk_client_reads_templates_and_completes_over_http(tools):
    from mcp import Client, types

    app = wsgi_app(tools)
    serving = Serving(app).start()
    url = f"{serving.url}/mcp"

    async def run(mode: str) -> tuple:
        async with Client(url, mode=mode) as client:
            templates = await client.list_resource_templates()
            read = await client.read_resource("test://items/7/data")
            done = await client.complete(types.PromptReference(type="ref/prompt", name="greet"),
                                         {"name": "language", "value": "r"})
            return ([t.uri_template for t in templates.resource_templates],
                    read.contents[0].text, done.completion.values)

    try:
        for mode in ("legacy", STATELESS):
            names, text, values = asyncio.run(asyncio.wait_for(run(mode), WAIT))
            assert names[0] == "test://items/{id}/data"
            assert '"7"' in text and values == ["rust"]
    finally:
        app.close()
        serving.stop(10)
