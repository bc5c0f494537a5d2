"""ListAllTables on a catalog backend vs walking ListNamespaces / ListTables by hand.

    .venv/bin/python benchmarks/list_all_tables.py            # 10,000 tables, 0/5/20 ms
    .venv/bin/python benchmarks/list_all_tables.py --quick    # 1,000 tables, 0/5 ms

The catalog backends (iceberg, unity, glue, hive) answer ListAllTables by walking
their own ListNamespaces and ListTables with bounded concurrency
(``lance_namespace_async._core.walk``). What that buys depends on the round trip,
not on the catalog, so the catalog here is ``_synthetic.SyntheticCatalog`` (computed
on the fly) with ``latency`` added to every call, as a catalog server's round trip
would. The hand walk is what a caller without ListAllTables writes: every page of
ListNamespaces, then every page of ListTables of each namespace, one call at a time.
Both answer the same sorted list (checked). Two shapes: 100 namespaces x 100 tables
and 1,000 x 10 (a wide catalog is where the round trips add up). Prints a Markdown
table; a full run also writes benchmarks/results/list_all_tables.md.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from _synthetic import SyntheticCatalog

from lance_namespace_async._core.paging import PageTrail, token_of
from lance_namespace_async._core.walk import WALK_CONCURRENCY, ListAllTablesByWalking

RESULTS = Path(__file__).resolve().parent / "results" / "list_all_tables.md"
ROUNDS = 3


class WalkedCatalog(ListAllTablesByWalking, SyntheticCatalog):
    """The synthetic catalog with a round trip per call and the backends' ListAllTables."""

    latency = 0.0

    async def _list_namespaces(self, request: Any) -> Any:
        if self.latency:
            await anyio.sleep(self.latency)
        return await super()._list_namespaces(request)

    async def _list_tables(self, request: Any) -> Any:
        if self.latency:
            await anyio.sleep(self.latency)
        return await super()._list_tables(request)


async def by_hand(ns: WalkedCatalog) -> list[str]:
    """Every namespace's every page, one call at a time, as a caller would write it."""

    async def pages(call: Any, parent: list[str], field: str) -> list[str]:
        names: list[str] = []
        trail = PageTrail(field)
        token: str | None = None
        while True:
            response = await call({"id": parent, "page_token": token})
            names.extend(getattr(response, field))
            token = trail.follow(token_of(response.page_token))
            if token is None:
                return names

    found: list[str] = []
    for namespace in await pages(ns.list_namespaces, [], "namespaces"):
        for table in await pages(ns.list_tables, [namespace], "tables"):
            found.append(f"{namespace}${table}")
    return sorted(found)


async def all_tables(ns: WalkedCatalog) -> list[str]:
    return list((await ns.list_all_tables({})).tables)


async def measure(namespaces: int, tables: int, latency: float) -> dict[str, float]:
    ns = WalkedCatalog(namespaces, tables)
    ns.latency = latency
    best: dict[str, float] = {}
    expected: list[str] | None = None
    for _ in range(ROUNDS):
        for name, contender in (("by hand", by_hand), ("ListAllTables", all_tables)):
            ns.calls = 0
            start = time.perf_counter()
            listed = await contender(ns)
            elapsed = time.perf_counter() - start
            expected = expected or listed
            assert listed == expected, f"{name} listed something else"
            assert len(listed) == namespaces * tables
            best[name] = min(best.get(name, elapsed), elapsed)
            best[f"{name} calls"] = ns.calls
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 tables, 0 and 5 ms")
    args = parser.parse_args(argv)
    shapes = [(10, 100), (100, 10)] if args.quick else [(100, 100), (1000, 10)]
    latencies = [0.0, 0.005] if args.quick else [0.0, 0.005, 0.020]
    lines = [
        "# ListAllTables (walk, concurrency "
        f"{WALK_CONCURRENCY}) vs ListNamespaces/ListTables by hand",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, best of {ROUNDS}; command: "
        f"`benchmarks/list_all_tables.py{' --quick' if args.quick else ''}`",
        "",
        "| namespaces x tables | latency/call | by hand (s) | ListAllTables (s) | speed-up "
        "| calls (both) |",
        "|---|---|---|---|---|---|",
    ]
    for namespaces, tables in shapes:
        for latency in latencies:
            best = anyio.run(measure, namespaces, tables, latency)
            hand, walked = best["by hand"], best["ListAllTables"]
            lines.append(
                f"| {namespaces:,} x {tables:,} | {latency * 1000:.0f} ms | {hand:.3f} "
                f"| {walked:.3f} | {hand / walked:.1f}x | {best['by hand calls']:,.0f} / "
                f"{best['ListAllTables calls']:,.0f} |"
            )
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
