"""LanceDB through our front door (issue 29): per-operation cost against LanceDB's own paths.

    .venv/bin/python benchmarks/lancedb_frontdoor.py            # 100,000 rows, 1,000 + 1,000 calls
    .venv/bin/python benchmarks/lancedb_frontdoor.py --quick    # smoke run: 10,000 rows, 100 calls

Two comparisons, in the same run. In each, both contenders are set up side by side and
every operation is timed in blocks of ``--block`` calls that alternate between them, so
both see the same machine load; the cost per call is the median over the blocks.

1. **in process**: ``lancedb.connect(namespace_client_impl=
   "lance_namespace_async.impls.DirNamespace")`` (our dir backend, through the sync
   facade LanceDB calls from Rust) vs ``namespace_client_impl="dir"`` (LanceDB's own,
   built natively in Rust), each on a fresh folder: ``create_table`` of ``--rows`` rows
   (id int64, ``--dim``-d float32 vectors; ``--creates`` tables each), ``open_table``
   (``--opens``), ``--searches`` vector searches (k=10, no index) and ``--counts``
   ``count_rows()``. Wall time and this process's CPU time (all threads: LanceDB's Rust
   runtime, our portal) per call.
2. **over REST**: LanceDB's own ``rest`` namespace client against ``lance-ns serve``
   (a real process, ``--impl dir``) vs against pylance's Rust ``RestAdapter("dir")``
   (its own process, benchmarks/_serve.py), the same operations, QueryTable pushed down
   (``namespace_client_pushdown_operations=["QueryTable"]``). CreateTable is not pushed
   down: pylance 14.0.2's RestAdapter refuses bodies above 2 MB, so 100,000 rows cannot
   reach it in one request. Wall time per call, the client's CPU and the server
   process's CPU with its children's (lance-ns serve's storage workers), from /proc.
3. **over REST, every search a request**: the same two servers, LanceDB reaching them
   through our ``impls.RestNamespace`` (LanceDB's Python pushdown path, which sends
   every query as a QueryTable request): what each server costs per query.

What reaches the namespace (counted on our facade, and in ``lance-ns serve``'s access
log): ``create_table`` is a DeclareTable (then LanceDB writes the files itself),
``open_table`` a DescribeTable; ``search`` and ``count_rows`` never reach it without
pushdown, and LanceDB 0.40's Rust ``rest`` client sends only a table's first query to
the server even with QueryTable pushed down. So for those two, equal costs are the
expected result and the ratio measures the noise of the machine.

Ratios are ours / theirs per call: in process the goal is <= 1.1x (CPU time, since wall
time is noisy on a shared machine); over REST ours must be no slower (the speed ratio,
theirs / ours in wall time, >= 1.0x).

Writes benchmarks/results/lancedb_frontdoor.md at the full size (benchmarks/_results.py:
a smaller run writes under /tmp/lna-bench/smoke/), and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from _results import output_path
from storage_workers import server_cpu

HERE = Path(__file__).resolve().parent
COMMITTED = HERE / "results" / "lancedb_frontdoor.md"
OPERATIONS = ("create_table", "open_table", "search", "count_rows")


@dataclass
class Block:
    """Some calls of one operation, timed together: totals in seconds."""

    calls: int
    wall: float
    cpu: float
    server: float | None


@dataclass
class Cost:
    """One operation's cost per call: median over its blocks (wall, this process's
    CPU), and the server process's CPU over all of them (its clock ticks are 10 ms)."""

    wall: float
    cpu: float
    server: float | None

    @classmethod
    def of(cls, blocks: list[Block]) -> Cost:
        calls = sum(block.calls for block in blocks)
        servers = [block.server for block in blocks]
        server = None if None in servers else sum(s or 0.0 for s in servers) / calls
        return cls(
            statistics.median(block.wall / block.calls for block in blocks),
            statistics.median(block.cpu / block.calls for block in blocks),
            server,
        )


@dataclass
class Contender:
    db: lancedb.DBConnection
    server_pid: int | None = None
    table: Any = None


def rows(count: int, dim: int) -> pa.Table:
    vectors = np.random.default_rng(0).random((count, dim), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(np.arange(count, dtype=np.int64)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
        }
    )


def measure(calls: int, call: Callable[[], Any], server_pid: int | None) -> Block:
    # the server's CPU includes its children: lance-ns serve's storage workers
    server = None if server_pid is None else server_cpu(server_pid)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    used = None if server_pid is None else server_cpu(server_pid) - (server or 0.0)
    return Block(calls, wall, cpu, used)


