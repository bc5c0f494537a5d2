"""Storage work in supervised worker processes (issue 27), against the real server.

The server is ``lance-ns serve --impl dir`` in its own process on a free 127.0.0.1 port
(``serve_process.lance_ns_serve``), run under ``prlimit --as`` so that a failure of the
isolation cannot take the test machine's memory: one module server with two storage
workers of 3 GiB address space each; one with a 3 s ``--request-timeout`` and no queue
(``--max-queued-requests 0``); one per test for SIGTERM (a 1 s ``--shutdown-grace``) and
for ``--storage-workers 0``. Each attack is a request a client could send:

* a filter that overflows the query engine's stack (SIGSEGV) fails alone with 500/18,
  the server keeps its PID and answers the next request;
* a QueryTable asking for the vector column 2,000 times (k=20,000 over 3,000 rows of 64-d
  vectors: GiBs) fails with 500/18 once its worker hits the memory limit; the server's
  RSS stays small;
* while slow requests hold both workers, DescribeTable (in the server process) still
  answers at once, and one storage request more is refused (503/17), not held;
* a predicate that takes ~10 s of CPU is answered 503/17 at the deadline and the worker
  running it is killed (its PID is gone, so its CPU stops);
* a client that disconnects mid-request has its worker killed within seconds;
* SIGTERM while such work runs stops the server (exit 0) within the shutdown grace.

Worker PIDs are the server's children whose command line is multiprocessing's spawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pytest
from serve_process import ServeProcess, lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async import errors, server
from lance_namespace_async.server._storage_workers import StorageWorkerLimits

pytest.importorskip("uvicorn", reason="the server extra is not installed")
pytest.importorskip("pebble", reason="the server extra is not installed")
if shutil.which("prlimit") is None:  # pragma: no cover - util-linux is everywhere we test
    pytest.skip("prlimit is needed to bound the server's memory", allow_module_level=True)

#: the server and everything it starts stay under this address space
SERVER_ADDRESS_SPACE = 16 * 2**30
WORKER_MEMORY_MIB = 3072
#: the request limits (_request_limits) refuse every attack below before a worker sees it;
#: these tests are about the second line of defence, so their servers raise those limits
#: far enough for the attacks to reach a worker
ATTACKS_PASS_THE_REQUEST_LIMITS = (
    "--max-expression-bytes",
    "10000000",
    "--max-expression-operators",
    "1000000",
    "--max-expression-amplification",
    "1000000000",
    "--max-k",
    "1000000000",
)
#: ``id + id + ... > 0``: this many additions overflow the query engine's stack in a
#: worker thread within seconds (700 already does on a process's main thread)
CRASH_DEPTH = 20_000
#: rows of the slow table: ``length(repeat(s, 8000)) > 0`` takes ~10 s of CPU over them
SLOW_ROWS = 100_000
SLOW_PREDICATE = "length(repeat(s, 8000)) > 0"
#: what the server's own RSS may reach while its workers are bombed
SERVER_RSS_MB = 600


def _vectors(rows: int, dim: int) -> pa.Table:
    values = pa.array(np.random.default_rng(0).random(rows * dim, dtype=np.float32))
    return pa.table(
        {"id": pa.array(range(rows)), "vector": pa.FixedSizeListArray.from_arrays(values, dim)}
    )


def _root(tmp: Path) -> Path:
    root = tmp / "root"
    root.mkdir()
    ns = lna.connect_sync("dir", {"root": str(root)})
    ns.create_table({"id": ["vectors"]}, _vectors(3_000, 64))
    ns.create_table(
        {"id": ["slow"]},
        pa.table({"id": pa.array(range(SLOW_ROWS)), "s": pa.array(["abcdefgh"] * SLOW_ROWS)}),
    )
    ns.close()
    return root


@contextlib.contextmanager
def _server(root: Path, *options: str, warm: bool = True) -> Iterator[ServeProcess]:
    prefix = ("prlimit", f"--as={SERVER_ADDRESS_SPACE}")
    arguments = (
        "--log-level",
        "error",
        "--storage-workers",
        "2",
        *ATTACKS_PASS_THE_REQUEST_LIMITS,
        *options,
    )
    with lance_ns_serve({"root": str(root)}, *arguments, prefix=prefix) as served:
        assert worker_pids(served) == set()  # none before the first storage request
        if warm:
            _warm_up(served)
        yield served


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _root(tmp_path_factory.mktemp("workers"))


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[ServeProcess]:
    options = ("--worker-memory", str(WORKER_MEMORY_MIB))
    with _server(root, *options) as served:
        yield served


def _client(served: ServeProcess) -> httpx.Client:
    return httpx.Client(base_url=served.uri, timeout=120)


def worker_pids(served: ServeProcess) -> set[int]:
    """The server's storage workers: its children started by multiprocessing's spawn."""
    pids: set[int] = set()
    for task in Path(f"/proc/{served.process.pid}/task").iterdir():
        with contextlib.suppress(OSError):
            pids.update(int(pid) for pid in (task / "children").read_text().split())
    workers = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                workers.add(pid)
    return workers


def _warm_up(served: ServeProcess) -> None:
    """Start the workers (the first storage request does) and wait until both answer.

    A worker's start (an interpreter, the package, pylance) counts against a request's
    deadline: on a loaded machine the first requests of a short-deadline server may
    time out, and are retried.
    """
    deadline = time.monotonic() + 60
    with _client(served) as client:
        answered = 0
        while answered < 4:
            response = client.post("/v1/table/vectors/count_rows", json={})
            if response.status_code == 200:
                answered += 1
            else:
                assert response.status_code == 503, response.text
                assert time.monotonic() < deadline, "the storage workers did not start"
    _wait_for_workers(served, 2)


def _wait_for_workers(served: ServeProcess, count: int) -> set[int]:
    deadline = time.monotonic() + 30
    while len(pids := worker_pids(served)) < count:
        assert time.monotonic() < deadline, "the storage workers did not start"
        time.sleep(0.05)
    return pids


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent to reap it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone_within(pids: set[int], seconds: float) -> float:
    """Seconds until one of ``pids`` no longer runs (fails past ``seconds``)."""
    start = time.monotonic()
    while all(_alive(pid) for pid in pids):
        assert time.monotonic() - start < seconds, f"no worker of {pids} was killed"
        time.sleep(0.02)
    return time.monotonic() - start


def _assert_serves(served: ServeProcess) -> None:
    """The server is the same process and answers storage and catalog requests."""
    assert served.process.poll() is None
    with _client(served) as client:
        assert client.post("/v1/table/vectors/count_rows", json={}).json() == 3_000
        assert client.post("/v1/table/vectors/describe", json={}).status_code == 200


def _error(response: httpx.Response, status: int, code: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code, body
    return str(body["error"])


def test_a_crash_in_native_code_fails_that_request_alone(served: ServeProcess) -> None:
    crashing = "id" + " + id" * CRASH_DEPTH + " > 0"
    request = {"filter": crashing, "k": 3, "vector": {"single_vector": []}}
    with _client(served) as client:
        response = client.post("/v1/table/vectors/query", json=request)
    message = _error(response, 500, 18)
    assert "storage worker running this request died (SIGSEGV" in message
    _assert_serves(served)
    _wait_for_workers(served, 2)  # replaced


def test_a_memory_bomb_hits_the_worker_limit_not_the_server(served: ServeProcess) -> None:
    # each row's string grows to 400 MB: a batch of rows is far past the worker's limit
    request = {"predicate": "length(repeat(s, 50000000)) > 0"}
    with _client(served) as client:
        response = client.post("/v1/table/slow/count_rows", json=request)
    message = _error(response, 500, 18)
    assert "storage worker running this request" in message
    assert served.rss_mb < SERVER_RSS_MB
    _assert_serves(served)


def test_a_client_that_disconnects_has_its_work_killed(served: ServeProcess) -> None:
    before = _wait_for_workers(served, 2)
    with _slow_request(served.port):
        time.sleep(1.0)  # the worker is busy with the predicate by now
    assert _gone_within(before, 5.0) < 5.0
    _assert_serves(served)


def _slow_request(port: int) -> socket.socket:
    """A raw connection sending the slow CountTableRows (close it to hang up)."""
    body = json.dumps({"predicate": SLOW_PREDICATE}).encode()
    head = (
        f"POST /v1/table/slow/count_rows HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(head + body)
    return sock


@pytest.fixture(scope="module")
def short_deadline(root: Path) -> Iterator[ServeProcess]:
    """A server whose storage requests may take 3 s, with no queue beyond its 2 workers."""
    with _server(root, "--request-timeout", "3", "--max-queued-requests", "0") as served:
        yield served


def test_catalog_requests_do_not_wait_for_busy_workers(short_deadline: ServeProcess) -> None:
    served = short_deadline
    busy = [_slow_request(served.port) for _ in range(2)]  # both workers
    try:
        time.sleep(0.5)
        with _client(served) as client:
            start = time.monotonic()
            assert client.post("/v1/table/slow/describe", json={}).status_code == 200
            # waiting for a worker would take >= 2.5 s (until the busy ones' deadline)
            assert time.monotonic() - start < 2.0
            # no queue: one more storage request is refused at once, not held
            start = time.monotonic()
            response = client.post("/v1/table/vectors/count_rows", json={})
            assert "busy" in _error(response, 503, 17)
            assert time.monotonic() - start < 1.0
    finally:
        for sock in busy:
            sock.close()


def test_storage_work_past_its_deadline_is_503_and_killed(short_deadline: ServeProcess) -> None:
    served = short_deadline
    before = worker_pids(served)
    with _client(served) as client:
        start = time.monotonic()
        response = client.post("/v1/table/slow/count_rows", json={"predicate": SLOW_PREDICATE})
        took = time.monotonic() - start
    assert "timed out" in _error(response, 503, 17)
    assert 2.9 < took < 6.0
    assert _gone_within(before, 3.0) < 3.0
    _assert_serves(served)


def test_sigterm_stops_the_server_while_storage_work_runs(root: Path) -> None:
    with _server(root, "--shutdown-grace", "1", warm=False) as served:
        answers: list[int | str] = []

        def slow_request() -> None:
            with _client(served) as client:
                try:
                    response = client.post(
                        "/v1/table/slow/count_rows", json={"predicate": SLOW_PREDICATE}
                    )
                    answers.append(response.status_code)
                except httpx.HTTPError as exc:
                    answers.append(type(exc).__name__)

        thread = threading.Thread(target=slow_request)
        thread.start()
        workers = _wait_for_workers(served, 2)  # started by the request
        time.sleep(1.0)  # one of them runs it
        start = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(timeout=15)
        stopped_in = time.monotonic() - start
        thread.join(timeout=15)
        assert served.process.returncode == 0
        assert stopped_in < 6.0  # 1 s of grace, then the worker is killed
        assert answers  # the client was answered or disconnected, not left hanging
        assert not any(_alive(pid) for pid in workers)


# -- configuration ---------------------------------------------------------------------------


def test_storage_workers_0_serves_storage_in_the_server_process(root: Path) -> None:
    prefix = ("prlimit", f"--as={SERVER_ADDRESS_SPACE}")
    options = ("--log-level", "error", "--storage-workers", "0")
    with lance_ns_serve({"root": str(root)}, *options, prefix=prefix) as served:
        _assert_serves(served)
        assert worker_pids(served) == set()


@pytest.mark.parametrize(
    "limits",
    [
        {"workers": -1},
        {"workers": True},
        {"memory_mib": 100},  # below what pylance reserves before its first request
        {"request_timeout": 0},
        {"request_timeout": float("inf")},
        {"max_queued": -1},
        {"shutdown_grace": -1},
    ],
)
def test_limits_out_of_range_are_refused(limits: dict[str, object]) -> None:
    with pytest.raises(errors.InvalidInputError):
        StorageWorkerLimits(**limits)  # type: ignore[arg-type]


def test_workers_need_an_impl_name_not_a_namespace_instance(tmp_path: Path) -> None:
    namespace = lna.connect("dir", {"root": str(tmp_path)})
    try:
        with pytest.raises(errors.InvalidInputError, match="impl name"):
            server.serve(namespace, storage_workers=StorageWorkerLimits(workers=2))
    finally:
        asyncio.run(namespace.aclose())


def test_lance_ns_serve_refuses_a_worker_memory_too_small(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "lance_namespace_async._cli", "serve", "--impl", "dir"]
    result = subprocess.run(
        [*command, "--prop", f"root={tmp_path}", "--worker-memory", "100"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "memory_mib must be >= 2048" in result.stderr
