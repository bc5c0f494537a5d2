"""What the storage workers cost per request: ``lance-ns serve`` with and without them.

    .venv/bin/python benchmarks/storage_workers.py             # ~1 min on 2 CPUs
    .venv/bin/python benchmarks/storage_workers.py --calls 50 --rounds 1   # smoke run

Two ``lance-ns serve --impl dir`` processes on 127.0.0.1, each over its own copy of the same
directory (a ``--rows`` x 128-d float32 vector table, and a small table for inserts): one
with ``--storage-workers 0`` (storage work in the server process, as before issue 27),
one with ``--storage-workers 2`` (the default on 2 CPUs). One client (httpx, one keep-alive
connection) sends ``--calls`` sequential requests per operation to each server in turn,
``--rounds`` times:

* DescribeTable (a catalog operation: stays in the server process, should not change);
* CountTableRows with no predicate (a storage operation at its cheapest: the cost of the
  trip to a worker shows most here);
* QueryTable, k-NN k=10 over the vector table (no index: a scan of every vector);
* InsertIntoTable of 10 rows (each a commit).

Per cell: median wall time of a request, and the server's CPU per request (user + system
of the server process and its workers, from /proc). Each cell keeps its best round (the
machine is shared: the least disturbed one). The ratio column is workers / in-process.

Writes benchmarks/results/storage_workers.md (``--output``; smaller runs write under
/tmp/lna-bench/smoke/) and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
from _results import output_path
from rest_crawl import _git_state, _version, process_cpu

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DIM = 128
MODES = {"in-process": "0", "workers": "2"}


@dataclass
class Cell:
    wall_ms: float
    cpu_ms: float


def _table(rows: int) -> pa.Table:
    values = pa.array(np.random.default_rng(0).random(rows * DIM, dtype=np.float32))
    return pa.table(
        {"id": pa.array(range(rows)), "vector": pa.FixedSizeListArray.from_arrays(values, DIM)}
    )


def _build(root: Path, rows: int) -> None:
    import lance_namespace_async as lna

    ns = lna.connect_sync("dir", {"root": str(root)})
    ns.create_table({"id": ["vectors"]}, _table(rows))
    ns.create_table({"id": ["inserts"]}, _table(10))
    ns.close()


def _children(pid: int) -> set[int]:
    pids: set[int] = set()
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in (task / "children").read_text().split())
    return pids


def server_cpu(pid: int) -> float:
    """CPU seconds of the server and its live children (the workers)."""
    return sum(process_cpu(p) or 0.0 for p in (pid, *_children(pid)))


@contextlib.contextmanager
def serving(root: Path, workers: str) -> Iterator[tuple[str, int]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "generated")])}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lance_namespace_async._cli",
            "serve",
            "--impl",
            "dir",
            "--prop",
            f"root={root}",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--max-body-bytes",
            str(64 * 2**20),
            "--storage-workers",
            workers,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("lance-ns serve did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _requests(client: httpx.Client) -> dict[str, Callable[[], httpx.Response]]:
    query = {"vector": {"single_vector": [0.5] * DIM}, "k": 10}
    rows = _ipc(_table(10))
    arrow = {"Content-Type": "application/vnd.apache.arrow.stream"}
    return {
        "DescribeTable": lambda: client.post("/v1/table/vectors/describe", json={}),
        "CountTableRows": lambda: client.post("/v1/table/vectors/count_rows", json={}),
        "QueryTable k-NN k=10": lambda: client.post("/v1/table/vectors/query", json=query),
        "InsertIntoTable 10 rows": lambda: client.post(
            "/v1/table/inserts/insert", content=rows, headers=arrow
        ),
    }


def measure(url: str, pid: int, calls: int) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    with httpx.Client(base_url=url, timeout=120) as client:
        for name, send in _requests(client).items():
            for _ in range(3):  # warm up: every worker opens the table
                send().raise_for_status()
            times = []
            cpu_before = server_cpu(pid)
            for _ in range(calls):
                start = time.perf_counter()
                send().raise_for_status()
                times.append(time.perf_counter() - start)
            cpu = server_cpu(pid) - cpu_before
            cells[name] = Cell(statistics.median(times) * 1000, cpu * 1000 / calls)
    return cells


def _wait_for_workers(url: str, pid: int, count: int) -> None:
    """Workers start with the first storage request; wait until all of them run."""
    httpx.post(f"{url}/v1/table/vectors/count_rows", json={}, timeout=120).raise_for_status()
    deadline = time.monotonic() + 60
    while sum(b"spawn_main" in _cmdline(p) for p in _children(pid)) < count:
        if time.monotonic() > deadline:
            raise SystemExit("the storage workers did not start")
        time.sleep(0.1)
    time.sleep(1.0)  # their imports settle


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="vector table rows")
    parser.add_argument("--calls", type=int, default=200, help="requests per operation")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", help="markdown file (default: results/storage_workers.md)")
    args = parser.parse_args(argv)
    output = output_path(
        parser, args, HERE / "results" / "storage_workers.md", ["rows", "calls", "rounds"]
    )
    load_start = os.getloadavg()[0]
    best: dict[str, dict[str, Cell]] = {mode: {} for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="lna-workers-") as tmp:
        source = Path(tmp) / "source"
        _build(source, args.rows)
        for mode in MODES:
            shutil.copytree(source, Path(tmp) / mode)
        for round_number in range(args.rounds):
            for mode, workers in MODES.items():
                with serving(Path(tmp) / mode, workers) as (url, pid):
                    if workers != "0":
                        _wait_for_workers(url, pid, int(workers))
                    cells = measure(url, pid, args.calls)
                for name, cell in cells.items():
                    kept = best[mode].get(name)
                    best[mode][name] = Cell(
                        min(cell.wall_ms, kept.wall_ms) if kept else cell.wall_ms,
                        min(cell.cpu_ms, kept.cpu_ms) if kept else cell.cpu_ms,
                    )
                print(f"round {round_number + 1} {mode}: done", file=sys.stderr)
    text = _report(args, best, load_start, os.getloadavg()[0])
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)


def _report(
    args: argparse.Namespace,
    best: dict[str, dict[str, Cell]],
    load_start: float,
    load_end: float,
) -> str:
    lines = [
        "# Storage workers: cost per request (benchmarks/storage_workers.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"{_git_state()}; pylance {_version('pylance')}, pebble {_version('pebble')}",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {load_start:.2f} at start, {load_end:.2f} at end",
        f"- `lance-ns serve --impl dir`, `--storage-workers 0` (in-process) vs "
        f"`--storage-workers 2`; {args.calls} sequential requests per operation on one "
        f"keep-alive connection, best of {args.rounds} rounds; vector table {args.rows:,} "
        f"rows x {DIM}-d float32, no index",
        "- wall: median request time seen by the client; server CPU: user + system of the "
        "server process and its workers per request",
        "",
        "| operation | wall in-process (ms) | wall workers (ms) | ratio | "
        "server CPU in-process (ms) | server CPU workers (ms) | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, inproc in best["in-process"].items():
        workers = best["workers"][name]
        lines.append(
            f"| {name} | {inproc.wall_ms:.2f} | {workers.wall_ms:.2f} | "
            f"{workers.wall_ms / inproc.wall_ms:.2f} | {inproc.cpu_ms:.2f} | "
            f"{workers.cpu_ms:.2f} | {workers.cpu_ms / inproc.cpu_ms:.2f} |"
        )
    count_in, count_out = best["in-process"]["CountTableRows"], best["workers"]["CountTableRows"]
    lines += [
        "",
        "DescribeTable stays in the server process: its ratios are the noise of the run. "
        "CountTableRows (no predicate: the cheapest storage request) shows the fixed cost of "
        f"the trip to a worker, {count_out.wall_ms - count_in.wall_ms:.2f} ms of wall time and "
        f"{count_out.cpu_ms - count_in.cpu_ms:.2f} ms of CPU per request (the request and "
        "answer pickled through two pipes, pebble's threads, the worker's event loop); "
        "requests doing real work (k-NN, inserts) pay the same on top of it. Inserts also "
        "alternate between two workers, each with its own pylance caches, so each one "
        "reads the version the other committed.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