def compare(
    contenders: dict[str, Contender], data: pa.Table, args: argparse.Namespace, label: str
) -> dict[str, dict[str, Cost]]:
    """Every operation on every contender, in blocks that alternate between them."""
    names = list(contenders)
    measured: dict[str, dict[str, list[Block]]] = {
        name: {op: [] for op in OPERATIONS} for name in names
    }

    def alternating(block: int) -> list[tuple[str, Contender]]:
        order = names if block % 2 == 0 else names[::-1]
        return [(name, contenders[name]) for name in order]

    def run(op: str, calls: int, per_block: int, call: Callable[[Contender], Any]) -> None:
        for block in range(max(1, calls // per_block)):
            for name, contender in alternating(block):
                done = measure(per_block, lambda c=contender: call(c), contender.server_pid)
                measured[name][op].append(done)
        print(f"{label}: {op} done", flush=True)

    for contender in contenders.values():
        contender.db.create_namespace(["bench"])
    created = iter(range(10**6))

    def create(contender: Contender) -> None:
        name = f"t{next(created)}"
        contender.table = contender.db.create_table(name, data, namespace_path=["bench"])

    run("create_table", args.creates, 1, create)
    for contender in contenders.values():
        assert contender.table.count_rows() == data.num_rows
    run(
        "open_table",
        args.opens,
        args.block,
        lambda c: c.db.open_table(c.table.name, namespace_path=["bench"]),
    )
    query = [0.5] * args.dim

    def search(contender: Contender) -> None:
        assert contender.table.search(query).limit(10).to_arrow().num_rows == 10

    for contender in contenders.values():
        search(contender)  # warm-up: the first query opens the dataset's files
    run("search", args.searches, args.block, search)
    run("count_rows", args.counts, args.block, lambda c: c.table.count_rows())
    return {
        name: {op: Cost.of(blocks) for op, blocks in ops.items()} for name, ops in measured.items()
    }


# -- servers -------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def lance_ns_serve(root: str) -> Iterator[tuple[str, int]]:
    """``lance-ns serve --impl dir`` as an operator runs it."""
    port = free_port()
    script = Path(sys.executable).parent / "lance-ns"
    command = (
        [str(script)] if script.exists() else [sys.executable, "-m", "lance_namespace_async._cli"]
    )
    process = subprocess.Popen(
        [*command, "serve", "--impl", "dir", "--prop", f"root={root}", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("lance-ns serve did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def pylance_rest_adapter(root: str) -> Iterator[tuple[str, int]]:
    """pylance's Rust RestAdapter in its own process (benchmarks/_serve.py)."""
    command = [sys.executable, str(HERE / "_serve.py"), "--impl", "pylance", "--root", root]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("PORT "):
            raise RuntimeError(f"pylance RestAdapter did not start: {line}")
        yield f"http://127.0.0.1:{line.split()[1]}", process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


# -- the two comparisons -------------------------------------------------------------------------


IN_PROCESS = {
    "ours": "lance_namespace_async.impls.DirNamespace",
    "lancedb": "dir",
}


def in_process(data: pa.Table, args: argparse.Namespace) -> dict[str, dict[str, Cost]]:
    with contextlib.ExitStack() as stack:
        contenders = {}
        for name, impl in IN_PROCESS.items():
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"lancedb-{name}-"))
            db = lancedb.connect(
                namespace_client_impl=impl, namespace_client_properties={"root": root}
            )
            contenders[name] = Contender(db)
        return compare(contenders, data, args, "in process")


def over_rest(data: pa.Table, args: argparse.Namespace, client: str) -> dict[str, dict[str, Cost]]:
    with contextlib.ExitStack() as stack:
        contenders = {}
        for name, server in (("ours", lance_ns_serve), ("pylance", pylance_rest_adapter)):
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"lancedb-{name}-"))
            uri, pid = stack.enter_context(server(root))
            db = lancedb.connect(
                namespace_client_impl=client,
                namespace_client_properties={"uri": uri},
                namespace_client_pushdown_operations=["QueryTable"],
            )
            contenders[name] = Contender(db, pid)
        return compare(contenders, data, args, f"over REST ({client})")


# -- report --------------------------------------------------------------------------------------


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3f}"


