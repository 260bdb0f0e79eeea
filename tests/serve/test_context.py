"""A handler's context: log messages, progress, cancellation and questions to the client
(elicitation, sampling, roots), in the handshake era (a request to the client) and the
stateless era (input_required rounds), in-process, over HTTP, with raider_sync's client and
the official SDK's."""
from __future__ import annotations

import asyncio
import json
import queue
import threading

import pytest
import requests

from raider_sync import McpError, ToolServer
from raider_sync.gateway.cli import Serving
from raider_sync.serve.context import Context, elicitation, roots, sampling
from raider_sync.serve.serving_http import wsgi_app

WAIT = 30.0
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR_SCHEMA = {"type": "object", "properties": {"color": {"type": "string"}},
                "required": ["color"]}
STATELESS = "2026-07-28"


def context_tools() -> ToolServer:
    tools = ToolServer("ctx")

    @tools.tool()
    def greet(ctx: Context) -> str:
        """Ask the user's name, then greet."""
        ctx.log("info", "asking for a name")
        answer = ctx.elicit("What is your name?", NAME_SCHEMA)
        if answer.get("action") != "accept":
            return "no name given"
        return f"Hello, {answer['content']['name']}!"

    @tools.tool()
    def two_rounds(ctx: Context) -> str:
        """Two questions, one after the other."""
        name = ctx.elicit("Step 1: your name?", NAME_SCHEMA, key="step1")["content"]["name"]
        color = ctx.elicit("Step 2: your color?", COLOR_SCHEMA, key="step2")["content"]["color"]
        return f"{name} likes {color}"

    @tools.tool()
    def everything(ctx: Context) -> str:
        """Three questions at once."""
        answers = ctx.ask({"name": elicitation("Your name?", NAME_SCHEMA),
                           "line": sampling("Write a greeting", 20),
                           "roots": roots()})
        return (f"{answers['name']['content']['name']}|{answers['line']['content']['text']}|"
                f"{len(answers['roots']['roots'])}")

    @tools.tool()
    def chatty(ctx: Context) -> str:
        """Log at three levels."""
        for level in ("debug", "info", "warning"):
            ctx.log(level, f"a {level} message", logger="chatty")
        return "logged"

    @tools.tool()
    def who(ctx: Context) -> str:
        """What the handler knows of its client."""
        return f"{sorted(ctx.client_capabilities or {})} {ctx.protocol_version}"

    @tools.prompt()
    def intro(topic: str, ctx: Context) -> str:
        """A prompt that asks for context."""
        name = ctx.elicit("Who is it for?", NAME_SCHEMA, key="who")["content"]["name"]
        return f"Introduce {topic} to {name}"

    return tools


def accept(content: dict):
    return lambda params: {"action": "accept", "content": content}


def sample(params: dict) -> dict:
    return {"role": "assistant", "content": {"type": "text", "text": "hi there"},
            "model": "test-model"}


@pytest.fixture
def tools():
    server = context_tools()
    yield server
    server.close()


@pytest.fixture
def http_url(tools):
    app = wsgi_app(tools)
    serving = Serving(app).start()
    yield f"{serving.url}/mcp"
    app.close()
    serving.stop(10)


# -- raider_sync's client, in-process and over HTTP, both eras ------------------------------

@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_a_handler_asks_the_client_and_gets_its_answer(tools, protocol):
    logs: queue.Queue = queue.Queue()
    with tools.in_process_client(protocol=protocol, on_elicitation=accept({"name": "Alice"}),
                                 on_log=lambda server, *entry: logs.put(entry)) as client:
        assert client.era == ("legacy" if protocol == "legacy" else "modern")
        result = client.call_tool("mcp__ctx__greet", {}, timeout=WAIT)
        if protocol == "legacy":  # handed on in order, maybe after the answer; the
            # stateless era sends logs only to a request that asks for them
            assert logs.get(timeout=WAIT) == ("info", None, "asking for a name")
    assert result["content"][0]["text"] == "Hello, Alice!"


