"""``lance-ns serve --access-log json`` (server._access_log): one bounded JSON line per request.

Servers: real ``lance-ns serve`` processes over directory catalogs on temporary folders
(tests/serve_process.py), driven by pylance's ``RestNamespace`` and by raw HTTP (httpx) for
what pylance never sends (hostile ids, request ids, query strings). The writer's queue is
checked in-process with a stream that blocks.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import lance_namespace as ln
import pyarrow as pa
from serve_process import lance_ns_serve

from lance_namespace_async.server import AccessLog

TOKEN = "access-log-bearer-9c2e"
FIELDS = {
    "time",
    "request_id",
    "client",
    "method",
    "path",
    "operation",
    "id",
    "status",
    "code",
    "duration_ms",
    "request_bytes",
    "response_bytes",
}
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
GENERATED_ID = re.compile(r"^[0-9a-f]{12}-[0-9a-f]+$")  # per-process prefix, counter
QUIET = ("--storage-workers", "0", "--log-level", "error")


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def test_one_line_per_request_with_its_fields_and_never_the_token(tmp_path: Path) -> None:
    from lance.namespace import RestNamespace

    env = {"LOG_TOKEN": TOKEN}
    options = ("--auth-token-env", "LOG_TOKEN", "--access-log", "json", *QUIET)
    authorized = {"Authorization": f"Bearer {TOKEN}"}
    with lance_ns_serve({"root": str(tmp_path)}, *options, env=env) as served:
        base = served.uri
        health = httpx.get(f"{base}/healthz", timeout=30)
        created = httpx.post(
            f"{base}/v1/namespace/sales/create",
            json={},
            headers={**authorized, "x-request-id": "client-req-1"},
            timeout=30,
        )
        peer = RestNamespace(uri=base, **{"header.Authorization": f"Bearer {TOKEN}"})
        data = _ipc(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
        peer.create_table(ln.CreateTableRequest(id=["sales", "t"]), data)
        peer.describe_table(ln.DescribeTableRequest(id=["sales", "t"]))
        missing = httpx.post(
            f"{base}/v1/table/sales%24missing/describe?api_key=query-secret-55",
            json={},
            headers=authorized,
            timeout=30,
        )
        anonymous = httpx.get(f"{base}/v1/namespace/%24/list", timeout=30)
    lines = _lines(served.stderr)

    assert [(line["operation"], line["status"], line["code"]) for line in lines] == [
        ("Healthz", 200, None),
        ("CreateNamespace", 200, None),
        ("CreateTable", 200, None),
        ("DescribeTable", 200, None),
        ("DescribeTable", 404, 4),
        (None, 401, 16),  # refused before routing: the path says what was asked
    ]
    for line in lines:
        assert set(line) == FIELDS
        assert RFC3339_UTC.match(line["time"])
        assert line["client"] == "127.0.0.1"
        assert isinstance(line["duration_ms"], float)
        assert line["duration_ms"] >= 0
    health_line, created_line, create_table, describe, missing_line, anonymous_line = lines
    assert health_line["path"] == "/healthz"
    assert health_line["id"] is None
    # the client's request id is kept and echoed; others get a new one, echoed too
    assert created.headers["x-request-id"] == created_line["request_id"] == "client-req-1"
    assert created_line["id"] == "sales"
    assert created_line["method"] == "POST"
    assert created_line["request_bytes"] == 2  # "{}"
    assert created_line["response_bytes"] == len(created.content)
    for answer, line in (
        (health, health_line),
        (missing, missing_line),
        (anonymous, anonymous_line),
    ):
        assert GENERATED_ID.match(line["request_id"])
        assert answer.headers["x-request-id"] == line["request_id"]
        assert line["response_bytes"] == len(answer.content)
    generated = {line["request_id"] for line in (health_line, missing_line, anonymous_line)}
    assert len(generated) == 3  # one per request
    assert create_table["id"] == describe["id"] == "sales$t"
    assert create_table["request_bytes"] == len(data)
    assert missing_line["id"] == "sales$missing"
    assert missing_line["path"] == "/v1/table/sales%24missing/describe"  # no query string
    assert anonymous_line["path"] == "/v1/namespace/%24/list"
    assert anonymous_line["id"] is None

    assert TOKEN not in served.stderr
    assert "query-secret-55" not in served.stderr
    assert "authorization" not in served.stderr.lower()


def test_a_hostile_id_is_logged_cut_and_escaped_on_one_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    root = tmp_path / "root"
    root.mkdir()
    hostile = "a$\x1b[31mred\x07\r\nforged: line\u2028" + "x" * 20_000
    options = ("--access-log", "json", "--access-log-file", str(log), *QUIET)
    with lance_ns_serve({"root": str(root)}, *options) as served:
        path = f"/v1/table/{quote(hostile, safe='')}/describe"
        refused = httpx.post(
            f"{served.uri}{path}", json={}, headers={"x-request-id": "has space"}, timeout=30
        )
        too_long_id = httpx.post(
            f"{served.uri}/v1/table/t/describe",
            json={},
            headers={"x-request-id": "r" * 129},
            timeout=30,
        )
    assert refused.status_code == 400
    raw = log.read_bytes()
    assert raw.count(b"\n") == 2  # two requests, two lines: nothing split a line
    for line in raw.splitlines():
        assert len(line) < 4096
        assert all(0x20 <= byte < 0x7F for byte in line)  # no control byte, ASCII only
    first, second = (json.loads(line) for line in raw.splitlines())
    assert first["id"] == hostile[:256] + "..."
    assert first["path"] == path[:256] + "..."
    assert first["status"] == 400
    assert first["code"] == 13
    # a request id that is not 1-128 printable characters is replaced, and the new one echoed
    assert GENERATED_ID.match(first["request_id"])
    assert refused.headers["x-request-id"] == first["request_id"]
    assert GENERATED_ID.match(second["request_id"])
    assert too_long_id.headers["x-request-id"] == second["request_id"]


def test_off_by_default_without_request_ids(tmp_path: Path) -> None:
    with lance_ns_serve({"root": str(tmp_path)}, *QUIET) as served:
        answer = httpx.get(f"{served.uri}/v1/namespace/%24/list", timeout=30)
        assert answer.status_code == 200
        assert "x-request-id" not in answer.headers
    assert _lines(served.stderr) == []


def test_access_log_file_needs_json(tmp_path: Path) -> None:
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "lance_namespace_async._cli",
            "serve",
            "--impl",
            "dir",
            "--prop",
            f"root={tmp_path}",
            "--access-log-file",
            str(tmp_path / "a.log"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 2
    assert "--access-log-file needs --access-log json" in finished.stderr
    assert not (tmp_path / "a.log").exists()


class _BlockedStream:
    """A stderr whose reader stopped reading: every write waits for ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.written: list[str] = []

    def write(self, text: str) -> int:
        self.entered.set()
        self.release.wait()
        self.written.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def _finish(log: AccessLog, number: int) -> None:
    from lance_namespace_async.server._access_log import Exchange

    async def nothing(*_: Any) -> Any:
        return None

    scope = {"type": "http", "method": "GET", "headers": [], "client": ("127.0.0.1", 1)}
    exchange = Exchange(nothing, nothing, f"req-{number}")
    exchange.status = 200
    log.finish(exchange, scope, "/healthz", None)


