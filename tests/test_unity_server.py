"""The Unity Catalog look-alike (tests/unity_server.py), checked with raw httpx and the SDK.

Server: the in-memory look-alike only; these tests are its own specification, release line
by release line (``release="0.6"``: Unity 0.5 and later; ``"0.4.1"``; ``"0.3"``: Unity
0.1-0.3), as read from Unity's source and compared with Unity 0.6.0 itself. Raw httpx calls
show the wire (statuses, error bodies, tokens, nulls); the official ``unitycatalog-client``
SDK, run from its own virtualenv by ``unity_sdk.sdk_read``, is the independent reader that
must understand what was created. Every test runs inside ``unity_catalog``, which raises at
exit if a request or a response broke our contract (tests/contracts/unity-catalog.yaml).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from unity_sdk import SdkReadError, SdkUnavailableError, sdk_python, sdk_read
from unity_server import (
    BASE_PATH,
    ERROR_CODES,
    RELEASES,
    SpecViolationError,
    UnityServer,
    _Call,
    _Reply,
    unity_catalog,
)

TOKEN = "unity-test-token"
COLUMNS = [
    {
        "name": "id",
        "type_name": "LONG",
        "type_text": "bigint",
        "type_json": '{"name":"id","type":"long","nullable":false,"metadata":{}}',
        "position": 0,
        "nullable": False,
    },
    {
        "name": "name",
        "type_name": "STRING",
        "type_text": "string",
        "type_json": '{"name":"name","type":"string","nullable":true,"metadata":{}}',
        "position": 1,
        "nullable": True,
    },
]


@pytest.fixture(scope="session")
def unity_sdk() -> str:
    """The SDK's virtualenv, created once per session (and cached across sessions)."""
    try:
        return sdk_python()
    except SdkUnavailableError as error:
        pytest.fail(f"the unitycatalog-client virtualenv could not be created: {error}")


# every test that runs the SDK shares the one session-scoped virtualenv
uses_sdk = pytest.mark.usefixtures("unity_sdk")


@pytest.fixture
def server() -> Iterator[UnityServer]:
    with unity_catalog() as running:
        yield running


@pytest.fixture(params=RELEASES)
def any_release(request: pytest.FixtureRequest) -> Iterator[UnityServer]:
    with unity_catalog(release=request.param) as running:
        yield running


@pytest.fixture
def http(server: UnityServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.uri + BASE_PATH, timeout=10) as client:
        yield client


def assert_error(response: httpx.Response, status: int, code: str, text: str = "") -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["error_code"] == code
    assert ERROR_CODES[code] == status or status not in ERROR_CODES.values()
    assert isinstance(body["message"], str)
    assert text in body["message"]
    assert body["details"] == [{"@type": "google.rpc.ErrorInfo", "reason": code}]


def create_table(
    http: httpx.Client,
    catalog: str,
    schema: str,
    name: str,
    location: str,
    **extra: Any,
) -> httpx.Response:
    body = {
        "name": name,
        "catalog_name": catalog,
        "schema_name": schema,
        "table_type": "EXTERNAL",
        "data_source_format": "TEXT",
        "storage_location": location,
        "columns": COLUMNS,
        "properties": {"table_type": "lance"},
        **extra,
    }
    return http.post("/tables", json=body)


def populate(http: httpx.Client, root: Path) -> None:
    assert http.post("/catalogs", json={"name": "lake", "comment": "main"}).status_code == 200
    assert http.post("/catalogs", json={"name": "empty"}).status_code == 200
    for schema, properties in (("sales", {"owner_team": "s"}), ("hr", {})):
        body = {"name": schema, "catalog_name": "lake", "properties": properties}
        assert http.post("/schemas", json=body).status_code == 200
    for name in ("orders", "items", "returns"):
        response = create_table(http, "lake", "sales", name, f"{root}/{name}.lance")
        assert response.status_code == 200, response.text


# -- raw HTTP --------------------------------------------------------------------------------


