"""Client CPU per request: our iceberg and unity backends vs our rest backend.

    .venv/bin/python benchmarks/catalog_client_cpu.py                       # the documented run
    .venv/bin/python benchmarks/catalog_client_cpu.py --calls 100 --rounds 1  # a smoke run
    .venv/bin/python benchmarks/catalog_client_cpu.py --baseline 287a519  # + that library

Issue 18's goal for the catalog backends: per-request client CPU within 1.2x the
rest backend's. All three share the HTTP transport (``_transport.transport``); what each adds on
top is the catalog's JSON and its own mapping. Each contender talks to a server in
a process of its own over 127.0.0.1, holding a catalog of the same shape,
20 namespaces x 50 Lance tables:

* rest: pylance's Rust ``RestAdapter`` over the directory catalog of
  ``client_cpu.py`` (``_catalog``);
* iceberg: our look-alike Iceberg REST catalog (tests/iceberg_rest_server.py,
  pyiceberg's SqlCatalog behind uvicorn), warehouse ``wh``, its tables declared
  through our iceberg backend (so they are Lance tables registered in Iceberg);
* unity: our Unity Catalog look-alike (tests/unity_server.py), catalog ``main``,
  tables declared through our unity backend;
* iceberg-reference (``--reference-iceberg``, needs Java and Maven): the iceberg
  backend against the Iceberg project's own REST server (tests/iceberg_real_server.py,
  Jetty in front of a JdbcCatalog), which answers in a fraction of the look-alike's
  time: how much of iceberg's CPU per request is the look-alike's slowness (the client
  wakes once or twice per answer instead of once per burst of answers).

The look-alikes check every request and response against their OpenAPI
contracts, so they are slow servers; that shows in the wall times, never in the
CPU column: the CPU clock is ``time.process_time()`` of the client process only.
Each contender runs in a fresh process, makes a warm-up pass, then ``--calls``
DescribeTable calls and ``--list-calls`` ListTables calls, one at a time and
64 in flight (64 asyncio tasks, one client). Rounds alternate the contenders;
the table shows the median of the rounds and the ratio to rest's. ``--baseline``
adds the iceberg and unity backends of that commit's library (``git archive``,
client_cpu's ``_baseline_tree``) as contenders of the same rounds against the
same servers: a before/after measured under the same load.

Iceberg's ListTables names tables without their format, so the backend loads every
listed table (``list_concurrency`` at a time) to keep the Lance ones: one ListTables
of a 50-table namespace is 51 HTTP requests, and the table also shows its CPU per
HTTP request. Writes benchmarks/results/catalog_client_cpu.md (smoke runs: under
/tmp/lna-bench/smoke/).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from client_cpu import _baseline_tree, _median, _start, time_in_flight

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
RESULTS = HERE / "results" / "catalog_client_cpu.md"
NAMESPACES, TABLES = 20, 50
CONCURRENCY = 64
OPERATIONS = ("describe", "list")
#: the id prefix above the namespaces: the Iceberg warehouse, the Unity catalog
TOP = {"rest": [], "iceberg": ["wh"], "unity": ["main"]}
#: HTTP requests per call (after warm-up): ListTables on Iceberg loads every table
REQUESTS = {
    ("rest", "describe"): 1,
    ("rest", "list"): 1,
    ("iceberg", "describe"): 1,
    ("iceberg", "list"): 1 + TABLES,
    ("unity", "describe"): 1,
    ("unity", "list"): 2,  # a full page of 50 always names a next one (then empty)
}


def _names(operation: str) -> list[list[str]]:
    import _catalog

    if operation == "describe":
        return [list(pair) for pair in _catalog.expected_ids(NAMESPACES, TABLES)]
    return [[_catalog.namespace_name(n)] for n in range(NAMESPACES)]


def _backend(contender: str) -> str:
    """``iceberg@287a519`` (a baseline's), ``iceberg-reference[@287a519]`` -> ``iceberg``."""
    return contender.partition("@")[0].removesuffix("-reference")


def _jobs(kind: str, operation: str, calls: int) -> list[list[str]]:
    ids = [TOP[_backend(kind)] + names for names in _names(operation)]
    return [ids[index % len(ids)] for index in range(calls)]


# -- the catalog servers (their own process) -----------------------------------------------


async def _declare_all(kind: str, properties: dict[str, str]) -> None:
    """Every namespace and table of the catalog, declared through our backend."""
    import lance_namespace_async as lna

    async with lna.connect(kind, properties) as ns:
        for (namespace,) in _names("list"):
            await ns.create_namespace({"id": [*TOP[kind], namespace]})
        limiter = asyncio.Semaphore(8)

        async def declare(ident: list[str]) -> None:
            async with limiter:
                await ns.declare_table({"id": [*TOP[kind], *ident]})

        async with asyncio.TaskGroup() as group:
            for ident in _names("describe"):
                group.create_task(declare(ident))


def serve(kind: str) -> None:
    """Run the look-alike on a free port, fill it, print ``PORT <n>``, stop at stdin EOF."""
    sys.path.insert(0, str(TESTS))
    work = Path(tempfile.mkdtemp(prefix=f"lna-bench-{kind}-"))
    root = work / "lance"
    root.mkdir()
    properties = {"root": str(root)}
    if kind == "iceberg":
        from iceberg_rest_server import iceberg_catalog

        context = iceberg_catalog(work / "iceberg")
    elif kind == "iceberg-reference":
        from iceberg_real_server import reference_iceberg

        context = reference_iceberg(work / "iceberg")
        properties["warehouse_prefix"] = "false"  # one catalog, no prefix
    else:
        from unity_server import unity_catalog

        context = unity_catalog()
    with context as server:
        if kind == "unity":
            server.add_catalog("main")
        started = time.perf_counter()
        properties["endpoint"] = server.uri
        asyncio.run(_declare_all(_backend(kind), properties))
        print(f"FILLED {time.perf_counter() - started:.1f}", file=sys.stderr, flush=True)
        print(f"PORT {server.uri.rsplit(':', 1)[1].strip('/')}", flush=True)
        sys.stdin.read()


# -- the contenders (their own process) ----------------------------------------------------


def run(contender: str, url: str, calls: int, list_calls: int) -> dict[str, dict[str, float]]:
    import lance_namespace_async as lna

    kind = _backend(contender)
    if "@" in contender:  # a baseline really runs its own library
        assert str(_baseline_tree(contender.partition("@")[2])) in lna.__file__

    properties = {
        "max_connections": str(CONCURRENCY),
        "max_keepalive_connections": str(CONCURRENCY),
    }
    if kind == "rest":
        properties["uri"] = url
    else:
        properties["endpoint"] = url
        properties["root"] = tempfile.gettempdir()  # never touched: nothing is created
    if contender.partition("@")[0].endswith("-reference"):
        properties["warehouse_prefix"] = "false"
    results: dict[str, dict[str, float]] = {}

    async def main() -> None:
        async with lna.connect(kind, properties) as ns:
            call: dict[str, Callable[[list[str]], Any]] = {
                "describe": lambda ident: ns.describe_table({"id": ident}),
                "list": lambda ident: ns.list_tables({"id": ident, "limit": 1000}),
            }
            for operation in OPERATIONS:
                jobs = _jobs(kind, operation, calls if operation == "describe" else list_calls)
                for ident in jobs[: min(len(jobs), 200)]:  # warm-up
                    answer = await call[operation](ident)
                if operation == "list":  # the catalogs really hold the Lance tables
                    assert len(answer.tables) == TABLES, (kind, answer)

                await time_in_flight(call[operation], operation, jobs, results)

    asyncio.run(main())
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1000, help="DescribeTable calls per cell")
    parser.add_argument("--list-calls", type=int, default=200, help="ListTables calls per cell")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="a git commit: its iceberg and unity as contenders")
    parser.add_argument("--output", default=None)
    parser.add_argument(
        "--reference-iceberg",
        action="store_true",
        help="also iceberg against the Iceberg project's REST server (Java, Maven)",
    )
    parser.add_argument(
        "--serve", choices=("iceberg", "iceberg-reference", "unity"), help=argparse.SUPPRESS
    )
    parser.add_argument("--contender", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    if args.serve:
        serve(args.serve)
        return
    if args.contender:
        result = run(args.contender, args.url, args.calls, args.list_calls)
        print(json.dumps(result), flush=True)
        return
    import _catalog
    import _results

    output = _results.output_path(parser, args, RESULTS, ["calls", "list_calls", "rounds"])
    root, _ = _catalog.ensure_catalog(NAMESPACES, TABLES, lambda text: print(text, flush=True))
    load_before = os.getloadavg()
    started = time.perf_counter()
    servers = {
        "rest": _start(
            [sys.executable, str(HERE / "_serve.py"), "--impl", "pylance", "--root", str(root)]
        ),
        "iceberg": _start([sys.executable, __file__, "--serve", "iceberg"]),
        "unity": _start([sys.executable, __file__, "--serve", "unity"]),
    }
    contenders = ["rest"]
    for kind in ("iceberg", "unity"):  # each backend's baseline row just above its own
        contenders += [f"{kind}@{args.baseline}", kind] if args.baseline else [kind]
    if args.reference_iceberg:
        servers["iceberg-reference"] = _start(
            [sys.executable, __file__, "--serve", "iceberg-reference"]
        )
        contenders += (
            ["iceberg-reference@" + args.baseline, "iceberg-reference"]
            if args.baseline
            else ["iceberg-reference"]
        )
    runs: dict[str, list[dict[str, dict[str, float]]]] = {kind: [] for kind in contenders}
    try:
        for round_ in range(args.rounds):
            for kind in contenders:
                environment = dict(os.environ)
                if "@" in kind:  # the baseline's library first on the path
                    tree = _baseline_tree(kind.partition("@")[2])
                    environment["PYTHONPATH"] = f"{tree}{os.pathsep}{tree / 'generated'}"
                port = servers[kind.partition("@")[0]][1]
                answer = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        *("--calls", str(args.calls), "--list-calls", str(args.list_calls)),
                        *("--url", f"http://127.0.0.1:{port}", "--contender", kind),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=HERE,
                    env=environment,
                )
                result = json.loads(answer.stdout.strip().splitlines()[-1])
                runs[kind].append(result)
                summary = "  ".join(
                    f"{key} {value['cpu_ms']:.3f}/{value['wall_ms']:.3f}"
                    for key, value in result.items()
                )
                print(f"round {round_ + 1} {kind}: cpu/wall ms {summary}", flush=True)
    finally:
        for server, _ in servers.values():
            assert server.stdin is not None
            server.stdin.close()
            server.wait(30)
    load_after = os.getloadavg()
    text = render(runs, args, load_before, load_after, time.perf_counter() - started)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(text)


