"""``lance-ns serve --workers N`` and ``--config`` (issue 33), against the real process.

Servers: ``lance-ns serve`` started as an operator starts it (its own process group of a
supervisor and N serving processes on a free 127.0.0.1 port) over a directory catalog on a
temp folder; for the SIGTERM drain, ``--impl rest`` in front of our adapter over a directory
catalog (``uvicorn_thread.UvicornThread``, in this process) behind ``fault_proxy.FaultProxy``,
which holds each DescribeTable answer for a while so that 50 of them are in flight.

* two workers serve 64 concurrent clients (each its own connection) with no error and no
  duplicated side effect: of 32 CreateNamespace and 32 DeclareTable of one name, one
  succeeds and the others get the typed "exists" error; 32 distinct ones all succeed; and
  every client then sees every table, whichever worker answers;
* MergeInsertIntoTable's per-table lock holds across two processes (its flock; shown on two
  lock holders sharing a lock directory: 16 concurrent upserts of the same 5,000 keys through
  two workers kept each key once even with no lock at all here, so the real server cannot
  show the lock's effect);
* SIGTERM during 50 in-flight DescribeTable calls loses none and exits 0 (1 and 2 workers);
  SIGHUP during 20 lets them finish on the old workers while new ones take over;
* a worker killed with SIGKILL is started again and the port keeps answering; dead workers
  are restarted with backoff and restart listeners hear of each (the supervisor run in
  the test's process over a program that exits at once);
* SIGHUP with a changed config file swaps the backend (a new root) in; a broken file or an
  unknown key keeps the running configuration, and a changed port is logged and ignored;
* the config file's keys are serve's long options; the command line wins; an unknown key is
  a usage error naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fault_proxy import FaultProxy
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async import server
from lance_namespace_async._cli import main as cli_main
from lance_namespace_async.server._table_locks import TableLocks

pytest.importorskip("uvicorn", reason="the server extra is not installed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Served:
    def __init__(self, process: subprocess.Popen[str], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def workers(self) -> set[int]:
        """The serving processes: the supervisor's children."""
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return {int(pid) for pid in path.read_text().split()}

    def stderr(self) -> str:
        return self.log.read_text()


