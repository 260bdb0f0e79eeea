"""The telemetry leg: what OpenTelemetry costs a call, in one run.

One connection to a stdio server, its calls measured in interleaved rounds so that the
machine's load falls on each setting alike: telemetry off (``telemetry=False``, the path
taken when OpenTelemetry is not installed) twice, for the noise floor; the default with
opentelemetry-api installed but no SDK configured; then, apart, the SDK recording every span
and duration in memory. Last, the telemetry's own cost per request, with no server in the way.
"""
from __future__ import annotations

import time
from concurrent.futures import Future

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from raider_sync import McpConfig, McpServer
from raider_sync.client.telemetry import Telemetry

from .common import ms, p50, stdio_servers, table, timed

ROUNDS = 100
CALLS = 10      # per setting and round: short, so a round sees one load
WARMUP = 50
OBSERVED = 20000
ARGS = {"message": "hello"}


def _spec(command: list[str]):
    return McpConfig.from_dict({"mcpServers": {"bench": {"command": command[0],
                                                          "args": command[1:]}}}).server("bench")


def _recording() -> tuple[Telemetry, InMemorySpanExporter, MeterProvider, TracerProvider]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return (Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider),
            exporter, meter_provider, tracer_provider)


def call_latency(server: McpServer, settings: dict) -> dict[str, tuple[float, float]]:
    """For each setting (name: session observer): (p50 seconds of one echo call, the median
    over rounds of its round's p50 divided by the same round's p50 of the first setting).
    The observer of ``server``'s one session is swapped between batches, so server and pipe
    are the same for all, and each setting goes first in turn."""
    names = list(settings)
    samples: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(ROUNDS):
        medians = {}
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            server._session.observe = settings[name]
            batch = timed(lambda: server.call_tool("mcp__bench__echo", ARGS), CALLS)
            samples[name] += batch
            medians[name] = p50(batch)
        for name in names:
            ratios[name].append(medians[name] / medians[names[0]])
    server._session.observe = None
    return {name: (p50(samples[name]), p50(ratios[name])) for name in names}


def observer_cost() -> dict[str, float]:
    """Seconds the telemetry itself adds to one request (span, _meta, duration), alone."""
    recording, exporter, meter_provider, tracer_provider = _recording()
    probe = McpServer(_spec(["unused"]), telemetry=False)
    done: Future = Future()
    done.set_result({"content": []})
    costs = {}
    try:
        for name, telemetry in (("API, no SDK", Telemetry()), ("SDK recording", recording)):
            observe = telemetry.observer(probe)
            started = time.perf_counter()
            for i in range(OBSERVED):
                finish = observe("tools/call", {"name": "echo", "arguments": ARGS}, i)
                if finish is not None:  # None: no span was started, nothing to end
                    finish(done)
                if i % 1000 == 0:
                    exporter.clear()
            costs[name] = (time.perf_counter() - started) / OBSERVED
    finally:
        meter_provider.shutdown()
        tracer_provider.shutdown()
    return costs


def main() -> None:
    label, command = stdio_servers()[0]
    server = McpServer(_spec(command), kill_grace=1, telemetry=False)
    with server:
        assert server.status == "connected", server.reason
        for _ in range(WARMUP):
            server.call_tool("mcp__bench__echo", ARGS)
        # the SDK's garbage would slow whichever setting follows it: it is measured apart
        quiet = call_latency(server, {"off": None, "off, again": None,
                                      "API, no SDK": Telemetry().observer(server)})
        recording, exporter, meter_provider, tracer_provider = _recording()
        try:
            recorded = call_latency(server, {"off": None,
                                             "SDK recording": recording.observer(server)})
        finally:
            meter_provider.shutdown()
            tracer_provider.shutdown()
    costs = observer_cost()
    alone = {"off": "none: one None check", "off, again": "(the noise floor)",
             **{name: f"{cost * 1e6:8.1f} us" for name, cost in costs.items()}}
    rows = [(name, ms(call), f"{paired:5.2f}x", alone[name])
            for name, (call, paired) in quiet.items()]
    rows.append(("SDK recording", ms(recorded["SDK recording"][0]),
                 f"{recorded['SDK recording'][1]:5.2f}x", alone["SDK recording"]))
    table(f"telemetry: {label}, tool echo, {ROUNDS} interleaved rounds of {CALLS} calls",
          [("setting", "call (p50)", "ratio vs off", "telemetry alone per request"), *rows])
    print("  (ratio: the median over rounds of a round's p50 / the same round's p50 with "
          "telemetry off;\n   off: as without OpenTelemetry installed; within the noise floor "
          "means no measurable cost)")


if __name__ == "__main__":
    main()