def render(
    runs: dict[str, list[dict[str, dict[str, float]]]],
    args: argparse.Namespace,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    seconds: float,
) -> str:
    import lance

    peer = runs["rest"]
    lines = [
        "# Client CPU per request: our iceberg and unity backends vs our rest backend",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/catalog_client_cpu.py`: {os.cpu_count()} CPUs, Python "
        f"{sys.version.split()[0]}, pylance {lance.__version__}. Load average "
        f"{load_before[0]:.2f} at start, {load_after[0]:.2f} at end; {seconds:.0f} s. "
        f"Each backend against a {NAMESPACES} x {TABLES} catalog of Lance tables served in "
        "its own process (rest: pylance's RestAdapter; iceberg, unity: our look-alikes). "
        f"{args.calls:,} DescribeTable and {args.list_calls:,} ListTables calls per cell, "
        f"median of {args.rounds} rounds; CPU = the client process's CPU time per call; "
        "ratio = this backend / rest (goal: 1.2x or less). Per request = CPU per HTTP "
        "request the call makes (ListTables: Iceberg 1 list + 50 LoadTable; Unity 2 pages, "
        "the second empty: a full page of 50 always names a next one).",
        "",
        "| Backend | Calls in flight | DescribeTable CPU ms | ratio | wall ms "
        "| ListTables CPU ms | ratio | per request | ratio | wall ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, rounds in runs.items():
        for concurrency in (1, CONCURRENCY):
            cells: list[str] = []
            for operation in OPERATIONS:
                key = f"{operation}/{concurrency}"
                ours, theirs = _median(rounds, key, "cpu_ms"), _median(peer, key, "cpu_ms")
                cells += [f"{ours:.3f}", f"{ours / theirs:.2f}x"]
                if operation == "list":
                    per = ours / REQUESTS[(_backend(kind), operation)]
                    cells += [f"{per:.3f}", f"{per / theirs:.2f}x"]
                cells.append(f"{_median(rounds, key, 'wall_ms'):.3f}")
            lines.append(f"| {kind} | {concurrency} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
