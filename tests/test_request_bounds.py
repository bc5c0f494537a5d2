"""Bounds on what one request may ask of the storage engine (issue 27), and error shaping.

Server: the real ``lance-ns serve --impl dir`` process (tests/serve_process.py) on a free
127.0.0.1 port with a bearer token, over a temporary root holding ``ns.t`` (100 rows: an
id, a string, an 8-float vector); a second one with ``--max-answer-bytes 4096``; and, for
the catalog half, ``lance-ns serve --impl iceberg`` over the Iceberg REST look-alike
(tests/iceberg_rest_server.py). Each attack must be refused with 400 and code 13 naming
its field and limit, in well under a second (the engine never sees it), and leave the
server alive and the table as it was. Realistic requests (``id IN`` a thousand values,
forty conditions ANDed, ``lpad`` to ten characters) still pass.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import numpy as np
import pyarrow as pa
import pytest
from serve_process import ServeProcess, lance_ns_serve

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._storage.failures import translate
from lance_namespace_async._storage.tables import LanceTables
from lance_namespace_async.directory import DirectoryNamespace
from lance_namespace_async.server import create_app
from lance_namespace_async.server._request_limits import RequestLimits

pytest.importorskip("uvicorn", reason="the server extra is not installed")

TOKEN = "bounds-test-token"
ROWS = 100
#: what "refused at once" means on a loaded 2-CPU machine (the engine takes seconds)
QUICK = 1.5


def rows(count: int = ROWS, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    vectors = np.random.default_rng(0).random((count, 8), dtype=np.float32).reshape(-1)
    return pa.table(
        {
            "id": pa.array(ids),
            "s": pa.array([f"s{i}" for i in ids]),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors), 8),
        }
    )


def ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def client(served: ServeProcess) -> httpx.Client:
    return httpx.Client(
        base_url=served.uri, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
    )


def make_root(root: Path) -> None:
    root.mkdir()
    ns = lna.connect_sync("dir", {"root": str(root)})
    ns.create_namespace({"id": ["ns"]})
    ns.create_table({"id": ["ns", "t"]}, rows())
    ns.close()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("bounds") / "root"
    make_root(place)
    return place


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[ServeProcess]:
    # --max-k below its default: the flag must reach the server (test_a_serve_flag_...)
    options = ["--auth-token-env", "LNS_BOUNDS_TOKEN", "--log-level", "error", "--max-k", "5000"]
    with lance_ns_serve({"root": str(root)}, *options, env={"LNS_BOUNDS_TOKEN": TOKEN}) as s:
        yield s


def count(http: httpx.Client, **body: Any) -> int:
    answer = http.post("/v1/table/ns$t/count_rows", json=body)
    assert answer.status_code == 200, answer.text
    return int(answer.json())


PLUS_CHAIN = "id" + " + id" * 700 + " > 0"  # SIGSEGV in the engine before the bounds

#: (what, method path, JSON body or query parameters + Arrow body, field and limit named)
ATTACKS: list[tuple[str, str, dict[str, Any], tuple[str, str]]] = [
    ("plus chain in a filter", "query", {"filter": PLUS_CHAIN, "k": 10}, ("filter", "operators")),
    ("plus chain in a count", "count_rows", {"predicate": PLUS_CHAIN}, ("predicate", "operators")),
    ("plus chain in a delete", "delete", {"predicate": PLUS_CHAIN}, ("predicate", "operators")),
    (
        "plus chain in an update",
        "update",
        {"predicate": PLUS_CHAIN, "updates": [["s", "'x'"]]},
        ("predicate", "operators"),
    ),
    (
        "plus chain as an update's value",
        "update",
        {"updates": [["id", "id" + " + 1" * 300]]},
        ("updates[0]", "operators"),
    ),
    (
        "a stray character before a chain",
        "count_rows",
        {"predicate": "$é'" + PLUS_CHAIN},
        ("predicate", "operators"),
    ),
    ("nesting", "query", {"filter": "(" * 40 + "id > 0" + ")" * 40}, ("filter", "depth")),
    (
        "repeat in a count",
        "count_rows",
        {"predicate": "length(repeat(s,8000))>0"},
        ("predicate", "amplification"),
    ),
    (
        "repeat by a column",
        "count_rows",
        {"predicate": "length(repeat(s, id)) > 0"},
        ("predicate", "literals"),
    ),
    (
        "nested repeats",
        "count_rows",
        {"predicate": "length(repeat(repeat(s, 100), 100)) > 0"},
        ("predicate", "amplification"),
    ),
    (
        "repeat in a new column",
        "add_columns",
        {"new_columns": [{"name": "big", "expression": "repeat(s,1000)"}]},
        ("new_columns[0].expression", "amplification"),
    ),
    ("rpad in an update", "update", {"updates": [["s", "rpad(s, 100000)"]]}, ("updates[0]", "")),
    ("a huge k", "query", {"k": 10**9}, ("k", "max_k (5000)")),
    ("a huge offset", "query", {"k": 10, "offset": 10**9}, ("offset", "max_offset")),
    (
        "a column aliased 2,000 times",
        "query",
        {"k": 100, "columns": {"column_aliases": {f"a{i}": "vector" for i in range(2000)}}},
        ("columns", "max_columns"),
    ),
    (
        "a column aliased twice",
        "query",
        {"k": 100, "columns": {"column_aliases": {"a": "vector", "b": "vector"}}},
        ("columns", "more than once"),
    ),
    (
        "a huge vector",
        "query",
        {"k": 1, "vector": {"single_vector": [0.0] * 70_000}},
        ("vector", "max_vector_elements"),
    ),
    ("a huge nprobes", "query", {"k": 1, "nprobes": 2**31 - 1}, ("nprobes", "max_nprobes")),
    (
        "a huge maximum_nprobes (0.13.0's probe range)",
        "query",
        {"k": 1, "vector": {"single_vector": [0.0] * 8}, "maximum_nprobes": 2**31 - 1},
        ("maximum_nprobes", "max_nprobes"),
    ),
    (
        "a plus chain in an explained query",
        "explain_plan",
        {"query": {"filter": PLUS_CHAIN}},
        ("query.filter", "operators"),
    ),
    ("a huge k analyzed", "analyze_plan", {"k": 10**9}, ("k", "max_k")),
    (
        "HNSW with m = ef_construction = 2^31-1",
        "create_index",
        {
            "column": "vector",
            "index_type": "IVF_HNSW_SQ",
            "m": 2**31 - 1,
            "ef_construction": 2**31 - 1,
        },
        ("m", "index_parameter_maxima"),
    ),
    (
        "a huge num_partitions",
        "create_index",
        {"column": "vector", "index_type": "IVF_PQ", "num_partitions": 2**31 - 1},
        ("num_partitions", "index_parameter_maxima"),
    ),
    ("a 5,000-character tag", "tags/create", {"tag": "x" * 5000, "version": 1}, ("tag", "")),
    ("a 5,000-character branch", "count_rows", {"branch": "b" * 5000}, ("branch", "")),
    ("branch '.'", "branches/create", {"name": "."}, ("name", "not a valid name")),
]


@pytest.mark.parametrize(
    ("path", "body", "named"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS]
)
def test_each_attack_is_refused_with_code_13_at_once_and_the_server_lives(
    served: ServeProcess, path: str, body: dict[str, Any], named: tuple[str, str]
) -> None:
    with client(served) as http:
        started = time.perf_counter()
        answer = http.post(f"/v1/table/ns$t/{path}", json=body)
        took = time.perf_counter() - started
        assert answer.status_code == 400, answer.text
        error = answer.json()
        assert error["code"] == 13
        field, limit = named
        assert field in error["error"], error["error"]
        assert limit in error["error"], error["error"]
        assert took < QUICK, f"refused after {took:.2f} s"
        assert served.process.poll() is None
        assert count(http) == ROWS  # nothing changed


def test_a_serve_flag_sets_its_limit(served: ServeProcess) -> None:
    with client(served) as http:
        answer = http.post("/v1/table/ns$t/query", json={"k": 6000, "vector": {}})
        assert answer.status_code == 400, answer.text
        assert "max_k (5000)" in answer.json()["error"]
        assert http.post("/v1/table/ns$t/query", json={"k": 5000, "vector": {}}).status_code == 200


def test_a_merge_insert_filter_in_the_query_string_is_bounded(served: ServeProcess) -> None:
    with client(served) as http:
        answer = http.post(
            "/v1/table/ns$t/merge_insert",
            params={
                "on": "id",
                "when_matched_update_all": "true",
                "when_matched_update_all_filt": PLUS_CHAIN,
            },
            content=ipc(rows(3, start=1000)),
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == 13
        assert "when_matched_update_all_filt" in answer.json()["error"]
        assert count(http) == ROWS


def test_a_merge_on_more_key_columns_than_max_columns_is_refused(served: ServeProcess) -> None:
    """0.12.0's composite key is a repeated query parameter: 2,000 of them (a URL of
    ~12 KB) are refused before any work, and the table is unchanged."""
    with client(served) as http:
        answer = http.post(
            "/v1/table/ns$t/merge_insert",
            params=[("on", f"k{i}") for i in range(2000)]
            + [("when_not_matched_insert_all", "true")],
            content=ipc(rows(3, start=1000)),
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == 13
        assert "max_columns" in answer.json()["error"]
        assert served.process.poll() is None
        assert count(http) == ROWS


REALISTIC = [
    "id IN (" + ",".join(str(i) for i in range(1000)) + ")",
    "id IN (" + ",".join(str(-i) for i in range(1000)) + ") OR id >= 0",
    " AND ".join(f"(id >= {-i} OR s IS NULL)" for i in range(40)),
    "lpad(s, 10, '0') >= '0000000s0' AND s LIKE 's%' AND s != '" + "(" * 40 + " + 1" * 300 + "'",
    "(((((id > 1) AND (id < 1000)))))",
]


@pytest.mark.parametrize("expression", REALISTIC, ids=["in", "signed-in", "and40", "lpad", "paren"])
def test_realistic_filters_pass_in_queries_and_counts(
    served: ServeProcess, expression: str
) -> None:
    with client(served) as http:
        assert 0 < count(http, predicate=expression) <= ROWS
        answer = http.post(
            "/v1/table/ns$t/query", json={"filter": expression, "k": 1000, "vector": {}}
        )
        assert answer.status_code == 200, answer.text
        assert 0 < pa.ipc.open_file(answer.content).read_all().num_rows <= ROWS


async def test_a_query_answer_above_max_answer_bytes_is_refused(tmp_path: Path) -> None:
    # in process (the adapter alone decides it): no second server to start
    root = tmp_path / "root"
    make_root(root)
    limits = RequestLimits(max_answer_bytes=4096)
    async with lna.connect("dir", {"root": str(root)}) as backend:
        transport = httpx.ASGITransport(app=create_app(backend, request_limits=limits))
        async with httpx.AsyncClient(transport=transport, base_url="http://lance") as http:
            small = await http.post(
                "/v1/table/ns$t/query",
                json={"k": 2, "vector": {}, "columns": {"column_names": ["id"]}},
            )
            assert small.status_code == 200, small.text
            assert pa.ipc.open_file(small.content).read_all().num_rows == 2
            large = await http.post("/v1/table/ns$t/query", json={"k": 100, "vector": {}})
            assert large.status_code == 400, large.text
            assert large.json()["code"] == 13
            assert "max_answer_bytes (4096)" in large.json()["error"]


def test_a_plan_names_no_server_path(served: ServeProcess, root: Path) -> None:
    with client(served) as http:
        for path, body in (
            ("explain_plan", {"query": {"filter": "id > 3", "k": 5, "vector": {}}}),
            ("analyze_plan", {"filter": "id > 3", "k": 5, "vector": {}}),
        ):
            answer = http.post(f"/v1/table/ns$t/{path}", json=body)
            assert answer.status_code == 200, answer.text
            plan = answer.json()
            assert "LanceRead" in plan
            assert str(root).strip("/") not in plan, plan
            assert "<path>" in plan


def test_a_pylance_error_carries_no_rust_location(served: ServeProcess) -> None:
    with client(served) as http:
        answer = http.post(
            "/v1/table/ns$t/alter_columns",
            json={"alterations": [{"path": "no_such_column", "rename": "x"}]},
        )
        assert 400 <= answer.status_code < 500, answer.text
        message = answer.json()["error"]
        assert "no_such_column" in message
        assert "Location" not in message, message
        assert ".rs:" not in message, message


def test_create_table_in_a_missing_namespace_is_namespace_not_found(
    served: ServeProcess, root: Path
) -> None:
    before = sorted(p.name for p in root.iterdir())
    with client(served) as http:
        answer = http.post(
            "/v1/table/nowhere$t/create",
            content=ipc(rows(3)),
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
        )
        assert answer.status_code == 404, answer.text
        assert answer.json()["code"] == 1
    assert sorted(p.name for p in root.iterdir()) == before  # nothing written


def test_a_zero_row_create_table_makes_the_empty_table(served: ServeProcess) -> None:
    empty = rows(0)
    with client(served) as http:
        answer = http.post(
            "/v1/table/ns$empty/create",
            content=ipc(empty),
            headers={"Content-Type": "application/vnd.apache.arrow.stream"},
        )
        assert answer.status_code == 200, answer.text
        location = answer.json()["location"]
        assert http.post("/v1/table/ns$empty/count_rows", json={}).json() == 0
        listed = http.get("/v1/namespace/ns/table/list").json()["tables"]
        assert "empty" in listed
    assert lance.dataset(location).schema == empty.schema


def test_request_limits_are_validated_like_server_limits() -> None:
    for bad in (0, -1, True, 1.5, "10"):
        with pytest.raises(errors.InvalidInputError, match="max_k"):
            RequestLimits(max_k=bad)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidInputError, match="index_parameter_maxima"):
        RequestLimits(index_parameter_maxima={"m": 0})
    with pytest.raises(errors.InvalidInputError, match="request_limits"):
        create_app(lna.connect("dir", {"root": "/nonexistent"}), request_limits={"max_k": 1})  # type: ignore[arg-type]
    assert RequestLimits().max_answer_bytes == 64 * 1024 * 1024


def panic_in_pylance(tmp: Path) -> None:
    """A real Rust panic of pylance 14.0.2 (a remainder by zero), raised as pyo3's
    PanicException: a BaseException, so ``except Exception`` let it escape."""
    lance.write_dataset(rows(3), str(tmp / "panic.lance"), max_rows_per_file=0)


def test_pylance_panics_in_this_version(tmp_path: Path) -> None:
    with pytest.raises(BaseException, match="divisor of zero") as raised:
        panic_in_pylance(tmp_path)
    assert type(raised.value).__name__ == "PanicException"
    assert not isinstance(raised.value, Exception)


async def test_a_native_panic_is_an_internal_error_in_the_library(tmp_path: Path) -> None:
    with pytest.raises(errors.InternalError) as raised:
        await LanceTables(threads=1).run(panic_in_pylance, tmp_path)
    assert ".rs:" not in str(raised.value)
    with pytest.raises(BaseException, match="divisor of zero") as native:
        panic_in_pylance(tmp_path)
    assert isinstance(translate(native.value), errors.InternalError)


class PanickingDirectory(DirectoryNamespace):
    """The directory backend with CountTableRows calling pylance so that it panics,
    outside the worker-thread wrapper that types errors (the adapter's last resort)."""

    async def _count_table_rows(self, request: Any) -> Any:
        panic_in_pylance(Path(self.root))


async def test_a_native_panic_is_a_json_500_from_the_adapter(tmp_path: Path) -> None:
    backend = PanickingDirectory.from_properties({"root": str(tmp_path)})
    transport = httpx.ASGITransport(app=create_app(backend))
    async with httpx.AsyncClient(transport=transport, base_url="http://lance") as http:
        answer = await http.post("/v1/table/t/count_rows", json={})
    await backend.aclose()
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {
        "code": 18,
        "error": "internal server error",
        "instance": "/v1/table/t/count_rows",
    }
