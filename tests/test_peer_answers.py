"""Asked as pylance and LanceDB ask, the facade answers what pylance's own namespace does.

Servers: pylance 14's ``lance.namespace.DirectoryNamespace`` (its Python object) and
our dir backend, each on its own temporary folder; pylance's own Rust RestAdapter
(serving its DirectoryNamespace) on a free loopback port, once for pylance's
``RestNamespace`` and once for our ``impls.RestNamespace``; LanceDB 0.40 over our
``impls.DirNamespace`` and over its own native dir namespace.

The same calls go, in the same order, to pylance's DirectoryNamespace and to
``connect_sync("dir", ...)`` and ``impls.DirNamespace``, and to pylance's RestNamespace
and our ``impls.RestNamespace``, over every operation pylance's dir supports, in the
three shapes callers use: lance_namespace's pydantic request models, their
``model_dump()`` (``None`` for every unset field) and plain dicts. The type of each
answer is decided here, operation by operation, from what pylance answered at run time:

- where pylance answers, we answer the same type (a dict for the version operations,
  ``str`` for explain/analyze, its pydantic model elsewhere) and the same values
  (volatile ones aside), with one exception: ``query_table``, whose answer is the
  Arrow IPC bytes LanceDB's pushdown reads that also carry ``QueryTableResponse``'s
  ``.data``;
- where pylance refuses the shape (its methods call ``request.model_dump()``), a
  ``model_dump()`` still gets pylance's model and a plain partial dict our own typed
  answer (our users' shorthand);
- where pylance raises a namespace error, we raise one with the same code.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import lance
import lance.namespace
import lance_namespace as ln
import lancedb
import numpy as np
import pyarrow as pa
import pytest
from fault_proxy import pylance_adapter
from lance.namespace import RestNamespace

import lance_namespace_async as lna
from lance_namespace_async import impls, models

OPERATIONS = {operation.method: operation for operation in lna.OPERATIONS}
TABLE = ["ns", "t"]
QUERY = {"k": 3, "vector": {"single_vector": [0.0] * 4}, "columns": {"column_names": ["id"]}}


def _ipc(start: int = 0, count: int = 10) -> bytes:
    vectors = np.arange(start * 4, (start + count) * 4, dtype=np.float32)
    table = pa.table(
        {
            "id": pa.array(range(start, start + count), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors), 4),
        }
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


# Every operation pylance 14.0.2's DirectoryNamespace offers, in an order that keeps
# each call meaningful. merge_insert_into_table is left to the protocol update
# (lance-namespace 0.13's ``on`` is a list); create_table_version needs pylance's
# own manifest writer and is exercised by test_sync_facade's managed versioning.
STEPS: list[tuple[str, dict[str, Any], bytes | None]] = [
    ("create_namespace", {"id": ["ns"], "properties": {"k": "v"}}, None),
    ("create_namespace", {"id": ["empty"]}, None),
    ("list_namespaces", {"id": []}, None),
    ("describe_namespace", {"id": ["ns"]}, None),
    ("namespace_exists", {"id": ["ns"]}, None),
    ("create_table", {"id": TABLE}, _ipc()),
    ("list_tables", {"id": ["ns"]}, None),
    ("list_all_tables", {}, None),
    ("describe_table", {"id": TABLE}, None),
    ("table_exists", {"id": TABLE}, None),
    ("count_table_rows", {"id": TABLE, "predicate": "id > 2"}, None),
    ("insert_into_table", {"id": TABLE, "mode": "append"}, _ipc(10, 5)),
    ("update_table", {"id": TABLE, "predicate": "id = 1", "updates": [["id", "100"]]}, None),
    ("delete_from_table", {"id": TABLE, "predicate": "id = 0"}, None),
    ("query_table", {"id": TABLE, **QUERY}, None),
    ("explain_table_query_plan", {"id": TABLE, "query": QUERY}, None),
    ("analyze_table_query_plan", {"id": TABLE, **QUERY}, None),
    (
        "create_table_scalar_index",
        {"id": TABLE, "column": "id", "index_type": "BTREE", "name": "id_idx"},
        None,
    ),
    ("list_table_indices", {"id": TABLE}, None),
    ("describe_table_index_stats", {"id": TABLE, "index_name": "id_idx"}, None),
    ("drop_table_index", {"id": TABLE, "index_name": "id_idx"}, None),
    ("list_table_versions", {"id": TABLE}, None),
    ("describe_table_version", {"id": TABLE, "version": 1}, None),
    ("create_table_tag", {"id": TABLE, "tag": "v1", "version": 1}, None),
    ("list_table_tags", {"id": TABLE}, None),
    ("get_table_tag_version", {"id": TABLE, "tag": "v1"}, None),
    ("update_table_tag", {"id": TABLE, "tag": "v1", "version": 2}, None),
    ("delete_table_tag", {"id": TABLE, "tag": "v1"}, None),
    ("create_table_branch", {"id": TABLE, "name": "dev"}, None),
    ("list_table_branches", {"id": TABLE}, None),
    ("delete_table_branch", {"id": TABLE, "name": "dev"}, None),
    ("update_table_schema_metadata", {"id": TABLE, "metadata": {"a": "b"}}, None),
    ("get_table_stats", {"id": TABLE}, None),
    (
        "alter_table_add_columns",
        {"id": TABLE, "new_columns": [{"name": "y", "expression": "id * 2"}]},
        None,
    ),
    (
        "alter_table_alter_columns",
        {"id": TABLE, "alterations": [{"path": "y", "rename": "z"}]},
        None,
    ),
    ("alter_table_drop_columns", {"id": TABLE, "columns": ["z"]}, None),
    ("restore_table", {"id": TABLE, "version": 1}, None),
    (
        "batch_delete_table_versions",
        {"id": TABLE, "ranges": [{"start_version": 2, "end_version": 3}]},
        None,
    ),
    ("declare_table", {"id": ["ns", "d"]}, None),
    ("drop_table", {"id": ["ns", "d"]}, None),
    ("register_table", {"id": ["ns", "r"], "location": "ns/physical.lance"}, None),
    ("deregister_table", {"id": ["ns", "r"]}, None),
    ("rename_table", {"id": TABLE, "new_table_name": "t2"}, None),
    ("describe_transaction", {"id": TABLE}, None),
    ("drop_namespace", {"id": ["empty"]}, None),
]
SHAPES = ["model", "model_dump", "dict"]
# pylance's interface names ListTablesRequest for list_all_tables
PEER_REQUEST = {"list_all_tables": "ListTablesRequest"}
# fields whose values differ by nature (random names, clocks, uuids, byte sizes)
VOLATILE = {
    "context",  # over REST: the response headers (dates, lengths)
    "location",
    "table_uri",
    "transaction_id",
    "index_uuid",
    "created_at",
    "create_at",
    "e_tag",
    "timestamp_millis",
    "manifest_size",
    "size_bytes",
    "total_bytes",
}
# values that differ today, each with the reason (the types agree)
KNOWN_VALUE_GAPS = {
    # pylance lists nothing for a request without id; we list every table
    "list_all_tables": "pylance 14 answers [] to ListTablesRequest() on a fresh manifest",
}
# pylance writes manifest_path from the filesystem root ("tmp/<root>/<table>/_versions/
# N.manifest") in list_table_versions and describe_table_version; we write it from the
# table in list_table_versions: compared by its "_versions/N.manifest" tail


def _request(shape: str, method: str, fields: dict[str, Any]) -> Any:
    model = getattr(ln, PEER_REQUEST.get(method, OPERATIONS[method].request_model))
    if shape == "model":
        return model(**fields)
    if shape == "model_dump":
        return model(**fields).model_dump()
    return dict(fields)


Answer = tuple[str, Any]  # ("answer", value) or ("raise", exception)


def _play(namespace: Any, shape: str) -> Iterator[Answer]:
    """Each step in ``shape``; where the namespace refuses the shape itself, the step
    is done again as a model so that later steps find the state they expect."""
    for method, fields, data in STEPS:
        call: Callable[..., Any] = getattr(namespace, method)
        extra = () if data is None else (data,)
        try:
            yield "answer", call(_request(shape, method, fields), *extra)
        except Exception as exc:
            yield "raise", exc
            if shape != "model":
                with contextlib.suppress(Exception):
                    call(_request("model", method, fields), *extra)


Opener = Callable[[str], AbstractContextManager[Any]]


def _scenario(root: Path, open_namespace: Opener, shape: str) -> list[Answer]:
    lance.write_dataset(pa.table({"id": [1]}), str(root / "ns" / "physical.lance"))
    with open_namespace(str(root)) as namespace:
        return list(_play(namespace, shape))


@contextlib.contextmanager
def _pylance_dir(root: str) -> Iterator[Any]:
    yield lance.namespace.DirectoryNamespace(root=root)


@contextlib.contextmanager
def _pylance_rest(root: str) -> Iterator[Any]:
    with pylance_adapter(root) as uri:
        yield RestNamespace(uri=uri)


@contextlib.contextmanager
def _closing(namespace: Any) -> Iterator[Any]:
    with namespace:
        yield namespace


@contextlib.contextmanager
def _our_rest(root: str) -> Iterator[Any]:
    with pylance_adapter(root) as uri, _closing(impls.RestNamespace(uri=uri)) as namespace:
        yield namespace


PYLANCE: dict[str, Opener] = {"dir": _pylance_dir, "rest": _pylance_rest}
# (which of pylance's namespaces answers the same calls, our facade)
FACADES: dict[str, tuple[str, Opener]] = {
    "connect_sync-dir": ("dir", lambda root: _closing(lna.connect_sync("dir", {"root": root}))),
    "impls.DirNamespace": ("dir", lambda root: _closing(impls.DirNamespace(root=root))),
    "impls.RestNamespace": ("rest", _our_rest),
}


def _refuses_the_shape(exc: BaseException) -> bool:
    """pylance's own methods call ``request.model_dump()`` or want a Mapping."""
    return isinstance(exc, AttributeError | TypeError) and bool(
        re.search(r"model_dump|Mapping", str(exc))
    )


