"""What lance-namespace 0.12/0.13 added, end to end: composite merge keys (``on`` a list,
a repeated query parameter over REST) and a vector search's probe range
(``minimum_nprobes`` / ``maximum_nprobes``; the legacy ``nprobes`` ignored beside them).

Servers: our REST adapter in a uvicorn thread over a dir backend (test_kit's
``rest-adapter``), pylance's own Rust RestAdapter (``rest-pylance``), the Iceberg REST
look-alike (tests/iceberg_rest_server.py, ``iceberg-lookalike``) and a real
``lance-ns serve`` process (tests/serve_process.py) for pylance's RestNamespace. Tables
are real Lance tables in temporary folders; indexes are built with pylance.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import numpy as np
import pyarrow as pa
import pytest
from hive_metastore import Metastore
from serve_process import lance_ns_serve
from test_kit import our_adapter, running_param
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._storage.places import local_path
from lance_namespace_async.testing import KitSettings

pytest.importorskip("uvicorn", reason="the server extra is not installed")

#: our dir backend; our REST client to our adapter and to pylance's; a catalog backend
BACKENDS = ["dir", "rest-adapter", "rest-pylance", "iceberg-lookalike"]


@pytest.fixture(scope="module", params=BACKENDS)
def settings(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[KitSettings]:
    with running_param(request, tmp_path_factory, hive_metastores, "p013") as found:
        yield found


def ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


KEYED = pa.table(
    {
        "a": pa.array([1, 1, 2], pa.int64()),
        "b": pa.array(["x", "y", "x"]),
        "v": pa.array([1, 2, 3], pa.int64()),
    }
)
#: (1, "y") and (2, "x") match on both columns; (2, "y") matches neither row on both
UPSERT = pa.table(
    {
        "a": pa.array([1, 2, 2], pa.int64()),
        "b": pa.array(["y", "x", "y"]),
        "v": pa.array([20, 30, 40], pa.int64()),
    }
)
MERGED = [(1, "x", 1), (1, "y", 20), (2, "x", 30), (2, "y", 40)]


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("a", "b", "v")), strict=True))


async def a_table(ns: Any, settings: KitSettings, name: str, data: pa.Table) -> list[str]:
    space = [*settings.root, name]
    await ns.create_namespace({"id": space})
    table = [*space, "t"]
    await ns.create_table({"id": table}, ipc(data))
    return table


async def stored_rows(ns: Any, table: list[str]) -> list[tuple[Any, ...]]:
    location = (await ns.describe_table({"id": table})).location
    return rows_of(lance.dataset(local_path(location) or location).to_table())


# -- composite merge keys -------------------------------------------------------------

#: query parameters of a merge that only updates (pylance's dir inserts unless told not to)
UPDATE_ONLY = [("when_matched_update_all", "true"), ("when_not_matched_insert_all", "false")]


async def test_a_merge_on_two_key_columns_matches_rows_on_both(
    settings: KitSettings,
) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        table = await a_table(ns, settings, lna_unique("merge"), KEYED)
        answer = await ns.merge_insert_into_table(
            {
                "id": table,
                "on": ["a", "b"],
                "when_matched_update_all": True,
                "when_not_matched_insert_all": True,
            },
            ipc(UPSERT),
        )
        assert (answer.num_updated_rows, answer.num_inserted_rows) == (2, 1)
        assert await stored_rows(ns, table) == MERGED


async def test_the_single_string_form_of_on_still_names_the_keys(tmp_path: Path) -> None:
    """Before 0.12 ``on`` was one string (our spec: comma-separated columns)."""
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        await ns.create_table({"id": ["t"]}, ipc(KEYED))
        answer = await ns.merge_insert_into_table(
            {
                "id": ["t"],
                "on": "a, b",
                "when_matched_update_all": True,
                "when_not_matched_insert_all": False,
            },
            ipc(UPSERT),
        )
        assert (answer.num_updated_rows, answer.num_inserted_rows) == (2, 0)
        for bad in ([], [""], ["a", 3]):
            with pytest.raises(errors.InvalidInputError):
                await ns.merge_insert_into_table(
                    {"id": ["t"], "on": bad, "when_matched_update_all": True}, ipc(UPSERT)
                )
        assert rows_of(lance.dataset(str(tmp_path / "t.lance")).to_table()) == [
            (1, "x", 1),
            (1, "y", 20),
            (2, "x", 30),
        ]


def test_pylance_rest_namespace_merges_on_two_keys_through_lance_ns_serve(
    tmp_path: Path,
) -> None:
    """pylance 14.0.2's RestNamespace sends ``on=a&on=b``; ``lance-ns serve`` takes it."""
    from lance.namespace import RestNamespace
    from lance_namespace import CreateTableRequest, MergeInsertIntoTableRequest

    with lance_ns_serve({"root": str(tmp_path)}) as served:
        client = RestNamespace(uri=served.uri)
        client.create_table(CreateTableRequest(id=["t"]), ipc(KEYED))
        answer = client.merge_insert_into_table(
            MergeInsertIntoTableRequest(
                id=["t"],
                on=["a", "b"],
                when_matched_update_all=True,
                when_not_matched_insert_all=True,
            ),
            ipc(UPSERT),
        )
        assert (answer.num_updated_rows, answer.num_inserted_rows) == (2, 1)
    assert rows_of(lance.dataset(str(tmp_path / "t.lance")).to_table()) == MERGED