def test_a_blocked_stream_drops_and_counts_lines_instead_of_waiting() -> None:
    stream = _BlockedStream()
    log = AccessLog(stream, max_queued=4)  # type: ignore[arg-type]
    log.start()
    try:
        _finish(log, 0)
        assert stream.entered.wait(5)  # the writer holds line 0, blocked in write()
        started = time.perf_counter()
        for number in range(1, 101):
            _finish(log, number)
        assert time.perf_counter() - started < 0.5  # never waited for the stream
        assert log.dropped == 96  # 4 queued, 96 dropped
    finally:
        stream.release.set()
        log.close()
    written = [json.loads(line) for line in "".join(stream.written).splitlines()]
    assert [line["request_id"] for line in written[:5]] == [f"req-{n}" for n in range(5)]
    assert written[5]["event"] == "access_log_dropped"
    assert written[5]["dropped"] == 96
    assert len(written) == 6


def _raw_answer(port: int, data: bytes, hold: float = 0.0) -> bytes:
    """Send ``data`` on a fresh connection, then read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(data)
        time.sleep(hold)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
        return received


def test_the_limits_the_server_enforced_are_logged(tmp_path: Path) -> None:
    """431, 408 and 503 are refused before the app (a line naming the limit); 413 is the
    app's (a request line with its operation)."""
    options = (
        "--access-log",
        "json",
        "--max-header-bytes",
        "2048",
        "--header-timeout",
        "1",
        "--max-connections",
        "2",
        "--max-body-bytes",
        "100",
        *QUIET,
    )
    with lance_ns_serve({"root": str(tmp_path)}, *options) as served:
        big_head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 3000 + b"\r\n\r\n"
        assert _raw_answer(served.port, big_head).startswith(b"HTTP/1.1 431 ")
        too_large = httpx.post(
            f"{served.uri}/v1/namespace/a/create", json={"properties": {"k": "v" * 200}}, timeout=30
        )
        assert too_large.status_code == 413
        assert _raw_answer(served.port, b"GET /healthz HTTP/1.1\r\n").startswith(b"HTTP/1.1 408 ")
        with (
            socket.create_connection(("127.0.0.1", served.port)),
            socket.create_connection(("127.0.0.1", served.port)),
        ):
            time.sleep(0.2)  # both accepted: the limit is reached
            assert _raw_answer(served.port, b"").startswith(b"HTTP/1.1 503 ")
    lines = _lines(served.stderr)
    refused = [(line["status"], line["code"], line["limit"]) for line in lines if "event" in line]
    assert refused == [
        (431, 13, "max_header_bytes"),
        (408, 13, "header_timeout"),
        (503, 17, "max_connections"),
    ]
    assert all(line["client"] == "127.0.0.1" for line in lines)
    [body_line] = [line for line in lines if "event" not in line]
    assert (body_line["operation"], body_line["status"], body_line["code"]) == (
        "CreateNamespace",
        413,
        13,
    )
