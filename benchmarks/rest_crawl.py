"""Crawl a 10,000-table REST catalog: lance_namespace_async vs pylance's RestNamespace.

    .venv/bin/python benchmarks/rest_crawl.py            # 50 namespaces x 200 tables
    .venv/bin/python benchmarks/rest_crawl.py --quick    # 10 x 100 smoke run

Everything listens on 127.0.0.1 only and every child process is stopped at the
end. Writes benchmarks/results/rest_crawl.md (a full-size run only; smoke runs write
under /tmp/lna-bench/smoke/) and prints it. See
benchmarks/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import _catalog
import _results
import lance
import lance_namespace as lns
from lance.namespace import RestNamespace as PylanceRest

import lance_namespace_async as lna

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "rest_crawl.md"
LOGS = _catalog.CACHE_ROOT / "logs"
LOOPBACK = "127.0.0.1"
PAGE_SIZE = 1000  # crawl()'s default page size; every contender uses the same
MAX_PAGES = 100_000  # bound on any paging loop


_T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f} s] {message}", flush=True)


# -- measuring -----------------------------------------------------------------------------


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_server_pid: int | None = None


def measure_server(pid: int | None) -> None:
    """Later stopwatches also account the CPU time of process ``pid`` (the server)."""
    global _server_pid
    _server_pid = pid


def process_cpu(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


@dataclass
class Measured:
    seconds: float  # wall time, time.perf_counter()
    client_cpu: float  # this process, time.process_time() (all threads)
    server_cpu: float | None  # the server process, from /proc (10 ms resolution)


class Stopwatch:
    """Wall time, this process's CPU time and the server process's CPU time."""

    def __init__(self) -> None:
        self.pid = _server_pid
        self.server0 = process_cpu(self.pid)
        self.cpu0 = time.process_time()
        self.wall0 = time.perf_counter()

    def stop(self) -> Measured:
        wall = time.perf_counter() - self.wall0
        cpu = time.process_time() - self.cpu0
        server = process_cpu(self.pid)
        spent = None if server is None or self.server0 is None else server - self.server0
        return Measured(wall, cpu, spent)


# -- child processes -----------------------------------------------------------------------


class Child:
    """A helper process speaking line protocol on stdout; stopped by closing its stdin."""

    def __init__(self, name: str, script: str, args: Sequence[str]) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = LOGS / f"{name}.log"
        self._stderr: IO[bytes] = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=HERE,
        )
        self._buffer = b""

    def readline(self, timeout: float) -> str:
        """The next stdout line; ``RuntimeError`` on timeout or exit."""
        assert self.proc.stdout is not None
        deadline = time.perf_counter() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise RuntimeError(f"{self.name}: no answer within {timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(
                        f"{self.name} exited (code {self.proc.poll()}); see {self.log_path}"
                    )
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode().strip()

    def send_line(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def port(self, timeout: float = 60.0) -> int:
        line = self.readline(timeout)
        if not line.startswith("PORT "):
            raise RuntimeError(line.removeprefix("ERROR ").strip() or f"{self.name}: {line!r}")
        return int(line.split()[1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        self._stderr.close()


@contextlib.contextmanager
def child(name: str, script: str, args: Sequence[str]) -> Iterator[Child]:
    process = Child(name, script, args)
    try:
        yield process
    finally:
        process.stop()


# -- results ---------------------------------------------------------------------------------


@dataclass
class Run:
    """One contender of the crawl workload (measured on a prefix when extrapolated)."""

    name: str
    latency_ms: int
    tables: int  # tables of the catalog the row stands for
    requests: int  # HTTP requests of the full workload
    measured: Measured
    measured_tables: int
    measured_requests: int
    note: str = ""

    @property
    def extrapolated(self) -> bool:
        return self.measured_tables < self.tables

    @property
    def seconds(self) -> float:
        """Wall time of the full workload (scaled by requests when extrapolated)."""
        return self.measured.seconds * self.requests / self.measured_requests

    @property
    def tables_per_second(self) -> float:
        return self.tables / self.seconds

    @property
    def client_ms_per_request(self) -> float:
        return self.measured.client_cpu * 1000 / self.measured_requests

    @property
    def server_ms_per_request(self) -> float | None:
        cpu = self.measured.server_cpu
        return None if cpu is None else cpu * 1000 / self.measured_requests


@dataclass
class Throughput:
    """A fixed number of requests: wall time, CPU of the load and of the server."""

    name: str
    requests: int
    measured: Measured

    @property
    def rate(self) -> float:
        return self.requests / self.measured.seconds

    @property
    def client_ms_per_request(self) -> float:
        return self.measured.client_cpu * 1000 / self.requests

    @property
    def server_ms_per_request(self) -> float | None:
        cpu = self.measured.server_cpu
        return None if cpu is None else cpu * 1000 / self.requests

    @property
    def server_cores(self) -> float | None:
        cpu = self.measured.server_cpu
        return None if cpu is None else cpu / self.measured.seconds


@dataclass
class Report:
    namespaces: int
    tables_per_ns: int
    setup_seconds: float | None
    cached_setup_seconds: float | None
    crawl: list[Run] = field(default_factory=list)
    ceiling: list[Throughput] = field(default_factory=list)
    adapters: list[Throughput] = field(default_factory=list)
    adapter_skip_reason: str | None = None
    adapter_tables: int = 0
    git_state: str = "unknown commit"
    notes: list[str] = field(default_factory=list)


# -- contenders: ours ------------------------------------------------------------------------


class _CountingNamespace:
    """Counts the three calls crawl() makes (used only for subset runs)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    async def list_namespaces(self, request: Any) -> Any:
        result = await self.inner.list_namespaces(request)
        self.calls += 1
        return result

    async def list_tables(self, request: Any) -> Any:
        result = await self.inner.list_tables(request)
        self.calls += 1
        return result

    async def describe_table(self, request: Any) -> Any:
        result = await self.inner.describe_table(request)
        self.calls += 1
        return result


