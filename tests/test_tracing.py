"""OpenTelemetry spans of the server (issue 33): a span per request continuing the caller's
``traceparent``, a child span per backend call, and the trace carried on to a catalog.

Servers: the adapter in-process (``create_app`` over a directory catalog in a temp
directory, and over the rest backend) with an SDK ``TracerProvider`` of the test's own
(``tracer_provider=``; no global one is set) and its ``InMemorySpanExporter``; and a
real ``lance-ns serve`` process (dir backend) configured only by
``OTEL_TRACES_EXPORTER=console``, whose printed spans show the trace id and parent span
the rest backend's catalog call sent it in ``traceparent``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import lance_namespace_async as lna
from lance_namespace_async._core import observe
from lance_namespace_async.server import _tracing, create_app

ROWS = pa.table({"x": [1, 2, 3]})
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    """A provider of the test's own (``create_app(tracer_provider=...)``), so no global
    provider is left for later tests; its backend-call listener is removed afterwards."""
    provider = TracerProvider()
    yield provider
    for listener in _tracing._listening.values():
        observe.remove_listener(listener)
    _tracing._listening.clear()
    provider.shutdown()


@pytest.fixture
def exporter(provider: TracerProvider) -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return memory


async def _describe(app: Any, table: list[str], headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post(
            f"/v1/table/{'$'.join(table)}/describe",
            json={},
            headers={"content-type": "application/json", **headers},
        )


async def test_a_request_span_continues_the_callers_trace_with_backend_spans_beneath(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as setup:
        setup.create_namespace({"id": ["n"]})
        setup.create_table({"id": ["n", "t"]}, ROWS)
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        app = create_app(ns, tracer_provider=provider)
        exporter.clear()
        answer = await _describe(app, ["n", "t"], {"traceparent": TRACEPARENT})
        assert answer.status_code == 200
        missing = await _describe(app, ["n", "gone"], {})
        assert missing.status_code == 404
    spans = exporter.get_finished_spans()
    requests = [span for span in spans if span.kind == trace.SpanKind.SERVER]
    assert [span.name for span in requests] == ["DescribeTable", "DescribeTable"]
    served, refused = requests
    assert f"{served.context.trace_id:032x}" == TRACE_ID
    assert served.parent is not None
    assert f"{served.parent.span_id:016x}" == PARENT_ID
    assert served.attributes["lance.id"] == "n$t"
    assert served.attributes["http.response.status_code"] == 200
    assert refused.attributes["lance.error.code"] == 4  # TableNotFound
    assert refused.context.trace_id != served.context.trace_id  # no traceparent: a new trace
    children = [
        span
        for span in spans
        if span.parent is not None and span.parent.span_id == served.context.span_id
    ]
    assert children, "the request span has no backend span beneath it"
    for child in children:
        assert child.kind == trace.SpanKind.CLIENT
        assert child.context.trace_id == served.context.trace_id
        assert child.attributes["lance.backend"] == "dir"
    # nothing of a request's headers but its trace context is recorded
    for span in spans:
        assert not any("authorization" in key for key in span.attributes)


# -- the trace carried on to a catalog: our rest backend -> a real lance-ns serve ---------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _traced_server(root: Path, output: Path) -> Iterator[str]:
    """``lance-ns serve`` (dir) printing its spans (console exporter) into ``output``."""
    port = _free_port()
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "catalog",
    }
    command = [sys.executable, "-m", "lance_namespace_async._cli", "serve", "--impl", "dir"]
    command += ["--prop", f"root={root}", "--port", str(port)]
    with output.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert process.poll() is None, process.communicate()[1]
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            process.send_signal(signal.SIGTERM)  # the SDK exports what it holds at exit
            _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr


def _printed_spans(text: str) -> list[dict[str, Any]]:
    """The console exporter's spans: one JSON object after another."""
    decoder, spans, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) != -1:
        span, at = decoder.raw_decode(text, start)
        spans.append(span)
    return spans


async def test_a_catalog_call_carries_the_trace_to_the_catalog_server(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    root, output = tmp_path / "catalog", tmp_path / "spans.txt"
    root.mkdir()
    servers = _traced_server(root, output)
    catalog = next(servers)
    try:
        with lna.connect_sync("rest", {"uri": catalog}) as setup:
            setup.create_namespace({"id": ["n"]})
        async with lna.connect("rest", {"uri": catalog, "max_retries": "0"}) as ns:
            app = create_app(ns, tracer_provider=provider)
            exporter.clear()
            headers = {"traceparent": TRACEPARENT}
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
                answer = await client.post("/v1/namespace/n/describe", json={}, headers=headers)
            assert answer.status_code == 200, answer.text
    finally:
        next(servers, None)
    ours = exporter.get_finished_spans()
    calls = [span for span in ours if span.attributes.get("lance.backend.kind") == "catalog_http"]
    assert calls
    assert all(f"{span.context.trace_id:032x}" == TRACE_ID for span in calls)
    theirs = [
        span for span in _printed_spans(output.read_text()) if span["kind"].endswith("SERVER")
    ]
    received = {(span["context"]["trace_id"], span["parent_id"]) for span in theirs}
    for call in calls:
        # the catalog's request span continues our backend span: same trace, it the parent
        assert (f"0x{TRACE_ID}", f"0x{call.context.span_id:016x}") in received
