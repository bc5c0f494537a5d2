"""Client CPU per request: our rest backend vs pylance's RestNamespace, same server.

    .venv/bin/python benchmarks/client_cpu.py                 # 1,000 calls per cell, 3 rounds
    .venv/bin/python benchmarks/client_cpu.py --calls 300 --rounds 1   # a smoke run
    .venv/bin/python benchmarks/client_cpu.py --baseline 5d3e9c9       # + that commit's library

Issue 18's first goal, measured on its own: the CPU time the *client process*
spends per DescribeTable and per ListTables (all its threads: pylance's Rust
runtime counts too), with pylance's Rust ``RestAdapter`` serving a 20 x 50
directory catalog (``_catalog``) in its own process on 127.0.0.1 and no latency
proxy. Each contender runs in a fresh process of its own (``--contender``), makes
one warm-up pass over the tables, then ``--calls`` timed calls:

* one at a time (the wall time per call is the third goal's measure), and
* 64 in flight: 64 asyncio tasks for ours, 64 threads sharing one client for pylance.

Contenders: pylance ``RestNamespace``; ours on asyncio and on uvloop with the
default wire (``http_client=auto``), and ours with each other wire named in
``--wires``, and the library of the commit ``--baseline`` names (``git archive``
into a temporary directory, first on that contender's path). Rounds alternate
the contenders; the table shows the median of the rounds. The CPU clock is
``time.process_time()`` of the client process, so the server's work is never
counted. Writes benchmarks/results/client_cpu.md (smoke
runs: under /tmp/lna-bench/smoke/).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "client_cpu.md"
NAMESPACES, TABLES = 20, 50
CONCURRENCY = 64
OPERATIONS = ("describe", "list")


def _jobs(operation: str, calls: int) -> list[list[str]]:
    """The ids the timed calls name: tables for describe, namespaces for list."""
    import _catalog

    if operation == "describe":
        ids = [list(pair) for pair in _catalog.expected_ids(NAMESPACES, TABLES)]
    else:
        ids = [[_catalog.namespace_name(n)] for n in range(NAMESPACES)]
    return [ids[index % len(ids)] for index in range(calls)]


def _measure(run: Callable[[], None], calls: int) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return {
        "cpu_ms": (time.process_time() - cpu) * 1000 / calls,
        "wall_ms": (time.perf_counter() - wall) * 1000 / calls,
    }


def run_pylance(url: str, calls: int) -> dict[str, dict[str, float]]:
    import lance_namespace as lns
    from lance.namespace import RestNamespace

    client = RestNamespace(uri=url)
    call: dict[str, Callable[[list[str]], Any]] = {
        "describe": lambda ident: client.describe_table(lns.DescribeTableRequest(id=ident)),
        "list": lambda ident: client.list_tables(lns.ListTablesRequest(id=ident, limit=1000)),
    }
    results: dict[str, dict[str, float]] = {}
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        barrier = threading.Barrier(CONCURRENCY)
        for future in [pool.submit(barrier.wait, 60) for _ in range(CONCURRENCY)]:
            future.result()  # every thread started before timing
        for operation in OPERATIONS:
            jobs = _jobs(operation, calls)
            for ident in jobs[: min(len(jobs), 1000)]:  # warm-up
                call[operation](ident)

            def one_at_a_time(op: str = operation, todo: list[list[str]] = jobs) -> None:
                for ident in todo:
                    call[op](ident)

            def in_flight(op: str = operation, todo: list[list[str]] = jobs) -> None:
                def worker(index: int) -> None:
                    for ident in todo[index::CONCURRENCY]:
                        call[op](ident)

                for future in [pool.submit(worker, i) for i in range(CONCURRENCY)]:
                    future.result()

            results[f"{operation}/1"] = _measure(one_at_a_time, len(jobs))
            results[f"{operation}/{CONCURRENCY}"] = _measure(in_flight, len(jobs))
    return results


async def time_in_flight(
    call: Callable[[list[str]], Any],
    operation: str,
    jobs: list[list[str]],
    results: dict[str, dict[str, float]],
) -> None:
    """``call`` over ``jobs`` one at a time, then ``CONCURRENCY`` asyncio tasks at once:
    the client's CPU and wall ms per call in ``results["<operation>/<in flight>"]``."""

    async def worker(index: int, step: int) -> None:
        for ident in jobs[index::step]:
            await call(ident)

    for concurrency in (1, CONCURRENCY):
        cpu, wall = time.process_time(), time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for index in range(concurrency):
                group.create_task(worker(index, concurrency))
        results[f"{operation}/{concurrency}"] = {
            "cpu_ms": (time.process_time() - cpu) * 1000 / len(jobs),
            "wall_ms": (time.perf_counter() - wall) * 1000 / len(jobs),
        }


def run_ours(url: str, calls: int, loop: str, wire: str) -> dict[str, dict[str, float]]:
    import lance_namespace_async as lna

    properties = {
        "uri": url,
        "http_client": wire,
        "max_connections": str(CONCURRENCY),
        "max_keepalive_connections": str(CONCURRENCY),
    }
    results: dict[str, dict[str, float]] = {}

    async def main() -> None:
        async with lna.connect("rest", properties) as ns:
            call: dict[str, Callable[[list[str]], Any]] = {
                "describe": lambda ident: ns.describe_table({"id": ident}),
                "list": lambda ident: ns.list_tables({"id": ident, "limit": 1000}),
            }
            for operation in OPERATIONS:
                jobs = _jobs(operation, calls)
                for ident in jobs[: min(len(jobs), 1000)]:  # warm-up
                    await call[operation](ident)

                await time_in_flight(call[operation], operation, jobs, results)

    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())
    return results