def rest_properties(url: str, concurrency: int) -> dict[str, str]:
    return {
        "uri": url,
        "max_connections": str(max(100, concurrency)),
        "max_keepalive_connections": str(max(20, concurrency)),
    }


async def ours_crawl(
    url: str, concurrency: int, max_tables: int | None
) -> tuple[Measured, list[tuple[str, ...]], int | None]:
    """(measurement, table ids, calls counted or None) of crawl(describe=True)."""
    async with lna.connect("rest", rest_properties(url, concurrency)) as ns:
        await ns.list_namespaces({"id": [], "limit": 1})  # the warm-up call
        counting = _CountingNamespace(ns) if max_tables else None
        target = cast(lna.AsyncLanceNamespace, counting or ns)
        found: list[tuple[str, ...]] = []
        watch = Stopwatch()
        async with aclosing(lna.crawl(target, describe=True, concurrency=concurrency)) as tables:
            async for table in tables:
                if table.description is None:
                    raise AssertionError(f"{table.id} came without a description")
                found.append(table.id)
                if max_tables and len(found) >= max_tables:
                    break
        measured = watch.stop()
    return measured, found, counting.calls if counting else None


async def describe_load(
    url: str,
    concurrency: int,
    tables: Sequence[tuple[str, str]],
    list_namespaces: Sequence[str] = (),
    catalog: Sequence[tuple[str, str]] = (),
) -> tuple[Measured, int]:
    """Our client: ListTables of ``list_namespaces`` (paged) + DescribeTable of ``tables``.

    ``concurrency`` workers share one job list; each listing is checked against
    ``catalog`` (every table id). Returns (measurement, requests).
    """
    async with lna.connect("rest", rest_properties(url, concurrency)) as ns:
        await ns.list_namespaces({"id": [], "limit": 1})  # the warm-up call
        jobs: list[tuple[str, tuple[str, ...]]] = [("list", (name,)) for name in list_namespaces]
        jobs += [("describe", table) for table in tables]
        listed: dict[str, list[str]] = {}
        requests = 0

        async def worker(index: int) -> None:
            nonlocal requests
            for kind, ident in jobs[index::concurrency]:
                if kind == "describe":
                    await ns.describe_table({"id": list(ident)})
                    requests += 1
                    continue
                names: list[str] = []
                token: str | None = None
                for _ in range(MAX_PAGES):
                    request: dict[str, Any] = {"id": list(ident), "limit": PAGE_SIZE}
                    if token:
                        request["page_token"] = token
                    page = await ns.list_tables(request)
                    requests += 1
                    names += page.tables
                    token = page.page_token if isinstance(page.page_token, str) else None
                    if not token:
                        break
                listed[ident[0]] = names

        watch = Stopwatch()
        async with asyncio.TaskGroup() as group:
            for index in range(concurrency):
                group.create_task(worker(index))
        measured = watch.stop()
    expected: dict[str, list[str]] = {}
    for namespace, table in catalog:
        expected.setdefault(namespace, []).append(table)
    for name in list_namespaces:
        if sorted(listed[name]) != sorted(expected.get(name, [])):
            raise AssertionError(f"ListTables {name} answered {len(listed[name])} tables")
    return measured, requests