def test_create_get_list_round_trip(server: UnityServer, http: httpx.Client) -> None:
    catalog = http.post("/catalogs", json={"name": "lake", "properties": {"k": "v"}}).json()
    assert catalog["name"] == "lake"
    assert catalog["properties"] == {"k": "v"}
    assert isinstance(catalog["id"], str)
    assert isinstance(catalog["created_at"], int)
    assert catalog["owner"] is None  # Unity writes unset fields as null
    schema = http.post("/schemas", json={"name": "db", "catalog_name": "lake"}).json()
    assert schema["full_name"] == "lake.db"
    assert schema["properties"] == {}
    table = create_table(http, "lake", "db", "t", "s3://bucket/t.lance").json()
    assert table["table_type"] == "EXTERNAL"
    assert table["data_source_format"] == "TEXT"
    assert table["storage_location"] == "s3://bucket/t.lance"
    assert table["properties"] == {"table_type": "lance"}
    assert [c["name"] for c in table["columns"]] == ["id", "name"]
    assert table["columns"][0]["nullable"] is False
    assert isinstance(table["table_id"], str)

    assert http.get("/catalogs/lake").json() == catalog
    assert http.get("/schemas/lake.db").json() == schema
    assert http.get("/tables/lake.db.t").json() == table
    assert server.tables["lake.db.t"] == table
    assert server.schemas["lake.db"] == schema
    assert server.catalogs["lake"] == catalog

    listed = http.get("/tables", params={"catalog_name": "lake", "schema_name": "db"}).json()
    assert listed == {"tables": [table], "next_page_token": None}
    assert http.get("/schemas", params={"catalog_name": "lake"}).json()["schemas"] == [schema]
    assert http.get("/catalogs").json() == {"catalogs": [catalog], "next_page_token": None}
    assert server.requests[0] == ("POST", f"{BASE_PATH}/catalogs")
    assert ("GET", f"{BASE_PATH}/tables?catalog_name=lake&schema_name=db") in server.requests


def test_pagination_follows_unity(server: UnityServer, http: httpx.Client) -> None:
    for name in ("e", "b", "d", "a", "c"):
        server.add_catalog(name)

    def walk(max_results: int | None) -> list[list[str]]:
        pages: list[list[str]] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {}
            if max_results is not None:
                params["max_results"] = max_results
            if token is not None:
                params["page_token"] = token
            body = http.get("/catalogs", params=params).json()
            pages.append([c["name"] for c in body["catalogs"]])
            token = body["next_page_token"]
            if not token:
                return pages

    assert walk(None) == [["a", "b", "c", "d", "e"]]  # name order, one page of <= 100
    assert walk(2) == [["a", "b"], ["c", "d"], ["e"]]
    # a full last page still carries a token; the page after it is empty (as in Unity)
    assert walk(5) == [["a", "b", "c", "d", "e"], []]
    server.page_size_limit = 3  # the server-configured bound wins over max_results
    assert walk(0) == [["a", "b", "c"], ["d", "e"]]
    assert walk(1000) == [["a", "b", "c"], ["d", "e"]]

    server.page_size_limit = 100
    server.end_of_list = "empty"
    assert http.get("/catalogs", params={"max_results": 10}).json()["next_page_token"] == ""
    server.end_of_list = "absent"
    assert "next_page_token" not in http.get("/catalogs", params={"max_results": 10}).json()

    assert_error(http.get("/catalogs", params={"max_results": -1}), 400, "INVALID_ARGUMENT")
    assert_error(http.get("/catalogs", params={"page_token": "garbage"}), 400, "INVALID_ARGUMENT")
    # a token is only good for the listing that issued it
    server.add_schema("a", "s1")
    server.add_schema("a", "s2")
    first = http.get("/schemas", params={"catalog_name": "a", "max_results": 1}).json()
    assert [s["name"] for s in first["schemas"]] == ["s1"]
    token = first["next_page_token"]
    assert_error(http.get("/catalogs", params={"page_token": token}), 400, "INVALID_ARGUMENT")
    second = http.get("/schemas", params={"catalog_name": "a", "page_token": token}).json()
    assert [s["name"] for s in second["schemas"]] == ["s2"]