def _comparable(value: Any) -> Any:
    if isinstance(value, bytes):  # an Arrow IPC file
        return pa.ipc.open_file(pa.BufferReader(bytes(value))).read_all().to_pylist()
    if isinstance(value, ln.QueryTableResponse):
        return _comparable(value.data)
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    return _without_volatile(value)


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(kept.get("manifest_path"), str):
            kept["manifest_path"] = "/".join(kept["manifest_path"].split("/")[-2:])
        # an empty map is how we say "no properties"; pylance says None
        return {k: (None if v == {} and k == "properties" else v) for k, v in kept.items()}
    if isinstance(value, list):
        return [_without_volatile(item) for item in value]
    return value


@pytest.fixture(scope="module")
def pylance_answers(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, str], list[Answer]]:
    return {
        (kind, shape): _scenario(tmp_path_factory.mktemp(f"pylance-{kind}"), opener, shape)
        for kind, opener in PYLANCE.items()
        for shape in SHAPES
    }


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("facade", list(FACADES))
def test_every_operation_answers_in_the_type_pylances_own_namespace_answers(
    facade: str,
    shape: str,
    tmp_path: Path,
    pylance_answers: dict[tuple[str, str], list[Answer]],
) -> None:
    kind, opener = FACADES[facade]
    ours = _scenario(tmp_path, opener, shape)
    theirs_all = pylance_answers[kind, shape]

    for index, ((method, _, _), (their_kind, theirs), (our_kind, mine)) in enumerate(
        zip(STEPS, theirs_all, ours, strict=True)
    ):
        where = f"{method} asked with a {shape}"
        operation = OPERATIONS[method]
        if their_kind == "raise" and isinstance(theirs, NotImplementedError):
            continue  # pylance's dir lacks it (rename_table): nothing to match
        if their_kind == "raise" and not _refuses_the_shape(theirs):
            assert our_kind == "raise", f"{where}: pylance raised {theirs!r}, we answered"
            assert getattr(mine, "code", None) == theirs.code, where
            assert isinstance(mine, type(theirs)), where  # lance_namespace's class too
            continue
        if their_kind == "raise":  # pylance refuses the shape: ours decides
            as_model_kind, as_model = pylance_answers[kind, "model"][index]
            if isinstance(as_model, NotImplementedError):
                continue  # pylance's dir lacks it (rename_table): nothing to match
            if as_model_kind == "raise" and not _refuses_the_shape(as_model):
                assert getattr(mine, "code", None) == as_model.code, f"{where}: {mine!r}"
                continue
            assert our_kind == "answer", f"{where}: {mine!r}"
            if shape == "dict":  # our users' shorthand: our typed answer
                expected: type = pa.Table if operation.returns_arrow else _ours(method)
            else:  # a pylance model (the version operations) or a model_dump()
                expected = _theirs(method)
            assert isinstance(mine, expected), f"{where}: {type(mine)} is not {expected}"
            continue
        assert our_kind == "answer", f"{where}: {mine!r}"
        if operation.returns_arrow and shape == "dict":
            # pylance takes any dict here; a partial plain dict is our users' shorthand
            # and gets our pyarrow.Table (LanceDB and pylance send models or dumps)
            assert isinstance(theirs, ln.QueryTableResponse)
            assert isinstance(mine, pa.Table), where
            assert mine.to_pylist() == _comparable(theirs), where
            continue
        if operation.returns_arrow:
            # pylance: QueryTableResponse; ours: its bytes, with QueryTableResponse's .data
            assert isinstance(theirs, ln.QueryTableResponse)
            assert isinstance(mine, bytes), where
            assert mine.data == bytes(mine), where
        else:
            assert type(mine) is type(theirs), f"{where}: {type(mine)} is not {type(theirs)}"
        if isinstance(theirs, str) or method in KNOWN_VALUE_GAPS:
            continue  # plans print addresses and timings
        assert _comparable(mine) == _comparable(theirs), where


