"""OpenTelemetry: one span per request under the MCP conventions, the duration histogram and
trace context in params._meta; tested with the SDK's in-memory exporter and reader."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from raider_sync import ConfigError, McpError, McpServer, ToolTimeout
from raider_sync.client import telemetry as telemetry_module
from raider_sync.client.telemetry import Telemetry

from conftest import fake_spec

WAIT = 15.0


@pytest.fixture
def otel():
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])

    def make(**kw) -> Telemetry:
        return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider, **kw)
    make.exporter, make.reader, make.tracer_provider = exporter, reader, tracer_provider
    yield make
    meter_provider.shutdown()
    tracer_provider.shutdown()


def spans_named(exporter, name):
    return [s for s in exporter.get_finished_spans() if s.name == name]


def durations(reader) -> dict[str, list]:
    """mcp.client.operation.duration data points by mcp.method.name."""
    points: dict[str, list] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "mcp.client.operation.duration":
                    assert metric.unit == "s"
                    for point in metric.data.data_points:
                        points.setdefault(point.attributes["mcp.method.name"], []).append(point)
    return points


def test_spans_and_durations_against_server_everything(everything_spec, otel):
    with McpServer(everything_spec, kill_grace=0.3, telemetry=otel()) as server:
        assert server.call_tool("mcp__everything__echo", {"message": "hi"}).text == "Echo: hi"
        with pytest.raises(ToolTimeout):
            server.call_tool("mcp__everything__trigger-long-running-operation",
                             {"duration": 30, "steps": 3}, timeout=0.3)
    [init] = spans_named(otel.exporter, "initialize")
    assert init.kind == trace.SpanKind.CLIENT
    assert init.attributes["mcp.method.name"] == "initialize"
    assert init.attributes["mcp.protocol.version"] == "2025-11-25"
    assert init.attributes["network.transport"] == "pipe"
    assert spans_named(otel.exporter, "tools/list")
    [echo] = spans_named(otel.exporter, "tools/call echo")
    assert echo.attributes["gen_ai.tool.name"] == "echo"
    assert echo.attributes["gen_ai.operation.name"] == "execute_tool"
    assert echo.attributes["mcp.protocol.version"] == "2025-11-25"
    assert "jsonrpc.request.id" in echo.attributes
    assert "error.type" not in echo.attributes and echo.status.is_ok
    assert "gen_ai.tool.call.arguments" not in echo.attributes  # content only when opted in
    [slow] = spans_named(otel.exporter, "tools/call trigger-long-running-operation")
    assert slow.attributes["error.type"] == "ToolTimeout"
    assert slow.status.status_code == trace.StatusCode.ERROR
    points = durations(otel.reader)
    assert {"initialize", "tools/list", "tools/call"} <= set(points)
    calls = {tuple(sorted(p.attributes.items())): p for p in points["tools/call"]}
    assert sum(p.count for p in calls.values()) == 2
    assert any(dict(k).get("error.type") == "ToolTimeout" for k in calls)
    assert all(dict(k)["network.transport"] == "pipe" for k in calls)


def test_error_answers_and_tool_errors_set_error_type(otel):
    with McpServer(fake_spec(""), kill_grace=0.3, telemetry=otel(capture_content=True)) as server:
        with pytest.raises(McpError):
            server.call_tool("mcp__fake__error", {})
        server.call_tool("mcp__fake__echo", {"message": "captured"})
    [error] = spans_named(otel.exporter, "tools/call error")
    assert error.attributes["error.type"] == "-32000"
    assert error.attributes["rpc.response.status_code"] == "-32000"
    [echo] = spans_named(otel.exporter, "tools/call echo")
    assert json.loads(echo.attributes["gen_ai.tool.call.arguments"]) == {"message": "captured"}
    assert "captured" in echo.attributes["gen_ai.tool.call.result"]


def test_a_tool_error_result_is_a_tool_error(everything_spec, otel):
    with McpServer(everything_spec, kill_grace=0.3, telemetry=otel()) as server:
        result = server.call_tool("mcp__everything__get-sum", {"a": "not a number"})
    spans = spans_named(otel.exporter, "tools/call get-sum")
    assert spans and result.get("isError")
    assert spans[0].attributes["error.type"] == "tool_error"


def test_trace_context_reaches_the_server_in_meta_on_every_request(otel):
    tracer = otel.tracer_provider.get_tracer("app")
    with McpServer(fake_spec(""), kill_grace=0.3, telemetry=otel()) as server:
        with tracer.start_as_current_span("the application") as parent:
            seen = json.loads(server.call_tool("mcp__fake__seen", {}).text)
    metas = {entry["method"]: (entry.get("params") or {}).get("_meta") or {} for entry in seen}
    for method in ("initialize", "tools/list", "tools/call"):
        assert metas[method].get("traceparent", "").startswith("00-"), (method, metas[method])
    [call] = spans_named(otel.exporter, "tools/call seen")
    trace_id = format(parent.get_span_context().trace_id, "032x")
    version, traced, span_id, flags = metas["tools/call"]["traceparent"].split("-")
    assert (traced, span_id) == (trace_id, format(call.context.span_id, "016x"))
    assert int(flags, 16) & 1  # sampled
    assert call.parent.span_id == parent.get_span_context().span_id


def test_off_means_no_observer_and_a_missing_api_is_a_clear_error(everything_spec, monkeypatch):
    assert McpServer(everything_spec, telemetry=False)._connection.hooks.observer is None
    with pytest.raises(ConfigError, match="telemetry: expected"):
        McpServer(everything_spec, telemetry="yes")
    monkeypatch.setattr(telemetry_module, "AVAILABLE", False)
    assert telemetry_module.resolve(None) is None
    with pytest.raises(ConfigError, match="opentelemetry-api is not installed"):
        telemetry_module.resolve(True)


def test_without_opentelemetry_installed_nothing_is_imported_or_observed():
    script = textwrap.dedent('''
        import sys
        sys.modules["opentelemetry"] = None   # as if the package were not installed
        from raider_sync import McpConfig, McpServer
        from raider_sync.client import telemetry
        spec = McpConfig.from_dict({"mcpServers": {"demo": {
            "command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}}}).server("demo")
        with McpServer(spec) as server:
            assert server.telemetry is None and server._session.observe is None
            assert server.call_tool("mcp__demo__add", {"a": 1, "b": 2}).text == "3"
        assert not telemetry.AVAILABLE
        print("ok")
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_with_no_sdk_configured_no_span_is_made_but_a_carried_context_passes_on(everything_spec):
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, use_span
    probe = McpServer(everything_spec, telemetry=False)
    default = Telemetry()  # the global providers, which no test configures
    params = {"name": "echo"}
    finish = default.observe(probe, "tools/call", params, 1)
    assert "_meta" not in params
    finish(None)  # the shared no-op: it never looks at the future
    carried = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, is_remote=True,
                          trace_flags=TraceFlags(1))
    with use_span(NonRecordingSpan(carried)):
        params = {"name": "echo", "_meta": {"progressToken": 7}}
        default.observe(probe, "tools/call", params, 2)
    assert params["_meta"] == {"progressToken": 7, "traceparent":
                               "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}


def test_over_streamable_http_the_session_and_address_are_recorded(everything_js, otel):
    from fakes.http_peers import HttpPeer
    peer = HttpPeer.everything().start()
    try:
        with McpServer(peer.spec("peer"), kill_grace=0.3, telemetry=otel()) as server:
            server.call_tool("mcp__peer__echo", {"message": "hi"})
            session_id = server._transport.session_id
    finally:
        peer.close()
    [echo] = spans_named(otel.exporter, "tools/call echo")
    assert session_id and echo.attributes["mcp.session.id"] == session_id
    assert echo.attributes["network.transport"] == "tcp"
    assert echo.attributes["network.protocol.name"] == "http"
    assert echo.attributes["server.address"] == "127.0.0.1"
    assert echo.attributes["server.port"] == int(peer.spec("peer").url.split(":")[2].split("/")[0])


def test_a_call_sent_again_after_a_crash_is_counted(otel, tmp_path):
    spec = fake_spec("crash-once", restart={"backoffMs": 0},
                     env={"RAIDER_FAKE_RUNS": str(tmp_path)})
    with McpServer(spec, kill_grace=0.2, telemetry=otel()) as server:
        assert server.call_tool("mcp__fake__read-once", {}, timeout=WAIT).attempts == 2
    counted = [point for resource in otel.reader.get_metrics_data().resource_metrics
               for scope in resource.scope_metrics for metric in scope.metrics
               if metric.name == "raider_sync.client.retries"
               for point in metric.data.data_points]
    assert [(p.value, p.attributes["gen_ai.tool.name"]) for p in counted] == [
        (1, "mcp__fake__read-once")]
