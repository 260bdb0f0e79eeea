"""Deadlines that understand progress: with ``reset_on_progress`` a call's ``timeout`` bounds
its silence (each progress notification starts it anew) and ``max_total`` caps the whole call,
progress or not; against server-everything's long-running operation and a ToolServer that
reports progress for ever."""
from __future__ import annotations

import threading

import pytest

from raider_sync import Context, InvalidArgument, McpServer, ToolServer, ToolTimeout

WAIT = 30.0
LONG = "mcp__everything__trigger-long-running-operation"


def test_progress_keeps_a_long_operation_alive_past_its_timeout(everything_spec):
    steps: list = []
    with McpServer(everything_spec) as everything:
        assert everything.status == "connected", everything.reason
        # 2 s in 8 steps: a quarter of a second between two, a timeout of 0.8 s of silence
        result = everything.call_tool(LONG, {"duration": 2, "steps": 8}, timeout=0.8,
                                      on_progress=lambda *step: steps.append(step))
        assert not result.get("isError"), result
        assert len(steps) == 8
        with pytest.raises(ToolTimeout) as caught:  # the same call without the reset
            everything.call_tool(LONG, {"duration": 2, "steps": 8}, timeout=0.8,
                                 on_progress=lambda *step: None, reset_on_progress=False)
        assert caught.value.kind == "total"
        everything.ping(timeout=WAIT)  # and the server goes on


def test_asked_for_without_a_callback_progress_still_resets_the_clock(everything_spec):
    with McpServer(everything_spec, reset_on_progress=True) as everything:
        result = everything.call_tool(LONG, {"duration": 1.5, "steps": 6}, timeout=0.8)
    assert not result.get("isError"), result


def forever_tools(cancelled: threading.Event, stop: threading.Event) -> ToolServer:
    tools = ToolServer("forever")

    @tools.tool()
    def forever(ctx: Context) -> str:
        """Report progress until cancelled."""
        step = 0
        while not ctx.cancelled and not stop.is_set():
            step += 1
            ctx.progress(step, None, f"step {step}")
            stop.wait(0.05)
        if ctx.cancelled:
            cancelled.set()
        return "stopped"

    @tools.tool()
    def falls_silent(ctx: Context) -> str:
        """Report progress once, then nothing until cancelled."""
        ctx.progress(1, None, "one step")
        while not ctx.cancelled and not stop.is_set():
            stop.wait(0.05)
        if ctx.cancelled:
            cancelled.set()
        return "stopped"

    return tools


@pytest.fixture
def forever():
    cancelled, stop = threading.Event(), threading.Event()
    tools = forever_tools(cancelled, stop)
    yield tools, cancelled
    stop.set()
    tools.close()


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
def test_max_total_ends_a_call_that_reports_progress_for_ever(forever, protocol):
    tools, cancelled = forever
    steps: list = []
    with tools.in_process_client(protocol=protocol) as client:
        with pytest.raises(ToolTimeout) as caught:
            client.call_tool("mcp__forever__forever", {}, timeout=0.5, max_total=1.5,
                             on_progress=lambda *step: steps.append(step))
        assert caught.value.kind == "total" and "1.5 s" in str(caught.value)
        assert len(steps) > 3, "progress came all along"
        assert cancelled.wait(WAIT), "the server was told to stop"


def test_a_call_that_falls_silent_times_out_as_idle(forever):
    tools, cancelled = forever
    with tools.in_process_client(protocol="legacy") as client:
        with pytest.raises(ToolTimeout) as caught:
            client.call_tool("mcp__forever__falls_silent", {}, timeout=0.5, max_total=WAIT,
                             on_progress=lambda *step: None)
        assert caught.value.kind == "idle" and "no progress for 0.5 s" in str(caught.value)
        assert cancelled.wait(WAIT)


def test_the_future_form_and_the_servers_defaults(forever):
    tools, cancelled = forever
    with tools.in_process_client(protocol="legacy", max_total=1.0) as client:
        future = client.call_tool_f("mcp__forever__forever", {}, timeout=0.4,
                                    on_progress=lambda *step: None)
        with pytest.raises(ToolTimeout) as caught:
            future.result(WAIT)
        assert caught.value.kind == "total"


@pytest.mark.parametrize("bad", [0, -1, "soon", float("nan")])
def test_a_max_total_that_is_not_a_number_of_seconds_is_named(forever, bad):
    tools, _ = forever
    with tools.in_process_client(protocol="legacy") as client:
        with pytest.raises(InvalidArgument, match="max_total"):
            client.call_tool("mcp__forever__forever", {}, max_total=bad,
                             on_progress=lambda *step: None)
    with pytest.raises(InvalidArgument, match="max_total"):
        McpServer.in_process(tools, max_total=bad)


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
def test_over_http_the_silence_and_the_cap_hold_and_cancel(forever, protocol):
    from raider_sync.gateway.cli import Serving
    from raider_sync.serve.serving_http import wsgi_app

    from conftest import config_of
    tools, cancelled = forever
    app = wsgi_app(tools, sessions=True)  # the handshake era's cancel reaches a session
    serving = Serving(app).start()
    spec = config_of({"forever": {"type": "http", "url": f"{serving.url}/mcp",
                                  "protocol": protocol}}).server("forever")
    try:
        with McpServer(spec) as client:
            with pytest.raises(ToolTimeout) as caught:
                client.call_tool("mcp__forever__forever", {}, timeout=0.5, max_total=1.5,
                                 on_progress=lambda *step: None)
            assert caught.value.kind == "total"
            assert cancelled.wait(WAIT), "closing the stream cancelled the handler"
            cancelled.clear()
            with pytest.raises(ToolTimeout) as caught:
                client.call_tool("mcp__forever__falls_silent", {}, timeout=0.5,
                                 on_progress=lambda *step: None)
            assert caught.value.kind == "idle"
            client.list_tools(timeout=WAIT)  # the connection goes on
    finally:
        app.close()
        serving.stop(10)


def test_a_hub_passes_the_deadlines_on_to_the_server(everything_js):
    from raider_sync import McpHub

    from conftest import config_of
    config = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]}})
    with McpHub(config) as hub:
        hub.start_f().result(WAIT)
        result = hub.call_tool(LONG, {"duration": 1.5, "steps": 6}, timeout=0.8,
                               on_progress=lambda *step: None)
        assert not result.get("isError"), result
        with pytest.raises(ToolTimeout):
            hub.call_tool_f(LONG, {"duration": 1.5, "steps": 6}, timeout=0.8,
                            on_progress=lambda *step: None,
                            reset_on_progress=False).result(WAIT)
