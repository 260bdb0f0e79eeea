"""OpenTelemetry spans of relayed requests (MCP conventions), recorded with the SDK's in-memory
exporter, and the span's traceparent received by the upstream."""
from __future__ import annotations

import json

import pytest
import requests

from raider_sync.errors import ConfigError
from raider_sync.gateway.cli import Serving
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.relay import Relay
from raider_sync.gateway.tracing import Tracing, resolve

from gateway.support import ALICE, AUTH, UPSTREAM_TOKEN, Mcp, wait_until

pytest.importorskip("opentelemetry.sdk")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_PARENT = f"00-{CLIENT_TRACE}-00f067aa0ba902b7-01"


@pytest.fixture
def exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    exporter.provider = provider
    yield exporter
    provider.shutdown()


@pytest.fixture
def traced():
    """``traced(servers, tracing)`` -> (base URL, usage events) of a relay served by waitress."""
    made = []

    def make(servers: list[dict], tracing) -> tuple[str, list]:
        config = GatewayConfig.from_dict(
            {"servers": servers,
             "keys": [{"id": "alice", "env": "ALICE", "servers": [s["name"] for s in servers]}]},
            env={"ALICE": ALICE, "UPSTREAM_TOKEN": UPSTREAM_TOKEN})
        events: list[dict] = []
        relay = Relay(config, on_usage=events.append, tracing=tracing)
        serving = Serving(relay, threads=4).start()
        made.append((relay, serving))
        return serving.url, events

    yield make
    for relay, serving in made:
        relay.close()
        serving.stop()


def received_traceparent(answer: requests.Response) -> str:
    """The traceparent the fake upstream received (it echoes the request it got)."""
    headers = {k.lower(): v for k, v in answer.json()["headers"]}
    return headers.get("traceparent", "")


def test_a_span_per_relayed_request_and_its_traceparent_upstream(traced, upstream, exporter):
    url, events = traced([{"name": "fake", "url": f"{upstream.url}/base"}],
                         Tracing(tracer_provider=exporter.provider))
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {}}})
    answer = requests.post(f"{url}/mcp/fake", data=body, timeout=10,
                           headers={**AUTH, "Content-Type": "application/json",
                                    "Mcp-Protocol-Version": "2025-06-18",
                                    "traceparent": CLIENT_PARENT})
    assert answer.status_code == 200
    assert wait_until(lambda: len(exporter.get_finished_spans()) == 1)
    [span] = exporter.get_finished_spans()
    context = span.get_span_context()
    assert span.name == "tools/call echo" and span.kind == trace.SpanKind.CLIENT
    assert span.attributes["mcp.method.name"] == "tools/call"
    assert span.attributes["gen_ai.tool.name"] == "echo"
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert span.attributes["mcp.protocol.version"] == "2025-06-18"
    assert span.attributes["server.address"] == "127.0.0.1"
    assert span.attributes["raider_sync.gateway.key"] == "alice"
    assert span.attributes["http.response.status_code"] == 200
    assert span.status.is_ok and "error.type" not in span.attributes
    # the client's span is the parent; the upstream gets the gateway's span, not the client's
    assert format(context.trace_id, "032x") == CLIENT_TRACE
    assert span.parent.span_id == 0x00f067aa0ba902b7
    version, trace_id, span_id, flags = received_traceparent(answer).split("-")
    assert (trace_id, int(span_id, 16)) == (format(context.trace_id, "032x"), context.span_id)
    event = events[-1]
    assert (event["trace_id"], event["span_id"]) == (trace_id, span_id)


def test_a_failed_request_ends_its_span_with_the_error(traced, exporter):
    url, _ = traced([{"name": "gone", "url": "http://127.0.0.1:9/mcp"}],
                    Tracing(tracer_provider=exporter.provider))
    answer = requests.post(f"{url}/mcp/gone", headers=AUTH, timeout=10,
                           data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    assert answer.status_code == 502
    assert wait_until(lambda: len(exporter.get_finished_spans()) == 1)
    [span] = exporter.get_finished_spans()
    assert span.name == "ping" and not span.status.is_ok
    assert span.attributes["error.type"] == "upstream_unreachable"
    assert span.parent is None  # no traceparent from the client: a trace of its own


def test_sse_streams_end_their_span_when_they_close(traced, everything_http, exporter):
    url, _ = traced([{"name": "everything", "url": everything_http}],
                    Tracing(tracer_provider=exporter.provider))
    mcp = Mcp(f"{url}/mcp/everything")
    try:
        mcp.initialize()
        mcp.request("tools/call", {"name": "echo", "arguments": {"message": "hi"}})
    finally:
        mcp.close()
    assert wait_until(lambda: len(exporter.get_finished_spans()) == 3)
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["initialize", "notifications/initialized", "tools/call echo"]
    sessions = {s.attributes.get("mcp.session.id") for s in exporter.get_finished_spans()[1:]}
    assert len(sessions) == 1 and None not in sessions  # the upstream's own id


def test_without_a_configured_sdk_the_clients_traceparent_is_passed_on(traced, upstream):
    tracing = Tracing()  # the global provider, left unconfigured in the tests
    assert not tracing.active()
    url, events = traced([{"name": "fake", "url": f"{upstream.url}/base"}], tracing)
    answer = requests.post(f"{url}/mcp/fake", headers={**AUTH, "traceparent": CLIENT_PARENT},
                           data=b"{}", timeout=10)
    assert received_traceparent(answer) == CLIENT_PARENT
    assert "trace_id" not in events[-1]
    answer = requests.post(f"{url}/mcp/fake", headers=AUTH, data=b"{}", timeout=10)
    assert received_traceparent(answer) == ""


def test_the_tracing_option():
    assert resolve(False) is None
    assert isinstance(resolve(None), Tracing)
    tracing = Tracing()
    assert resolve(tracing) is tracing
    with pytest.raises(ConfigError, match="tracing: expected None, False or a Tracing"):
        resolve("yes")
