"""The directory catalog at 1,000, 10,000 and 100,000 tables: ours against pylance's.

    .venv/bin/python benchmarks/dir_scale.py                       # 1k, 10k, 100k (~10 min)
    .venv/bin/python benchmarks/dir_scale.py --sizes 1000 --calls 5 --rounds 1  # smoke run

Each catalog is one namespace ``bench`` holding N declared tables (``t000000`` …), built
once under ``--cache`` and reused by later runs. Building does not declare N tables one
at a time: pylance 14.0.2 rewrites its whole ``__manifest`` into a new data file on every
write and never deletes the old ones, so a catalog grown that way holds about N²/2 rows
of dead manifest files (measured: 300 declares leave 2.4 MB of them; growing with the
square, that is about 2.7 GB at 10,000 tables and 270 GB at 100,000). It is built as a
migration would: pylance creates
the namespace and one table (so the manifest has pylance's schema and settings), then
the manifest's rows are written in one commit and each table gets the directory and
``.lance-reserved`` marker pylance's DeclareTable makes. The build time is reported.

Each size runs on a fresh copy of its cached catalog, with three clients on the same
directory, each in a process of its own, one call at a time: pylance's
``DirectoryNamespace``, our sync facade (``connect_sync("dir")``) and our async API
(``await`` on an event loop). The clients take turns by round (``--rounds``), and the
sizes' rounds are interleaved (round 1 of every size, then round 2, ...), so the growth
from one size to the next is measured in the same stretches of time. In each round
every client makes ``--calls`` calls of each write and five times as many of each read,
so each one also finds the catalog changed by the others (its first call of a round pays
for that). Per cell: the median CPU time of one call (user + system of the client's
process, every thread), over every round. CPU rather than wall time: the machine is
shared. A process per client: in one process, Lance's background threads bill one
client's work to the next one's calls. Then:

* ListTables, pages of 1,000 (the first page and every later one, ``page_token``);
* a crawl of every table: ``crawl()`` on the async backend, and ``crawl()`` through
  ``lance-ns serve`` (a separate process on 127.0.0.1), each as CPU per table
  (client and server processes), against pylance walking the pages;
* the server's resident memory (VmRSS and its peak, VmHWM) after serving that crawl.

Writes benchmarks/results/dir_scale.md (a full run only; smaller runs write under
/tmp/lna-bench/smoke/) and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import hashlib
import io
import json
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import _results
import lance
import lance_namespace as lns
import pyarrow as pa
from lance.namespace import DirectoryNamespace
from rest_crawl import _git_state, _version, process_cpu

import lance_namespace_async as lna
from lance_namespace_async import models

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "dir_scale.md"
CACHE = Path("/tmp/lna-bench/dir_scale")
NAMESPACE = "bench"
LOOPBACK = "127.0.0.1"

_T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f} s] {message}", flush=True)


# -- the catalogs ----------------------------------------------------------------------------


def table_name(i: int) -> str:
    return f"t{i:06d}"


def build_catalog(cache: Path, size: int) -> tuple[Path, float]:
    """The cached catalog of ``size`` tables (built now if missing) and its build time."""
    root = cache / f"catalog-{size}"
    marker = root / "_built.json"
    if marker.exists():
        return root, float(json.loads(marker.read_text())["seconds"])
    shutil.rmtree(root, ignore_errors=True)
    start = time.perf_counter()
    ns = DirectoryNamespace(root=str(root))
    ns.create_namespace(lns.CreateNamespaceRequest(id=[NAMESPACE]))
    seed = ns.declare_table(lns.DeclareTableRequest(id=[NAMESPACE, "seed"]))
    manifest_uri = str(root / "__manifest")
    schema = lance.dataset(manifest_uri).schema
    ids = [f"{NAMESPACE}${table_name(i)}" for i in range(size)]
    # pylance's form: <8 hex digits>_<object id>
    locations = [f"{hashlib.sha256(x.encode()).hexdigest()[:8]}_{x}" for x in ids]
    rows = pa.table(
        {
            "object_id": [NAMESPACE, *ids],
            "object_type": ["namespace"] + ["table"] * size,
            "location": [None, *locations],
            "metadata": pa.nulls(size + 1, pa.string()),
            "base_objects": pa.nulls(size + 1, schema.field("base_objects").type),
        },
        schema=schema,
    )
    lance.write_dataset(rows, manifest_uri, mode="overwrite")
    for location in locations:
        os.mkdir(root / location)
        (root / location / ".lance-reserved").touch()
    shutil.rmtree(str(seed.location).removeprefix("file://"), ignore_errors=True)
    seconds = time.perf_counter() - start
    marker.write_text(json.dumps({"seconds": seconds, "tables": size}))
    return root, seconds


def work_copy(catalog: Path, work: Path) -> float:
    shutil.rmtree(work, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(["cp", "-a", str(catalog), str(work)], check=True)
    (work / "_built.json").unlink(missing_ok=True)
    return time.perf_counter() - start


def small_table_ipc(rows: int = 10) -> bytes:
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "x": pa.array([1.5] * rows)})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


# -- the clients ------------------------------------------------------------------------------


class Client:
    """One way of calling the catalog: ``call(operation, **fields)`` runs one operation."""

    def __init__(self, name: str, call: Callable[..., Any], close: Callable[[], None]) -> None:
        self.name = name
        self.call = call
        self.close = close


def pylance_client(root: Path) -> Client:
    ns = DirectoryNamespace(root=str(root))

    def call(operation: str, data: bytes | None = None, **fields: Any) -> Any:
        request = getattr(lns, _request_name(operation))(**fields)
        method = getattr(ns, operation)
        return method(request, data) if data is not None else method(request)

    return Client("pylance DirectoryNamespace", call, lambda: None)


def facade_client(root: Path) -> Client:
    ns = lna.connect_sync("dir", {"root": str(root)})

    def call(operation: str, data: bytes | None = None, **fields: Any) -> Any:
        request = getattr(lns, _request_name(operation))(**fields)
        method = getattr(ns, operation)
        return method(request, data) if data is not None else method(request)

    return Client("ours, sync facade", call, ns.close)


def async_client(root: Path) -> Client:
    loop = asyncio.new_event_loop()
    ns = lna.connect("dir", {"root": str(root)})

    def call(operation: str, data: bytes | None = None, **fields: Any) -> Any:
        request = getattr(models, _request_name(operation))(**fields)
        method = getattr(ns, operation)
        awaitable = method(request, data) if data is not None else method(request)
        return loop.run_until_complete(awaitable)

    def close() -> None:
        loop.run_until_complete(ns.aclose())
        loop.close()

    return Client("ours, async API", call, close)


def _request_name(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_")) + "Request"


CLIENTS = {
    "pylance": pylance_client,
    "facade": facade_client,
    "async": async_client,
}


def _serve_client(kind: str, root: str, pipe: Any) -> None:
    """One client in a process of its own: its CPU times are its own alone (in one
    process, Lance's background threads bill one client's work to the next one's call)."""
    client = CLIENTS[kind](Path(root))
    data = small_table_ipc()
    pipe.send(client.name)
    try:
        while True:
            request = pipe.recv()
            if request[0] == "round":
                _, tag, calls, size = request
                pipe.send(run_round(client, tag, calls, size, data, Path(root)))
            elif request[0] == "pages":
                pipe.send(list_pages(client, request[1]))
            else:
                return
    finally:
        client.close()


class ClientProcess:
    """A client (``CLIENTS``) running in a process of its own, asked over a pipe."""

    def __init__(self, kind: str, root: Path) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe()
        self._process = context.Process(target=_serve_client, args=(kind, str(root), theirs))
        self._process.start()
        self.name = str(self._pipe.recv())

    def ask(self, *request: Any) -> Any:
        self._pipe.send(request)
        return self._pipe.recv()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._pipe.send(("stop",))
        self._process.join(60)
        if self._process.is_alive():
            self._process.kill()


# -- per-call measurements ---------------------------------------------------------------------

#: reads are this many times as many calls as writes
READ_FACTOR = 5

OPERATIONS = (
    "declare_table",
    "create_table",
    "register_table",
    "drop_table",
    "describe_table",
    "table_exists",
    "namespace_exists",
)


def timed(samples: list[float], fn: Callable[[], Any]) -> Any:
    start = time.process_time()
    result = fn()
    samples.append(time.process_time() - start)
    return result


def run_round(
    client: Client, tag: str, calls: int, size: int, data: bytes, root: Path
) -> dict[str, list[float]]:
    """``calls`` calls of each operation by ``client``; names carry ``tag``."""
    samples: dict[str, list[float]] = {op: [] for op in OPERATIONS}
    call = client.call

    def each(operation: str, names: Sequence[str], data: bytes | None = None) -> None:
        for name in names:
            fields = {"id": [NAMESPACE, name]}
            if data is None:
                timed(samples[operation], partial(call, operation, **fields))
            else:
                timed(samples[operation], partial(call, operation, data, **fields))

    each("declare_table", [f"d{tag}{i}" for i in range(calls)])
    each("create_table", [f"c{tag}{i}" for i in range(calls)], data)
    for i in range(calls):
        fields = {"id": [NAMESPACE, f"r{tag}{i}"], "location": f"registered/{tag}{i}.lance"}
        timed(samples["register_table"], partial(call, "register_table", **fields))
    each("drop_table", [f"c{tag}{i}" for i in range(calls)])
    reads = calls * READ_FACTOR  # cheap calls: more of them, for a steadier median
    step = max(1, size // reads)
    each("describe_table", [table_name((i * step + 7) % size) for i in range(reads)])
    each("table_exists", [table_name((i * step + 11) % size) for i in range(reads)])
    for _ in range(reads):
        timed(samples["namespace_exists"], partial(call, "namespace_exists", id=[NAMESPACE]))
    return samples


def prepare_registrations(root: Path, tags: Sequence[str], calls: int) -> None:
    """The small datasets RegisterTable registers (written before anything is timed)."""
    table = pa.table({"id": pa.array(range(3), pa.int64())})
    for tag in tags:
        for i in range(calls):
            lance.write_dataset(table, str(root / "registered" / f"{tag}{i}.lance"))


def list_pages(client: Client, size: int) -> tuple[float, float, int]:
    """(CPU of the first page, CPU per later page, pages) listing all of ``bench``."""
    token = None
    first = later = 0.0
    pages = 0
    while True:
        start = time.process_time()
        fields: dict[str, Any] = {"id": [NAMESPACE], "limit": 1000}
        if token:
            fields["page_token"] = token
        answer = client.call("list_tables", **fields)
        spent = time.process_time() - start
        if pages == 0:
            first = spent
        else:
            later += spent
        pages += 1
        token = answer.page_token
        if not token or pages > size // 1000 + 10:
            break
    return first, later / max(1, pages - 1), pages


# -- crawls ---------------------------------------------------------------------------------------


async def _crawl(ns: Any) -> int:
    count = 0
    async with aclosing(lna.crawl(ns)) as tables:
        async for _ in tables:
            count += 1
    return count


def crawl_in_process(root: Path) -> tuple[int, float]:
    """(tables, CPU seconds) of ``crawl()`` over the async backend, started cold."""

    async def run() -> tuple[int, float]:
        ns = lna.connect("dir", {"root": str(root)})
        try:
            start = time.process_time()
            count = await _crawl(ns)
            return count, time.process_time() - start
        finally:
            await ns.aclose()

    return asyncio.run(run())


def pylance_walk(root: Path) -> tuple[int, float]:
    """(tables, CPU seconds) of pylance's DirectoryNamespace listing every page."""
    ns = DirectoryNamespace(root=str(root))
    start = time.process_time()
    count = 0
    token = None
    while True:
        request = lns.ListTablesRequest(id=[NAMESPACE], limit=1000, page_token=token)
        answer = ns.list_tables(request)
        count += len(answer.tables)
        token = answer.page_token
        if not token:
            break
    return count, time.process_time() - start


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


@contextlib.contextmanager
def served(root: Path) -> Iterator[tuple[str, int]]:
    port = _free_port()
    command = [
        str(Path(sys.executable).with_name("lance-ns")),
        "serve",
        "--impl",
        "dir",
        "--prop",
        f"root={root}",
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.2):
                break
            if process.poll() is not None:
                raise RuntimeError(f"lance-ns serve exited: {process.stderr.read()!r}")  # type: ignore[union-attr]
            time.sleep(0.1)
        yield f"http://{LOOPBACK}:{port}", process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def crawl_served(root: Path) -> dict[str, float]:
    """``crawl()`` through ``lance-ns serve``: tables, client and server CPU, server memory."""
    with served(root) as (uri, pid):
        rss_idle = _memory(pid)[0]

        async def run() -> int:
            ns = lna.connect("rest", {"uri": uri})
            try:
                return await _crawl(ns)
            finally:
                await ns.aclose()

        server_start = process_cpu(pid) or 0.0
        start = time.process_time()
        count = asyncio.run(run())
        client_cpu = time.process_time() - start
        server_cpu = (process_cpu(pid) or 0.0) - server_start
        rss, hwm = _memory(pid)
    return {
        "tables": count,
        "client_cpu": client_cpu,
        "server_cpu": server_cpu,
        "rss_idle": rss_idle,
        "rss": rss,
        "hwm": hwm,
    }


# -- one size ------------------------------------------------------------------------------------


@dataclass
class Size:
    """One catalog size under measurement: its working copy and its three clients."""

    size: int
    built: float
    copied: float
    work: Path
    clients: list[ClientProcess]
    samples: dict[str, dict[str, list[float]]]


def open_size(size: int, cache: Path, calls: int, rounds: int) -> Size:
    catalog, built = build_catalog(cache, size)
    work = cache / f"work-{size}"
    copied = work_copy(catalog, work)
    log(f"{size:,} tables: built in {built:.1f} s (cached), copied in {copied:.1f} s")
    prepare_registrations(work, [f"{k}{r}_" for r in range(rounds) for k in "pfa"], calls)
    clients = [ClientProcess(kind, work) for kind in CLIENTS]
    samples = {c.name: {op: [] for op in OPERATIONS} for c in clients}
    return Size(size, built, copied, work, clients, samples)


def measure(
    sizes: Sequence[int], cache: Path, calls: int, rounds: int, *, keep: bool = False
) -> list[dict[str, Any]]:
    """Every size's rounds interleaved (round 1 of each size, then round 2 ...), so the
    growth from one size to the next is measured in the same stretches of time."""
    opened: list[Size] = []
    try:
        for size in sizes:
            opened.append(open_size(size, cache, calls, rounds))
        for r in range(rounds):
            for at in opened:
                for client, letter in zip(at.clients, "pfa", strict=True):
                    got = client.ask("round", f"{letter}{r}_", calls, at.size)
                    for op, samples in got.items():
                        at.samples[client.name][op].extend(samples)
            log(f"round {r + 1}/{rounds} done")
        results = []
        for at in opened:
            pages = {c.name: c.ask("pages", at.size) for c in at.clients}
            for client in at.clients:
                client.close()
            at.clients = []
            results.append(
                {
                    "size": at.size,
                    "built": at.built,
                    "copied": at.copied,
                    "medians": {
                        name: {op: statistics.median(s) for op, s in ops.items()}
                        for name, ops in at.samples.items()
                    },
                    "pages": pages,
                    "crawl_ours": crawl_in_process(at.work),
                    "walk_pylance": pylance_walk(at.work),
                    "served": crawl_served(at.work),
                }
            )
            log(f"{at.size:,} tables: pages and crawls done")
        return results
    finally:
        for at in opened:
            for client in at.clients:
                client.close()
            if not keep:
                shutil.rmtree(at.work, ignore_errors=True)


# -- the report ----------------------------------------------------------------------------------

PYLANCE, FACADE, ASYNC = (
    "pylance DirectoryNamespace",
    "ours, sync facade",
    "ours, async API",
)


def render(results: list[dict[str, Any]], calls: int, rounds: int) -> str:
    ms = 1000.0
    lines = [
        "# The directory catalog at scale (`benchmarks/dir_scale.py`)",
        "",
        f"{datetime.date.today()} · {_git_state()} · pylance {_version('pylance')} · "
        f"Python {platform.python_version()} · {os.cpu_count()} CPUs · "
        f"{calls} calls x {rounds} rounds per operation and client",
        "",
        "Median CPU time of one call (ms, the whole process). Ratio = ours / pylance on "
        "the same directory in the same run (≤ 1.00 is the goal for writes).",
        "",
    ]
    sizes = [r["size"] for r in results]
    header = "| operation | " + " | ".join(
        f"{s:,}: pylance | facade | async | ratio" for s in sizes
    )
    lines.append(header + " |")
    lines.append("|---|" + "---:|---:|---:|---:|" * len(sizes))
    for op in OPERATIONS:
        cells = []
        for r in results:
            m = r["medians"]
            p, f, a = m[PYLANCE][op], m[FACADE][op], m[ASYNC][op]
            cells.append(
                f"{p * ms:.2f} | {f * ms:.2f} | {a * ms:.2f} | {max(f, a) / p if p else 0:.2f}"
            )
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Growth of ours with the catalog (ours at N / ours at the smallest size, "
        "the slower of facade and async):",
        "",
    ]
    base = results[0]["medians"]
    lines.append("| operation | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    lines.append("|---|" + "---:|" * len(sizes))
    for op in OPERATIONS:
        b = max(base[FACADE][op], base[ASYNC][op])
        row = [f"{max(r['medians'][FACADE][op], r['medians'][ASYNC][op]) / b:.2f}" for r in results]
        lines.append(f"| {op} | " + " | ".join(row) + " |")
    lines += ["", "ListTables, pages of 1,000 (CPU ms per page: first page / each later page):", ""]
    lines.append("| client | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    lines.append("|---|" + "---:|" * len(sizes))
    for name in (PYLANCE, FACADE, ASYNC):
        row = []
        for r in results:
            first, later, pages = r["pages"][name]
            row.append(f"{first * ms:.2f} / {later * ms:.2f} ({pages} pages)")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    lines += [
        "",
        "Every table of the catalog (µs of CPU per table; the server's memory after):",
        "",
    ]
    lines.append("| | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    lines.append("|---|" + "---:|" * len(sizes))
    us = 1e6
    rows = {
        "pylance, every page": lambda r: r["walk_pylance"][1] / r["walk_pylance"][0] * us,
        "ours, crawl() in process": lambda r: r["crawl_ours"][1] / r["crawl_ours"][0] * us,
        "ours, crawl() via lance-ns serve (client + server)": lambda r: (
            (r["served"]["client_cpu"] + r["served"]["server_cpu"]) / r["served"]["tables"] * us
        ),
    }
    for label, value in rows.items():
        lines.append(f"| {label} | " + " | ".join(f"{value(r):.1f}" for r in results) + " |")
    lines.append(
        "| lance-ns serve RSS idle / after the crawl / peak (MB) | "
        + " | ".join(
            f"{r['served']['rss_idle']:.0f} / {r['served']['rss']:.0f} / {r['served']['hwm']:.0f}"
            for r in results
        )
        + " |"
    )
    lines.append(
        "| tables crawled (ours / pylance / served) | "
        + " | ".join(
            f"{r['crawl_ours'][0]:,} / {r['walk_pylance'][0]:,} / {r['served']['tables']:,}"
            for r in results
        )
        + " |"
    )
    lines += ["", "Catalog build (cached) and copy per run, seconds:", ""]
    lines.append("| | " + " | ".join(f"{s:,}" for s in sizes) + " |")
    lines.append("|---|" + "---:|" * len(sizes))
    lines.append("| build | " + " | ".join(f"{r['built']:.1f}" for r in results) + " |")
    lines.append("| copy | " + " | ".join(f"{r['copied']:.1f}" for r in results) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--keep-work", action="store_true", help="keep each size's working copy (to look at)"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    args.cache.mkdir(parents=True, exist_ok=True)
    results = measure(sizes, args.cache, args.calls, args.rounds, keep=args.keep_work)
    report = render(results, args.calls, args.rounds)
    target = _results.output_path(parser, args, RESULTS, ("sizes", "calls", "rounds"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report)
    print(report)
    print(f"written to {target}")


if __name__ == "__main__":
    main()
