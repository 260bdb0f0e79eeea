"""What the WSGI app refuses on the wire (waitress, real HTTP requests): a Host or Origin it
does not serve (DNS rebinding), stateless headers that disagree with the body
(MCP-Protocol-Version, Mcp-Param-*), and how each era is told a resource is not there."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import requests

from raider_sync import McpError, McpServer, ToolServer
from raider_sync.serve.serving_http import wsgi_app
from raider_sync.serve.wsgi_server import Serving

from conftest import config_of, free_port, wait_for_port

WAIT = 30.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
MODERN = {"MCP-Protocol-Version": "2026-07-28"}


def where(region: str, verbose: bool = False) -> str:
    return f"{region}{'!' if verbose else ''}"


@pytest.fixture
def serve():
    """serve(**app_options): the URL of a ToolServer (``where`` with its region mirrored into
    Mcp-Param-Region, a resource) served under waitress on a free port."""
    started: list = []

    def make(**options) -> str:
        tools = ToolServer("local")
        tools.add_tool("where", lambda arguments: where(**arguments), input_schema={
            "type": "object", "required": ["region"], "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"}}})
        tools.add_resource("local://note", lambda: "a note", name="note")
        app = wsgi_app(tools, **options)
        serving = Serving(app).start()
        started.append((app, serving, tools))
        return f"{serving.url}/mcp"

    yield make
    for app, serving, tools in started:
        app.close()
        serving.stop(10)
        tools.close()


def post(url: str, body: dict, **headers) -> requests.Response:
    with requests.Session() as http:
        answer = http.post(url, json=body, timeout=WAIT, headers={
            "Accept": "application/json, text/event-stream", **headers})
        answer.close()  # back to the pool, which closes it with the session
    return answer


def headers_of(method: str, name: str | None = None, **more: str) -> dict:
    return {**MODERN, "Mcp-Method": method, **({"Mcp-Name": name} if name else {}), **more}


# -- DNS rebinding ---------------------------------------------------------------------------

def test_a_foreign_host_or_origin_is_refused_with_403(serve):
    url = serve()
    port = url.split(":")[2].split("/")[0]
    evil = post(url, DISCOVER, Host="evil.example.com", Origin="http://evil.example.com",
                **headers_of("server/discover"))
    assert evil.status_code == 403
    body = evil.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600 and "evil.example.com" in body["error"]["message"]
    with_port = post(url, DISCOVER, Host=f"evil.example.com:{port}", **headers_of("server/discover"))
    assert with_port.status_code == 403, "the port does not make a foreign name local"
    origin = post(url, DISCOVER, Origin="http://evil.example.com", **headers_of("server/discover"))
    assert origin.status_code == 403 and "Origin" in origin.json()["error"]["message"]
    assert post(url, DISCOVER, Origin="null", **headers_of("server/discover")).status_code == 403
    with requests.get(url, timeout=WAIT, headers={"Host": "evil.example.com",
                                                 "Accept": "text/event-stream"}) as stream:
        assert stream.status_code == 403, "the GET stream is refused too"
    for host in ("localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}",
                 "LOCALHOST"):
        for origin in (None, f"http://{host}", "https://localhost:3000"):
            answer = post(url, DISCOVER, Host=host, **({"Origin": origin} if origin else {}),
                          **headers_of("server/discover"))
            assert answer.status_code == 200, (host, origin)
            assert answer.json()["result"]["supportedVersions"] == ["2026-07-28"]


def test_the_hosts_and_origins_served_can_be_named(serve):
    url = serve(allowed_hosts=["mcp.example.com", "10.0.0.5:8080"],
                allowed_origins=["https://app.example.com"])
    ok = {"mcp.example.com": None, "MCP.example.com:443": "https://app.example.com",
          "10.0.0.5:8080": None, "localhost": None}
    for host, origin in ok.items():
        answer = post(url, DISCOVER, Host=host, **({"Origin": origin} if origin else {}),
                      **headers_of("server/discover"))
        assert answer.status_code == 200, (host, origin)
    refused = {"10.0.0.5:9090": None, "other.example.com": None,
               "mcp.example.com": "https://mcp.example.com"}  # an origin outside the list
    for host, origin in refused.items():
        answer = post(url, DISCOVER, Host=host, **({"Origin": origin} if origin else {}),
                      **headers_of("server/discover"))
        assert answer.status_code == 403, (host, origin)
    anything = serve(allowed_hosts=["*"])
    assert post(anything, DISCOVER, Host="anything.example", Origin="https://anything.example",
                **headers_of("server/discover")).status_code == 200
    with ToolServer("bad") as tools:
        with pytest.raises(ValueError, match=r"allowed_hosts\[1\]: 'a b'"):
            wsgi_app(tools, allowed_hosts=["ok.example", "a b"])
        with pytest.raises(ValueError, match=r"allowed_hosts\[0\]: 'x/y'"):
            wsgi_app(tools, allowed_hosts=["x/y"])
        with pytest.raises(ValueError, match=r"allowed_origins\[0\]: 'app.example.com'"):
            wsgi_app(tools, allowed_origins=["app.example.com"])
        with pytest.raises(ValueError, match="allowed_hosts must be a list"):
            wsgi_app(tools, allowed_hosts="localhost")


def test_raider_sync_reaches_the_app_at_a_loopback_name(serve):
    url = serve().replace("127.0.0.1", "localhost")
    spec = config_of({"local": {"type": "http", "url": url}}).server("local")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
        assert server.call_tool("mcp__local__where", {"region": "eu"}).text == "eu"


SERVE = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from raider_sync import ToolServer
from raider_sync.serve.serving_http import serve_http
with ToolServer("local") as tools:
    serve_http(tools, sys.argv[1], int(sys.argv[2]))
"""