@contextlib.contextmanager
def serving(tmp_path: Path, *args: str, port: int | None = None) -> Iterator[Served]:
    """``lance-ns serve *args --port P``; SIGTERM at exit, which must end in status 0."""
    port = port or _free_port()
    log = tmp_path / f"serve-{port}-{time.monotonic_ns()}.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lance_namespace_async._cli",
                "serve",
                *args,
                "--port",
                f"{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            text=True,
        )
    served = Served(process, port, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{served.uri}/v1/namespace/%24/list", timeout=5).status_code:
                    break
            assert process.poll() is None, served.stderr()
            assert time.monotonic() < deadline, "lance-ns serve did not start"
            time.sleep(0.1)
        yield served
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert process.returncode == 0, served.stderr()


def _dir_args(root: Path, *extra: str) -> tuple[str, ...]:
    return ("--impl", "dir", "--prop", f"root={root}", "--storage-workers", "0", *extra)


def _wait_for(check: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


# -- two workers, 64 clients -------------------------------------------------------------------


async def _each_on_its_own_connection(
    uri: str, requests: list[tuple[str, str]]
) -> list[httpx.Response]:
    async def one(method: str, path: str) -> httpx.Response:
        async with httpx.AsyncClient(base_url=uri, timeout=60) as client:
            return await client.request(method, path, json={})

    return await asyncio.gather(*(one(method, path) for method, path in requests))


def test_two_workers_serve_64_concurrent_clients_with_each_name_created_once(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with serving(tmp_path, *_dir_args(root, "--workers", "2")) as served:
        assert len(served.workers()) == 2
        creates = [("POST", f"/v1/namespace/ns{i}/create") for i in range(32)]
        creates += [("POST", "/v1/namespace/shared/create")] * 32
        answers = asyncio.run(_each_on_its_own_connection(served.uri, creates))
        assert [a.status_code for a in answers[:32]] == [200] * 32
        shared = sorted(a.status_code for a in answers[32:])
        assert shared == [200] + [409] * 31, [a.text for a in answers[32:]]
        assert {a.json()["code"] for a in answers[32:] if a.status_code == 409} == {2}

        declares = [("POST", f"/v1/table/shared%24t{i}/declare") for i in range(32)]
        declares += [("POST", "/v1/table/shared%24same/declare")] * 32
        answers = asyncio.run(_each_on_its_own_connection(served.uri, declares))
        assert [a.status_code for a in answers[:32]] == [200] * 32, [a.text for a in answers]
        same = sorted(a.status_code for a in answers[32:])
        assert same == [200] + [409] * 31, [a.text for a in answers[32:]]
        assert {a.json()["code"] for a in answers[32:] if a.status_code == 409} == {5}

        # whichever worker answers (each keeps its own manifest copy) sees every table
        expected = sorted([f"t{i}" for i in range(32)] + ["same"])
        listings = asyncio.run(
            _each_on_its_own_connection(
                served.uri, [("GET", "/v1/namespace/shared/table/list?limit=1000")] * 16
            )
        )
        for listing in listings:
            assert sorted(listing.json()["tables"]) == expected
        namespaces = httpx.get(f"{served.uri}/v1/namespace/%24/list?limit=1000").json()
        expected_namespaces = sorted([f"ns{i}" for i in range(32)] + ["shared"])
        assert sorted(namespaces["namespaces"]) == expected_namespaces


def test_the_merge_insert_table_lock_holds_across_processes(tmp_path: Path) -> None:
    """Two TableLocks sharing a lock directory stand for two serving processes: a flock is
    held per open file, so they exclude each other exactly as two processes do."""
    first, second = TableLocks(str(tmp_path)), TableLocks(str(tmp_path))
    body = {"id": ["ns", "t"]}
    inside: list[int] = []
    overlap: list[int] = []

    async def upsert(locks: TableLocks, n: int) -> None:
        async with locks.hold("MergeInsertIntoTable", body):
            if inside:
                overlap.append(n)
            inside.append(n)
            await asyncio.sleep(0.02)
            inside.remove(n)

    async def main() -> None:
        await asyncio.gather(*(upsert(first if n % 2 else second, n) for n in range(10)))
        # other tables and other operations do not wait
        async with first.hold("MergeInsertIntoTable", body):
            async with second.hold("MergeInsertIntoTable", {"id": ["ns", "other"]}):
                pass
            async with second.hold("InsertIntoTable", body):
                pass

    asyncio.run(asyncio.wait_for(main(), 10))
    assert overlap == []


# -- SIGTERM drains ------------------------------------------------------------------------------


@contextlib.contextmanager
def _slow_catalog(tmp_path: Path) -> Iterator[FaultProxy]:
    """Our adapter over a directory catalog holding table a$t, behind a fault proxy."""

    async def prepare() -> lna.AsyncLanceNamespace:
        ns = lna.connect("dir", {"root": str(tmp_path / "root")})
        await ns.create_namespace({"id": ["a"]})
        await ns.declare_table({"id": ["a", "t"]})
        return ns

    (tmp_path / "root").mkdir()
    backend = asyncio.run(prepare())
    upstream = UvicornThread(server.create_app(backend), name="upstream", description="upstream")
    proxy = FaultProxy(upstream.start())
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
        upstream.stop()
        asyncio.run(backend.aclose())


def _describe_in_flight(
    served: Served, proxy: FaultProxy, calls: int, signum: signal.Signals
) -> list[httpx.Response]:
    """``calls`` DescribeTable calls, each held 2 s by the proxy; ``signum`` once all of
    them reached the catalog (so are in flight in the server)."""
    proxy.delay_next(calls, 2.0, match=lambda seen: "/describe" in seen.target)

    async def run() -> list[httpx.Response]:
        requests = [("POST", "/v1/table/a%24t/describe")] * calls
        task = asyncio.ensure_future(_each_on_its_own_connection(served.uri, requests))
        deadline = time.monotonic() + 30
        while proxy.pending:  # each delayed answer is a call in flight
            assert time.monotonic() < deadline, proxy.pending
            await asyncio.sleep(0.02)
        served.process.send_signal(signum)
        return await task

    return asyncio.run(run())


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_during_50_in_flight_describe_table_calls_loses_none(
    tmp_path: Path, workers: int
) -> None:
    with (
        _slow_catalog(tmp_path) as proxy,
        serving(
            tmp_path, "--impl", "rest", "--prop", f"uri={proxy.uri}",
            "--storage-workers", "0", "--workers", str(workers),
        ) as served,
    ):  # fmt: skip
        answers = _describe_in_flight(served, proxy, 50, signal.SIGTERM)
        assert [a.status_code for a in answers] == [200] * 50, [a.text for a in answers]
        assert served.process.wait(timeout=30) == 0


def test_sighup_during_in_flight_calls_lets_them_finish_on_the_old_workers(
    tmp_path: Path,
) -> None:
    config = tmp_path / "serve.yaml"
    with _slow_catalog(tmp_path) as proxy:
        config.write_text(
            f"serve:\n  impl: rest\n  prop: {{uri: '{proxy.uri}'}}\n  workers: 2\n"
            "  storage-workers: 0\n"
        )
        with serving(tmp_path, "--config", str(config)) as served:
            old = served.workers()
            answers = _describe_in_flight(served, proxy, 20, signal.SIGHUP)
            assert [a.status_code for a in answers] == [200] * 20, [a.text for a in answers]
            _wait_for(lambda: served.workers().isdisjoint(old), "the old workers did not exit")
            assert len(served.workers()) == 2
            ok = httpx.post(f"{served.uri}/v1/table/a%24t/describe", json={})
            assert ok.status_code == 200


def test_the_supervisor_restarts_dead_workers_with_backoff_and_tells_listeners(
    tmp_path: Path,
) -> None:
    """The supervisor in this process, its "workers" a program that exits after 0.2 s."""
    from lance_namespace_async._cli import serve_supervisor

    heard: list[tuple[int, int | None]] = []
    serve_supervisor.add_worker_restart_listener(lambda slot, status: heard.append((slot, status)))
    supervisor = serve_supervisor.Supervisor(
        command=[sys.executable, "-c", "import time; time.sleep(0.2)"],
        workers=1,
        host="127.0.0.1",
        port=_free_port(),
        shutdown_grace=1.0,
        reload=lambda: ("127.0.0.1", 0, 1),
    )

    def stop_after_three() -> None:
        deadline = time.monotonic() + 20
        while len(heard) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    import threading

    started = time.monotonic()
    threading.Thread(target=stop_after_three, daemon=True).start()
    try:
        assert supervisor.run() == 0
    finally:
        serve_supervisor._restart_listeners.clear()
    assert heard[:3] == [(0, 0), (0, 0), (0, 0)]
    # backoff 0.1, 0.2, 0.4 s between the quick deaths (plus each worker's 0.2 s and start)
    assert time.monotonic() - started >= 0.1 + 0.2 + 3 * 0.2


# -- a dead worker, SIGHUP -----------------------------------------------------------------------


def _scraped(port: int, name: str, **labels: str) -> float:
    """One sample of the supervisor's ``/metrics``, parsed by prometheus-client."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def test_a_killed_worker_is_started_again_and_the_metrics_count_every_worker(
    tmp_path: Path,
) -> None:
    """The supervisor serves ``--metrics-port`` for all workers (prometheus-client's
    multiprocess mode): requests answered by either worker are counted once each, and the
    restart of a killed worker is counted."""
    root = tmp_path / "root"
    root.mkdir()
    metrics = _free_port()
    args = _dir_args(root, "--workers", "2", "--metrics-port", str(metrics))
    with serving(tmp_path, *args) as served:
        listed = "lance_ns_requests_total"
        before = _scraped(metrics, listed, operation="ListNamespaces", status="200")
        with httpx.Client() as client:  # one connection per call: both workers answer
            for _ in range(20):
                answer = client.get(
                    f"{served.uri}/v1/namespace/%24/list", headers={"connection": "close"}
                )
                assert answer.status_code == 200
        counted = _scraped(metrics, listed, operation="ListNamespaces", status="200")
        assert counted - before == 20
        victim = min(served.workers())
        os.kill(victim, signal.SIGKILL)
        _wait_for(
            lambda: len(served.workers()) == 2 and victim not in served.workers(),
            "the killed worker was not replaced",
        )
        assert "exited with status -9; restarting it" in served.stderr()
        assert _scraped(metrics, "lance_ns_worker_restarts_total") == 1
        for _ in range(10):
            assert httpx.get(f"{served.uri}/v1/namespace/%24/list").status_code == 200


def _config(path: Path, root: Path, workers: int = 2) -> None:
    lines = [
        "[serve]",
        'impl = "dir"',
        "storage-workers = 0",
        f"workers = {workers}",
        "[serve.prop]",
        f'root = "{root}"',
    ]
    path.write_text("\n".join(lines) + "\n")


async def _create_namespace(root: Path, name: str) -> None:
    async with lna.connect("dir", {"root": str(root)}) as ns:
        await ns.create_namespace({"id": [name]})


def _namespaces(uri: str) -> list[str]:
    listed: list[str] = httpx.get(f"{uri}/v1/namespace/%24/list").json()["namespaces"]
    return listed


def test_sighup_swaps_in_a_changed_config_and_keeps_it_when_the_new_one_is_broken(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for root, name in ((first, "only_in_first"), (second, "only_in_second")):
        root.mkdir()
        asyncio.run(_create_namespace(root, name))
    config = tmp_path / "serve.toml"
    _config(config, first)
    with serving(tmp_path, "--config", str(config)) as served:
        for _ in range(8):
            assert _namespaces(served.uri) == ["only_in_first"]
        old = served.workers()

        _config(config, second, workers=3)  # the workers change is ignored
        served.process.send_signal(signal.SIGHUP)
        _wait_for(lambda: served.workers().isdisjoint(old), "the old workers did not exit")
        for _ in range(8):
            assert _namespaces(served.uri) == ["only_in_second"]
        assert "workers cannot change without a restart; keeping 2" in served.stderr()
        assert len(served.workers()) == 2

        running = served.workers()
        for reported, broken in enumerate(("[serve\nimpl = ", "[serve]\nno-such-option = 1\n")):
            config.write_text(broken)
            served.process.send_signal(signal.SIGHUP)
            _wait_for(
                lambda n=reported + 1: served.stderr().count("was not reloaded") == n,  # type: ignore[misc]
                "the broken file was not reported",
            )
            assert served.workers() == running
            assert _namespaces(served.uri) == ["only_in_second"]
        assert "unknown key serve.no-such-option" in served.stderr()


# -- the config file -----------------------------------------------------------------------------


def test_config_file_keys_are_the_long_options_and_the_command_line_wins(
    tmp_path: Path,
) -> None:
    from lance_namespace_async._cli import _parser
    from lance_namespace_async._cli.serve import _with_config_file

    config = tmp_path / "c.yaml"
    config.write_text(
        "serve:\n"
        "  impl: dir\n"
        "  prop: {root: /from/file, owner: file}\n"
        "  max_connections: 7\n"
        "  allow-origin: [https://a.example, https://b.example]\n"
        "  expose-storage-options: true\n"
        "  log-level: warning\n"
        "  mount: ['sales=dir:root=/a', 'ml=dir:root=/b']\n"
        "  access-log: json\n"
    )
    parser = _parser()

    def resolved(*argv: str) -> object:
        args = parser.parse_args(list(argv))
        return _with_config_file(parser, args.command_parser, argv, args)[0]

    args = resolved("serve", "--config", str(config))
    assert (args.impl, args.max_connections, args.log_level) == ("dir", 7, "warning")  # type: ignore[attr-defined]
    assert args.allow_origin == ["https://a.example", "https://b.example"]  # type: ignore[attr-defined]
    assert args.expose_storage_options is True  # type: ignore[attr-defined]
    assert sorted(args.prop) == ["owner=file", "root=/from/file"]  # type: ignore[attr-defined]
    # options the other parts of the server add need nothing more here
    assert args.mount == ["sales=dir:root=/a", "ml=dir:root=/b"]  # type: ignore[attr-defined]
    assert args.access_log == "json"  # type: ignore[attr-defined]

    args = resolved(
        "serve", "--config", str(config), "--max-connections", "9", "--allow-origin",
        "https://c.example", "--prop", "root=/from/args", "--impl", "rest",
    )  # fmt: skip
    assert (args.impl, args.max_connections) == ("rest", 9)  # type: ignore[attr-defined]
    assert args.allow_origin == ["https://c.example"]  # type: ignore[attr-defined]
    assert sorted(args.prop) == ["owner=file", "root=/from/args"]  # type: ignore[attr-defined]
    # the parser's defaults are untouched for the next parse
    assert parser.parse_args(["serve"]).max_connections is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("serve:\n  impl: dir\n  no-such: 1\n", "unknown key serve.no-such"),
        ("serve:\n  impl: dir\n  port: s3cr3tvalue\n", "serve.port: must be an integer"),
        ("serve:\n  impl: dir\n  expose-storage-options: s3cr3tvalue\n", "must be true or false"),
        ("serve:\n  impl: dir\n  log-level: s3cr3tvalue\n", "serve.log-level must be one of"),
        ("serve: s3cr3tvalue\n", "'serve' must be a mapping"),
        ("serve:\n  workers: 0\n", "serve.workers: must be >= 1"),
    ],
)
def test_a_bad_config_file_is_a_usage_error_naming_the_key_never_the_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    with pytest.raises(SystemExit) as exited:
        cli_main(["serve", "--config", str(config), "--port", str(_free_port())])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "s3cr3tvalue" not in err


def test_a_config_file_without_a_serve_section_is_only_the_profiles(tmp_path: Path) -> None:
    """A profile file serves as before: one process, no supervisor."""
    root = tmp_path / "root"
    root.mkdir()
    config = tmp_path / "c.toml"
    config.write_text(f'[profiles.local]\nimpl = "dir"\nroot = "{root}"\n')
    with serving(
        tmp_path, "--config", str(config), "--profile", "local", "--storage-workers", "0"
    ) as served:
        assert served.workers() == set()
        assert _namespaces(served.uri) == []


def test_config_file_mounts_as_tables_are_the_mount_strings_values_kept_exactly(
    tmp_path: Path,
) -> None:
    """``[serve.mount.NAME]`` tables (docs/backends/mounts.md) give what ``--mount`` gives:
    a value's commas and backslashes arrive as written, and ``--mount`` on the command line
    replaces the file's mounts."""
    from lance_namespace_async._cli import _parser
    from lance_namespace_async._cli.serve import _with_config_file
    from lance_namespace_async._cli.serve_mounts import mount_connection

    config = tmp_path / "serve.toml"
    config.write_text(
        "[serve]\nport = 2333\n\n"
        '[serve.mount.sales]\nimpl = "dir"\nroot = "/data/a,b\\\\c"\nmax_retries = 3\n\n'
        '[serve.mount.ml]\nimpl = "rest"\nuri = "http://catalog:8181"\n'
    )
    parser = _parser()

    def resolved(*argv: str) -> object:
        args = parser.parse_args(list(argv))
        return _with_config_file(parser, args.command_parser, argv, args)[0]

    args = resolved("serve", "--config", str(config))
    properties = mount_connection(args.mount).properties  # type: ignore[attr-defined]
    assert properties == {
        "mount.sales.impl": "dir",
        "mount.sales.root": "/data/a,b\\c",
        "mount.sales.max_retries": "3",
        "mount.ml.impl": "rest",
        "mount.ml.uri": "http://catalog:8181",
    }
    args = resolved("serve", "--config", str(config), "--mount", "x=dir:root=/x")
    assert args.mount == ["x=dir:root=/x"]  # type: ignore[attr-defined]


def test_a_mount_table_without_its_backend_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('[serve.mount.sales]\nroot = "s3cr3tvalue"\n')
    with pytest.raises(SystemExit) as exited:
        cli_main(["serve", "--config", str(config), "--port", str(_free_port())])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "serve.mount.sales needs impl" in err
    assert "s3cr3tvalue" not in err
