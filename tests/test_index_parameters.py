"""Every CreateTableIndex build parameter reaches the index, on every kind of backend.

pylance's DirectoryNamespace (14.0.2) builds an index without ``num_partitions``,
``num_sub_vectors`` and the other parameters: IVF_PQ on an 8-d column then fails and
``--num-partitions 3`` builds one partition. Each test builds with values other than
pylance's defaults and reads the built index's parameters back from storage with
pylance (``index_stats``), never from our answer.

Servers: none for ``dir``; our adapter (``create_app`` over a dir backend, uvicorn in a
thread: test_kit's ``rest-adapter``) for rest over dir; the Unity Catalog look-alike
(tests/unity_server.py) for the catalog backends' shared path (``_storage.indexes``);
``lance-ns`` as a subprocess for the CLI.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from test_kit import running_param

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._storage.places import local_path
from lance_namespace_async.testing import KitSettings

ROWS, DIM = 512, 8


@pytest.fixture(scope="module", params=["dir", "rest-adapter", "unity"])
def settings(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[KitSettings]:
    with running_param(request, tmp_path_factory, hive_metastores, "index") as found:
        yield found


def vectors() -> pa.Table:
    values = np.random.default_rng(7).random((ROWS, DIM), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), DIM),
            "text": [f"word{i % 11} Other{i % 5}" for i in range(ROWS)],
        }
    )


def index_stats(location: str, name: str) -> dict[str, Any]:
    path = local_path(location) or location
    stats: dict[str, Any] = lance.dataset(path).stats.index_stats(name)
    return stats


async def a_table(ns: Any, settings: KitSettings, name: str) -> tuple[list[str], str]:
    namespace = [*settings.root, f"ix_{name}"]
    await ns.create_namespace({"id": namespace})
    table = [*namespace, "t"]
    created = await ns.create_table({"id": table}, vectors())
    location = created.location or (await ns.describe_table({"id": table})).location
    return table, location


async def test_ivf_pq_parameters_reach_the_index(settings: KitSettings) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        table, location = await a_table(ns, settings, "pq")
        await ns.create_table_index(
            {
                "id": table,
                "column": "vec",
                "index_type": "IVF_PQ",
                "name": "pq",
                "num_partitions": 3,
                "num_sub_vectors": 2,
                "num_bits": 4,
                "max_iterations": 5,
                "sample_rate": 32,
                "distance_type": "cosine",
            }
        )
        built = index_stats(location, "pq")["indices"][0]
        assert built["num_partitions"] == 3
        assert built["metric_type"] == "cosine"
        assert (built["sub_index"]["num_sub_vectors"], built["sub_index"]["nbits"]) == (2, 4)
        assert len(built["partitions"]) == 3


async def test_hnsw_parameters_reach_the_index(settings: KitSettings) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        table, location = await a_table(ns, settings, "hnsw")
        await ns.create_table_index(
            {
                "id": table,
                "column": "vec",
                "index_type": "IVF_HNSW_SQ",
                "name": "hnsw",
                "num_partitions": 2,
                "m": 7,
                "ef_construction": 55,
                "distance_type": "dot",
            }
        )
        built = index_stats(location, "hnsw")["indices"][0]
        assert (built["num_partitions"], built["metric_type"]) == (2, "dot")
        params = built["sub_index"]["params"]
        assert (params["m"], params["ef_construction"]) == (7, 55)


async def test_full_text_parameters_reach_the_index(settings: KitSettings) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        table, location = await a_table(ns, settings, "fts")
        await ns.create_table_scalar_index(
            {
                "id": table,
                "column": "text",
                "index_type": "INVERTED",
                "name": "fts",
                "with_position": True,
                "base_tokenizer": "whitespace",
                "lower_case": False,
                "stem": False,
                "remove_stop_words": False,
                "ascii_folding": False,
                "max_token_length": 30,
            }
        )
        params = index_stats(location, "fts")["indices"][0]["params"]
        assert params["base_tokenizer"] == "whitespace"
        assert params["max_token_length"] == 30
        assert params["with_position"] is True
        assert not any(params[k] for k in ("lower_case", "stem", "remove_stop_words"))
        assert params["ascii_folding"] is False


async def test_parameters_pylance_cannot_build_with_are_invalid_input(
    settings: KitSettings,
) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        table, location = await a_table(ns, settings, "bad")
        request = {"id": table, "column": "vec", "index_type": "IVF_PQ", "num_sub_vectors": 3}
        with pytest.raises(errors.InvalidInputError, match="divisible by num_sub_vectors"):
            await ns.create_table_index(request)
        assert lance.dataset(local_path(location) or location).describe_indices() == []


def test_the_cli_passes_every_build_option(tmp_path: Path) -> None:
    """``lance-ns index create`` on dir: the case the issue found (1 partition, IVF_PQ
    impossible on 8 dimensions)."""
    root = tmp_path / "catalog"
    with lna.connect_sync("dir", {"root": str(root)}) as ns:
        ns.create_namespace({"id": ["shop"]})
        ns.create_table({"id": ["shop", "items"]}, vectors())
        location = ns.describe_table({"id": ["shop", "items"]}).location
    script = Path(sys.executable).parent / "lance-ns"
    command = (
        [str(script)] if script.exists() else [sys.executable, "-m", "lance_namespace_async._cli"]
    )
    options = ["--num-partitions", "3", "--num-sub-vectors", "4", "--num-bits", "4"]
    options += ["--max-iterations", "3", "--sample-rate", "16", "--distance-type", "l2"]
    done = subprocess.run(
        [
            *command,
            "index",
            "create",
            "shop.items",
            "vec",
            "--type",
            "IVF_PQ",
            "--name",
            "pq",
            *options,
            "--impl",
            "dir",
            "--prop",
            f"root={root}",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    built = index_stats(location, "pq")["indices"][0]
    assert built["num_partitions"] == 3
    assert (built["sub_index"]["num_sub_vectors"], built["sub_index"]["nbits"]) == (4, 4)
