"""Prometheus metrics of ``lance-ns serve --metrics-port`` (issue 33).

Server: the real ``lance-ns serve`` process over a directory catalog in a temp directory
(tests/serve_process.py); the metrics port is scraped over HTTP and parsed with
prometheus-client's own parser, after a known workload, so every count is exact.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_process import lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async import errors

ROWS = pa.table({"x": [1, 2, 3]})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` as {(name, sorted labels): value}."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_known_workload_is_counted_exactly(tmp_path: Path) -> None:
    metrics_port = _free_port()
    options = ("--metrics-port", str(metrics_port), "--max-body-bytes", "1024")
    options += ("--max-header-bytes", "1024")
    with lance_ns_serve({"root": str(tmp_path)}, *options) as served:
        before = scrape(metrics_port)
        assert value(before, "lance_ns_requests_in_flight") == 0
        with lna.connect_sync("rest", {"uri": served.uri, "max_retries": "0"}) as ours:
            ours.create_namespace({"id": ["n"]})
            ours.create_table({"id": ["n", "t"]}, ROWS)
            for _ in range(5):
                ours.describe_table({"id": ["n", "t"]})
            for _ in range(2):
                with pytest.raises(errors.TableNotFoundError):
                    ours.describe_table({"id": ["n", "missing"]})
        # a body over --max-body-bytes: 413, counted as a refusal on that limit
        too_large = httpx.post(
            f"{served.uri}/v1/namespace/big/create",
            content=b"{" + b" " * 2000 + b"}",
            headers={"content-type": "application/json"},
        )
        assert too_large.status_code == 413
        # a head over --max-header-bytes: 431 before the application sees it
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as raw:
            raw.sendall(b"GET /v1/namespace/n/list HTTP/1.1\r\nhost: x\r\nx-big: ")
            raw.sendall(b"a" * 2000 + b"\r\n\r\n")
            assert raw.recv(100).startswith(b"HTTP/1.1 431")

        after = scrape(metrics_port)

    def counted(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "lance_ns_requests_total"
    assert counted(requests, operation="CreateNamespace", status="200") == 1
    assert counted(requests, operation="CreateTable", status="200") == 1
    assert counted(requests, operation="DescribeTable", status="200") == 5
    assert counted(requests, operation="DescribeTable", status="404") == 2
    assert counted(requests, operation="CreateNamespace", status="413") == 1
    not_found = str(int(errors.ErrorCode.TABLE_NOT_FOUND))
    assert counted("lance_ns_request_errors_total", operation="DescribeTable", code=not_found) == 2
    assert counted("lance_ns_request_errors_total", operation="CreateNamespace", code="13") == 1
    assert counted("lance_ns_request_duration_seconds_count", operation="DescribeTable") == 7
    assert counted("lance_ns_response_bytes_total", operation="DescribeTable") > 0
    assert value(after, "lance_ns_requests_in_flight") == 0
    refusals = "lance_ns_limit_refusals_total"
    assert counted(refusals, status="413", limit="max_body_bytes") == 1
    assert counted(refusals, status="431", limit="max_header_bytes") == 1
    # CreateTable ran in a storage worker process: the server timed that backend call
    worker_calls = "lance_ns_backend_call_duration_seconds_count"
    worker = {"backend": "storage_workers", "kind": "storage_worker", "outcome": "ok"}
    assert counted(worker_calls, **worker) == 1


def test_the_api_port_never_answers_metrics(tmp_path: Path) -> None:
    metrics_port = _free_port()
    with lance_ns_serve({"root": str(tmp_path)}, "--metrics-port", str(metrics_port)) as served:
        assert httpx.get(f"{served.uri}/metrics").status_code == 404
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").status_code == 200


def test_multiprocess_mode_answers_from_the_shared_directory(tmp_path: Path) -> None:
    """With PROMETHEUS_MULTIPROC_DIR (how several worker processes share one /metrics), the
    values are written there and the metrics port answers from it."""
    shared = tmp_path / "prometheus"
    shared.mkdir()
    root = tmp_path / "catalog"
    root.mkdir()
    metrics_port = _free_port()
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared)}
    with lance_ns_serve(
        {"root": str(root)}, "--metrics-port", str(metrics_port), env=env
    ) as served:
        with lna.connect_sync("rest", {"uri": served.uri, "max_retries": "0"}) as ours:
            for _ in range(3):
                assert ours.list_namespaces({"id": []}).namespaces == []
        samples = scrape(metrics_port)
    assert any(path.suffix == ".db" for path in shared.iterdir())
    assert value(samples, "lance_ns_requests_total", operation="ListNamespaces", status="200") == 3
    assert value(samples, "lance_ns_requests_in_flight") == 0


def test_a_bad_or_taken_metrics_port_is_a_typed_error_before_serving(tmp_path: Path) -> None:
    from lance_namespace_async._core import observe
    from lance_namespace_async.server import _metrics, serve

    namespace = lna.connect("dir", {"root": str(tmp_path)})
    for bad in (0, 70000, "9464", True):
        with pytest.raises(errors.InvalidInputError, match="metrics_port"):
            serve(namespace, port=_free_port(), metrics_port=bad)  # type: ignore[arg-type]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(errors.InvalidInputError, match=f"cannot serve metrics on .*:{port}"):
            serve(namespace, port=_free_port(), metrics_port=port)
    if _metrics._metrics is not None:  # counting stops with the server it was for
        observe.remove_listener(_metrics._metrics)


def test_the_metrics_port_cannot_be_the_api_port(tmp_path: Path) -> None:
    import subprocess
    import sys

    port = str(_free_port())
    command = [sys.executable, "-m", "lance_namespace_async._cli", "serve", "--impl", "dir"]
    command += ["--prop", f"root={tmp_path}", "--port", port, "--metrics-port", port]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    assert "--metrics-port must differ from --port" in finished.stderr