# -- contenders: pylance RestNamespace -----------------------------------------------------


def _pages(call: Callable[[str | None], Any], attribute: str) -> tuple[list[str], int]:
    names: list[str] = []
    token: str | None = None
    for calls in range(1, MAX_PAGES + 1):
        response = call(token)
        names += getattr(response, attribute)
        token = response.page_token
        if not token:
            return names, calls
    raise RuntimeError("paging did not end")


def _list_children(client: PylanceRest, parent: Sequence[str]) -> tuple[list[str], list[str], int]:
    """(child namespaces, tables, requests) of one namespace, every page."""
    children, calls_a = _pages(
        lambda token: client.list_namespaces(
            lns.ListNamespacesRequest(id=list(parent), limit=PAGE_SIZE, page_token=token)
        ),
        "namespaces",
    )
    tables, calls_b = _pages(
        lambda token: client.list_tables(
            lns.ListTablesRequest(id=list(parent), limit=PAGE_SIZE, page_token=token)
        ),
        "tables",
    )
    return children, tables, calls_a + calls_b


def pylance_sequential(
    url: str, max_tables: int | None
) -> tuple[Measured, list[tuple[str, ...]], int]:
    """Depth-first walk in one thread: list (every page), then describe each table."""
    client = PylanceRest(uri=url)
    client.list_namespaces(lns.ListNamespacesRequest(id=[], limit=1))  # the warm-up call
    found: list[tuple[str, ...]] = []
    requests = 0
    stack: list[tuple[str, ...]] = [()]
    watch = Stopwatch()
    while stack and not (max_tables and len(found) >= max_tables):
        parent = stack.pop()
        children, tables, calls = _list_children(client, parent)
        requests += calls
        for name in tables:
            ident = (*parent, name)
            client.describe_table(lns.DescribeTableRequest(id=list(ident)))
            requests += 1
            found.append(ident)
            if max_tables and len(found) >= max_tables:
                break
        stack += [(*parent, child) for child in reversed(children)]
    return watch.stop(), found, requests


def pylance_threads(
    url: str, threads: int, *, shared: bool
) -> tuple[Measured, list[tuple[str, ...]], int]:
    """The same walk from a thread pool: each namespace visit and each describe is a task.

    ``shared``: one RestNamespace for all threads, else one per thread. The pool's
    threads (and per-thread clients, each with its warm-up call) exist before timing.
    """
    local = threading.local()
    shared_client = PylanceRest(uri=url) if shared else None
    barrier = threading.Barrier(threads)
    lock = threading.Lock()
    futures: list[Future[None]] = []
    found: list[tuple[str, ...]] = []
    requests = 0

    def client() -> PylanceRest:
        if shared_client is not None:
            return shared_client
        own: PylanceRest = local.client
        return own

    def prepare() -> None:
        if shared_client is None:
            local.client = PylanceRest(uri=url)
            local.client.list_namespaces(lns.ListNamespacesRequest(id=[], limit=1))
        barrier.wait(timeout=120)  # makes the pool start all its threads now

    def submit(pool: ThreadPoolExecutor, fn: Callable[..., None], *args: Any) -> None:
        future = pool.submit(fn, pool, *args)
        with lock:
            futures.append(future)

    def visit(pool: ThreadPoolExecutor, parent: tuple[str, ...]) -> None:
        nonlocal requests
        children, tables, calls = _list_children(client(), parent)
        with lock:
            requests += calls
        for name in children:
            submit(pool, visit, (*parent, name))
        for name in tables:
            submit(pool, describe, (*parent, name))

    def describe(pool: ThreadPoolExecutor, ident: tuple[str, ...]) -> None:
        nonlocal requests
        client().describe_table(lns.DescribeTableRequest(id=list(ident)))
        with lock:
            requests += 1
            found.append(ident)

    with ThreadPoolExecutor(threads) as pool:
        if shared_client is not None:
            shared_client.list_namespaces(lns.ListNamespacesRequest(id=[], limit=1))  # warm-up
        for future in [pool.submit(prepare) for _ in range(threads)]:
            future.result()
        watch = Stopwatch()
        submit(pool, visit, ())
        done = 0
        while True:  # bounded: futures only grow while tables remain to be found
            with lock:
                pending = futures[done:]
            if not pending:
                break
            for future in pending:
                future.result()
            done += len(pending)
        measured = watch.stop()
    return measured, found, requests


