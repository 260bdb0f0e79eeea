"""Servers found by name: an AI catalog and server cards served by a real HTTP server (our
ToolServer's own card among them), and registry server.json documents, turned into entries
that connect; secrets stay references, and what cannot be used is named."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import requests

from raider_sync import McpConfig, McpServer, ToolServer
from raider_sync.config.discovery import CARD_SCHEMA, CARD_TYPE, discover, from_server_json
from raider_sync.errors import ConfigError
from raider_sync.serve.serving_http import wsgi_app
from raider_sync.serve.wsgi_server import Serving


class Site:
    """A domain's web server: an AI catalog, and a ToolServer at /mcp with its card."""

    def __init__(self, catalog=None, card: bool | dict = True):
        self.tools = ToolServer("weather", instructions="Forecasts by city.\nMore text.")
        self.tools.add_tool("forecast", lambda city: f"sunny in {city}",
                            description="The forecast of a city.")
        self.app = wsgi_app(self.tools, server_card=card)
        self.catalog = catalog
        self.serving = Serving(self.route).start()
        self.url = self.serving.url

    def route(self, environ, start_response):
        if environ.get("PATH_INFO") == "/.well-known/ai-catalog.json" and self.catalog:
            body = json.dumps(self.catalog(self.url)).encode()
            start_response("200 OK", [("Content-Type", "application/ai-catalog+json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        return self.app(environ, start_response)

    def close(self):
        self.app.close()
        self.serving.stop(10)
        self.tools.close()


@pytest.fixture
def site():
    made = []

    def make(**options) -> Site:
        made.append(Site(**options))
        return made[-1]
    yield make
    for one in made:
        one.close()


def catalog(base: str) -> dict:
    return {"specVersion": "1.0", "entries": [
        {"identifier": "urn:air:example:mcp:weather", "type": CARD_TYPE,
         "url": "/mcp/server-card"},
        {"identifier": "urn:air:example:mcp:billing", "type": CARD_TYPE, "data": {
            "$schema": CARD_SCHEMA, "name": "com.example/billing", "version": "2.0.0",
            "description": "Invoices.",
            "remotes": [{"type": "sse", "url": base + "/sse"},
                         {"type": "streamable-http", "url": base + "/{tenant}/mcp",
                          "variables": {"tenant": {"description": "your tenant",
                                                   "isRequired": True}},
                          "headers": [{"name": "X-Api-Key", "isSecret": True,
                                       "isRequired": True, "description": "billing key"},
                                      {"name": "X-Client", "value": "raider"}]}]}},
        {"identifier": "urn:air:example:agent:helper", "type": "application/a2a-agent+json",
         "url": "/agent.json"},
        {"identifier": "urn:air:example:mcp:gone", "type": CARD_TYPE, "url": "/gone/card"},
    ]}


def test_a_domain_s_catalog_becomes_entries_that_connect(site):
    served = site(catalog=catalog)
    found = McpConfig.discover(served.url)
    assert [f.name for f in found.servers] == ["weather", "billing"]
    weather, billing = found.servers
    assert weather.entry == {"type": "http", "url": served.url + "/mcp", "title": "weather",
                             "description": "Forecasts by city."}
    assert weather.needs == [] and weather.card["name"] == "localhost/weather"
    assert billing.entry["url"] == served.url + "/${TENANT}/mcp"  # streamable-http first
    assert billing.entry["headers"] == {"X-Api-Key": "${X_API_KEY}", "X-Client": "raider"}
    assert billing.needs == ["TENANT: URL variable tenant (your tenant)",
                             "X_API_KEY (secret): header X-Api-Key (billing key)"]
    notes = "\n".join(found.notes)
    assert "application/a2a-agent+json, not an MCP server card" in notes
    assert "/gone/card: not found (404)" in notes
    config = found.config(env={"TENANT": "acme", "X_API_KEY": "k"})
    assert config.server("billing").url == served.url + "/acme/mcp"
    with McpServer(config.server("weather")) as server:
        assert server.status == "connected", server.reason
        assert server.call_tool("mcp__weather__forecast", {"city": "Oslo"}).text == "sunny in Oslo"


def test_a_variable_given_fills_the_url_and_is_no_longer_needed(site):
    served = site(catalog=catalog)
    billing = discover(served.url, variables={"tenant": "acme"}).servers[1]
    assert billing.entry["url"] == served.url + "/acme/mcp"
    assert [n.split(":")[0] for n in billing.needs] == ["X_API_KEY (secret)"]


def test_an_endpoint_url_is_read_by_its_own_card_with_the_publisher_s_fields(site):
    served = site(card={"name": "com.example/weather", "websiteUrl": "https://example.com"})
    [weather] = discover(served.url + "/mcp").servers
    assert weather.card["name"] == "com.example/weather"
    assert weather.card["websiteUrl"] == "https://example.com"
    assert weather.entry["url"] == served.url + "/mcp"


def test_the_card_is_cached_by_etag_and_open_to_every_origin(site):
    served = site()
    first = requests.get(served.url + "/mcp/server-card", timeout=10)
    assert first.status_code == 200 and first.headers["Content-Type"] == CARD_TYPE
    assert first.headers["Access-Control-Allow-Origin"] == "*"
    assert "max-age=3600" in first.headers["Cache-Control"]
    again = requests.get(served.url + "/mcp/server-card", timeout=10,
                         headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    assert requests.post(served.url + "/mcp/server-card", timeout=10).status_code == 405


def test_without_a_card_the_path_is_not_found_and_without_a_catalog_discovery_says_so(site):
    served = site(card=False)
    assert requests.get(served.url + "/mcp/server-card", timeout=10).status_code == 404
    with pytest.raises(ConfigError, match=r"ai-catalog.json: not found \(404\)"):
        discover(served.url)
    with pytest.raises(ConfigError, match=r"server-card: not found"):
        discover(served.url + "/mcp")


@pytest.mark.parametrize("target, problem", [
    ("http://example.com", "plain HTTP; discovery reads https:// only"),
    ("ftp://example.com", r"not a domain or an http\(s\) URL"),
    ("", "give a domain"),
])
def test_targets_that_cannot_be_read_safely_are_refused(target, problem):
    with pytest.raises(ConfigError, match=problem):
        discover(target)


def test_a_card_with_another_schema_is_left_out_with_a_note(site):
    served = site(catalog=lambda base: {"entries": [
        {"type": CARD_TYPE, "data": {"$schema": "https://example.com/other", "name": "a/b"}}]})
    found = discover(served.url)
    assert found.servers == [] and "not a server card" in found.notes[0]


SERVER_JSON = {
    "name": "io.github.example/notes", "description": "Notes.", "version": "1.4.0",
    "packages": [
        {"registryType": "npm", "identifier": "@example/notes", "version": "1.4.0",
         "transport": {"type": "stdio"},
         "runtimeArguments": [{"type": "named", "name": "--node-options", "value": "x"}],
         "packageArguments": [{"type": "positional", "valueHint": "notes_dir"},
                              {"type": "named", "name": "--mode", "default": "ro"}],
         "environmentVariables": [
             {"name": "NOTES_TOKEN", "isSecret": True, "isRequired": True},
             {"name": "NOTES_LEVEL", "default": "info"},
             {"name": "NOTES_FIXED", "value": "1"}]},
        {"registryType": "oci", "identifier": "ghcr.io/example/notes", "version": "1.4.0",
         "runtimeArguments": [{"type": "named", "name": "-e", "value": "A=1"}]},
    ],
}


def test_a_registry_package_becomes_a_stdio_command_and_runs_nothing():
    [notes] = from_server_json(SERVER_JSON, prefer="package").servers
    assert notes.name == "notes"
    assert notes.entry["command"] == "npx"
    assert notes.entry["args"] == ["--node-options", "x", "-y", "@example/notes@1.4.0",
                                   "${NOTES_DIR}", "--mode", "ro"]
    assert notes.entry["env"] == {"NOTES_TOKEN": "${NOTES_TOKEN}",
                                  "NOTES_LEVEL": "${NOTES_LEVEL:-info}", "NOTES_FIXED": "1"}
    assert notes.needs == ["NOTES_TOKEN (secret): environment variable"]
    docker = dict(SERVER_JSON, packages=SERVER_JSON["packages"][1:])
    [image] = from_server_json(docker, prefer="package").servers
    assert image.entry["args"] == ["run", "-i", "--rm", "-e", "A=1",
                                   "ghcr.io/example/notes:1.4.0"]


@pytest.mark.parametrize("kind, command, args", [
    ("pypi", "uvx", ["notes==1.4.0"]), ("nuget", "dnx", ["notes@1.4.0", "--yes"])])
def test_every_runner_names_the_version_its_own_way(kind, command, args):
    document = {"name": "x/notes", "packages": [
        {"registryType": kind, "identifier": "notes", "version": "1.4.0"}]}
    [found] = from_server_json(document, prefer="package").servers
    assert (found.entry["command"], found.entry["args"]) == (command, args)


def test_a_registry_remote_connects_to_a_real_server(site):
    served = site(card=False)
    document = {"name": "io.example/weather", "remotes": [
        {"type": "streamable-http", "url": served.url + "/mcp"}], **{"packages": []}}
    found = McpConfig.from_server_json(document)
    with McpServer(found.config(env={}).server("weather")) as server:
        assert server.call_tool("mcp__weather__forecast", {"city": "Rome"}).text == "sunny in Rome"


def test_a_document_without_anything_usable_is_refused():
    with pytest.raises(ConfigError, match="neither a remote nor a package"):
        from_server_json({"name": "x/y", "packages": [{"registryType": "mcpb"}]})
    with pytest.raises(ConfigError, match="expected an object with a string"):
        from_server_json(["not", "one"])


def test_cli_add_shows_then_writes_keeping_what_is_there(site, tmp_path):
    served = site(catalog=catalog)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "raider_sync", *args], capture_output=True,
                              text=True, timeout=60, cwd=tmp_path)
    shown = cli("add", served.url, "--var", "tenant=acme")
    assert shown.returncode == 0, shown.stderr
    assert list(json.loads(shown.stdout)["mcpServers"]) == ["weather", "billing"]
    assert "billing needs X_API_KEY (secret)" in shown.stderr
    assert not (tmp_path / ".mcp.json").exists()
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"weather": {"command": "x"}}}))
    done = cli("add", served.url, "--var", "tenant=acme", "--write", ".mcp.json")
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert written["weather"] == {"command": "x"}
    assert written["billing"]["url"] == served.url + "/acme/mcp"
    assert written["billing"]["headers"]["X-Api-Key"] == "${X_API_KEY}"  # never a secret