@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_questions_one_after_another_and_several_at_once(tools, protocol):
    asked: list = []

    def elicit(params: dict) -> dict:
        asked.append(params["message"])
        key = next(iter(params["requestedSchema"]["properties"]))
        return {"action": "accept", "content": {key: "Alice" if key == "name" else "blue"}}

    with tools.in_process_client(protocol=protocol, on_elicitation=elicit, on_sampling=sample,
                                 roots=["file:///tmp/a", "file:///tmp/b"]) as client:
        assert client.call_tool("mcp__ctx__two_rounds", {}, timeout=WAIT)["content"][0][
            "text"] == "Alice likes blue"
        assert client.call_tool("mcp__ctx__everything", {}, timeout=WAIT)["content"][0][
            "text"] == "Alice|hi there|2"
    assert asked[:2] == ["Step 1: your name?", "Step 2: your color?"]


@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_a_prompt_asks_too(tools, protocol):
    with tools.in_process_client(protocol=protocol, on_elicitation=accept({"name": "Bo"})) as client:
        prompt = client.get_prompt("intro", {"topic": "MCP"}, timeout=WAIT)
    assert prompt["messages"][0]["content"]["text"] == "Introduce MCP to Bo"


@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_log_messages_follow_the_level_the_client_sets(tools, protocol):
    levels: list = []
    two = threading.Event()

    def on_log(server, level, logger, data) -> None:
        if logger == "chatty":
            levels.append(level)
            if len(levels) == 2:
                two.set()

    with tools.in_process_client(protocol=protocol, on_log=on_log) as client:
        client.set_log_level("info", timeout=WAIT)
        assert client.call_tool("mcp__ctx__chatty", {}, timeout=WAIT)["content"][0][
            "text"] == "logged"
        assert two.wait(WAIT)
        client.ping(timeout=WAIT)  # a debug message, had one been sent, came before this
    assert levels == ["info", "warning"]


def test_a_question_the_client_cannot_answer_is_the_protocols_error(tools):
    with tools.in_process_client(protocol="legacy") as client:  # no on_elicitation
        with pytest.raises(McpError) as caught:
            client.call_tool("mcp__ctx__greet", {}, timeout=WAIT)
    assert caught.value.code == -32021 and "elicitation" in str(caught.value)


def test_the_handler_knows_the_clients_capabilities(tools):
    with tools.in_process_client(protocol="legacy", on_sampling=sample) as client:
        text = client.call_tool("mcp__ctx__who", {}, timeout=WAIT)["content"][0]["text"]
    assert "'sampling'" in text and "'elicitation'" not in text
    assert text.endswith(client.protocol_version)


@pytest.mark.parametrize("protocol", ["legacy", STATELESS])
def test_over_http_raider_sync_answers_the_questions(tools, http_url, protocol):
    from raider_sync import McpServer

    from conftest import config_of
    spec = config_of({"ctx": {"type": "http", "url": http_url, "protocol": protocol}}).server("ctx")
    logs: list = []
    three = threading.Event()

    def on_log(server, *entry) -> None:
        logs.append(entry)
        if len([e for e in logs if e[1] == "chatty"]) == 3:
            three.set()

    with McpServer(spec, on_elicitation=accept({"name": "Carol"}), on_sampling=sample,
                   roots=["file:///tmp/x"], on_log=on_log) as client:
        assert client.status == "connected", client.reason
        assert client.call_tool("mcp__ctx__greet", {}, timeout=WAIT)["content"][0][
            "text"] == "Hello, Carol!"
        assert client.call_tool("mcp__ctx__everything", {}, timeout=WAIT)["content"][0][
            "text"] == "Carol|hi there|1"
        assert client.call_tool("mcp__ctx__chatty", {}, timeout=WAIT)["content"][0][
            "text"] == "logged"
        if protocol == "legacy":  # log messages are handed on in order, after the answer
            assert three.wait(WAIT)
    if protocol == "legacy":
        assert [entry[0] for entry in logs if entry[1] == "chatty"] == ["debug", "info", "warning"]


# -- the official SDK's client --------------------------------------------------------------

