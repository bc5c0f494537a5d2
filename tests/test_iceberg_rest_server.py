"""Our Iceberg REST look-alike (tests/iceberg_rest_server.py), checked with pyiceberg.

pyiceberg's ``RestCatalog`` is the independent client; raw httpx calls cover what it
cannot show (absent ``metadata-location``, commit requirements, pagination tokens,
invalid requests). Every test runs inside ``iceberg_catalog``, which raises at exit if a
request or a response broke our contract, tests/contracts/iceberg-rest.yaml.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("pyiceberg", reason="pyiceberg is not installed")
pytest.importorskip("sqlalchemy", reason="pyiceberg's SqlCatalog needs SQLAlchemy")

from iceberg_rest_server import (
    IcebergCatalogServer,
    SpecViolationError,
    _Reply,
    iceberg_catalog,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    OAuthError,
    RESTError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SEP = "%1F"
DUMMY_SCHEMA = Schema(NestedField(1, "dummy", StringType(), required=False))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[IcebergCatalogServer]:
    with iceberg_catalog(tmp_path) as running:
        yield running


@pytest.fixture
def http(server: IcebergCatalogServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.uri, timeout=10) as client:
        yield client


def _lance_table_body(name: str, location: str) -> dict[str, Any]:
    return {
        "name": name,
        "location": location,
        "schema": {
            "type": "struct",
            "schema-id": 0,
            "fields": [{"id": 1, "name": "dummy", "type": "string", "required": False}],
        },
        "properties": {"table_type": "lance", "managed_by": "impl"},
    }


def _snapshot(snapshot_id: int, parent: int | None, sequence: int) -> dict[str, Any]:
    snapshot: dict[str, Any] = {
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": int(time.time() * 1000),
        # never written: pyiceberg does not read manifest lists on commit
        "manifest-list": f"/nonexistent/snap-{snapshot_id}.avro",
        "summary": {"operation": "append"},
    }
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return snapshot


def _advance(snapshot_id: int, parent: int | None, sequence: int) -> list[dict[str, Any]]:
    return [
        {"action": "add-snapshot", "snapshot": _snapshot(snapshot_id, parent, sequence)},
        {
            "action": "set-snapshot-ref",
            "ref-name": "main",
            "type": "branch",
            "snapshot-id": snapshot_id,
        },
    ]


# -- namespaces ---------------------------------------------------------------------------


def test_namespaces_through_pyiceberg(server: IcebergCatalogServer) -> None:
    client = server.rest_client("wh")
    client.create_namespace("a", {"owner": "me", "drop-me": "x"})
    client.create_namespace(("a", "b"))
    client.create_namespace(("a", "b", "c"))
    client.create_namespace(("a", "d"))
    client.create_namespace("z")

    assert sorted(client.list_namespaces()) == [("a",), ("z",)]
    assert sorted(client.list_namespaces("a")) == [("a", "b"), ("a", "d")]
    assert client.list_namespaces(("a", "b")) == [("a", "b", "c")]
    assert client.list_namespaces(("a", "b", "c")) == []
    assert ("GET", f"/v1/pfx-wh/namespaces?parent=a{SEP}b") in server.requests

    assert client.load_namespace_properties("a") == {"owner": "me", "drop-me": "x"}
    assert client.load_namespace_properties(("a", "b")) == {}
    summary = client.update_namespace_properties(
        "a", removals={"drop-me", "never-set"}, updates={"owner": "you", "new": "1"}
    )
    assert sorted(summary.updated) == ["new", "owner"]
    assert summary.removed == ["drop-me"]
    assert summary.missing == ["never-set"]
    assert client.load_namespace_properties("a") == {"owner": "you", "new": "1"}
    # removing every property keeps the namespace (SqlCatalog alone would lose it)
    client.update_namespace_properties("a", removals={"owner", "new"})
    assert client.namespace_exists("a")
    assert client.load_namespace_properties("a") == {}

    assert client.namespace_exists(("a", "b", "c"))
    assert not client.namespace_exists(("a", "nope"))
    with pytest.raises(NoSuchNamespaceError):
        client.load_namespace_properties("nope")
    with pytest.raises(NoSuchNamespaceError):
        client.list_namespaces("nope")
    with pytest.raises(NamespaceAlreadyExistsError):
        client.create_namespace(("a", "b"))
    # a missing parent is NoSuchNamespaceException (404); pyiceberg maps it to RESTError
    with pytest.raises(RESTError, match="NoSuchNamespaceException"):
        client.create_namespace(("missing", "child"))
    assert not server.catalog("wh").namespace_exists("missing")

    with pytest.raises(NamespaceNotEmptyError, match="child namespace"):
        client.drop_namespace(("a", "b"))
    client.drop_namespace(("a", "b", "c"))
    client.drop_namespace(("a", "b"))
    with pytest.raises(NoSuchNamespaceError):
        client.drop_namespace(("a", "b"))
    assert sorted(server.catalog("wh").list_namespaces("a")) == [("a", "d")]


def test_namespace_pagination(server: IcebergCatalogServer, http: httpx.Client) -> None:
    backing = server.catalog("wh")
    names = [f"ns{i}" for i in range(5)]
    for name in names:
        backing.create_namespace(name)

    # pyiceberg's RestCatalog honours rest-page-size and follows next-page-token
    client = server.rest_client("wh")
    client.properties["rest-page-size"] = "2"
    assert sorted(client.list_namespaces()) == [(n,) for n in names]
    listing = [
        path for method, path in server.requests if path.startswith("/v1/pfx-wh/namespaces?")
    ]
    assert len(listing) == 3
    assert all("pageSize=2" in path for path in listing)
    assert sum("pageToken=" in path for path in listing) == 2

    # raw: pages of 2, the token is opaque, the last page says null
    seen: list[list[str]] = []
    params: dict[str, str] = {"pageSize": "2"}
    while True:
        page = http.get("/v1/pfx-wh/namespaces", params=params)
        assert page.status_code == 200
        body = page.json()
        assert len(body["namespaces"]) <= 2
        seen += body["namespaces"]
        if body["next-page-token"] is None:
            break
        assert not body["next-page-token"].isdigit()
        params["pageToken"] = body["next-page-token"]
    assert seen == [[n] for n in names]

    # an empty pageToken starts paging; no pageSize then means one page with everything
    everything = http.get("/v1/pfx-wh/namespaces", params={"pageToken": ""}).json()
    assert everything == {"namespaces": [[n] for n in names], "next-page-token": None}
    bad = http.get("/v1/pfx-wh/namespaces", params={"pageToken": "garbage", "pageSize": "2"})
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "BadRequestException"
    assert server.violations == []  # a wrong token is semantics, not a spec violation


def test_table_pagination(server: IcebergCatalogServer, http: httpx.Client) -> None:
    backing = server.catalog("wh")
    backing.create_namespace(("a", "b"))
    for i in range(3):
        backing.create_table(("a", "b", f"t{i}"), DUMMY_SCHEMA)
    first = http.get(f"/v1/pfx-wh/namespaces/a{SEP}b/tables", params={"pageSize": "2"}).json()
    assert first["identifiers"] == [
        {"namespace": ["a", "b"], "name": "t0"},
        {"namespace": ["a", "b"], "name": "t1"},
    ]
    second = http.get(
        f"/v1/pfx-wh/namespaces/a{SEP}b/tables",
        params={"pageSize": "2", "pageToken": first["next-page-token"]},
    ).json()
    assert second == {
        "identifiers": [{"namespace": ["a", "b"], "name": "t2"}],
        "next-page-token": None,
    }
    client = server.rest_client("wh")
    client.properties["rest-page-size"] = "1"
    assert client.list_tables(("a", "b")) == [("a", "b", "t0"), ("a", "b", "t1"), ("a", "b", "t2")]


# -- tables -------------------------------------------------------------------------------


def test_tables_through_pyiceberg(server: IcebergCatalogServer, tmp_path: Path) -> None:
    client = server.rest_client("wh")
    client.create_namespace("db")
    client.create_namespace("other")
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType(), required=False),
    )
    table = client.create_table(("db", "t"), schema, properties={"k": "v"})
    assert table.metadata_location is not None
    assert table.location() == (server.warehouse_root / "wh" / "db" / "t").as_uri()
    assert Path(urllib.parse.urlparse(table.metadata_location).path).is_file()
    with pytest.raises(TableAlreadyExistsError):
        client.create_table(("db", "t"), schema)
    with pytest.raises(NoSuchNamespaceError):
        client.create_table(("nope", "t"), schema)

    located = client.create_table(("db", "at"), schema, location=str(tmp_path / "elsewhere"))
    assert located.location() == str(tmp_path / "elsewhere")
    assert sorted(client.list_tables("db")) == [("db", "at"), ("db", "t")]
    assert client.list_tables("other") == []
    with pytest.raises(NoSuchNamespaceError):
        client.list_tables("nope")

    loaded = client.load_table(("db", "t"))
    assert loaded.schema().as_struct() == table.schema().as_struct()
    assert loaded.properties == {"k": "v"}
    assert client.table_exists(("db", "t"))
    assert not client.table_exists(("db", "nope"))
    with pytest.raises(NoSuchTableError):
        client.load_table(("db", "nope"))

    # pyiceberg's own commit path: requirements + set/remove properties + schema evolution
    with loaded.transaction() as transaction:
        transaction.set_properties(added="1")
        transaction.remove_properties("k")
    with loaded.update_schema() as update:
        update.add_column("extra", LongType())
    backing = server.catalog("wh").load_table(("db", "t"))
    assert backing.properties == {"added": "1"}
    assert backing.schema().find_field("extra").field_type == LongType()
    assert backing.metadata.current_schema_id == 1

    with pytest.raises(NamespaceNotEmptyError):
        client.drop_namespace("db")

    client.rename_table(("db", "t"), ("other", "renamed"))
    assert server.catalog("wh").list_tables("other") == [("other", "renamed")]
    with pytest.raises(NoSuchTableError):
        client.rename_table(("db", "t"), ("db", "again"))
    with pytest.raises(TableAlreadyExistsError):
        client.rename_table(("other", "renamed"), ("db", "at"))

    metadata_file = Path(urllib.parse.urlparse(backing.metadata_location).path)
    client.drop_table(("other", "renamed"))  # purgeRequested=False: the files stay
    assert not server.catalog("wh").table_exists(("other", "renamed"))
    assert metadata_file.is_file()
    with pytest.raises(NoSuchTableError):
        client.drop_table(("other", "renamed"))
    purged = Path(urllib.parse.urlparse(located.metadata_location).path)
    client.purge_table(("db", "at"))  # purgeRequested=True: the metadata files go
    assert not purged.exists()
    assert client.list_tables("db") == []
    client.drop_namespace("db")


def test_lance_table_has_no_metadata_location(
    server: IcebergCatalogServer, http: httpx.Client, tmp_path: Path
) -> None:
    client = server.rest_client("wh")
    client.create_namespace("lance")
    client.create_namespace(("lance", "ns"))
    location = str(tmp_path / "datasets" / "t.lance")
    client.create_table(
        ("lance", "ns", "t"), DUMMY_SCHEMA, location=location, properties={"table_type": "LANCE"}
    )
    client.create_table(("lance", "ns", "plain"), DUMMY_SCHEMA)

    lance = http.get(f"/v1/pfx-wh/namespaces/lance{SEP}ns/tables/t")
    assert lance.status_code == 200
    assert "metadata-location" not in lance.json()
    metadata = lance.json()["metadata"]
    assert metadata["location"] == location
    assert metadata["properties"] == {"table_type": "LANCE"}
    assert metadata["schemas"][0]["fields"] == [
        {"id": 1, "name": "dummy", "type": "string", "required": False}
    ]
    plain = http.get(f"/v1/pfx-wh/namespaces/lance{SEP}ns/tables/plain")
    assert plain.json()["metadata-location"].endswith(".metadata.json")

    created = http.post(
        f"/v1/pfx-wh/namespaces/lance{SEP}ns/tables",
        json=_lance_table_body("raw", str(tmp_path / "datasets" / "raw.lance")),
    )
    assert created.status_code == 200
    assert "metadata-location" not in created.json()
    # pyiceberg still loads it: its TableResponse has metadata-location optional
    assert client.load_table(("lance", "ns", "raw")).properties["table_type"] == "lance"


def test_commit_with_assert_ref_snapshot_id(
    server: IcebergCatalogServer, http: httpx.Client, tmp_path: Path
) -> None:
    server.catalog("wh").create_namespace("db")
    url = "/v1/pfx-wh/namespaces/db/tables"
    created = http.post(url, json=_lance_table_body("t", str(tmp_path / "t.lance")))
    metadata = created.json()["metadata"]
    uuid = metadata["table-uuid"]

    first = {
        "requirements": [
            {"type": "assert-table-uuid", "uuid": uuid},
            {"type": "assert-current-schema-id", "current-schema-id": 0},
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None},
        ],
        "updates": [
            *_advance(1, None, 1),
            {"action": "set-properties", "updates": {"version": "1"}},
            {"action": "remove-properties", "removals": ["managed_by"]},
        ],
    }
    committed = http.post(f"{url}/t", json=first)
    assert committed.status_code == 200, committed.text
    body = committed.json()
    assert body["metadata-location"].endswith(".metadata.json")  # required by CommitTableResponse
    assert body["metadata"]["current-snapshot-id"] == 1
    assert body["metadata"]["properties"] == {"table_type": "lance", "version": "1"}

    # the same commit again: main exists now, so "snapshot-id": null no longer holds
    again = http.post(f"{url}/t", json=first)
    assert again.status_code == 409
    assert again.json()["error"]["type"] == "CommitFailedException"

    second = {
        "identifier": {"namespace": ["db"], "name": "t"},
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
        "updates": [
            *_advance(2, 1, 2),
            {
                "action": "add-schema",
                "schema": {
                    "type": "struct",
                    "schema-id": 1,
                    "fields": [
                        {"id": 1, "name": "dummy", "type": "string", "required": False},
                        {"id": 2, "name": "x", "type": "long", "required": False},
                    ],
                },
            },
            {"action": "set-current-schema", "schema-id": -1},
        ],
    }
    assert http.post(f"{url}/t", json=second).status_code == 200
    stale = http.post(f"{url}/t", json=second)
    assert stale.status_code == 409
    assert "expected id 1, found 2" in stale.json()["error"]["message"]
    wrong_uuid = {
        "requirements": [
            {"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}
        ],
        "updates": [],
    }
    assert http.post(f"{url}/t", json=wrong_uuid).status_code == 409

    table = server.catalog("wh").load_table(("db", "t"))
    assert table.metadata.current_snapshot_id == 2
    assert [s.snapshot_id for s in table.metadata.snapshots] == [1, 2]
    assert table.metadata.current_schema_id == 1
    assert "metadata-location" not in http.get(f"{url}/t").json()

    missing = http.post(f"{url}/nope", json={"requirements": [], "updates": []})
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "NoSuchTableException"
    other = http.post(
        f"{url}/t",
        json={"identifier": {"namespace": ["db"], "name": "x"}, "requirements": [], "updates": []},
    )
    assert other.status_code == 400


# -- configuration, prefixes and auth ------------------------------------------------------


@pytest.mark.parametrize("prefix_mode", ["defaults", "none"])
def test_prefix_modes(tmp_path: Path, prefix_mode: str) -> None:
    with iceberg_catalog(tmp_path, prefix_mode=prefix_mode) as server:
        config = httpx.get(f"{server.uri}/v1/config", params={"warehouse": "w1"}).json()
        assert config["overrides"] == {"lance.test.override": "1"}
        assert config["defaults"]["lance.test.default"] == "1"
        prefix = "pfx-w1" if prefix_mode == "defaults" else "w1"
        assert config["defaults"].get("prefix") == (prefix if prefix_mode == "defaults" else None)

        client = server.rest_client("w1")
        assert client.properties["lance.test.override"] == "1"
        assert client.properties["lance.test.default"] == "1"
        client.create_namespace("n")
        assert ("POST", f"/v1/{prefix}/namespaces") in server.requests
        assert server.catalog("w1").list_namespaces() == [("n",)]
        server.rest_client("w2").create_namespace("m")  # warehouses are separate catalogs
        assert server.catalog("w1").list_namespaces() == [("n",)]
        assert server.catalog("w2").list_namespaces() == [("m",)]
        assert server.config_requests == {"w1": 2, "w2": 1}

        no_warehouse = httpx.get(f"{server.uri}/v1/config")
        assert no_warehouse.status_code == 400
        assert no_warehouse.json()["error"]["type"] == "BadRequestException"


def test_auth_required(tmp_path: Path) -> None:
    with iceberg_catalog(tmp_path, require_auth=True, client_id="me", client_secret="pw") as server:
        with httpx.Client(base_url=server.uri) as http:
            unauthorized = http.get("/v1/config", params={"warehouse": "w"})
            assert unauthorized.status_code == 401
            assert unauthorized.json()["error"]["type"] == "NotAuthorizedException"
            assert http.get("/v1/pfx-w/namespaces").status_code == 401
            forged = http.get("/v1/pfx-w/namespaces", headers={"Authorization": "Bearer tok-99"})
            assert forged.status_code == 401

            wrong = http.post(
                "/v1/oauth/tokens",
                data={"grant_type": "client_credentials", "client_id": "me", "client_secret": "no"},
            )
            assert wrong.status_code == 401
            assert wrong.json()["error"] == "invalid_client"
            granted = http.post(
                "/v1/oauth/tokens",
                data={
                    "grant_type": "client_credentials",
                    "client_id": "me",
                    "client_secret": "pw",
                    "scope": "catalog",
                },
            )
            assert granted.status_code == 200
            token = granted.json()
            assert token["token_type"] == "bearer"
            assert token["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
            assert token["access_token"].startswith("tok-")
            headers = {"Authorization": f"Bearer {token['access_token']}"}
            assert (
                http.get("/v1/config", params={"warehouse": "w"}, headers=headers).status_code
                == 200
            )
            assert http.get("/v1/pfx-w/namespaces", headers=headers).status_code == 200
        assert server.token_requests == 2

        client = server.rest_client("w")
        client.create_namespace("secured")
        assert client.list_namespaces() == [("secured",)]
        assert server.token_requests > 2

        intruder = {
            "uri": server.uri,
            "warehouse": "w",
            "credential": "me:wrong",
            "oauth2-server-uri": f"{server.uri}/v1/oauth/tokens",
        }
        with pytest.raises(OAuthError, match="invalid_client"):
            RestCatalog("intruder", **intruder)


# -- faults and violations -----------------------------------------------------------------


def test_fail_next(server: IcebergCatalogServer, http: httpx.Client) -> None:
    client = server.rest_client("wh")
    server.fail_next(503)
    with pytest.raises(ServiceUnavailableError):
        client.list_namespaces()
    assert client.list_namespaces() == []

    server.fail_next(429, 2, headers={"Retry-After": "1"})
    assert http.get("/v1/config", params={"warehouse": "wh"}).status_code == 200  # not counted
    for _ in range(2):
        throttled = http.get("/v1/pfx-wh/namespaces")
        assert throttled.status_code == 429
        assert throttled.headers["retry-after"] == "1"
        assert throttled.json()["error"] == {
            "message": "injected fault",
            "type": "TooManyRequestsException",
            "code": 429,
        }
    server.fail_next(500)
    assert http.head("/v1/pfx-wh/namespaces/x").status_code == 500
    assert http.head("/v1/pfx-wh/namespaces/x").status_code == 404


def _send_invalid_requests(tmp_path: Path) -> None:
    with iceberg_catalog(tmp_path) as server, httpx.Client(base_url=server.uri) as http:
        missing = http.post("/v1/pfx-w/namespaces", json={"properties": {}})
        assert missing.status_code == 400
        error = missing.json()["error"]
        assert error["type"] == "BadRequestException"
        assert "'namespace' is a required property" in error["message"]
        assert not server.catalog("w").list_namespaces()

        server.catalog("w").create_namespace("db")
        server.catalog("w").create_table(("db", "t"), DUMMY_SCHEMA)
        # snapshot-id is required (nullable): only the discriminator mapping says so
        no_snapshot_id = {
            "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main"}],
            "updates": [],
        }
        assert http.post("/v1/pfx-w/namespaces/db/tables/t", json=no_snapshot_id).status_code == 400
        unknown = {"requirements": [{"type": "assert-nothing"}], "updates": []}
        assert http.post("/v1/pfx-w/namespaces/db/tables/t", json=unknown).status_code == 400
        assert http.get("/v1/pfx-w/namespaces", params={"pageSize": "0"}).status_code == 400
        assert len(server.violations) == 4
        # nothing was committed
        assert server.catalog("w").load_table(("db", "t")).metadata.snapshots == []


def test_invalid_request_is_rejected_and_recorded(tmp_path: Path) -> None:
    with pytest.raises(SpecViolationError, match="4 Iceberg REST spec violation") as raised:
        _send_invalid_requests(tmp_path)
    report = str(raised.value)
    assert "'snapshot-id' is a required property" in report
    assert "'assert-nothing' is not a known 'type'" in report
    assert "query parameter 'pageSize'" in report


def _serve_an_invalid_response(tmp_path: Path) -> None:
    with iceberg_catalog(tmp_path) as server:
        server._handlers["loadNamespaceMetadata"] = lambda call: _Reply(200, {"props": {}})
        server.catalog("w").create_namespace("n")
        response = httpx.get(f"{server.uri}/v1/pfx-w/namespaces/n")
        assert response.status_code == 500
        assert response.json()["error"]["type"] == "ResponseSpecViolation"
        assert "'namespace' is a required property" in server.violations[0]


def test_invalid_response_is_replaced_and_recorded(tmp_path: Path) -> None:
    with pytest.raises(SpecViolationError, match="1 Iceberg REST spec violation"):
        _serve_an_invalid_response(tmp_path)


def _call_unknown_routes(tmp_path: Path) -> None:
    with iceberg_catalog(tmp_path) as server:
        # a client that forgot the prefix from /v1/config
        assert httpx.get(f"{server.uri}/v1/namespaces").status_code == 404
        assert httpx.put(f"{server.uri}/v1/pfx-w/namespaces").status_code == 405
        assert len(server.violations) == 2


def test_unknown_route_is_a_violation(tmp_path: Path) -> None:
    with pytest.raises(SpecViolationError, match="2 Iceberg REST spec violation"):
        _call_unknown_routes(tmp_path)


def test_pyiceberg_client_errors_map(server: IcebergCatalogServer) -> None:
    client = server.rest_client("wh")
    with pytest.raises(BadRequestError, match=r"contains '\.'"):
        client.create_namespace(("has.dot",))
    client.create_namespace("n")
    client.create_table(("n", "t"), DUMMY_SCHEMA)
    first = client.load_table(("n", "t"))
    second = client.load_table(("n", "t"))
    with first.update_schema() as update:
        update.add_column("y", LongType())
    # second still holds schema 0: its assert-current-schema-id fails with 409
    stale = second.update_schema().add_column("z", LongType())
    with pytest.raises(CommitFailedException, match="current schema id has changed"):
        stale.commit()
    assert server.catalog("wh").load_table(("n", "t")).schema().find_field("y")