# -- the workload runner -----------------------------------------------------------------------


def verify(name: str, found: Sequence[tuple[str, ...]], expected: set[tuple[str, ...]]) -> None:
    if len(found) != len(expected) or set(found) != expected:
        raise AssertionError(
            f"{name}: found {len(found)} tables ({len(set(found))} distinct), "
            f"expected {len(expected)}"
        )


def verify_prefix(
    name: str, found: Sequence[tuple[str, ...]], want: int, expected: set[Any]
) -> None:
    if len(found) != want or len(set(found)) != want or not set(found) <= expected:
        raise AssertionError(f"{name}: subset run found {len(found)} tables, wanted {want}")


def crawl_runs(
    report: Report,
    url: str,
    latency_ms: int,
    expected: set[tuple[str, ...]],
    full_requests: int | None,
    subset: int | None,
) -> int:
    """All crawl contenders against ``url``; returns the full workload's request count.

    ``subset``: the sequential contenders stop after this many tables (their rows
    are then extrapolated to ``full_requests``).
    """
    total = len(expected)

    def add(run: Run) -> None:
        report.crawl.append(run)
        extra = (
            f" (measured: {run.measured_tables} tables, {run.measured_requests} requests "
            f"in {run.measured.seconds:.2f} s)"
            if run.extrapolated
            else ""
        )
        log(
            f"  {run.name:<36} {latency_ms:>2} ms {run.seconds:8.2f} s "
            f"{run.tables_per_second:7,.0f} tables/s  client {run.client_ms_per_request:.2f} "
            f"ms/req{extra}"
        )

    # pylance, sequential; at full size it also counts the workload's requests
    name = "pylance RestNamespace, sequential"
    measured, found, requests = pylance_sequential(url, subset)
    if subset is None:
        verify(name, found, expected)
        full_requests = requests
        add(Run(name, latency_ms, total, requests, measured, total, requests))
    else:
        assert full_requests is not None
        verify_prefix(name, found, subset, expected)
        add(
            Run(
                name,
                latency_ms,
                total,
                full_requests,
                measured,
                len(found),
                requests,
                "extrapolated",
            )
        )
    assert full_requests is not None

    # pylance, 64 threads: one shared client vs one client per thread
    variants: dict[str, tuple[Measured, int]] = {}
    for shared in (True, False):
        label = "shared client" if shared else "client per thread"
        measured, found, requests = pylance_threads(url, 64, shared=shared)
        verify(f"pylance 64 threads, {label}", found, expected)
        variants[label] = (measured, requests)
        log(f"    (pylance 64 threads, {label}: {measured.seconds:.2f} s)")
    best = min(variants, key=lambda label: variants[label][0].seconds)
    other = next(label for label in variants if label != best)
    measured, requests = variants[best]
    add(
        Run(
            "pylance RestNamespace, 64 threads",
            latency_ms,
            total,
            requests,
            measured,
            total,
            requests,
            f"{best} (faster; {other}: {variants[other][0].seconds:.2f} s)",
        )
    )

    # ours
    for concurrency in (1, 8, 64):
        name = f"ours crawl(concurrency={concurrency})"
        limit = subset if concurrency == 1 else None
        measured, found, calls = asyncio.run(ours_crawl(url, concurrency, limit))
        if limit is None:
            verify(name, found, expected)
            add(Run(name, latency_ms, total, full_requests, measured, total, full_requests))
        else:
            assert calls is not None
            verify_prefix(name, found, limit, expected)
            add(
                Run(
                    name,
                    latency_ms,
                    total,
                    full_requests,
                    measured,
                    len(found),
                    calls,
                    "extrapolated",
                )
            )
    uvloop = _uvloop()
    if uvloop is not None:  # what a user gets from installing uvloop, same client otherwise
        name = "ours crawl(concurrency=64), uvloop"
        measured, found, _ = uvloop.run(ours_crawl(url, 64, None))
        verify(name, found, expected)
        add(Run(name, latency_ms, total, full_requests, measured, total, full_requests))
    return full_requests


