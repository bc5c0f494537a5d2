"""The benchmark catalog: N namespaces x M declared tables, built once and cached.

Built through pylance's own ``DirectoryNamespace`` (one ``create_namespace`` per
namespace, one ``declare_table`` per table), into a ``.partial`` directory that
is renamed into place only when complete, so an interrupted build is never
mistaken for a finished one.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import lance
import lance_namespace as lns
from lance.namespace import DirectoryNamespace

CACHE_ROOT = Path("/tmp/lna-bench/rest_crawl")
_MARKER = "_bench_catalog.json"


def namespace_name(index: int) -> str:
    return f"ns{index:02d}"


def table_name(index: int) -> str:
    return f"t{index:03d}"


def expected_ids(namespaces: int, tables_per_ns: int) -> list[tuple[str, str]]:
    """Every table id of the catalog, in creation order."""
    return [
        (namespace_name(n), table_name(t)) for n in range(namespaces) for t in range(tables_per_ns)
    ]


def catalog_dir(namespaces: int, tables_per_ns: int) -> Path:
    return CACHE_ROOT / f"catalog-{namespaces}x{tables_per_ns}-pylance{lance.__version__}"


def ensure_catalog(
    namespaces: int, tables_per_ns: int, progress: Callable[[str], None]
) -> tuple[Path, float | None]:
    """The catalog root and its build time in seconds (``None`` when it came from the cache)."""
    root = catalog_dir(namespaces, tables_per_ns)
    marker = root / _MARKER
    if marker.is_file():
        info = json.loads(marker.read_text())
        progress(f"catalog cached at {root} (built in {info['setup_seconds']:.1f} s)")
        return root, None
    partial = root.with_name(root.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    progress(f"building catalog {namespaces} x {tables_per_ns} at {root} ...")
    # paths are stored relative to the root in the manifest, so the rename below is safe
    ns = DirectoryNamespace(root=str(partial))
    start = time.perf_counter()
    for n in range(namespaces):
        ns.create_namespace(lns.CreateNamespaceRequest(id=[namespace_name(n)]))
        for t in range(tables_per_ns):
            ns.declare_table(lns.DeclareTableRequest(id=[namespace_name(n), table_name(t)]))
        if (n + 1) % 5 == 0 or n + 1 == namespaces:
            elapsed = time.perf_counter() - start
            progress(
                f"  {n + 1}/{namespaces} namespaces, {(n + 1) * tables_per_ns} tables, "
                f"{elapsed:.1f} s"
            )
    seconds = time.perf_counter() - start
    del ns
    (partial / _MARKER).write_text(
        json.dumps(
            {"namespaces": namespaces, "tables_per_ns": tables_per_ns, "setup_seconds": seconds}
        )
    )
    partial.rename(root)
    return root, seconds
