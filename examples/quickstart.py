"""Quickstart: a directory catalog, tables written by pylance, a concurrent crawl.

    python examples/quickstart.py [ROOT]

Creates namespaces under ROOT (default ./demo-lance), writes a few Lance tables
through pylance with our sync facade as its namespace client, then crawls the
catalog with the async client and prints an inventory.
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


def write_tables(root: str) -> None:
    """Blocking code (a script, a Spark driver) uses the sync facade."""
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


async def inventory(root: str) -> None:
    """Async services await the same backend directly."""
    async with lna.connect("dir", {"root": root}) as ns:
        print(f"{'table':<28} {'version':>7} {'fragments':>9}  location")
        async for table in lna.crawl(ns, detailed=True, concurrency=8):
            described = table.description
            assert described is not None
            print(
                f"{'.'.join(table.id):<28} {described.version:>7} "
                f"{described.stats.num_fragments:>9}  {described.location}"
            )


def main() -> None:
    root = str(Path(sys.argv[1] if len(sys.argv) > 1 else "demo-lance").resolve())
    write_tables(root)
    anyio.run(inventory, root)


if __name__ == "__main__":
    main()