@pytest.mark.parametrize("mode", ["legacy", STATELESS])
def test_the_sdk_client_answers_the_questions(http_url, mode):
    from mcp import Client, types

    async def on_elicit(context, params):
        key = next(iter(params.requested_schema["properties"]))
        return types.ElicitResult(action="accept", content={key: "Dana" if key == "name" else "teal"})

    async def on_sample(context, params):
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="yo"))

    async def on_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/r")])

    async def run() -> list[str]:
        async with Client(http_url, mode=mode, elicitation_callback=on_elicit,
                          sampling_callback=on_sample, list_roots_callback=on_roots) as client:
            texts = []
            for tool in ("greet", "two_rounds", "everything"):
                result = await client.call_tool(tool, {})
                texts.append(result.content[0].text)
            return texts

    greet, rounds, everything = asyncio.run(asyncio.wait_for(run(), WAIT))
    assert greet == "Hello, Dana!"
    assert rounds == "Dana likes teal"
    assert everything == "Dana|yo|1"


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_the_sdk_client_sees_log_messages_after_setting_a_level(http_url):
    from mcp import Client

    async def run() -> list:
        seen: list = []

        async def on_log(params):
            seen.append(params.level)

        async with Client(http_url, mode="legacy", logging_callback=on_log) as client:
            await client.set_logging_level("debug")
            await client.call_tool("chatty", {})
        return seen

    assert asyncio.run(asyncio.wait_for(run(), WAIT)) == ["debug", "info", "warning"]


# -- the stateless era's rounds on the wire --------------------------------------------------

def post(url: str, method: str, params: dict, request_id: int = 1) -> dict:
    meta = {"io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": STATELESS,
               "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    answer = requests.post(url, json={"jsonrpc": "2.0", "id": request_id, "method": method,
                                      "params": {**params, "_meta": meta}},
                           headers=headers, timeout=WAIT)
    if answer.headers.get("Content-Type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in answer.text.splitlines()
                    if line.startswith("data:")]
        return next(m for m in messages if "id" in m and "method" not in m)
    return answer.json()