def test_the_server_takes_on_repeated_and_in_its_older_single_form(tmp_path: Path) -> None:
    """The wire itself: ``on=a&on=b`` (0.12+), ``on=a,b`` (our clients before), and an
    empty key refused with code 13."""
    with our_adapter(tmp_path) as uri, httpx.Client(base_url=uri) as http:
        created = http.post(
            "/v1/table/t/create",
            content=ipc(KEYED),
            headers={"content-type": "application/vnd.apache.arrow.stream"},
        )
        assert created.status_code == 200, created.text
        merge = "/v1/table/t/merge_insert"
        arrow = {"content-type": "application/vnd.apache.arrow.stream"}
        repeated = http.post(
            merge,
            params=[("on", "a"), ("on", "b"), *UPDATE_ONLY],
            content=ipc(UPSERT),
            headers=arrow,
        )
        assert repeated.status_code == 200, repeated.text
        assert repeated.json()["num_updated_rows"] == 2
        single = http.post(
            merge,
            params=[("on", "a,b"), *UPDATE_ONLY],
            content=ipc(UPSERT),
            headers=arrow,
        )
        assert single.status_code == 200, single.text
        assert single.json()["num_updated_rows"] == 2
        empty = http.post(
            merge, params=[("on", "a"), ("on", "")], content=ipc(UPSERT), headers=arrow
        )
        assert (empty.status_code, empty.json()["code"]) == (400, 13)


# -- the probe range ------------------------------------------------------------------

DIM = 8


def vectors() -> pa.Table:
    values = np.random.default_rng(7).random((600, DIM), dtype=np.float32)
    return pa.table(
        {
            "id": pa.array(range(600), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), DIM),
        }
    )


async def indexed_table(ns: Any, settings: KitSettings) -> list[str]:
    table = await a_table(ns, settings, lna_unique("probe"), vectors())
    location = (await ns.describe_table({"id": table})).location
    lance.dataset(local_path(location) or location).create_index(
        "vector", index_type="IVF_FLAT", num_partitions=8
    )
    return table


def probes_in(answer: Any) -> str:
    """The probe range of the IVF step of a plan (an Explain or Analyze answer)."""
    plan = (
        answer
        if isinstance(answer, str)
        else (answer.plan if hasattr(answer, "plan") else answer.analysis)
    )
    found = re.findall(r"minimum_nprobes=\d+, maximum_nprobes=\w+(?:\(\d+\))?", plan)
    assert found, plan
    return found[0]


QUERY = {"vector": {"single_vector": [0.5] * DIM}, "k": 5}


