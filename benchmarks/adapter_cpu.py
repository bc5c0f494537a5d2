"""Server CPU per request: our adapter vs pylance's RestAdapter, same load, same catalog.

    .venv/bin/python benchmarks/adapter_cpu.py
    .venv/bin/python benchmarks/adapter_cpu.py --baseline /tmp/base   # + an older tree

Each server runs in its own process on 127.0.0.1 (benchmarks/_serve.py) over the same
cached directory catalog (``--namespaces`` x ``--tables-per-ns`` declared tables, built by
pylance): pylance's Rust ``RestAdapter("dir", ...)``, ours as ``serve()`` runs it
(``create_app(connect("dir", ...))``, uvicorn's httptools protocol with the bounds of
``ServerLimits``), and, with ``--baseline DIR``, ours from another source tree (e.g.
``git archive <commit>`` unpacked there) for before/after numbers. A synthetic row serves
the same stack over ``_synthetic.SyntheticCatalog`` (no storage, no TableExists): the
HTTP + ASGI floor.

The load is _loadgen.py's raw client (pre-built keep-alive HTTP/1.1 requests on bare
asyncio streams, about 0.05 ms of CPU a request) in one process with ``--connections``
connections, per operation: DescribeTable and TableExists of ``--requests`` tables,
ListTables of their namespaces. Servers take turns, ``--rounds`` times; each cell is the
best round for that measure, the most requests/s and the least server CPU per request
(the machine is shared: the least disturbed round). Server CPU is user + system time of
the server process, all threads, from /proc.

Writes benchmarks/results/adapter_cpu.md (``--output``) and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import _catalog
from rest_crawl import _git_state, _version, process_cpu

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OPERATIONS = {"describe": "DescribeTable", "exists": "TableExists", "list": "ListTables"}


@dataclass
class Sample:
    requests: int
    seconds: float
    server_cpu: float
    loadgen_cpu: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def server_ms(self) -> float:
        return self.server_cpu * 1000 / self.requests


@contextlib.contextmanager
def serving(impl: str, root: Path, source: Path | None) -> Iterator[tuple[int, int]]:
    """(port, pid) of a _serve.py server; ``source`` is the tree our package comes from."""
    env = dict(os.environ)
    tree = source or REPO
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "generated"), str(HERE)])
    process = subprocess.Popen(
        [sys.executable, str(HERE / "_serve.py"), f"--impl={impl}", f"--root={root}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=HERE,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("PORT "):
            raise RuntimeError(f"{impl} server did not start: {line}")
        yield int(line.split()[1]), process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def load(port: int, pid: int, op: str, args: argparse.Namespace) -> Sample:
    process = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "_loadgen.py"),
            f"--port={port}",
            "--mode=raw",
            f"--op={op}",
            f"--concurrency={args.connections}",
            f"--namespaces={args.namespaces}",
            f"--tables-per-ns={args.tables_per_ns}",
            f"--count={args.requests}",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    if process.stdout.readline().strip() != "READY":
        raise RuntimeError("the load generator did not get ready")
    before = process_cpu(pid)
    process.stdin.write("GO\n")
    process.stdin.flush()
    result = json.loads(process.stdout.readline())
    after = process_cpu(pid)
    process.wait(timeout=30)
    if before is None or after is None:
        raise RuntimeError("no /proc CPU times for the server")
    return Sample(
        result["requests"], result["end"] - result["start"], after - before, result["cpu"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--tables-per-ns", type=int, default=50)
    parser.add_argument("--requests", type=int, default=3000, help="per operation and round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None, help="an older source tree")
    parser.add_argument("--baseline-label", default="ours before")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "adapter_cpu.md")
    args = parser.parse_args()
    root, _ = _catalog.ensure_catalog(args.namespaces, args.tables_per_ns, print)
    servers: list[tuple[str, str, Path | None]] = [
        ("pylance RestAdapter (Rust, axum)", "pylance", None),
        ("ours: serve() (create_app + uvicorn httptools)", "ours", None),
    ]
    if args.baseline is not None:
        servers.append((f"{args.baseline_label}: serve()", "ours", args.baseline))
    servers.append(("ours, synthetic backend (HTTP + ASGI stack alone)", "synthetic", None))
    load_before = os.getloadavg()
    samples: dict[tuple[str, str], list[Sample]] = {}
    for round_ in range(args.rounds):
        for label, impl, source in servers:
            with serving(impl, root, source) as (port, pid):
                for op in OPERATIONS:
                    if impl == "synthetic" and op == "exists":
                        continue  # SyntheticCatalog has no TableExists
                    sample = load(port, pid, op, args)
                    samples.setdefault((label, op), []).append(sample)
                    print(
                        f"round {round_ + 1} {label:<52} {OPERATIONS[op]:<14} "
                        f"{sample.rate:7,.0f} req/s  server {sample.server_ms:.3f} ms CPU/req",
                        flush=True,
                    )
    load_after = os.getloadavg()
    text = render(args, servers, samples, load_before, load_after)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)


def render(
    args: argparse.Namespace,
    servers: list[tuple[str, str, Path | None]],
    samples: dict[tuple[str, str], list[Sample]],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> str:
    peer = servers[0][0]
    lines = [
        "# Adapter server CPU per request: ours vs pylance's RestAdapter",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/adapter_cpu.py` at {_git_state()}: {os.cpu_count()} CPUs (shared with "
        f"other work; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after), "
        f"Python {platform.python_version()}, pylance {_version('pylance')}, uvicorn "
        f"{_version('uvicorn')}, httptools {_version('httptools')}.",
        "",
        f"Catalog: {args.namespaces} namespaces x {args.tables_per_ns} declared tables "
        f"(built by pylance). Load: _loadgen.py raw, 1 process x {args.connections} keep-alive "
        f"connections, {args.requests:,} requests per operation; best of {args.rounds} rounds "
        "(most requests/s, least server CPU per request, each over the rounds). Ratios: > 1 = "
        "ours better.",
        "",
        "| Operation | Server | Requests/s | Server CPU ms/req | Requests/s vs pylance "
        "| CPU/req vs pylance |",
        "|---|---|---:|---:|---:|---:|",
    ]

    def rate(label: str, op: str) -> float:
        return max(sample.rate for sample in samples[(label, op)])

    def cpu(label: str, op: str) -> float:
        return min(sample.server_ms for sample in samples[(label, op)])

    for op, name in OPERATIONS.items():
        for label, _, _ in servers:
            if (label, op) not in samples:
                continue
            lines.append(
                f"| {name} | {label} | {rate(label, op):,.0f} | {cpu(label, op):.3f} | "
                f"{rate(label, op) / rate(peer, op):.2f}x | "
                f"{cpu(peer, op) / cpu(label, op):.2f}x |"
            )
    lines += [
        "",
        "Requests/s here is bounded by the shared machine (load generator, server and other "
        "work on 2 CPUs); server CPU per request is the measure that carries over.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