def _theirs(method: str) -> type:
    names = {"create_table_scalar_index": "CreateTableIndexResponse"}
    operation = OPERATIONS[method]
    if operation.response_body == "string":
        return str
    return getattr(ln, names.get(method, operation.response_model))  # type: ignore[no-any-return]


def _ours(method: str) -> type:
    return getattr(models, OPERATIONS[method].response_model)  # type: ignore[no-any-return]


def test_the_version_operations_answer_dicts_to_dicts_as_pylance_does(tmp_path: Path) -> None:
    # pylance's test suite: describe_table_version(request.model_dump()).get("version")
    with lna.connect_sync("dir", {"root": str(tmp_path)}) as facade:
        facade.create_table(ln.CreateTableRequest(id=["t"]), _ipc())
        request = ln.DescribeTableVersionRequest(id=["t"], version=1)

        described = facade.describe_table_version(request.model_dump())
        shorthand = facade.describe_table_version({"id": ["t"], "version": 1})
        as_model = facade.describe_table_version(request)
        ours = facade.describe_table_version(models.DescribeTableVersionRequest(id=["t"]))

    assert isinstance(described, dict)
    assert described["version"]["version"] == 1
    assert shorthand == described
    assert isinstance(as_model, ln.DescribeTableVersionResponse)
    assert isinstance(ours, models.DescribeTableVersionResponse)