async def test_the_probe_range_reaches_pylance_scanner(settings: KitSettings) -> None:
    async with lna.connect(settings.impl, settings.properties) as ns:
        table = await indexed_table(ns, settings)
        for extra, expected in [
            (
                {"minimum_nprobes": 2, "maximum_nprobes": 5},
                "minimum_nprobes=2, maximum_nprobes=Some(5)",
            ),
            # nprobes beside the range is the legacy field, ignored
            ({"minimum_nprobes": 3, "nprobes": 1}, "minimum_nprobes=3, maximum_nprobes=None"),
            ({"maximum_nprobes": 4, "nprobes": 6}, "minimum_nprobes=1, maximum_nprobes=Some(4)"),
            ({"nprobes": 2}, "minimum_nprobes=2, maximum_nprobes=Some(2)"),
        ]:
            query = {**QUERY, **extra}
            explained = await ns.explain_table_query_plan(
                {"id": table, "query": {"id": table, **query}}
            )
            assert probes_in(explained) == expected, extra
            analyzed = await ns.analyze_table_query_plan({"id": table, **query})
            assert probes_in(analyzed) == expected, extra
        answer = await ns.query_table({"id": table, **QUERY, "minimum_nprobes": 8})
        found = answer if isinstance(answer, pa.Table) else pa.ipc.open_file(answer).read_all()
        location = (await ns.describe_table({"id": table})).location
        direct = lance.dataset(local_path(location) or location).to_table(
            nearest={"column": "vector", "q": [0.5] * DIM, "k": 5, "minimum_nprobes": 8}
        )
        assert found.column("id").to_pylist() == direct.column("id").to_pylist()


@pytest.mark.parametrize(
    "bad",
    [
        {"minimum_nprobes": 0},
        {"maximum_nprobes": -1},
        {"minimum_nprobes": 5, "maximum_nprobes": 2},
        {"minimum_nprobes": "2"},
    ],
)
async def test_a_bad_probe_range_is_invalid_input(tmp_path: Path, bad: dict[str, Any]) -> None:
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        await ns.create_table({"id": ["t"]}, ipc(vectors()))
        for call in (
            lambda: ns.query_table({"id": ["t"], **QUERY, **bad}),
            lambda: ns.analyze_table_query_plan({"id": ["t"], **QUERY, **bad}),
            lambda: ns.explain_table_query_plan({"id": ["t"], "query": {**QUERY, **bad}}),
        ):
            with pytest.raises(errors.InvalidInputError) as caught:
                await call()
            assert caught.value.code == 13


def test_the_server_refuses_a_bad_or_too_wide_probe_range(tmp_path: Path) -> None:
    from lance_namespace_async.server import RequestLimits, create_app

    lna.connect_sync("dir", {"root": str(tmp_path)}).create_table({"id": ["t"]}, ipc(vectors()))
    app = create_app(
        lna.connect("dir", {"root": str(tmp_path)}), request_limits=RequestLimits(max_nprobes=16)
    )
    server = UvicornThread(app, name="probe-limits", description="our adapter")
    uri = server.start()
    try:
        with httpx.Client(base_url=uri) as http:
            for bad, words in [
                ({"minimum_nprobes": 5, "maximum_nprobes": 2}, "must not exceed"),
                ({"minimum_nprobes": 0}, ">= 1"),
                ({"maximum_nprobes": 17}, "max_nprobes (16)"),
                ({"minimum_nprobes": 17}, "max_nprobes (16)"),
            ]:
                answer = http.post("/v1/table/t/query", json={**QUERY, **bad})
                assert (answer.status_code, answer.json()["code"]) == (400, 13), bad
                assert words in answer.json()["error"], answer.json()
            good = http.post("/v1/table/t/query", json={**QUERY, "maximum_nprobes": 16})
            assert good.status_code == 200, good.text
    finally:
        server.stop()


def test_pylance_peer_requests_with_the_range_are_taken_by_the_sync_facade(
    tmp_path: Path,
) -> None:
    """LanceDB and pylance hand their pydantic QueryTableRequest, which carries the range
    since 0.13.0; the facade used to refuse it."""
    from lance_namespace import ExplainTableQueryPlanRequest, QueryTableRequest
    from lance_namespace_urllib3_client.models import QueryTableRequestVector

    ns = lna.connect_sync("dir", {"root": str(tmp_path)})
    ns.create_table({"id": ["t"]}, ipc(vectors()))
    query = QueryTableRequest(
        id=["t"],
        vector=QueryTableRequestVector(single_vector=[0.5] * DIM),
        k=3,
        minimum_nprobes=2,
        maximum_nprobes=4,
    )
    answer = ns.explain_table_query_plan(ExplainTableQueryPlanRequest(id=["t"], query=query))
    plan = answer if isinstance(answer, str) else answer.plan
    assert "_distance" in plan
    ns.query_table(query)  # answered, in whichever type the facade gives pylance
    # pylance's model_dump() names every 0.13.0 field, unset ones as None
    plain = QueryTableRequest(id=["t"], vector=QueryTableRequestVector(), k=3).model_dump()
    assert plain["minimum_nprobes"] is None
    ns.query_table({**plain, "vector": {"single_vector": [0.5] * DIM}})
    ns.close()