@pytest.mark.parametrize("bind,foreign", [("127.0.0.1", 403), ("0.0.0.0", 200)])
def test_serve_http_checks_the_host_when_it_listens_on_loopback(bind, foreign):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, bind, str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    try:
        wait_for_port(port, WAIT, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        assert post(url, DISCOVER, **headers_of("server/discover")).status_code == 200
        answer = post(url, DISCOVER, Host="mcp.example.com", **headers_of("server/discover"))
        assert answer.status_code == foreign
    finally:
        proc.terminate()
        proc.wait(WAIT)


# -- stateless headers -----------------------------------------------------------------------

def test_a_protocol_version_header_that_contradicts_meta_is_a_header_mismatch(serve):
    url = serve()
    other = {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
    mismatch = post(url, {**DISCOVER, "params": {"_meta": other}}, **headers_of("server/discover"))
    assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
    assert "v999.0.0" in mismatch.json()["error"]["message"]
    unsupported = post(url, {**DISCOVER, "params": {"_meta": other}}, **{
        **headers_of("server/discover"), "MCP-Protocol-Version": "v999.0.0"})
    assert unsupported.status_code == 400
    assert unsupported.json()["error"]["code"] == -32022, "both say v999: not served"
    assert unsupported.json()["error"]["data"] == {"supported": ["2026-07-28"],
                                                  "requested": "v999.0.0"}
    older = post(url, DISCOVER, **{**headers_of("server/discover"),
                                   "MCP-Protocol-Version": "2025-11-25"})
    assert older.status_code == 400 and older.json()["error"]["code"] == -32020


def call(region=None, **arguments) -> dict:
    if region is not None:
        arguments["region"] = region
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "where", "arguments": arguments, "_meta": META}}


@pytest.mark.parametrize("body,params,problem", [
    (call("Hello"), {"Region": "=?base64?SGVsbG8=?="}, None),
    (call("SGVsbG8="), {"Region": "SGVsbG8="}, None),
    (call("eu", verbose=True), {"Region": "eu", "Verbose": "true"}, None),
    (call("Hello"), {"Region": "=?base64?SGVsbG8?="}, "not valid base64"),
    (call("Hello"), {"Region": "=?base64?SGVs!!!bG8=?="}, "not valid base64"),
    (call("eu"), {}, "Mcp-Param-Region is missing"),
    (call("eu"), {"Region": "us"}, "does not match"),
    (call("eu", verbose=True), {"Region": "eu"}, "Mcp-Param-Verbose is missing"),
    (call("eu"), {"Region": "eu", "Verbose": "false"}, "no value"),
])
def test_mcp_param_headers_must_agree_with_the_arguments(serve, body, params, problem):
    url = serve()
    headers = headers_of("tools/call", "where",
                         **{f"Mcp-Param-{name}": value for name, value in params.items()})
    answer = post(url, body, **headers)
    if problem is None:
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["content"][0]["text"] == where(**body["params"]["arguments"])
    else:
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["code"] == -32020 and problem in error["message"], error
        assert answer.json()["id"] == 7


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_clients_that_mirror_the_arguments_are_served(serve, protocol):
    url = serve()
    spec = config_of({"local": {"type": "http", "url": url, "protocol": protocol}}).server("local")
    with McpServer(spec) as server:
        assert server.call_tool("mcp__local__where", {"region": "café", "verbose": True}
                                ).text == "café!"

    from mcp import Client

    async def run():
        async with Client(url, mode="2026-07-28") as client:
            result = await client.call_tool("where", {"region": " spaced "})
            return result.content[0].text

    assert asyncio.run(asyncio.wait_for(run(), WAIT)) == " spaced "


# -- resources not found ---------------------------------------------------------------------

def test_a_missing_resource_is_named_in_either_era(serve):
    url = serve()
    uri = "local://missing"
    read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}
    legacy = post(url, read)
    assert legacy.status_code == 200
    assert legacy.json()["error"]["code"] == -32002
    assert legacy.json()["error"]["data"] == {"uri": uri}
    stateless = post(url, {**read, "params": {"uri": uri, "_meta": META}},
                     **headers_of("resources/read", uri))
    assert stateless.status_code == 400, "an invalid params error of the stateless revision"
    assert stateless.json()["error"]["code"] == -32602
    assert stateless.json()["error"]["data"] == {"uri": uri}


def test_raider_sync_is_told_which_resource_is_missing(serve):
    spec = config_of({"local": {"type": "http", "url": serve()}}).server("local")
    with McpServer(spec) as server:
        assert server.era == "modern"
        error = pytest.raises(McpError, server.read_resource, "local://missing").value
    assert error.code == -32602 and error.data == {"uri": "local://missing"}