def _contenders(wires: Sequence[str], baseline: str | None) -> list[tuple[str, list[str]]]:
    rows = [
        ("pylance RestNamespace (64 threads)", ["pylance"]),
        ("ours, asyncio", ["ours", "asyncio", "auto"]),
        ("ours, uvloop", ["ours", "uvloop", "auto"]),
    ]
    for wire in wires:
        rows.append((f"ours, asyncio, http_client={wire}", ["ours", "asyncio", wire]))
    if baseline:
        rows.append((f"ours at {baseline}, asyncio", ["ours", "asyncio", "auto", baseline]))
    return rows


def _baseline_tree(commit: str) -> Path:
    """The library at ``commit`` (``git archive``, no worktree), for a before/after row."""
    target = Path(tempfile.gettempdir()) / "lna-bench" / f"client_cpu-{commit}"
    if not (target / "lance_namespace_async").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", commit, "lance_namespace_async", "generated"],
            cwd=HERE.parent,
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def _serve(root: Path) -> tuple[subprocess.Popen[str], int]:
    return _start(
        [sys.executable, str(HERE / "_serve.py"), "--impl", "pylance", "--root", str(root)]
    )


def _start(command: list[str]) -> tuple[subprocess.Popen[str], int]:
    """A server process that prints ``PORT <n>`` when it listens (and stops when its stdin
    closes): the process and its port."""
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=HERE
    )
    assert server.stdout is not None
    line = server.stdout.readline().strip()
    if not line.startswith("PORT "):
        server.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return server, int(line.split()[1])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--wires", default="", help="comma-separated extra http_client values")
    parser.add_argument("--baseline", help="a git commit: its library as one more contender")
    parser.add_argument("--output", default=None)
    parser.add_argument("--contender", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    if args.contender:
        kind, *rest = args.contender
        result = (
            run_pylance(args.url, args.calls)
            if kind == "pylance"
            else run_ours(args.url, args.calls, rest[0], rest[1])
        )
        if kind == "ours" and len(rest) == 3:  # the baseline really ran its own library
            import lance_namespace_async

            assert str(_baseline_tree(rest[2])) in lance_namespace_async.__file__
        print(json.dumps(result), flush=True)
        return
    import _catalog
    import _results

    output = _results.output_path(parser, args, RESULTS, ["calls", "rounds"])
    root, _ = _catalog.ensure_catalog(NAMESPACES, TABLES, lambda text: print(text, flush=True))
    contenders = _contenders([wire for wire in args.wires.split(",") if wire], args.baseline)
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name, _ in contenders}
    load_before = os.getloadavg()
    started = time.perf_counter()
    server, port = _serve(root)
    try:
        url = f"http://127.0.0.1:{port}"
        for round_ in range(args.rounds):
            for name, contender in contenders:
                environment = dict(os.environ)
                if len(contender) == 4:  # the baseline's library first on the path
                    tree = _baseline_tree(contender[3])
                    environment["PYTHONPATH"] = f"{tree}{os.pathsep}{tree / 'generated'}"
                answer = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--calls",
                        str(args.calls),
                        "--url",
                        url,
                        "--contender",
                        *contender,
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=HERE,
                    env=environment,
                )
                result = json.loads(answer.stdout.strip().splitlines()[-1])
                runs[name].append(result)
                summary = "  ".join(
                    f"{key} {value['cpu_ms']:.3f}/{value['wall_ms']:.3f}"
                    for key, value in result.items()
                )
                print(f"round {round_ + 1} {name}: cpu/wall ms {summary}", flush=True)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(20)
    load_after = os.getloadavg()
    text = render(runs, args, load_before, load_after, time.perf_counter() - started)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)


def _median(rounds: list[dict[str, dict[str, float]]], key: str, measure: str) -> float:
    return statistics.median(result[key][measure] for result in rounds)


def render(
    runs: dict[str, list[dict[str, dict[str, float]]]],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    seconds: float,
) -> str:
    import lance

    peer = runs["pylance RestNamespace (64 threads)"]
    lines = [
        "# Client CPU per request: our rest backend vs pylance's RestNamespace",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/client_cpu.py`: {os.cpu_count()} CPUs, Python "
        f"{sys.version.split()[0]}, pylance {lance.__version__}. Load average "
        f"{load_before[0]:.2f} at start, {load_after[0]:.2f} at end; {seconds:.0f} s. "
        f"Server: pylance's RestAdapter over a {NAMESPACES} x {TABLES} directory catalog in "
        f"its own process, 0 ms latency. {args.calls:,} timed calls per cell, median of "
        f"{args.rounds} rounds; CPU = the client process's CPU time (all threads) per call. "
        "Ratio = ours / pylance (lower is better).",
        "",
        "| Client | Calls in flight | DescribeTable CPU ms | ratio | wall ms | ratio "
        "| ListTables CPU ms | ratio | wall ms | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rounds in runs.items():
        for concurrency in (1, CONCURRENCY):
            cells = []
            for operation in OPERATIONS:
                key = f"{operation}/{concurrency}"
                for measure in ("cpu_ms", "wall_ms"):
                    ours, theirs = _median(rounds, key, measure), _median(peer, key, measure)
                    cells += [f"{ours:.3f}", f"{ours / theirs:.2f}x"]
            lines.append(f"| {name} | {concurrency} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "With 64 in flight the wall time per call is the inverse of the throughput; client "
        "and server share the machine's CPUs, so it depends on both.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