def lna_unique(prefix: str) -> str:
    """A namespace name no other test of the module's shared catalog uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# -- query fields every backend now honours --------------------------------------------

TEXTS = pa.table(
    {
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "text": ["red apple", "green pear", "red cherry", "blue plum"],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(8, dtype=np.float32)), 2),
    }
)


def as_table(answer: Any) -> pa.Table:
    return answer if isinstance(answer, pa.Table) else pa.ipc.open_file(answer).read_all()


async def test_aliases_distance_bounds_and_string_full_text_queries_answer_as_pylance(
    settings: KitSettings,
) -> None:
    """column_aliases, lower_bound/upper_bound and a string full_text_query: answered as
    pylance's own scanner answers them (the catalog backends used to refuse them)."""
    async with lna.connect(settings.impl, settings.properties) as ns:
        table = await a_table(ns, settings, lna_unique("fields"), TEXTS)
        location = (await ns.describe_table({"id": table})).location
        dataset = lance.dataset(local_path(location) or location)
        dataset.create_scalar_index("text", "INVERTED")
        aliased = await ns.query_table(
            {"id": table, "vector": None, "k": 0, "columns": {"column_aliases": {"n": "id"}}}
        )
        assert as_table(aliased).to_pydict() == {"n": [1, 2, 3, 4]}
        bounded = await ns.query_table(
            {
                "id": table,
                "vector": {"single_vector": [0.0, 1.0]},
                "k": 4,
                "lower_bound": 1.0,
                "upper_bound": 40.0,
                "columns": {"column_names": ["id"]},
            }
        )
        assert as_table(bounded).column("id").to_pylist() == [2, 3]  # distances 8 and 32
        found = await ns.query_table(
            {
                "id": table,
                "vector": None,
                "k": 10,
                "full_text_query": {"string_query": {"query": "red", "columns": ["text"]}},
                "columns": {"column_names": ["id"]},
            }
        )
        expected = lance.dataset(local_path(location) or location).to_table(
            full_text_query={"query": "red", "columns": ["text"]}, columns=["id"]
        )
        assert (
            sorted(as_table(found).column("id").to_pylist())
            == sorted(expected.column("id").to_pylist())
            == [1, 3]
        )


async def test_a_merge_takes_use_index_and_a_timeout(settings: KitSettings) -> None:
    """``use_index`` and ``timeout`` (a duration) reach pylance's merge builder; a timeout
    that is not a duration is InvalidInput and merges nothing."""
    async with lna.connect(settings.impl, settings.properties) as ns:
        table = await a_table(ns, settings, lna_unique("mopts"), KEYED)
        merge = {
            "id": table,
            "on": ["a", "b"],
            "when_matched_update_all": True,
            "when_not_matched_insert_all": True,
        }
        with pytest.raises(errors.InvalidInputError):
            await ns.merge_insert_into_table({**merge, "timeout": "soon"}, ipc(UPSERT))
        assert await stored_rows(ns, table) == rows_of(KEYED)
        answer = await ns.merge_insert_into_table(
            {**merge, "timeout": "1m 30s", "use_index": False}, ipc(UPSERT)
        )
        assert (answer.num_updated_rows, answer.num_inserted_rows) == (2, 1)
        assert await stored_rows(ns, table) == MERGED


async def test_a_structured_full_text_query_pylance_cannot_read_is_invalid_input(
    tmp_path: Path,
) -> None:
    """Found by the schemathesis run: a ``structured_query`` without the field its type
    needs reached pylance, whose Rust model refused it as a bare ``Exception``, and the
    server answered 500/18. It is the request that is wrong: 13, on an existing table
    and on a missing one."""
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        await ns.create_table({"id": ["t"]}, ipc(vectors()))
        for table in (["t"], ["missing"]):
            with pytest.raises(errors.InvalidInputError) as caught:
                await ns.query_table(
                    {"id": table, "k": 3, "vector": {}, "full_text_query": {"structured_query": {}}}
                )
            assert "missing field `query`" in caught.value.message
