"""The sync facade: ``connect_sync`` drives the async backends from blocking code.

Servers: real dir catalogs on temporary folders; for managed versioning also
pylance's own Rust RestAdapter (over its DirectoryNamespace) on a free loopback port.

It is a ``lance_namespace.LanceNamespace`` that pylance accepts as
``namespace_client``, speaks both model families, raises errors of both error
families, serves many threads (and threads that run an event loop) at once,
and pickles to a copy that re-connects to the same catalog.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import RestAdapter

import lance_namespace_async as lna
from lance_namespace_async import errors, models

OPERATIONS_BY_METHOD = {op.method: op for op in lna.OPERATIONS}


def _rows(count: int, start: int = 0) -> pa.Table:
    return pa.table({"id": list(range(start, start + count))})


@pytest.fixture
def facade(root: Path) -> Iterator[lna.SyncLanceNamespace]:
    with lna.connect_sync("dir", {"root": str(root)}) as namespace:
        yield namespace


# -- 1. the same interface -----------------------------------------------------------------


@pytest.mark.parametrize("operation", lna.OPERATIONS, ids=lambda op: op.method)
def test_every_async_operation_has_a_blocking_twin_with_the_same_signature(
    operation: Any,
) -> None:
    async_method = getattr(lna.AsyncLanceNamespace, operation.method)
    sync_method = getattr(lna.SyncLanceNamespace, operation.method)

    assert inspect.iscoroutinefunction(async_method)
    assert callable(sync_method)
    assert not inspect.iscoroutinefunction(sync_method)
    async_params = inspect.signature(async_method).parameters
    sync_params = inspect.signature(sync_method).parameters
    assert list(sync_params) == list(async_params)
    assert [p.default for p in sync_params.values()] == [p.default for p in async_params.values()]


def test_the_facade_is_a_lance_namespace_offering_its_backends_operations(root: Path) -> None:
    with lna.connect_sync("dir", {"root": str(root)}) as facade:
        assert isinstance(facade, ln.LanceNamespace)
        assert isinstance(facade.async_namespace, lna.AsyncLanceNamespace)
        assert facade.list_operations() == facade.async_namespace.list_operations()
        # every operation: dir runs the two batches pylance 14.0.2 lacks itself, and the
        # pipeline (PySpark is installed here) the three pylance answers "not implemented"
        assert set(facade.list_operations()) == {op.method for op in lna.OPERATIONS}


# -- 2. pylance writes and reads through it ------------------------------------------------


def test_pylance_creates_appends_overwrites_and_reads_a_table_through_the_facade(
    facade: lna.SyncLanceNamespace,
) -> None:
    facade.create_namespace({"id": ["w"]})
    table_id = ["w", "t"]

    created = lance.write_dataset(
        _rows(3), namespace_client=facade, table_id=table_id, mode="create"
    )
    assert (created.count_rows(), created.version) == (3, 1)

    appended = lance.write_dataset(
        _rows(2, start=3), namespace_client=facade, table_id=table_id, mode="append"
    )
    assert (appended.count_rows(), appended.version) == (5, 2)

    overwritten = lance.write_dataset(
        _rows(4, start=10), namespace_client=facade, table_id=table_id, mode="overwrite"
    )
    assert (overwritten.count_rows(), overwritten.version) == (4, 3)

    read = lance.dataset(namespace_client=facade, table_id=table_id)
    assert sorted(read.to_table().column("id").to_pylist()) == [10, 11, 12, 13]
    described = facade.describe_table({"id": table_id, "load_detailed_metadata": True})
    assert described.version == 3


def test_creating_an_existing_table_through_pylance_raises_table_already_exists_of_both_families(
    facade: lna.SyncLanceNamespace,
) -> None:
    facade.create_namespace({"id": ["w"]})
    lance.write_dataset(_rows(3), namespace_client=facade, table_id=["w", "t"], mode="create")

    with pytest.raises(errors.TableAlreadyExistsError) as raised:
        lance.write_dataset(_rows(9), namespace_client=facade, table_id=["w", "t"], mode="create")

    assert isinstance(raised.value, ln.TableAlreadyExistsError)
    assert raised.value.code == 5
    assert lance.dataset(namespace_client=facade, table_id=["w", "t"]).count_rows() == 3


@pytest.mark.parametrize(
    ("call", "ours", "theirs", "code"),
    [
        (
            lambda f: f.describe_table({"id": ["present", "missing"]}),
            errors.TableNotFoundError,
            ln.TableNotFoundError,
            4,
        ),
        (
            lambda f: f.list_tables({"id": ["missing"]}),
            errors.NamespaceNotFoundError,
            ln.NamespaceNotFoundError,
            1,
        ),
        (
            lambda f: f.create_namespace({"id": ["present"]}),
            errors.NamespaceAlreadyExistsError,
            ln.NamespaceAlreadyExistsError,
            2,
        ),
        (
            lambda f: f.drop_namespace({"id": ["present"]}),
            errors.NamespaceNotEmptyError,
            ln.NamespaceNotEmptyError,
            3,
        ),
        (
            lambda f: f.describe_table({"id": ["present", "declared"], "version": 7}),
            errors.TableVersionNotFoundError,
            ln.TableVersionNotFoundError,
            11,
        ),
        (
            lambda f: f.describe_table({"id": []}),
            errors.InvalidInputError,
            ln.InvalidInputError,
            13,
        ),
    ],
    ids=[
        "table-not-found",
        "namespace-not-found",
        "namespace-exists",
        "namespace-not-empty",
        "version-not-found",
        "invalid-input",
    ],
)
def test_every_error_of_the_facade_is_also_lance_namespaces_error_with_the_protocol_code(
    facade: lna.SyncLanceNamespace,
    call: Callable[[lna.SyncLanceNamespace], object],
    ours: type[Exception],
    theirs: type[Exception],
    code: int,
) -> None:
    facade.create_namespace({"id": ["present"]})
    facade.declare_table({"id": ["present", "declared"]})

    with pytest.raises(ours) as raised:
        call(facade)

    assert isinstance(raised.value, theirs)
    assert raised.value.code == code  # type: ignore[attr-defined]


# -- 3. pylance's models in, pylance's models out ------------------------------------------

#: (method, request fields, attribute to compare) on a catalog with namespace ``m``
#: holding the written table ``m.t``
MODEL_CALLS = [
    ("list_namespaces", {"id": []}, "namespaces"),
    ("describe_namespace", {"id": ["m"]}, "properties"),
    ("namespace_exists", {"id": ["m"]}, None),
    ("list_tables", {"id": ["m"]}, "tables"),
    ("describe_table", {"id": ["m", "t"]}, "location"),
    ("table_exists", {"id": ["m", "t"]}, None),
    ("list_table_versions", {"id": ["m", "t"]}, "versions"),
]


@pytest.fixture
def model_catalog(facade: lna.SyncLanceNamespace) -> lna.SyncLanceNamespace:
    facade.create_namespace({"id": ["m"], "properties": {"k": "v"}})
    lance.write_dataset(_rows(2), namespace_client=facade, table_id=["m", "t"], mode="create")
    return facade


def _request(family: str, method: str, fields: dict[str, Any]) -> Any:
    name = OPERATIONS_BY_METHOD[method].request_model
    if family == "pylance":
        return getattr(ln, name)(**fields)
    if family == "ours":
        return getattr(models, name).from_dict(fields)
    return dict(fields)


@pytest.mark.parametrize(
    ("method", "fields", "attribute"), MODEL_CALLS, ids=[call[0] for call in MODEL_CALLS]
)
def test_pylance_request_models_get_pylance_response_models_and_ours_get_ours(
    model_catalog: lna.SyncLanceNamespace, method: str, fields: dict[str, Any], attribute: str
) -> None:
    response_name = OPERATIONS_BY_METHOD[method].response_model
    call = getattr(model_catalog, method)

    theirs = call(_request("pylance", method, fields))
    from_model = call(_request("ours", method, fields))
    from_dict = call(_request("dict", method, fields))

    assert type(theirs) is getattr(ln, response_name)
    assert type(from_model) is getattr(models, response_name)
    assert type(from_dict) is getattr(models, response_name)
    assert from_model.to_dict() == from_dict.to_dict()
    if attribute is not None:
        # the same answer in either family
        assert getattr(theirs, attribute) is not None
        assert theirs.to_dict()[attribute] == from_model.to_dict()[attribute]


def test_a_pylance_create_namespace_request_round_trips_its_properties(
    facade: lna.SyncLanceNamespace,
) -> None:
    created = facade.create_namespace(ln.CreateNamespaceRequest(id=["p"], properties={"a": "1"}))

    assert isinstance(created, ln.CreateNamespaceResponse)
    assert created.properties == {"a": "1"}
    described = facade.describe_namespace(models.DescribeNamespaceRequest(id=["p"]))
    assert isinstance(described, models.DescribeNamespaceResponse)
    assert described.properties.to_dict() == {"a": "1"}


# -- 3b. managed versioning: pylance asks the namespace for every version ------------------


@contextlib.contextmanager
def _managed_facade(kind: str, root: Path) -> Iterator[lna.SyncLanceNamespace]:
    """A facade whose tables DescribeTable reports with ``managed_versioning=true``.

    ``rest``: our rest backend against pylance's own Rust RestAdapter serving its
    DirectoryNamespace with version tracking, on a free loopback port; ``dir``: our
    dir backend with version tracking on a temporary folder.
    """
    tracking = {"root": str(root), "table_version_tracking_enabled": "true"}
    if kind == "dir":
        with lna.connect_sync("dir", tracking) as facade:
            yield facade
        return
    adapter = RestAdapter("dir", tracking, host="127.0.0.1", port=0)
    adapter.start()
    try:
        with lna.connect_sync("rest", {"uri": f"http://127.0.0.1:{adapter.port}"}) as facade:
            yield facade
    finally:
        adapter.stop()


@pytest.mark.parametrize("kind", ["rest", "dir"])
def test_pylance_creates_appends_and_reads_a_managed_versioning_table_through_the_facade(
    kind: str, root: Path
) -> None:
    # pylance calls list/create/describe_table_version with its own dicts and reads
    # the answers through model_dump: they must come back as its pydantic models
    with _managed_facade(kind, root) as facade:
        facade.create_namespace({"id": ["w"]})
        table_id = ["w", "t"]
        created = lance.write_dataset(
            _rows(3), namespace_client=facade, table_id=table_id, mode="create"
        )
        appended = lance.write_dataset(
            _rows(2, start=3), namespace_client=facade, table_id=table_id, mode="append"
        )
        read = lance.dataset(namespace_client=facade, table_id=table_id)

        assert (created.version, appended.version) == (1, 2)
        assert sorted(read.to_table().column("id").to_pylist()) == [0, 1, 2, 3, 4]
        described = facade.describe_table({"id": table_id})
        assert described.managed_versioning is True
        versions = facade.list_table_versions({"id": table_id})
        assert [version.version for version in versions.versions] == [1, 2]
        assert lance.dataset(described.location).count_rows() == 5  # from storage


def test_pylance_request_types_get_pylance_answers_for_data_operations(
    facade: lna.SyncLanceNamespace,
) -> None:
    facade.create_namespace({"id": ["d"]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, _rows(3).schema) as writer:
        writer.write_table(_rows(3))
    created = facade.create_table(
        ln.CreateTableRequest(id=["d", "t"]), sink.getvalue().to_pybytes()
    )
    assert isinstance(created, ln.CreateTableResponse)

    counted = facade.count_table_rows(ln.CountTableRowsRequest(id=["d", "t"]))
    assert isinstance(counted, ln.CountTableRowsResponse)
    assert counted.count == 3
    queried = facade.query_table(ln.QueryTableRequest(id=["d", "t"], k=10, vector={}))
    # QueryTableResponse's .data and the bytes LanceDB's pushdown reads, in one answer
    assert isinstance(queried, bytes)
    assert isinstance(queried.data, bytes)  # the Arrow IPC file pylance's interface holds
    assert pa.ipc.open_file(pa.BufferReader(queried.data)).read_all().num_rows == 3
    plan = facade.explain_table_query_plan(
        ln.ExplainTableQueryPlanRequest(id=["d", "t"], query=ln.QueryTableRequest(k=1, vector={}))
    )
    assert isinstance(plan, str)

    # our own models and dicts get ours: a pyarrow.Table for a query
    ours = facade.query_table({"id": ["d", "t"], "k": 10, "vector": None})
    assert isinstance(ours, pa.Table)
    assert isinstance(facade.count_table_rows({"id": ["d", "t"]}), models.CountTableRowsResponse)


# -- 4. many threads at once ---------------------------------------------------------------


def test_sixteen_threads_creating_namespaces_and_declaring_tables_at_once_all_succeed(
    facade: lna.SyncLanceNamespace,
) -> None:
    threads, tables_each = 16, 5
    start = threading.Barrier(threads)

    def work(worker: int) -> list[str]:
        start.wait()
        facade.create_namespace({"id": [f"n{worker}"]})
        for table in range(tables_each):
            facade.declare_table({"id": [f"n{worker}", f"t{table}"]})
        return sorted(facade.list_tables({"id": [f"n{worker}"]}).tables)

    with ThreadPoolExecutor(threads) as pool:
        listed = list(pool.map(work, range(threads)))

    assert listed == [[f"t{t}" for t in range(tables_each)]] * threads
    assert sorted(facade.list_namespaces({}).namespaces) == sorted(f"n{w}" for w in range(threads))
    assert sorted(facade.list_all_tables({}).tables) == sorted(
        f"n{w}$t{t}" for w in range(threads) for t in range(tables_each)
    )


# -- 5. inside a running event loop --------------------------------------------------------


def test_the_facade_works_from_a_thread_that_already_runs_an_event_loop(
    facade: lna.SyncLanceNamespace,
) -> None:
    async def notebook_cell() -> tuple[list[str], int, bool]:
        running = asyncio.get_running_loop().is_running()
        facade.create_namespace({"id": ["loop"]})
        lance.write_dataset(_rows(3), namespace_client=facade, table_id=["loop", "t"])
        await asyncio.sleep(0)  # the loop is still usable after blocking calls
        listed = facade.list_tables({"id": ["loop"]}).tables
        count = lance.dataset(namespace_client=facade, table_id=["loop", "t"]).count_rows()
        return listed, count, running

    assert asyncio.run(notebook_cell()) == (["t"], 3, True)


# -- 6. lifecycle --------------------------------------------------------------------------


def test_the_facade_closes_on_leaving_its_with_block_and_refuses_later_calls(root: Path) -> None:
    with lna.connect_sync("dir", {"root": str(root)}) as facade:
        facade.create_namespace({"id": ["a"]})

    with pytest.raises(errors.InvalidInputError) as raised:
        facade.list_namespaces({})
    assert isinstance(raised.value, ln.InvalidInputError)


def test_close_is_idempotent_and_a_call_after_close_raises_invalid_input(root: Path) -> None:
    facade = lna.connect_sync("dir", {"root": str(root)})
    facade.create_namespace({"id": ["a"]})

    facade.close()
    facade.close()

    with pytest.raises(errors.InvalidInputError, match="closed"):
        facade.namespace_exists({"id": ["a"]})
    with lna.connect_sync("dir", {"root": str(root)}) as reopened:
        assert reopened.list_namespaces({}).namespaces == ["a"]


def test_closing_a_facade_that_never_made_a_call_is_harmless(root: Path) -> None:
    facade = lna.connect_sync("dir", {"root": str(root)})

    facade.close()

    with pytest.raises(errors.InvalidInputError):
        facade.list_namespaces({})


_SCRIPT = """
import sys
import lance_namespace_async as lna
facade = lna.connect_sync("dir", {"root": sys.argv[1]})  # a module global, as in scripts
facade.create_namespace({"id": ["a"]})
if sys.argv[2] == "close":
    facade.close()