def test_table_listing_pages(server: UnityServer, http: httpx.Client, tmp_path: Path) -> None:
    populate(http, tmp_path)
    params: dict[str, Any] = {"catalog_name": "lake", "schema_name": "sales", "max_results": 2}
    first = http.get("/tables", params=params).json()
    assert [t["name"] for t in first["tables"]] == ["items", "orders"]
    second = http.get("/tables", params={**params, "page_token": first["next_page_token"]}).json()
    assert [t["name"] for t in second["tables"]] == ["returns"]
    assert second["next_page_token"] is None
    empty = http.get("/tables", params={"catalog_name": "lake", "schema_name": "hr"}).json()
    assert empty == {"tables": [], "next_page_token": None}


# what each release line answers: (status, error_code) of a missing catalog, schema and
# table, and of a duplicate catalog, schema and table
ERROR_SHAPES = {
    "0.6": {
        "catalog": (404, "CATALOG_NOT_FOUND"),
        "schema": (404, "SCHEMA_NOT_FOUND"),
        "table": (404, "TABLE_NOT_FOUND"),
        "duplicate catalog": (400, "CATALOG_ALREADY_EXISTS"),
        "duplicate schema": (400, "SCHEMA_ALREADY_EXISTS"),
        "duplicate table": (400, "TABLE_ALREADY_EXISTS"),
    },
    "0.4.1": {
        "catalog": (404, "NOT_FOUND"),
        "schema": (404, "NOT_FOUND"),
        "table": (404, "NOT_FOUND"),
        "duplicate catalog": (400, "CATALOG_ALREADY_EXISTS"),
        "duplicate schema": (400, "SCHEMA_ALREADY_EXISTS"),
        "duplicate table": (400, "TABLE_ALREADY_EXISTS"),
    },
    "0.3": {
        "catalog": (404, "NOT_FOUND"),
        "schema": (404, "NOT_FOUND"),
        "table": (404, "NOT_FOUND"),
        "duplicate catalog": (409, "ALREADY_EXISTS"),
        "duplicate schema": (409, "ALREADY_EXISTS"),
        "duplicate table": (409, "ALREADY_EXISTS"),
    },
}