def test_rounds_carry_a_signed_state_that_changes_each_round(http_url):
    first = post(http_url, "tools/call", {"name": "two_rounds", "arguments": {}})["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["step1"]
    second = post(http_url, "tools/call", {
        "name": "two_rounds", "arguments": {}, "requestState": first["requestState"],
        "inputResponses": {"step1": {"action": "accept", "content": {"name": "Eve"}}}})["result"]
    assert list(second["inputRequests"]) == ["step2"]
    assert second["requestState"] != first["requestState"]
    last = post(http_url, "tools/call", {
        "name": "two_rounds", "arguments": {}, "requestState": second["requestState"],
        "inputResponses": {"step2": {"action": "accept", "content": {"color": "red"}}}})["result"]
    assert last["resultType"] == "complete" and last["content"][0]["text"] == "Eve likes red"


@pytest.mark.parametrize("state", ["tampered", "foreign"])
def test_a_tampered_or_foreign_state_is_refused(http_url, state):
    first = post(http_url, "tools/call", {"name": "two_rounds", "arguments": {}})["result"]
    if state == "tampered":
        params = {"name": "two_rounds", "requestState": first["requestState"] + "x"}
    else:  # a state issued for another tool
        params = {"name": "greet", "requestState": first["requestState"]}
    answer = post(http_url, "tools/call", {**params, "arguments": {},
                                           "inputResponses": {"step1": {"action": "accept",
                                                                        "content": {"name": "M"}}}})
    assert answer["error"]["code"] == -32602 and "requestState" in answer["error"]["message"]


@pytest.mark.parametrize("responses", [None, 12345, {"greet": 7}])
def test_input_responses_that_are_not_answers_are_refused(http_url, responses):
    answer = post(http_url, "tools/call", {"name": "greet", "arguments": {},
                                           "inputResponses": responses})
    assert answer["error"]["code"] == -32602 and "inputResponses" in answer["error"]["message"]


def test_extra_answers_are_ignored_and_missing_ones_asked_again(http_url):
    extra = post(http_url, "tools/call", {"name": "greet", "arguments": {}, "inputResponses": {
        "elicitation": {"action": "accept", "content": {"name": "Finn"}},
        "unknown": {"action": "accept", "content": {}}}})["result"]
    assert extra["content"][0]["text"] == "Hello, Finn!"
    wrong = post(http_url, "tools/call", {"name": "greet", "arguments": {}, "inputResponses": {
        "wrong_key": {"action": "accept", "content": {"name": "Finn"}}}})["result"]
    assert wrong["resultType"] == "input_required" and "elicitation" in wrong["inputRequests"]


def test_lists_never_ask(http_url):
    assert "resultType" not in post(http_url, "tools/list", {})["result"] or \
        post(http_url, "tools/list", {})["result"]["resultType"] == "complete"


# -- without a client; cancellation -----------------------------------------------------------

def test_called_in_process_a_handler_logs_to_python_and_cannot_ask(tools, caplog):
    caplog.set_level("INFO", logger="chatty")
    assert tools.call_tool("chatty", {}, timeout=WAIT)["content"][0]["text"] == "logged"
    assert [r.getMessage() for r in caplog.records if r.name == "chatty"] == [
        "a info message", "a warning message"]
    with pytest.raises(McpError) as caught:
        tools.call_tool("greet", {}, timeout=WAIT)
    assert caught.value.code == -32021


def waiting_tools(name: str, started: threading.Event, seen: threading.Event,
                  stop: threading.Event) -> ToolServer:
    """A ToolServer whose tool wait_for_cancel polls its context until cancelled (then sets
    ``seen``) or ``stop`` is set."""
    tools = ToolServer(name)

    @tools.tool()
    def wait_for_cancel(ctx: Context) -> str:
        """Wait until cancelled."""
        started.set()
        while not ctx.cancelled and not stop.is_set():
            stop.wait(0.01)
        if ctx.cancelled:
            seen.set()
        return "done"

    return tools


def test_a_call_that_times_out_marks_its_context_cancelled():
    seen, stop = threading.Event(), threading.Event()
    tools = waiting_tools("slow", threading.Event(), seen, stop)
    try:
        from raider_sync import ToolTimeout
        with pytest.raises(ToolTimeout):
            tools.call_tool("wait_for_cancel", {}, timeout=0.2)
        assert seen.wait(WAIT)
    finally:
        stop.set()
        tools.close()


def test_a_cancelled_request_marks_its_context_cancelled():
    started, seen, stop = threading.Event(), threading.Event(), threading.Event()
    tools = waiting_tools("cancel", started, seen, stop)
    try:
        with tools.in_process_client(protocol="legacy") as client:
            future = client.call_tool_f("mcp__cancel__wait_for_cancel", {}, timeout=WAIT)
            assert started.wait(WAIT)
            future.cancel()  # notifications/cancelled goes to the server
            assert seen.wait(WAIT)
    finally:
        stop.set()
        tools.close()


def test_a_bad_log_level_is_named():
    with pytest.raises(ValueError, match="log level must be one of"):
        Context().log("loud", "x")


def test_a_cancelled_request_ends_the_question_its_handler_waits_on():
    asked, release = threading.Event(), threading.Event()
    outcome: queue.Queue = queue.Queue()
    tools = ToolServer("asking")

    @tools.tool()
    def asks(ctx: Context) -> str:
        """Ask the client, and say what came of it."""
        try:
            ctx.elicit("Which?", {"type": "object", "properties": {}})
            outcome.put("answered")
        except McpError as exc:
            outcome.put(exc.code)
        return "done"

    def elicit(params: dict) -> dict:
        asked.set()
        release.wait(WAIT)  # the user never answers while the call is cancelled
        return {"action": "cancel"}

    try:
        with tools.in_process_client(protocol="legacy", on_elicitation=elicit) as client:
            future = client.call_tool_f("mcp__asking__asks", {}, timeout=WAIT)
            assert asked.wait(WAIT)
            future.cancel()  # notifications/cancelled goes to the server
            assert outcome.get(timeout=WAIT) == -32800, "the handler waited on"
            release.set()
    finally:
        release.set()
        tools.close()