def render(
    args: argparse.Namespace,
    local: dict[str, dict[str, Cost]],
    rest: dict[str, dict[str, Cost]],
    every_query: dict[str, dict[str, Cost]],
    load: tuple[tuple[float, ...], tuple[float, ...]],
    seconds: float,
) -> str:
    versions = f"lancedb {lancedb.__version__}, pylance {_version('pylance')}"
    lines = [
        "# LanceDB through our front door",
        "",
        f"{datetime.date.today()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, {versions}; load average "
        f"{load[0][0]:.2f} at start, {load[1][0]:.2f} at end; {seconds:.0f} s.",
        f"`benchmarks/lancedb_frontdoor.py --rows {args.rows} --dim {args.dim} "
        f"--searches {args.searches} --counts {args.counts} --opens {args.opens} "
        f"--creates {args.creates} --block {args.block}`: both contenders set up side by side, "
        "every operation timed in blocks of calls that alternate between them (so both see "
        "the same machine load); per call, the median over the blocks.",
        "",
        "## 1. In process: our dir backend vs LanceDB's own dir namespace",
        "",
        "| operation | ours wall ms | LanceDB wall ms | ours CPU ms | LanceDB CPU ms "
        "| CPU ratio | wall ratio | goal (CPU) | met |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for op in OPERATIONS:
        ours, theirs = local["ours"][op], local["lancedb"][op]
        cpu_ratio, wall_ratio = ours.cpu / theirs.cpu, ours.wall / theirs.wall
        lines.append(
            f"| {op} | {ms(ours.wall)} | {ms(theirs.wall)} | {ms(ours.cpu)} | {ms(theirs.cpu)} "
            f"| {cpu_ratio:.2f}x | {wall_ratio:.2f}x | <= 1.1x | "
            f"{'yes' if cpu_ratio <= 1.1 else 'NO'} |"
        )
    lines += [
        *_rest_table(
            "## 2. Over REST: LanceDB's `rest` client → `lance-ns serve` vs → pylance's "
            "RestAdapter",
            "QueryTable pushed down; LanceDB 0.40's Rust client sends only a table's first "
            "query to the server (module docstring), so search and count_rows are the "
            "client's.",
            rest,
        ),
        *_rest_table(
            "## 3. Over REST, every search a request: LanceDB through our `RestNamespace` "
            "→ `lance-ns serve` vs → pylance's RestAdapter",
            "QueryTable pushed down through LanceDB's Python path "
            '(`namespace_client_impl="lance_namespace_async.impls.RestNamespace"`): each '
            "search is a QueryTable request the server answers.",
            every_query,
        ),
    ]
    return "\n".join(lines) + "\n"


def _rest_table(title: str, note: str, measured: dict[str, dict[str, Cost]]) -> list[str]:
    lines = [
        "",
        title,
        "",
        note,
        "",
        "| operation | ours wall ms | pylance wall ms | ours server CPU ms "
        "| pylance server CPU ms | client CPU ms (ours / pylance) | speed ratio | goal | met |",
        "|---|---:|---:|---:|---:|---|---:|---|---|",
    ]
    for op in OPERATIONS:
        ours, theirs = measured["ours"][op], measured["pylance"][op]
        speed = theirs.wall / ours.wall  # >= 1: ours no slower
        lines.append(
            f"| {op} | {ms(ours.wall)} | {ms(theirs.wall)} | {ms(ours.server)} "
            f"| {ms(theirs.server)} | {ms(ours.cpu)} / {ms(theirs.cpu)} | {speed:.2f}x "
            f"| >= 1.0x | {'yes' if speed >= 1.0 else 'NO'} |"
        )
    return lines


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--searches", type=int, default=1000)
    parser.add_argument("--counts", type=int, default=1000)
    parser.add_argument("--opens", type=int, default=200)
    parser.add_argument("--creates", type=int, default=5, help="tables created per contender")
    parser.add_argument("--block", type=int, default=50, help="calls timed together")
    parser.add_argument("--quick", action="store_true", help="10,000 rows, 100 calls, 2 tables")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    sizes = ["rows", "dim", "searches", "counts", "opens", "creates", "block"]
    target = output_path(parser, args, COMMITTED, sizes, quick=args.quick)
    if args.quick:
        args.rows, args.searches, args.counts, args.opens, args.creates = 10_000, 100, 100, 50, 2
    started, load_start = time.perf_counter(), os.getloadavg()
    data = rows(args.rows, args.dim)
    local = in_process(data, args)
    rest = over_rest(data, args, "rest")
    every_query = over_rest(data, args, "lance_namespace_async.impls.RestNamespace")
    load = (load_start, os.getloadavg())
    report = render(args, local, rest, every_query, load, time.perf_counter() - started)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report)
    print(report)
    print(f"written to {target}")


if __name__ == "__main__":
    main()
