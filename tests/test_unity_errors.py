"""How the unity backend names Unity's errors: every shape a Unity release has used.

Server: the Unity look-alike (tests/unity_server.py) of both release lines, answering from
its own state: ``release="0.6"`` speaks as Unity 0.5 and later do (a missing object is 404
``CATALOG_NOT_FOUND`` / ``SCHEMA_NOT_FOUND`` / ``TABLE_NOT_FOUND``, a duplicate is HTTP 400
``CATALOG_ALREADY_EXISTS`` / ``SCHEMA_ALREADY_EXISTS`` / ``TABLE_ALREADY_EXISTS``),
``"0.4.1"`` as Unity 0.4.1 did (404 ``NOT_FOUND``, the same 400 duplicates), ``"0.3"`` as
Unity 0.1-0.4.0 did (404 ``NOT_FOUND``, 409 ``ALREADY_EXISTS``); all refuse to delete a
non-empty catalog or schema with 400 ``FAILED_PRECONDITION``. Codes that
no state produces here are injected with ``fail_next``. With ``LANCE_NS_UNITY_URI`` set, the
tests run against that real server (tests/unity_real.py) as the 0.6 line, without injection.

Seed 001 gives the protocol codes: NamespaceNotFound (1), NamespaceAlreadyExists (2),
NamespaceNotEmpty (3), TableNotFound (4), TableAlreadyExists (5), InvalidInput (13).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from unity_real import unity_under_test
from unity_server import BASE_PATH, RELEASES, UnityServer

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.unity import UnityNamespace

CAT = "main"


@pytest.fixture(params=RELEASES)
def server(request: pytest.FixtureRequest) -> Iterator[UnityServer]:
    with unity_under_test(release=request.param) as running:
        running.add_catalog(CAT)
        running.add_schema(CAT, "s")
        yield running


@pytest.fixture
async def ns(server: UnityServer, tmp_path: Path) -> AsyncIterator[UnityNamespace]:
    properties = {"endpoint": server.uri, "root": str(tmp_path), "retry_backoff_ms": "1"}
    async with lna.connect("unity", properties) as namespace:
        assert isinstance(namespace, UnityNamespace)
        yield namespace


async def refused(
    kind: type[errors.LanceNamespaceError],
    call: Callable[[dict[str, Any]], Awaitable[object]],
    request: dict[str, Any],
) -> errors.LanceNamespaceError:
    with pytest.raises(kind) as caught:
        await call(request)
    return caught.value


def last_answer(server: UnityServer, method: str, path: str) -> tuple[int, str]:
    """What the look-alike answers to one more such request: (status, error_code)."""
    response = httpx.request(method, f"{server.uri}{BASE_PATH}{path}", timeout=10, json=None)
    return response.status_code, response.json()["error_code"]


async def test_duplicates_are_already_exists(ns: UnityNamespace, server: UnityServer) -> None:
    await ns.declare_table({"id": [CAT, "s", "t"]})
    duplicate_catalog = await refused(
        errors.NamespaceAlreadyExistsError, ns.create_namespace, {"id": [CAT]}
    )
    duplicate_schema = await refused(
        errors.NamespaceAlreadyExistsError, ns.create_namespace, {"id": [CAT, "s"]}
    )
    duplicate_table = await refused(
        errors.TableAlreadyExistsError, ns.declare_table, {"id": [CAT, "s", "t"]}
    )
    assert [e.code for e in (duplicate_catalog, duplicate_schema, duplicate_table)] == [2, 2, 5]
    assert "already exists" in str(duplicate_table)
    # ExistOk turns the duplicate into a describe, in both release lines
    await ns.create_namespace({"id": [CAT, "s"], "mode": "ExistOk"})
    await ns.create_namespace({"id": [CAT], "mode": "exist_ok"})


async def test_missing_objects_are_not_found(ns: UnityNamespace, server: UnityServer) -> None:
    namespace_cases: list[tuple[Callable[[dict[str, Any]], Awaitable[object]], list[str]]] = [
        (ns.describe_namespace, ["ghost"]),
        (ns.describe_namespace, [CAT, "ghost"]),
        (ns.describe_namespace, ["ghost", "s"]),
        (ns.namespace_exists, [CAT, "ghost"]),
        (ns.list_namespaces, ["ghost"]),
        (ns.list_tables, [CAT, "ghost"]),
        (ns.list_tables, ["ghost", "s"]),
        (ns.create_namespace, ["ghost", "s"]),
        (ns.drop_namespace, [CAT, "ghost"]),
        (ns.declare_table, [CAT, "ghost", "t"]),
        (ns.declare_table, ["ghost", "s", "t"]),
    ]
    for call, identifier in namespace_cases:
        error = await refused(errors.NamespaceNotFoundError, call, {"id": identifier})
        assert error.code == 1, (call, identifier)
    table_cases: list[tuple[Callable[[dict[str, Any]], Awaitable[object]], list[str]]] = [
        (ns.describe_table, [CAT, "s", "ghost"]),
        (ns.describe_table, [CAT, "ghost", "t"]),
        (ns.table_exists, [CAT, "s", "ghost"]),
        (ns.deregister_table, [CAT, "s", "ghost"]),
        (ns.drop_table, [CAT, "s", "ghost"]),
    ]
    for call, identifier in table_cases:
        error = await refused(errors.TableNotFoundError, call, {"id": identifier})
        assert error.code == 4, (call, identifier)


async def test_a_non_empty_namespace_is_not_empty(ns: UnityNamespace, server: UnityServer) -> None:
    await ns.declare_table({"id": [CAT, "s", "t"]})
    schema = await refused(errors.NamespaceNotEmptyError, ns.drop_namespace, {"id": [CAT, "s"]})
    catalog = await refused(errors.NamespaceNotEmptyError, ns.drop_namespace, {"id": [CAT]})
    assert (schema.code, catalog.code) == (3, 3)
    assert f"{CAT}.s.t" in server.tables
    assert last_answer(server, "DELETE", f"/schemas/{CAT}.s") == (400, "FAILED_PRECONDITION")


def test_the_wire_shapes_are_those_of_the_release(server: UnityServer) -> None:
    """The two release lines really differ on the wire (what the tests above went through)."""
    with httpx.Client(base_url=server.uri + BASE_PATH, timeout=10) as http:
        duplicate = http.post("/schemas", json={"name": "s", "catalog_name": CAT})
        missing = http.get(f"/schemas/{CAT}.ghost")
    seen = {
        "duplicate": (duplicate.status_code, duplicate.json()["error_code"]),
        "missing": (missing.status_code, missing.json()["error_code"]),
    }
    expected = {
        "0.6": {"duplicate": (400, "SCHEMA_ALREADY_EXISTS"), "missing": (404, "SCHEMA_NOT_FOUND")},
        "0.4.1": {"duplicate": (400, "SCHEMA_ALREADY_EXISTS"), "missing": (404, "NOT_FOUND")},
        "0.3": {"duplicate": (409, "ALREADY_EXISTS"), "missing": (404, "NOT_FOUND")},
    }
    assert seen == expected[server.release]


# (HTTP status, Unity error_code) injected on the next request -> what the backend reports
INJECTED_ON_DECLARE: list[tuple[int, str, type[errors.LanceNamespaceError], int]] = [
    (400, "TABLE_ALREADY_EXISTS", errors.TableAlreadyExistsError, 5),
    (409, "ALREADY_EXISTS", errors.TableAlreadyExistsError, 5),
    (400, "RESOURCE_ALREADY_EXISTS", errors.TableAlreadyExistsError, 5),
    (404, "SCHEMA_NOT_FOUND", errors.NamespaceNotFoundError, 1),
    (404, "CATALOG_NOT_FOUND", errors.NamespaceNotFoundError, 1),
    # FAILED_PRECONDITION means "not empty" only on a delete
    (400, "FAILED_PRECONDITION", errors.InvalidInputError, 13),
    (400, "UNSUPPORTED_TABLE_FORMAT", errors.InvalidInputError, 13),
    (400, "INVALID_ARGUMENT", errors.InvalidInputError, 13),
]


@pytest.mark.parametrize(("status", "code", "kind", "number"), INJECTED_ON_DECLARE)
async def test_injected_codes_on_declare_table(
    ns: UnityNamespace,
    server: UnityServer,
    status: int,
    code: str,
    kind: type[errors.LanceNamespaceError],
    number: int,
) -> None:
    # DeclareTable first asks whether the table exists; the fault answers the create
    server.fail_next(status, error_code=code, operations=("createTable",))
    error = await refused(kind, ns.declare_table, {"id": [CAT, "s", "t"]})
    assert error.code == number
    assert f"{CAT}.s.t" not in server.tables


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "CATALOG_ALREADY_EXISTS"), (409, "ALREADY_EXISTS"), (400, "RESOURCE_ALREADY_EXISTS")],
)
async def test_injected_duplicate_catalog(
    ns: UnityNamespace, server: UnityServer, status: int, code: str
) -> None:
    server.fail_next(status, error_code=code)
    error = await refused(errors.NamespaceAlreadyExistsError, ns.create_namespace, {"id": ["c"]})
    assert error.code == 2