"""


def _run_script(root: Path, close: bool, timeout: float) -> float:
    """Run _SCRIPT in a fresh interpreter; return its wall time (it must exit cleanly)."""
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(root), "close" if close else "keep-open"],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr.decode()
    return time.monotonic() - started


def test_a_process_exits_even_if_it_never_closes_its_facade(tmp_path: Path) -> None:
    try:
        control = _run_script(tmp_path / "closed", close=True, timeout=120)
    except subprocess.TimeoutExpired:  # pragma: no cover - not the bug under test
        pytest.fail("the control run, which closes its facade, did not finish")

    _run_script(tmp_path / "open", close=False, timeout=max(10.0, 5 * control))


# -- 7. pickling ---------------------------------------------------------------------------


def test_an_unpickled_facade_reconnects_to_the_same_catalog(root: Path) -> None:
    properties = {"root": str(root), "storage.aws_secret_access_key": "SECRET123"}
    with lna.connect_sync("dir", properties) as facade:
        facade.create_namespace({"id": ["shared"], "properties": {"k": "v"}})
        lance.write_dataset(_rows(4), namespace_client=facade, table_id=["shared", "t"])

        with pickle.loads(pickle.dumps(facade)) as copy:
            assert isinstance(copy, lna.SyncLanceNamespace)
            assert copy is not facade
            assert copy.namespace_id() == facade.namespace_id()
            assert copy.list_namespaces({}).namespaces == ["shared"]
            assert copy.describe_namespace({"id": ["shared"]}).properties.to_dict() == {"k": "v"}
            assert lance.dataset(namespace_client=copy, table_id=["shared", "t"]).count_rows() == 4
            copy.declare_table({"id": ["shared", "from_copy"]})

        # what the copy did is on disk for the original too
        assert sorted(facade.list_tables({"id": ["shared"]}).tables) == ["from_copy", "t"]


def test_pickling_a_facade_that_is_in_use_works_and_leaves_the_original_usable(
    facade: lna.SyncLanceNamespace,
) -> None:
    facade.create_namespace({"id": ["a"]})  # the portal thread is running now

    with pickle.loads(pickle.dumps(facade)) as copy:
        copy.create_namespace({"id": ["b"]})

    assert sorted(facade.list_namespaces({}).namespaces) == ["a", "b"]


def test_secret_properties_never_show_in_repr_or_namespace_id(root: Path) -> None:
    properties = {"root": str(root), "storage.aws_secret_access_key": "SECRET123"}
    with lna.connect_sync("dir", properties) as facade:
        facade.create_namespace({"id": ["a"]})

        assert "SECRET123" not in repr(facade)
        assert "SECRET123" not in facade.namespace_id()
        assert str(root) in facade.namespace_id()
        with pickle.loads(pickle.dumps(facade)) as copy:
            assert "SECRET123" not in repr(copy)


# -- 8. bad configuration ------------------------------------------------------------------


def test_an_unknown_property_is_rejected_by_connect_sync_naming_the_key(root: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="no_such_option"):
        lna.connect_sync("dir", {"root": str(root), "no_such_option": "1"})


def test_a_missing_root_is_rejected_by_connect_sync(root: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="root"):
        lna.connect_sync("dir", {})
