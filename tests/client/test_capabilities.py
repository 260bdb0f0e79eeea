"""The client's answers to server requests: roots, sampling and elicitation (with SEP-1034
defaults), declared only when a handler exists; against server-everything over Streamable HTTP
and stdio, plus the handler rules on their own."""
from __future__ import annotations

import json
import threading

import pytest

from raider_sync import McpError, McpServer
from raider_sync.client.capabilities import ClientCapabilities, apply_defaults, normalize_roots
from raider_sync.jsonrpc import MethodNotFound

from conftest import everything_available
from fakes.http_peers import HttpPeer

WAIT = 15.0
SAMPLED = {"role": "assistant", "model": "test-model", "stopReason": "endTurn",
           "content": {"type": "text", "text": "sampled answer"}}


# -- the rules, without a server --------------------------------------------------------------

def test_declares_exactly_the_handlers_given():
    assert ClientCapabilities().declared() == {}
    assert ClientCapabilities(roots=[]).declared() == {"roots": {}}
    caps = ClientCapabilities(roots=lambda: [], on_sampling=lambda p: {},
                              on_elicitation=lambda p: {"action": "cancel"})
    assert caps.declared() == {"roots": {}, "sampling": {}, "elicitation": {"form": {}}}


def test_without_a_handler_the_method_is_not_found():
    caps = ClientCapabilities(roots=["/srv"])
    with pytest.raises(MethodNotFound):
        caps.handle("sampling/createMessage", {})
    with pytest.raises(MethodNotFound):
        caps.handle("elicitation/create", {})


def test_roots_from_uris_paths_dicts_and_callables():
    assert normalize_roots(["file:///home/me/proj", "/tmp/x y", {"uri": "file:///a", "name": "A"}]) == [
        {"uri": "file:///home/me/proj", "name": "proj"},
        {"uri": "file:///tmp/x%20y", "name": "x%20y"},
        {"uri": "file:///a", "name": "A"}]
    calls = []
    caps = ClientCapabilities(roots=lambda: calls.append(1) or ["/srv"])
    assert caps.handle("roots/list", {}) == {"roots": [{"uri": "file:///srv", "name": "srv"}]}
    assert caps.handle("roots/list", {}) and len(calls) == 2  # asked again on every request


def test_bad_roots_are_refused():
    with pytest.raises(ValueError, match="file://"):
        ClientCapabilities(roots=["https://example.com/"])
    with pytest.raises(TypeError):
        ClientCapabilities(roots="file:///one")
    caps = ClientCapabilities(roots=lambda: ["relative/path"])
    with pytest.raises(McpError, match="not usable"):
        caps.handle("roots/list", {})


def test_elicitation_defaults_fill_what_the_handler_left_out():
    schema = {"type": "object", "properties": {
        "name": {"type": "string"}, "n": {"type": "integer", "default": 42},
        "flag": {"type": "boolean", "default": False}, "pick": {"type": "string", "default": "a"}}}
    assert apply_defaults(schema, None) == {"n": 42, "flag": False, "pick": "a"}
    assert apply_defaults(schema, {"n": 7, "name": "x"}) == {"n": 7, "name": "x", "flag": False,
                                                             "pick": "a"}
    caps = ClientCapabilities(on_elicitation=lambda p: {"action": "accept"})
    answer = caps.handle("elicitation/create", {"message": "?", "requestedSchema": schema})
    assert answer == {"action": "accept", "content": {"n": 42, "flag": False, "pick": "a"}}
    declined = ClientCapabilities(on_elicitation=lambda p: {"action": "decline"})
    assert declined.handle("elicitation/create", {"requestedSchema": schema}) == {
        "action": "decline"}


def test_handler_answers_that_are_not_results_are_errors():
    caps = ClientCapabilities(on_sampling=lambda p: "text", on_elicitation=lambda p: {"ok": 1})
    with pytest.raises(McpError, match="must return a dict"):
        caps.handle("sampling/createMessage", {})
    with pytest.raises(McpError, match="action"):
        caps.handle("elicitation/create", {})
    with pytest.raises(TypeError):
        ClientCapabilities(on_sampling="not callable")


# -- against server-everything ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def http_everything():
    if not everything_available():
        pytest.skip("server-everything is not installed: run `make peers`")
    peer = HttpPeer.everything().start()
    yield peer
    peer.close()


@pytest.fixture(params=["http", "stdio"])
def everything(request, everything_js, http_everything):
    """``everything(**handlers)``: a connected McpServer on server-everything."""
    clients = []
    if request.param == "http":
        spec = http_everything.spec("ev")
    else:
        from conftest import config_of
        spec = config_of({"ev": {"command": "node", "args": [everything_js, "stdio"]}}).server("ev")

    def make(**handlers) -> McpServer:
        server = McpServer(spec, kill_grace=0.5, **handlers)
        clients.append(server)
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        return server

    yield make
    for server in clients:
        server.stop()


def texts(result: dict) -> str:
    return "\n".join(block.get("text", "") for block in result["content"])


def test_without_handlers_nothing_is_declared_or_offered(everything):
    srv = everything()
    names = srv.tool_names
    for tool in ("get-roots-list", "trigger-sampling-request", "trigger-elicitation-request"):
        assert f"mcp__ev__{tool}" not in names


def test_roots_list_is_answered(everything):
    asked = threading.Event()

    def roots():
        asked.set()
        return ["/home/me/project", {"uri": "file:///data", "name": "Data"}]

    srv = everything(roots=roots)
    assert asked.wait(WAIT), "the server never asked for roots/list"
    out = texts(srv.call_tool("mcp__ev__get-roots-list", {}))
    assert "2 total" in out
    assert "URI: file:///home/me/project" in out and "1. project" in out
    assert "2. Data" in out and "URI: file:///data" in out


def test_sampling_handler_answers_off_the_reader_thread(everything):
    seen = []

    def sample(params):
        seen.append((params, threading.current_thread().name))
        return SAMPLED

    srv = everything(on_sampling=sample)
    out = texts(srv.call_tool("mcp__ev__trigger-sampling-request",
                              {"prompt": "a haiku", "maxTokens": 20}))
    assert "sampled answer" in out and "test-model" in out
    (params, thread), = seen
    assert params["maxTokens"] == 20 and "a haiku" in params["messages"][0]["content"]["text"]
    assert thread.startswith("raider-ev-session")  # the session's pool, not its reader


def test_sampling_handler_failure_is_the_servers_error(everything):
    def sample(params):
        raise McpError(-1, "User rejected sampling request")

    srv = everything(on_sampling=sample)
    result = srv.call_tool("mcp__ev__trigger-sampling-request", {"prompt": "x"})
    assert result.get("isError") and "User rejected sampling request" in texts(result)


def test_elicitation_accept_without_values_gets_the_schema_defaults(everything):
    srv = everything(on_elicitation=lambda params: {"action": "accept",
                                                    "content": {"name": "Ada"}})
    out = texts(srv.call_tool("mcp__ev__trigger-elicitation-request", {}))
    raw = json.loads(out.split("Raw result:", 1)[1])
    assert raw["action"] == "accept"
    content = raw["content"]
    assert content["name"] == "Ada"
    assert content["integer"] == 42 and content["number"] == 3.14
    assert content["firstLine"] == "It was a dark and stormy night."
    assert content["untitledMultipleSelectEnum"] == ["Guitar"]
    assert "check" not in content and "email" not in content  # no default: left out


def test_elicitation_decline(everything):
    srv = everything(on_elicitation=lambda params: {"action": "decline"})
    out = texts(srv.call_tool("mcp__ev__trigger-elicitation-request", {}))
    assert "declined" in out