def _uvloop() -> Any:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop


def loadgen_run(
    port: int,
    mode: str,
    processes: int,
    concurrency: int,
    tables: int,
    namespaces: int,
    tables_per_ns: int,
) -> Throughput:
    """DescribeTable of ``tables`` tables, split over ``processes`` _loadgen.py processes."""
    share = tables // processes
    with contextlib.ExitStack() as stack:
        children = [
            stack.enter_context(
                child(
                    f"loadgen-{mode}-{index}",
                    "_loadgen.py",
                    [
                        f"--port={port}",
                        f"--mode={mode}",
                        f"--concurrency={concurrency}",
                        f"--namespaces={namespaces}",
                        f"--tables-per-ns={tables_per_ns}",
                        f"--offset={index * share}",
                        f"--count={share}",
                    ],
                )
            )
            for index in range(processes)
        ]
        for process in children:
            if process.readline(120) != "READY":
                raise RuntimeError(f"{process.name} did not get ready")
        server0 = process_cpu(_server_pid)
        for process in children:
            process.send_line("GO")
        results = [json.loads(process.readline(600)) for process in children]
        server1 = process_cpu(_server_pid)
    start = min(result["start"] for result in results)
    end = max(result["end"] for result in results)
    server = None if server0 is None or server1 is None else server1 - server0
    client = "raw HTTP/1.1 keep-alive client" if mode == "raw" else "our REST client"
    return Throughput(
        f"{client}, {processes} process{'es' if processes > 1 else ''} x {concurrency} connections",
        sum(result["requests"] for result in results),
        Measured(end - start, sum(result["cpu"] for result in results), server),
    )


