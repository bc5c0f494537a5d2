"""The catalog backends' shared REST call (``_transport.catalog``): answers iceberg and unity
cannot use, and each catalog's error dialect, at the HTTP level.

No server: respx answers in-process, as in test_http.py, since a well-behaved catalog
(our look-alikes, the Iceberg reference server) never sends these answers. The iceberg
backend reads its warehouse's ``/v1/config`` first; unity asks ``/tables/<full name>``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
import respx

import lance_namespace_async as lna
from lance_namespace_async import errors

URI = "http://catalog.test"
FAST = {"retry_backoff_ms": "1", "retry_max_backoff_ms": "5", "http_client": "httpx"}  # respx
ICEBERG_TABLE = f"{URI}/v1/wh/namespaces/ns/tables/t"  # warehouse_prefix: the warehouse
UNITY_TABLE = f"{URI}/api/2.1/unity-catalog/tables/main.s.t"


def iceberg(**properties: str) -> Any:
    respx.get(f"{URI}/v1/config").mock(return_value=httpx.Response(200, json={}))
    return lna.connect("iceberg", {"endpoint": URI, **FAST, **properties})


def unity(**properties: str) -> Any:
    return lna.connect("unity", {"endpoint": URI, **FAST, **properties})


#: backend, its table's URL, a DescribeTable id, how its messages name the catalog
BACKENDS = [
    pytest.param(iceberg, ICEBERG_TABLE, ["wh", "ns", "t"], "the Iceberg catalog", id="iceberg"),
    pytest.param(unity, UNITY_TABLE, ["main", "s", "t"], "Unity", id="unity"),
]


@pytest.mark.parametrize(("connect", "url", "ident", "catalog"), BACKENDS)
@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (httpx.Response(200, text="<html>proxy login</html>"), "sent no JSON"),
        (httpx.Response(200, content=b'{"name": "\xff"}'), "sent no JSON"),  # not UTF-8
        (httpx.Response(200, json=["t"]), "sent a JSON list where an object belongs"),
        (httpx.Response(200, text="[" * 100_000), "sent no JSON"),  # no RecursionError
    ],
)
@respx.mock
async def test_an_unusable_answer_is_internal_naming_the_call_and_the_catalog(
    connect: Callable[..., Any],
    url: str,
    ident: list[str],
    catalog: str,
    answer: httpx.Response,
    says: str,
) -> None:
    route = respx.get(url).mock(return_value=answer)
    async with connect() as ns:
        with pytest.raises(errors.InternalError) as caught:
            await ns.describe_table({"id": ident})
    assert caught.value.code == 18
    assert caught.value.message.startswith("DescribeTable ")
    assert f"{catalog} {says}" in caught.value.message
    assert route.call_count == 1  # the same question gets the same answer: not retried


@pytest.mark.parametrize(("connect", "url", "ident", "catalog"), BACKENDS)
@respx.mock
async def test_an_oversized_answer_is_internal_naming_the_call_and_the_key(
    connect: Callable[..., Any], url: str, ident: list[str], catalog: str
) -> None:
    respx.get(url).mock(return_value=httpx.Response(200, content=b"{}" + b" " * 4096))
    async with connect(max_response_bytes="1024") as ns:
        with pytest.raises(errors.InternalError, match="max_response_bytes") as caught:
            await ns.describe_table({"id": ident})
    assert caught.value.message.startswith(f"DescribeTable {'.'.join(ident)}: ")


ICEBERG_ERROR = {"error": {"message": "gone", "type": "NoSuchTableException", "code": 404}}


@pytest.mark.parametrize(
    ("connect", "url", "ident", "answer", "expected", "message"),
    [
        # the catalog's own dialect names the condition, whatever the status
        (
            iceberg,
            ICEBERG_TABLE,
            ["wh", "ns", "t"],
            httpx.Response(400, json=ICEBERG_ERROR),
            errors.TableNotFoundError,
            "gone",
        ),
        (
            iceberg,
            ICEBERG_TABLE,
            ["wh", "ns", "t"],
            httpx.Response(403, json={"error": {"type": "ForbiddenException", "code": 403}}),
            errors.PermissionDeniedError,
            None,
        ),
        (
            unity,
            UNITY_TABLE,
            ["main", "s", "t"],
            httpx.Response(404, json={"error_code": "TABLE_NOT_FOUND", "message": "no t"}),
            errors.TableNotFoundError,
            "no t",
        ),
        (
            unity,
            UNITY_TABLE,
            ["main", "s", "t"],
            httpx.Response(400, json={"error_code": "PERMISSION_DENIED", "message": "no"}),
            errors.PermissionDeniedError,
            "no",
        ),
        # without one, the status decides: a proxy's HTML page too
        (
            iceberg,
            ICEBERG_TABLE,
            ["wh", "ns", "t"],
            httpx.Response(404, text="<html>not here</html>"),
            errors.TableNotFoundError,
            "HTTP 404",
        ),
        (
            unity,
            UNITY_TABLE,
            ["main", "s", "t"],
            httpx.Response(500, text="<html>oops</html>"),
            errors.InternalError,
            "HTTP 500",
        ),
        (
            unity,
            UNITY_TABLE,
            ["main", "s", "t"],
            httpx.Response(401, json={"error_code": "SOMETHING_NEW"}),
            errors.UnauthenticatedError,
            "HTTP 401",
        ),
    ],
)
@respx.mock
async def test_a_failed_answer_is_typed_by_the_catalogs_dialect_else_by_status(
    connect: Callable[..., Any],
    url: str,
    ident: list[str],
    answer: httpx.Response,
    expected: type[errors.LanceNamespaceError],
    message: str | None,
) -> None:
    respx.get(url).mock(return_value=answer)
    async with connect() as ns:
        with pytest.raises(errors.LanceNamespaceError) as caught:
            await ns.describe_table({"id": ident})
    assert type(caught.value) is expected
    what = f"DescribeTable {'.'.join(ident)}"
    assert caught.value.message == (f"{what}: {message}" if message else what)