def test_error_statuses_and_bodies(any_release: UnityServer, tmp_path: Path) -> None:
    server = any_release
    shape = ERROR_SHAPES[server.release]
    http = httpx.Client(base_url=server.uri + BASE_PATH, timeout=10)
    populate(http, tmp_path)
    assert_error(http.get("/catalogs/nope"), *shape["catalog"], "Catalog not found: nope")
    assert_error(http.get("/schemas/nope.x"), *shape["catalog"], "Catalog not found")
    assert_error(http.get("/schemas/lake.nope"), *shape["schema"], "Schema not found")
    assert_error(http.get("/tables/lake.sales.nope"), *shape["table"], "Table not found")
    assert_error(http.get("/tables/lake.nope.t"), *shape["schema"], "Schema not found")
    assert_error(http.get("/schemas", params={"catalog_name": "nope"}), *shape["catalog"])
    assert_error(
        http.get("/tables", params={"catalog_name": "lake", "schema_name": "nope"}),
        *shape["schema"],
    )
    missing_parent = {"name": "s", "catalog_name": "nope"}
    assert_error(http.post("/schemas", json=missing_parent), *shape["catalog"])
    assert_error(create_table(http, "lake", "nope", "t", "/x/t"), *shape["schema"])
    assert_error(http.delete("/tables/lake.sales.nope"), *shape["table"], "not found: nope")
    assert_error(http.delete("/catalogs/nope"), *shape["catalog"])

    assert_error(http.post("/catalogs", json={"name": "lake"}), *shape["duplicate catalog"])
    duplicate_schema = {"name": "sales", "catalog_name": "lake"}
    assert_error(http.post("/schemas", json=duplicate_schema), *shape["duplicate schema"])
    assert_error(
        create_table(http, "lake", "sales", "orders", "/x/t"),
        *shape["duplicate table"],
        "Table already exists: lake.sales.orders",
    )

    for bad in ("", "a.b", "a b", "a/b", "x" * 256):
        assert_error(http.post("/catalogs", json={"name": bad}), 400, "INVALID_ARGUMENT")
    assert_error(http.get("/tables/lake.sales"), 400, "INVALID_ARGUMENT", "Invalid table name")
    assert_error(http.get("/schemas/lake"), 400, "INVALID_ARGUMENT", "Invalid schema full name")
    assert_error(http.post("/catalogs"), 400, "INVALID_ARGUMENT")  # the body is optional

    # non-empty deletes: FAILED_PRECONDITION (HTTP 400) unless force=true, which cascades
    assert_error(http.delete("/schemas/lake.sales"), 400, "FAILED_PRECONDITION", "with tables")
    assert_error(http.delete("/catalogs/lake"), 400, "FAILED_PRECONDITION", "with schemas")
    assert http.delete("/schemas/lake.hr").status_code == 200  # empty: no force needed
    response = http.delete("/catalogs/lake", params={"force": "true"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == "200 OK"  # Armeria's HttpResponse.of(OK), as Unity sends it
    assert not server.schemas
    assert not server.tables
    assert list(server.catalogs) == ["empty"]
    http.close()


def test_create_table_rules(server: UnityServer, http: httpx.Client, tmp_path: Path) -> None:
    server.add_catalog("c")
    server.add_schema("c", "s")
    body = {
        "name": "t",
        "catalog_name": "c",
        "schema_name": "s",
        "table_type": "EXTERNAL",
        "columns": [],
    }
    # Unity 0.6.0 fails on the missing location with a null pointer
    assert_error(http.post("/tables", json=body), 500, "INTERNAL", "Error creating table")
    managed = {**body, "table_type": "MANAGED", "data_source_format": "TEXT"}
    assert_error(http.post("/tables", json=managed), 400, "INVALID_ARGUMENT", "Delta format")
    streaming = {**body, "table_type": "STREAMING_TABLE"}
    assert_error(http.post("/tables", json=streaming), 400, "INVALID_ARGUMENT", "not supported")
    assert_error(
        http.post("/tables", json={**body, "table_type": "VIEW"}),
        400,
        "INVALID_ARGUMENT",
        "view_definition is required",
    )
    view = {**body, "name": "v", "table_type": "VIEW", "view_definition": "select 1"}
    created = http.post("/tables", json={**view, "storage_location": "/somewhere"}).json()
    assert (created["table_type"], created["storage_location"]) == ("VIEW", None)
    delta = {**managed, "data_source_format": "DELTA", "storage_location": "s3://b/m"}
    assert http.post("/tables", json=delta).json()["table_type"] == "MANAGED"


def test_columns_need_a_matching_type_json(
    server: UnityServer, http: httpx.Client, tmp_path: Path
) -> None:
    """Unity 0.5+ (ColumnUtils.validateTypeJson): each column's type_json is a StructField of
    the column's own name and nullability; type_text is stored lower-cased."""
    server.add_catalog("c")
    server.add_schema("c", "s")
    id_column = COLUMNS[0]
    broken = {
        "no type_json": {k: v for k, v in id_column.items() if k != "type_json"},
        "not JSON": {**id_column, "type_json": "{"},
        "no metadata": {**id_column, "type_json": '{"name":"id","type":"long","nullable":false}'},
        "other name": {**id_column, "name": "key"},
        "other nullability": {**id_column, "nullable": True},
    }
    for what, column in broken.items():
        response = create_table(http, "c", "s", "t", f"{tmp_path}/t", columns=[column])
        assert_error(response, 400, "INVALID_ARGUMENT", "type_json")
        assert "c.s.t" not in server.tables, what
    shouting = {**id_column, "type_text": "BIGINT"}
    table = create_table(http, "c", "s", "t", f"{tmp_path}/t", columns=[shouting]).json()
    assert table["columns"][0]["type_text"] == "bigint"
    with unity_catalog(release="0.4.1") as legacy:
        legacy.add_catalog("c")
        legacy.add_schema("c", "s")
        with httpx.Client(base_url=legacy.uri + BASE_PATH, timeout=10) as old:
            response = create_table(
                old, "c", "s", "t", f"{tmp_path}/t", columns=[broken["not JSON"]]
            )
            assert response.status_code == 200, "0.4.1 stored columns as sent"


def test_storage_locations_are_normalised_as_each_release_did(
    any_release: UnityServer, tmp_path: Path
) -> None:
    server = any_release
    server.add_catalog("c")
    server.add_schema("c", "s")
    existing = tmp_path / "existing.lance"
    existing.mkdir()
    cases = {  # given: (0.4.0 and later store, 0.1-0.3 stored)
        f"{tmp_path}/new.lance": (f"file://{tmp_path}/new.lance",) * 2,
        str(existing): (f"file://{existing}", f"file://{existing}/"),
        f"{tmp_path}/a/../b.lance/": (
            f"file://{tmp_path}/b.lance",
            f"file://{tmp_path}/a/../b.lance",
        ),
        "file:/data/t.lance": ("file:///data/t.lance",) * 2,
        "file:///data/t.lance/": ("file:///data/t.lance", "file:///data/t.lance/"),
        "gs://bucket/t.lance": ("gs://bucket/t.lance",) * 2,
        "s3://bucket/t.lance//": ("s3://bucket/t.lance", "s3://bucket/t.lance//"),
    }
    with httpx.Client(base_url=server.uri + BASE_PATH, timeout=10) as http:
        for number, (given, stored) in enumerate(cases.items()):
            response = create_table(http, "c", "s", f"t{number}", given)
            assert response.status_code == 200, response.text
            expected = stored[1 if server.release == "0.3" else 0]
            assert response.json()["storage_location"] == expected, given
        refused = ("memory://bucket/t", "s3://bucket", "s3://bucket/", "relative", "/a b/t")
        for number, given in enumerate(refused):
            response = create_table(http, "c", "s", f"r{number}", given)
            if server.release == "0.3":
                assert response.status_code == 200, "0.1-0.3 kept every location"
            else:
                assert_error(response, 400, "INVALID_ARGUMENT")


def test_update_catalog_and_schema(server: UnityServer, http: httpx.Client, tmp_path: Path) -> None:
    populate(http, tmp_path)
    patched = http.patch("/catalogs/lake", json={"comment": "new", "properties": {"a": "1"}})
    assert patched.json()["comment"] == "new"
    assert patched.json()["properties"] == {"a": "1"}
    assert isinstance(patched.json()["updated_at"], int)
    duplicate = http.patch("/catalogs/lake", json={"new_name": "empty"})
    assert_error(duplicate, 400, "CATALOG_ALREADY_EXISTS")
    renamed = http.patch("/catalogs/lake", json={"new_name": "pond"}).json()
    assert renamed["name"] == "pond"
    assert set(server.schemas) == {"pond.sales", "pond.hr"}
    assert http.get("/tables/pond.sales.orders").json()["catalog_name"] == "pond"

    schema = http.patch("/schemas/pond.sales", json={"new_name": "revenue"}).json()
    assert schema["full_name"] == "pond.revenue"
    assert http.get("/tables/pond.revenue.items").json()["schema_name"] == "revenue"
    assert_error(http.get("/schemas/pond.sales"), 404, "SCHEMA_NOT_FOUND")
    assert_error(
        http.patch("/schemas/pond.hr", json={"new_name": "revenue"}), 400, "SCHEMA_ALREADY_EXISTS"
    )
    assert http.patch("/schemas/pond.hr", json={"properties": {"x": "y"}}).json()["properties"] == {
        "x": "y"
    }


def test_token_required() -> None:
    with unity_catalog(require_token=TOKEN) as server:
        url = server.uri + BASE_PATH + "/catalogs"
        assert_error(httpx.get(url), 401, "UNAUTHENTICATED")
        assert_error(
            httpx.get(url, headers={"Authorization": "Bearer wrong"}), 401, "UNAUTHENTICATED"
        )
        assert_error(httpx.get(url, headers={"Authorization": TOKEN}), 401, "UNAUTHENTICATED")
        ok = httpx.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200
        assert ok.json() == {"catalogs": [], "next_page_token": None}


def test_fail_next(server: UnityServer, http: httpx.Client) -> None:
    server.add_catalog("c")
    server.fail_next(503, 2, headers={"Retry-After": "1"})
    for _ in range(2):
        response = http.get("/catalogs/c")
        assert_error(response, 503, "UNAVAILABLE", "injected")
        assert response.headers["retry-after"] == "1"
    assert http.get("/catalogs/c").status_code == 200
    server.fail_next(429, headers={"Retry-After": "0"})
    assert_error(http.get("/catalogs"), 429, "RESOURCE_EXHAUSTED")
    server.fail_next(409, error_code="ALREADY_EXISTS")
    assert_error(http.post("/catalogs", json={"name": "d"}), 409, "ALREADY_EXISTS")
    assert "d" not in server.catalogs  # the fault replaced the request
    server.fail_next(502)
    assert_error(http.get("/catalogs"), 502, "UNKNOWN")
    with pytest.raises(ValueError, match="4xx or 5xx"):
        server.fail_next(200)


def test_catalog_creation_can_be_forbidden(server: UnityServer, http: httpx.Client) -> None:
    server.allow_catalog_create = False
    assert_error(http.post("/catalogs", json={"name": "c"}), 403, "PERMISSION_DENIED")
    assert not server.catalogs
    server.add_catalog("seeded", {"k": "v"})  # seeding is not an HTTP request
    assert http.get("/catalogs/seeded").json()["properties"] == {"k": "v"}


def test_variants_without_nulls_and_with_json_deletes(
    server: UnityServer, http: httpx.Client
) -> None:
    server.null_fields = False
    server.json_delete_bodies = True
    catalog = http.post("/catalogs", json={"name": "c"}).json()
    assert "owner" not in catalog
    assert "comment" not in catalog
    assert "next_page_token" not in http.get("/catalogs").json()
    response = http.delete("/catalogs/c")
    assert response.status_code == 200
    assert response.json() == {}


def test_keep_alive_requests_are_fast(server: UnityServer, http: httpx.Client) -> None:
    server.add_catalog("c")
    started = time.perf_counter()
    for _ in range(50):
        assert http.get("/catalogs/c").status_code == 200
    # without TCP_NODELAY each keep-alive request waits ~40 ms for a delayed ACK
    assert time.perf_counter() - started < 1.0


# -- violations ------------------------------------------------------------------------------


def run_in_server(body: Callable[[UnityServer], None]) -> None:
    with unity_catalog() as server:
        body(server)


def send_invalid_requests(server: UnityServer) -> None:
    server.add_catalog("c")
    server.add_schema("c", "s")
    with httpx.Client(base_url=server.uri + BASE_PATH) as http:
        bad_table = {"name": "t", "catalog_name": "c", "schema_name": "s", "table_type": "FOO"}
        assert_error(http.post("/tables", json=bad_table), 400, "INVALID_ARGUMENT")
        extra = {"name": "c2", "propertes": {}}
        assert_error(http.post("/catalogs", json=extra), 400, "INVALID_ARGUMENT")
        null_comment = {"name": "c3", "comment": None}
        assert_error(http.post("/catalogs", json=null_comment), 400, "INVALID_ARGUMENT")
        assert_error(http.get("/schemas"), 400, "INVALID_ARGUMENT")  # catalog_name is required
        params: dict[str, Any] = {"catalog_name": "c", "schema_name": "s", "max_results": 51}
        assert_error(http.get("/tables", params=params), 400, "INVALID_ARGUMENT")
        assert_error(http.get("/catalogs", params={"maxResults": 1}), 400, "INVALID_ARGUMENT")
        force = http.delete("/catalogs/c", params={"force": "True"})
        assert_error(force, 400, "INVALID_ARGUMENT")
        assert_error(http.post("/catalogs", data={"name": "c4"}), 400, "INVALID_ARGUMENT")
        nowhere = http.get("/nowhere")  # answered as Armeria does
        assert (nowhere.status_code, nowhere.text) == (404, "Status: 404\nDescription: Not Found\n")
        assert http.put("/catalogs/c", json={}).status_code == 405
    assert list(server.catalogs) == ["c"]  # no invalid request changed anything


def test_invalid_requests_are_violations() -> None:
    with pytest.raises(SpecViolationError) as raised:
        run_in_server(send_invalid_requests)
    message = str(raised.value)
    for expected in (
        "'FOO' is not one of",
        "'columns' is a required property",
        "undeclared member(s) ['propertes']",
        "comment: None is not of type 'string'",
        "query parameter 'catalog_name' is required",
        "51 is greater than the maximum of 50",
        "query parameter 'maxResults' is not declared",
        "'True' is not a boolean",
        "request content type 'application/x-www-form-urlencoded'",
        "no path of the document matches",
        "PUT is not declared",
    ):
        assert expected in message, expected


def send_broken_response(server: UnityServer) -> None:
    server.add_catalog("c")
    original = server._handlers["getCatalog"]

    def broken(call: _Call) -> _Reply:
        reply = original(call)
        reply.body["created_at"] = "soon"
        return reply

    server._handlers["getCatalog"] = broken
    response = httpx.get(f"{server.uri}{BASE_PATH}/catalogs/c")
    assert_error(response, 500, "INTERNAL", "is not of type 'integer'")


def send_inconsistent_error(server: UnityServer) -> None:
    server.fail_next(409, error_code="NOT_FOUND")
    assert_error(httpx.get(f"{server.uri}{BASE_PATH}/catalogs"), 500, "INTERNAL")


def test_invalid_responses_are_violations() -> None:
    with pytest.raises(SpecViolationError, match="created_at: 'soon' is not of type"):
        run_in_server(send_broken_response)
    with pytest.raises(SpecViolationError, match="error_code 'NOT_FOUND' is HTTP 404, sent 409"):
        run_in_server(send_inconsistent_error)


# -- the official SDK ------------------------------------------------------------------------


@uses_sdk
def test_sdk_reads_what_was_created(
    server: UnityServer, http: httpx.Client, tmp_path: Path
) -> None:
    populate(http, tmp_path)
    server.page_size_limit = 2  # the SDK must follow next_page_token to see everything
    seen = sdk_read(server.uri)
    assert [c["name"] for c in seen["catalogs"]] == ["empty", "lake"]
    assert seen["catalogs"][1]["comment"] == "main"
    assert seen["schemas"] == {
        "lake.hr": {"name": "hr", "catalog_name": "lake", "comment": None, "properties": {}},
        "lake.sales": {
            "name": "sales",
            "catalog_name": "lake",
            "comment": None,
            "properties": {"owner_team": "s"},
        },
    }
    assert sorted(seen["tables"]) == ["lake.sales.items", "lake.sales.orders", "lake.sales.returns"]
    assert seen["pages"]["catalogs"] == 2  # a full page, then an empty one
    assert seen["pages"]["lake.sales"] == 2
    for full_name, table in seen["tables"].items():
        stored = server.tables[full_name]
        assert table["table_type"] == "EXTERNAL"
        assert table["data_source_format"] == "TEXT"
        assert table["storage_location"] == f"file://{tmp_path}/{stored['name']}.lance"
        assert table["properties"] == {"table_type": "lance"}
        assert table["table_id"] == stored["table_id"]
        assert table["columns"] == [
            {key: column[key] for key in table["columns"][0]} for column in COLUMNS
        ]


@uses_sdk
def test_sdk_with_token_and_without() -> None:
    with unity_catalog(require_token=TOKEN) as server:
        server.add_catalog("c", {"k": "v"})
        server.add_schema("c", "s")
        server.add_table(
            "c",
            "s",
            "m",
            table_type="MANAGED",
            data_source_format="DELTA",
            storage_location="s3://b/m",
            columns=[{"name": "x", "type_name": "INT", "position": 0}],
        )
        seen = sdk_read(server.uri, TOKEN)
        assert seen["catalogs"] == [{"name": "c", "comment": None, "properties": {"k": "v"}}]
        table = seen["tables"]["c.s.m"]
        assert table["table_type"] == "MANAGED"
        assert table["columns"][0]["nullable"] is True  # the spec's default, stored
        with pytest.raises(SdkReadError) as raised:
            sdk_read(server.uri)
        assert raised.value.status == 401
        assert "UNAUTHENTICATED" in (raised.value.body or "")
