"""What metrics and tracing cost the server: CPU per DescribeTable, each off and on.

    .venv/bin/python benchmarks/observe_cost.py

The server is ours as ``serve()`` runs it (benchmarks/_serve.py: ``create_app(connect("dir",
...))`` under uvicorn's httptools protocol with ``ServerLimits``) over the cached directory
catalog of adapter_cpu.py, in four configurations taking turns ``--rounds`` times: nothing
observed; ``create_app(metrics=True)`` (the metrics ``serve --metrics-port`` turns on);
the OpenTelemetry SDK's ``TracerProvider`` with a ``BatchSpanProcessor`` whose exporter
drops the spans (the cost of making and batching them, not a collector's network); both.
Load: adapter_cpu.py's (``_loadgen.py`` raw client, DescribeTable of ``--requests`` tables
over ``--connections`` keep-alive connections). Each cell is the least server CPU per
request over the rounds (user + system of the server process, all threads, /proc).

It also times ``_core.observe.backend_call`` with no listener (what every backend call
pays when nothing observes) in this process.

Writes benchmarks/results/observe_cost.md (``--output``) and prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import subprocess
import sys
import timeit
from collections.abc import Iterator
from pathlib import Path

import _catalog
from adapter_cpu import Sample, load
from rest_crawl import _git_state, _version

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CONFIGURATIONS = {
    "nothing observed": (),
    "metrics on": ("--metrics",),
    "tracing on (SDK, batch processor, spans dropped)": ("--tracing",),
    "metrics and tracing on": ("--metrics", "--tracing"),
}


@contextlib.contextmanager
def serving(root: Path, flags: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "generated"), str(HERE)])
    process = subprocess.Popen(
        [sys.executable, str(HERE / "_serve.py"), "--impl=ours", f"--root={root}", *flags],
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
            raise RuntimeError(f"server {flags} did not start: {line}")
        yield int(line.split()[1]), process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def unobserved_call_ns() -> tuple[float, float]:
    """Nanoseconds of ``with backend_call(...)`` when nothing listens, and of the empty
    function call the timing loop makes around it (the floor)."""
    sys.path.insert(0, str(REPO))
    from lance_namespace_async._core.observe import backend_call

    def one() -> None:
        with backend_call("dir", "storage", "describe"):
            pass

    def empty() -> None:
        pass

    number = 1_000_000
    best = min(timeit.repeat(one, number=number, repeat=5))
    floor = min(timeit.repeat(empty, number=number, repeat=5))
    return best / number * 1e9, floor / number * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--tables-per-ns", type=int, default=50)
    parser.add_argument("--requests", type=int, default=3000, help="per configuration and round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "observe_cost.md")
    args = parser.parse_args()
    root, _ = _catalog.ensure_catalog(args.namespaces, args.tables_per_ns, print)
    load_before = os.getloadavg()
    samples: dict[str, list[Sample]] = {}
    for round_ in range(args.rounds):
        for label, flags in CONFIGURATIONS.items():
            with serving(root, flags) as (port, pid):
                load(port, pid, "describe", args)  # warm: caches, first spans, first labels
                sample = load(port, pid, "describe", args)
            samples.setdefault(label, []).append(sample)
            print(
                f"round {round_ + 1} {label:<50} {sample.rate:7,.0f} req/s  "
                f"server {sample.server_ms:.3f} ms CPU/req",
                flush=True,
            )
    hook_ns = unobserved_call_ns()
    text = render(args, samples, hook_ns, load_before, os.getloadavg())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)


def render(
    args: argparse.Namespace,
    samples: dict[str, list[Sample]],
    hook_ns: tuple[float, float],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> str:
    def cpu(label: str) -> float:
        return min(sample.server_ms for sample in samples[label])

    def rate(label: str) -> float:
        return max(sample.rate for sample in samples[label])

    base = cpu("nothing observed")
    lines = [
        "# What metrics and tracing cost the server (DescribeTable, dir backend)",
        "",
        f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
        f"`benchmarks/observe_cost.py` at {_git_state()}: {os.cpu_count()} CPUs (shared with "
        f"other work; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after), "
        f"Python {platform.python_version()}, pylance {_version('pylance')}, "
        f"prometheus-client {_version('prometheus-client')}, opentelemetry-sdk "
        f"{_version('opentelemetry-sdk')}.",
        "",
        f"Catalog: {args.namespaces} namespaces x {args.tables_per_ns} declared tables. Load: "
        f"_loadgen.py raw, {args.connections} keep-alive connections, {args.requests:,} "
        f"DescribeTable requests per configuration and round after as many to warm up; least "
        f"server CPU per request (and most requests/s) of {args.rounds} rounds.",
        "",
        "| Server | Server CPU ms/req | Added CPU ms/req | Added | Requests/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for label in CONFIGURATIONS:
        added = cpu(label) - base
        lines.append(
            f"| {label} | {cpu(label):.3f} | {added:+.3f} | {added / base:+.0%} | "
            f"{rate(label):,.0f} |"
        )
    lines += [
        "",
        f"`with backend_call(...)` when nothing listens: {hook_ns[0]:.0f} ns a call, of which "
        f"{hook_ns[1]:.0f} ns is the timing loop's own function call (best of 5 x 1,000,000 "
        "in one process); a DescribeTable of the directory backend makes 3 backend calls, so "
        f"about {3 * (hook_ns[0] - hook_ns[1]) / 1000:.1f} µs of the "
        f"{base * 1000:.0f} µs of server CPU it takes.",
        "",
        "Tracing's cost is the SDK's span objects (a server span and a client span per backend "
        "call), their attributes and the batch processor's queue and thread; sending them to a "
        "collector adds the exporter's own serialisation and network on that thread. A "
        "sampler (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`, `OTEL_TRACES_SAMPLER_ARG`) "
        "records only the share of requests it keeps (the others still pay for unrecorded "
        "spans and the context; not measured here).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