# -- report -----------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def render(report: Report, total_seconds: float) -> str:
    total = report.namespaces * report.tables_per_ns
    setup = (
        f"in {report.setup_seconds:.1f} s (this run)"
        if report.setup_seconds is not None
        else f"(cached from an earlier run; built in {report.cached_setup_seconds:.1f} s)"
    )
    lines = [
        "# REST crawl benchmark",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/rest_crawl.py` at {report.git_state}: {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, pylance {lance.__version__}, lance_namespace_async "
        f"{lna.__version__}, httpx {_version('httpx')}, httpcore {_version('httpcore')}, "
        f"sniffio {_version('sniffio')}. Total runtime {total_seconds:.0f} s.",
        "",
        f"Catalog: {report.namespaces} namespaces x {report.tables_per_ns} declared tables = "
        f"{total:,} tables, built through pylance's `DirectoryNamespace` {setup}. Served by "
        "pylance's Rust `RestAdapter` in its own process; at 20 ms through a loopback TCP "
        "proxy (its own process) that delays every client->server chunk by 20 ms.",
        "",
        "## Crawl + describe every table",
        "",
        "Workload: ListNamespaces and ListTables of the root and of every namespace (every "
        f"page, limit {PAGE_SIZE}), then DescribeTable of each table; every contender must "
        f"find exactly the {total:,} tables. Each contender ran once, after one warm-up call. "
        "CPU columns: CPU time per request of the client process (all threads) and of the "
        "server process.",
        "",
        "| Contender | Latency | Wall time (s) | Tables/s | Requests | Client CPU ms/req "
        "| Server CPU ms/req | Notes |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for run in report.crawl:
        wall = f"~{run.seconds:.1f} \\*" if run.extrapolated else f"{run.seconds:.2f}"
        note = run.note
        if run.extrapolated:
            note = (
                f"extrapolated: measured {run.measured_tables:,} tables / "
                f"{run.measured_requests:,} requests in {run.measured.seconds:.2f} s"
            )
        lines.append(
            f"| {run.name} | {run.latency_ms} ms | {wall} | {run.tables_per_second:,.0f} | "
            f"{run.requests:,} | {run.client_ms_per_request:.2f} | "
            f"{_ms(run.server_ms_per_request)} | {note} |"
        )
    if any(run.extrapolated for run in report.crawl):
        lines += [
            "",
            "\\* extrapolated: the sequential contenders describe only the first tables of "
            "their walk at 20 ms; wall time = measured time x full requests / measured "
            "requests (one request at a time, so time is proportional to requests).",
        ]
    lines += [
        "",
        "### Speedups (wall time ratio, > 1 = ours faster)",
        "",
        "| Latency | ours@64 vs pylance 64 threads | ours@64 vs pylance sequential |",
        "|---:|---:|---:|",
    ]
    for latency in sorted({run.latency_ms for run in report.crawl}):
        runs = {run.name: run for run in report.crawl if run.latency_ms == latency}
        ours = runs["ours crawl(concurrency=64)"]
        threads = runs["pylance RestNamespace, 64 threads"]
        sequential = runs["pylance RestNamespace, sequential"]
        star = " \\*" if sequential.extrapolated else ""
        lines.append(
            f"| {latency} ms | {threads.seconds / ours.seconds:.2f}x | "
            f"{sequential.seconds / ours.seconds:.2f}x{star} |"
        )

    lines += [
        "",
        "## Server ceiling: pylance RestAdapter, DescribeTable, 0 ms",
        "",
        "Each load generator describes the same tables once (split over its processes), "
        "connected and warmed up before timing. Load generators and server share the "
        f"{os.cpu_count()} CPUs, so the best row is a lower bound of what the server can do "
        "on a dedicated machine.",
        "",
        "| Load generator | Requests | Wall time (s) | Requests/s | Server CPU (cores busy) "
        "| Server CPU ms/req | Load-generator CPU ms/req |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for item in report.ceiling:
        cores = "n/a" if item.server_cores is None else f"{item.server_cores:.2f}"
        lines.append(
            f"| {item.name} | {item.requests:,} | {item.measured.seconds:.2f} | "
            f"{item.rate:,.0f} | {cores} | {_ms(item.server_ms_per_request)} | "
            f"{item.client_ms_per_request:.2f} |"
        )
    if report.ceiling:
        ceiling = max(report.ceiling, key=lambda item: item.rate)
        lines += ["", f"Ceiling: **{ceiling.rate:,.0f} requests/s** ({ceiling.name})."]
        for run in report.crawl:
            if run.name == "ours crawl(concurrency=64)" and run.latency_ms > 0:
                rate = run.requests / run.seconds
                lines.append(
                    f"ours crawl(concurrency=64) at {run.latency_ms} ms: {rate:,.0f} requests/s "
                    f"= **{rate / ceiling.rate:.0%} of the ceiling** (64 requests in flight "
                    f"with {run.latency_ms} ms each could do at most "
                    f"{64 * 1000 / run.latency_ms:,.0f} requests/s)."
                )

    lines += ["", "## Adapter vs adapter, 0 ms", ""]
    if report.adapter_skip_reason:
        lines.append(f"Skipped: {report.adapter_skip_reason}.")
    else:
        lines += [
            "Same catalog, same load: our REST client at concurrency 64 doing ListTables of "
            f"every namespace (every page) and DescribeTable of the first "
            f"{report.adapter_tables:,} "
            "tables, after a "
            "warm-up call. Each server runs in its own process; ours is uvicorn as `serve()` "
            f"runs it (http=auto: httptools {_version('httptools')}, asyncio loop, access log "
            "off) serving `create_app(connect('dir', {'root': ...}))`.",
            "",
            "| Server | Requests | Wall time (s) | Requests/s | Server CPU ms/req "
            "| Client CPU ms/req |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for item in report.adapters:
            lines.append(
                f"| {item.name} | {item.requests:,} | {item.measured.seconds:.2f} | "
                f"{item.rate:,.0f} | {_ms(item.server_ms_per_request)} | "
                f"{item.client_ms_per_request:.2f} |"
            )
        if len(report.adapters) == 2:
            pylance_server, our_server = report.adapters
            ratio = our_server.rate / pylance_server.rate
            lines += ["", f"Requests/s ours / pylance: **{ratio:.2f}x**."]
            ours_cpu, pylance_cpu = (
                our_server.server_ms_per_request,
                pylance_server.server_ms_per_request,
            )
            if ours_cpu and pylance_cpu:
                lines[-1] += (
                    f" Server CPU per request ours / pylance: **{ours_cpu / pylance_cpu:.2f}x**."
                )
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"


def _git_state() -> str:
    """The commit under test, and whether the library's files differ from it."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "lance_namespace_async", "generated"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    return f"commit {commit}" + (" + uncommitted library changes" if dirty else "")


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


# -- main ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--tables-per-ns", type=int, default=200)
    parser.add_argument(
        "--quick", action="store_true", help="10 namespaces x 100 tables (a smoke run)"
    )
    parser.add_argument(
        "--subset",
        type=int,
        default=1000,
        help="tables the sequential contenders describe at 20 ms before extrapolating "
        "(0 = all; default 1000)",
    )
    parser.add_argument(
        "--ceiling-tables",
        type=int,
        default=5000,
        help="DescribeTable calls per server-ceiling load generator (default 5000)",
    )
    parser.add_argument(
        "--adapter-tables",
        type=int,
        default=3000,
        help="DescribeTable calls per server in adapter vs adapter (default 3000)",
    )
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help=f"default {RESULTS} for a full-size run; --quick and smaller runs write "
        f"{_results.SMOKE_ROOT}, never the committed results",
    )
    args = parser.parse_args(argv)
    args.output = _results.output_path(
        parser,
        args,
        RESULTS,
        ("namespaces", "tables_per_ns", "subset", "ceiling_tables", "adapter_tables", "delay_ms"),
        quick=args.quick,
    )
    if args.quick:
        args.namespaces, args.tables_per_ns = 10, 100
        args.subset = min(args.subset, 200)
    started = time.perf_counter()
    total = args.namespaces * args.tables_per_ns
    subset = args.subset if 0 < args.subset < total else None
    ceiling_tables = min(args.ceiling_tables, total)
    adapter_tables = min(args.adapter_tables, total)

    root, setup_seconds = _catalog.ensure_catalog(args.namespaces, args.tables_per_ns, log)
    cached = None
    if setup_seconds is None:
        cached = float(json.loads((root / "_bench_catalog.json").read_text())["setup_seconds"])
    report = Report(args.namespaces, args.tables_per_ns, setup_seconds, cached)
    report.adapter_tables = adapter_tables
    report.git_state = _git_state()  # at the start: others may commit while this runs
    pairs = _catalog.expected_ids(args.namespaces, args.tables_per_ns)
    expected: set[tuple[str, ...]] = set(pairs)
    namespace_names = [_catalog.namespace_name(n) for n in range(args.namespaces)]

    with contextlib.ExitStack() as stack:
        server = stack.enter_context(
            child("server-pylance", "_serve.py", ["--impl=pylance", f"--root={root}"])
        )
        pylance_port = server.port()
        measure_server(server.proc.pid)
        log(f"pylance RestAdapter serving on {LOOPBACK}:{pylance_port}")
        proxy = stack.enter_context(
            child(
                "proxy",
                "_latency_proxy.py",
                [f"--target-port={pylance_port}", f"--delay-ms={args.delay_ms}"],
            )
        )
        proxy_port = proxy.port()
        log(f"latency proxy (+{args.delay_ms} ms) on {LOOPBACK}:{proxy_port}")
        direct = f"http://{LOOPBACK}:{pylance_port}"

        # 1. the crawl contenders, 0 ms then 20 ms
        log("crawl + describe, 0 ms (direct):")
        requests = crawl_runs(report, direct, 0, expected, None, None)
        log(f"crawl + describe, {args.delay_ms} ms (via the proxy):")
        crawl_runs(
            report, f"http://{LOOPBACK}:{proxy_port}", args.delay_ms, expected, requests, subset
        )

        # 2. the server's ceiling
        log(f"server ceiling (DescribeTable x {ceiling_tables:,}, 0 ms):")
        for concurrency in (64,):
            measured, count = asyncio.run(
                describe_load(direct, concurrency, pairs[:ceiling_tables], [])
            )
            item = Throughput(
                f"our REST client, in-process, concurrency {concurrency}", count, measured
            )
            report.ceiling.append(item)
            log(f"  {item.name:<60} {item.rate:7,.0f} requests/s")
        for mode, processes, concurrency in (("raw", 1, 8), ("raw", 2, 32)):
            item = loadgen_run(
                pylance_port,
                mode,
                processes,
                concurrency,
                ceiling_tables,
                args.namespaces,
                args.tables_per_ns,
            )
            report.ceiling.append(item)
            log(f"  {item.name:<60} {item.rate:7,.0f} requests/s")

        # 3. adapter vs adapter
        log(
            f"adapter vs adapter (ListTables x {len(namespace_names)}, DescribeTable x "
            f"{adapter_tables:,}, 0 ms):"
        )
        try:
            ours_server = stack.enter_context(
                child("server-ours", "_serve.py", ["--impl=ours", f"--root={root}"])
            )
            ours_port = ours_server.port()
        except RuntimeError as exc:
            reason = str(exc)
            if "our adapter not available" not in reason:
                reason = f"our adapter not available ({reason})"
            report.adapter_skip_reason = reason
            log(f"  skipped: {reason}")
        else:
            log(f"  our adapter (uvicorn) serving on {LOOPBACK}:{ours_port}")
            for label, port, pid in (
                ("pylance RestAdapter (Rust, axum)", pylance_port, server.proc.pid),
                ("ours: create_app + uvicorn", ours_port, ours_server.proc.pid),
            ):
                measure_server(pid)
                measured, count = asyncio.run(
                    describe_load(
                        f"http://{LOOPBACK}:{port}",
                        64,
                        pairs[:adapter_tables],
                        namespace_names,
                        pairs,
                    )
                )
                item = Throughput(label, count, measured)
                report.adapters.append(item)
                log(
                    f"  {label:<34} {item.rate:7,.0f} requests/s, server "
                    f"{_ms(item.server_ms_per_request)} ms CPU/req ({count} requests)"
                )
        measure_server(None)
    log("all servers and helper processes stopped")

    report.notes += [
        "Timing: `time.perf_counter()` around each contender, started after its client is "
        "built and has made one warm-up call (ListNamespaces of the root, limit 1), so one "
        "connection is open; the per-thread pylance variant builds its 64 clients and makes "
        "one warm-up call on each before timing, and both thread variants start the pool's "
        "64 threads before timing. Each contender runs once (no repetitions): expect a few "
        "percent of noise, more if the machine is busy.",
        f"The crawl workload is {requests:,} requests: {requests - total:,} listings "
        f"(ListNamespaces + ListTables of the root and of each namespace) + {total:,} "
        "DescribeTable calls.",
        "pylance thread contenders walk like crawl(): each namespace visit (list child "
        "namespaces + list tables, every page) and each DescribeTable is one pool task.",
        "Our client's pool in every run: `max_keepalive_connections` = max(20, concurrency), "
        "`max_connections` = max(100, concurrency).",
        f"{os.cpu_count()} CPUs are shared by the client, the server and (at "
        f"{args.delay_ms} ms) the proxy, so CPU per request decides most rows at 0 ms.",
        f"CPU per request of the one-at-a-time contenders is higher at {args.delay_ms} ms "
        "than at 0 ms, for clients and server alike: a process that sleeps between requests "
        "pays wake-up and cold-cache costs on each. Compare CPU columns within one latency.",
        "Our adapter's uvicorn binds its port itself (port 0), as `serve()` does, so "
        "accepted sockets get TCP_NODELAY. (Handing uvicorn a socket made with "
        "`socket.socket(AF_INET, SOCK_STREAM)`, protocol 0, makes asyncio skip TCP_NODELAY; "
        "the response's separate header and body writes then wait for a delayed ACK, "
        "~40 ms per keep-alive request.)",
    ]
    text = render(report, time.perf_counter() - started)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print()
    print(text)
    log(f"wrote {args.output}")


if __name__ == "__main__":
    main()
