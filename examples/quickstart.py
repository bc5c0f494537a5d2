"""Quickstart: a directory catalog, tables written by pylance, a concurrent crawl.

    python examples/quickstart.py [ROOT]

Creates namespaces under ROOT (default ./demo-lance), writes a few Lance tables
through pylance with our sync facade as its namespace client, then crawls the
catalog with the async client and prints an inventory (sorted by table: the crawl
finds tables concurrently, in no fixed order), ending with one sentence saying what
happened.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import lance
import pyarrow as pa

import lance_namespace_async as lna

TABLES = {
    ("sales", "orders"): 1_000,
    ("sales", "eu", "invoices"): 250,
    ("marketing", "campaigns"): 40,
}


def write_tables(root: str) -> list[str]:
    """Blocking code (a script, a Spark driver) uses the sync facade. Returns the write
    mode of each table (``create`` the first time, ``overwrite`` on a rerun)."""
    modes = []
    with lna.connect_sync("dir", {"root": root}) as ns:
        for namespace in (["sales"], ["sales", "eu"], ["marketing"]):
            ns.create_namespace({"id": namespace, "mode": "ExistOk"})
        for table_id, rows in TABLES.items():
            data = pa.table({"id": range(rows), "amount": [i * 0.5 for i in range(rows)]})
            try:
                ns.table_exists({"id": list(table_id)})
                mode = "overwrite"  # pylance overwrites tables the catalog knows
            except lna.errors.TableNotFoundError:
                mode = "create"  # and declares new ones through the catalog
            lance.write_dataset(data, namespace_client=ns, table_id=list(table_id), mode=mode)
            modes.append(mode)
    return modes


async def inventory(root: str) -> list[tuple[str, int, int, str]]:
    """Async services await the same backend directly: the crawl describes every
    table concurrently; the rows are sorted by table id for a stable inventory."""
    found = []
    async with lna.connect("dir", {"root": root}) as ns:
        async for table in lna.crawl(ns, detailed=True, concurrency=8):
            described = table.description
            assert described is not None
            stats = described.stats
            fragments = stats.num_fragments if stats else 0
            found.append((".".join(table.id), described.version, fragments, described.location))
    return sorted(found)


def report(root: str, modes: list[str], rows: list[tuple[str, int, int, str]]) -> str:
    lines = [f"{'table':<28} {'version':>7} {'fragments':>9}  location"]
    lines += [
        f"{name:<28} {version:>7} {frags:>9}  {where}" for name, version, frags, where in rows
    ]
    written = sum(TABLES.values())
    namespaces = len({name.rpartition(".")[0] for name, *_ in rows})
    created, overwritten = modes.count("create"), modes.count("overwrite")
    lines.append(
        f"\nDone: pylance wrote {len(modes)} tables ({written:,} rows; {created} created, "
        f"{overwritten} overwritten) through the catalog at {root}, and the crawl found "
        f"{len(rows)} tables in {namespaces} namespaces."
    )
    return "\n".join(lines)


def main() -> None:
    root = str(Path(sys.argv[1] if len(sys.argv) > 1 else "demo-lance").resolve())
    modes = write_tables(root)
    print(report(root, modes, anyio.run(inventory, root)))


if __name__ == "__main__":
    main()