# -- query_table: LanceDB's pushdown reads bytes, the interface reads .data ---------------


def _vectors(count: int) -> pa.Table:
    vectors = np.arange(count * 4, dtype=np.float32)
    return pa.table(
        {
            "id": list(range(count)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors), 4),
        }
    )


def test_lancedb_pushdown_of_query_and_create_table_over_our_dir_matches_lancedb_own(
    tmp_path: Path,
) -> None:
    pushdown = ["QueryTable", "CreateTable"]
    pushed = lancedb.connect(
        namespace_client_impl="lance_namespace_async.impls.DirNamespace",
        namespace_client_properties={"root": str(tmp_path / "ours")},
        namespace_client_pushdown_operations=pushdown,
    )
    own = lancedb.connect(
        namespace_client_impl="dir",
        namespace_client_properties={"root": str(tmp_path / "own")},
        namespace_client_pushdown_operations=pushdown,
    )
    ours_table = pushed.create_table("t", _vectors(50))
    own_table = own.create_table("t", _vectors(50))

    def results(table: Any) -> list[list[int]]:
        near = [1.0, 1.0, 1.0, 1.0]
        answers = [
            table.search(near).limit(5).to_arrow(),
            table.search(near).where("id >= 40", prefilter=True).limit(20).to_arrow(),
            table.search(near).where("id >= 40", prefilter=False).limit(20).to_arrow(),
            # (without prefilter= LanceDB's Python pushdown sends prefilter=None, which
            # pylance's DirectoryNamespace and we read as a post-filter, while LanceDB's
            # native dir pre-filters: a difference of LanceDB's two pushdown paths)
            table.search().where("id < 3").to_arrow(),
        ]
        return [sorted(answer.column("id").to_pylist()) for answer in answers]

    assert results(ours_table) == results(own_table)
    assert results(ours_table)[1] == list(range(40, 50))
    assert ours_table.count_rows() == own_table.count_rows() == 50


def test_code_that_reads_query_table_response_reads_our_answer(tmp_path: Path) -> None:
    with impls.DirNamespace(root=str(tmp_path)) as namespace:
        namespace.create_table(ln.CreateTableRequest(id=["t"]), _ipc())
        answer = namespace.query_table(
            ln.QueryTableRequest(id=["t"], k=10, vector={}, filter="id < 4")
        )

    # what the lance_namespace interface declares: .data, model_dump(), to_dict()
    table = pa.ipc.open_file(pa.BufferReader(answer.data)).read_all()
    assert sorted(table.column("id").to_pylist()) == [0, 1, 2, 3]
    assert answer.model_dump() == {"data": answer.data} == answer.to_dict()
    assert ln.QueryTableResponse(**answer.model_dump()).data == answer.data
    # and what LanceDB's pushdown does with it
    reader = pa.ipc.open_file(pa.py_buffer(answer))
    assert reader.num_record_batches >= 1
    assert "bytes of Arrow IPC" in repr(answer)
