"""Credentials vended by the catalog: Unity's temporary table credentials, Iceberg REST's
``X-Iceberg-Access-Delegation: vended-credentials``, and pylance refreshing them.

Servers: moto's server on 127.0.0.1 with IAM authentication on (tests/sts_vendor.py), so
its S3 accepts only credentials its STS issued, and refuses them once expired; the Unity
Catalog look-alike (tests/unity_server.py, release 0.6) and the Iceberg REST look-alike
(tests/iceberg_rest_server.py), each vending real moto STS credentials that live
``LIFETIME`` seconds; ``lance-ns serve``'s app (``create_app``) in front of the unity backend;
and the Iceberg project's reference server (tests/iceberg_real_server.py, a JVM of its own
here) for the one place it does hand credentials out.

Why look-alikes: the real Unity Catalog server is not in the registries this suite may use
(see tests/unity_server.py), and the Iceberg project's reference server
(tests/iceberg_real_server.py) does not vend: with ``include-credentials`` it copies the
static ``s3.*`` keys of its own configuration into every LoadTable ``config``, header or not,
with no expiry, so nothing there ever needs a refresh (the test below checks that the backend
reads them from there). The look-alikes implement what the
two specifications say: Unity's ``POST /temporary-table-credentials`` (``table_id``,
``operation`` READ | READ_WRITE -> ``aws_temp_credentials``, ``expiration_time`` in epoch
ms), checked against our contract (tests/contracts/unity-catalog.yaml); Iceberg's LoadTable
``storage-credentials`` (longest matching ``prefix``) or ``config``, with S3FileIO's keys
(``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``,
``s3.session-token-expires-at-ms``), checked against tests/contracts/iceberg-rest.yaml.

The backends under test hold no storage keys: only moto's endpoint and region
(``storage.*``). The producer of the test tables is the catalog's own IAM user.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from glue_fixtures import s3_client, use_fake_aws_env
from iceberg_real_server import reference_iceberg, unique_name
from iceberg_rest_server import IcebergCatalogServer, iceberg_catalog
from lance.namespace import RestNamespace as PylanceRestNamespace
from serve_process import lance_ns_serve
from sts_vendor import BUCKET, MotoAws, moto_with_iam
from unity_server import UnityServer, unity_catalog

import lance_namespace_async as lna
from jvm import need
from lance_namespace_async import errors
from lance_namespace_async._storage.vended_credentials import (
    VendedCredentialCache,
    VendedCredentials,
    from_iceberg,
    from_unity,
)
from lance_namespace_async.models import DescribeTableResponse
from lance_namespace_async.server import create_app

#: seconds a vended credential lives (moto enforces it through the fixture's reaper)
LIFETIME = 3
CREDENTIAL_KEYS = {"aws_access_key_id", "aws_secret_access_key", "aws_session_token"}
UNITY_TABLE = ["main", "s", "t"]
#: how pylance reports a storage request moto refused (403)
REFUSED = (OSError, ValueError)


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoAws]:
    with moto_with_iam(lifetime=LIFETIME) as moto:
        yield moto


@pytest.fixture(autouse=True)
def _fake_env(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_env(monkeypatch)  # ambient credentials are "testing": moto refuses them


def rows(count: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"row-{i}" for i in ids]})


def options_of(described: Any) -> dict[str, str]:
    """A DescribeTable answer's storage options (async models and pylance's alike)."""
    options = described.storage_options
    if options is None or isinstance(options, dict):
        return dict(options or {})
    return dict(options.to_dict())


def storage(options: dict[str, str]) -> dict[str, str]:
    return {f"storage.{k}": v for k, v in options.items()}


# -- Unity ---------------------------------------------------------------------------------


@pytest.fixture
def unity(aws: MotoAws, s3_root: str) -> Iterator[UnityServer]:
    with unity_catalog() as server:
        server.test_root = s3_root  # type: ignore[attr-defined]
        server.credential_vendor = lambda location, operation: aws.vendor.vend(operation)
        server.add_catalog("main")
        server.add_schema("main", "s")
        yield server


@pytest.fixture
def s3_root() -> str:
    """A fresh place in the bucket (moto's state lives as long as the module)."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex}"


def unity_properties(server: UnityServer, aws: MotoAws, **extra: str) -> dict[str, str]:
    return {
        "endpoint": server.uri,
        "root": server.test_root,
        "retry_backoff_ms": "1",
        **storage(aws.client_options),
        **extra,
    }


@pytest.fixture
async def unity_table(unity: UnityServer, aws: MotoAws) -> str:
    """main.s.t with 4 rows, written by the catalog's own identity; returns its location."""
    producer = {**unity_properties(unity, aws), **storage(aws.producer_options)}
    async with lna.connect("unity", producer) as ns:
        created = await ns.create_table({"id": UNITY_TABLE}, rows(4))
    unity.credential_requests.clear()
    return str(created.location)


async def test_unity_describe_vends_credentials_that_open_the_table(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> None:
    async with lna.connect("unity", unity_properties(unity, aws)) as ns:
        plain = await ns.describe_table({"id": UNITY_TABLE})
        assert not CREDENTIAL_KEYS & set(options_of(plain))
        assert unity.credential_requests == []  # not configured, not asked: nothing vended
        with pytest.raises(REFUSED, match=r"InvalidAccessKeyId|403"):
            lance.dataset(unity_table, storage_options=options_of(plain)).count_rows()

        before = int(time.time() * 1000)
        described = await ns.describe_table({"id": UNITY_TABLE, "vend_credentials": True})
    options = options_of(described)
    assert set(options) >= CREDENTIAL_KEYS
    assert options["aws_access_key_id"].startswith("ASIA")  # an STS session credential
    expires = int(options["expires_at_millis"])
    assert before < expires <= before + (LIFETIME + 2) * 1000
    assert 0 < int(options["refresh_offset_millis"]) <= LIFETIME * 1000 // 4
    assert options["aws_endpoint"] == aws.endpoint  # the operator's options stay under them
    assert lance.dataset(unity_table, storage_options=options).count_rows() == 4
    # the broadest credentials the caller may hold: Unity granted READ_WRITE
    assert unity.credential_requests == [("main.s.t", "READ_WRITE")]


async def test_unity_operations_vend_what_they_need_and_reuse_it_until_the_refresh_point(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> None:
    properties = unity_properties(unity, aws, vend_credentials="true")
    started = time.monotonic()
    async with lna.connect("unity", properties) as ns:
        assert (await ns.count_table_rows({"id": UNITY_TABLE})).count == 4
        assert (await ns.count_table_rows({"id": UNITY_TABLE})).count == 4
        await ns.insert_into_table({"id": UNITY_TABLE}, rows(2, 4))
        await ns.insert_into_table({"id": UNITY_TABLE}, rows(2, 6))
        assert (await ns.count_table_rows({"id": UNITY_TABLE, "predicate": "id >= 4"})).count == 4
        # a request that says false gets none, whatever the backend's setting
        described = await ns.describe_table({"id": UNITY_TABLE, "vend_credentials": False})
        assert not CREDENTIAL_KEYS & set(options_of(described))
    elapsed = time.monotonic() - started
    # one credential per operation kind while fresh: reads READ, writes READ_WRITE (a slow
    # machine may pass a refresh point, three quarters of a lifetime, and ask again)
    requests = unity.credential_requests
    assert requests[0] == ("main.s.t", "READ")
    assert set(requests) == {("main.s.t", "READ"), ("main.s.t", "READ_WRITE")}
    fresh_for = LIFETIME * 3 / 4
    for kind in ("READ", "READ_WRITE"):
        assert requests.count(("main.s.t", kind)) <= 1 + int(elapsed / fresh_for), requests
    assert lance.dataset(unity_table, storage_options=aws.producer_options).count_rows() == 8


async def test_unity_read_credentials_cannot_write(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> None:
    unity.read_only_tables.add("main.s.t")  # MODIFY not granted: READ_WRITE is refused
    async with lna.connect("unity", unity_properties(unity, aws)) as ns:
        described = await ns.describe_table({"id": UNITY_TABLE, "vend_credentials": True})
    assert unity.credential_requests == [("main.s.t", "READ_WRITE"), ("main.s.t", "READ")]
    options = options_of(described)
    assert lance.dataset(unity_table, storage_options=options).count_rows() == 4
    with pytest.raises(REFUSED, match=r"AccessDenied|403"):
        lance.write_dataset(rows(1, 99), unity_table, mode="append", storage_options=options)
    assert lance.dataset(unity_table, storage_options=aws.producer_options).count_rows() == 4


@pytest.mark.parametrize("impl", ["unity", "iceberg"])
async def test_vend_credentials_must_be_a_boolean(
    unity: UnityServer, iceberg: IcebergCatalogServer, aws: MotoAws, impl: str
) -> None:
    if impl == "unity":
        properties, table = unity_properties(unity, aws), UNITY_TABLE
    else:
        properties, table = iceberg_properties(iceberg, aws), ICEBERG_TABLE
    async with lna.connect(impl, properties) as ns:
        with pytest.raises(errors.InvalidInputError, match="vend_credentials must be"):
            await ns.describe_table({"id": table, "vend_credentials": "yes"})
    assert unity.requests == []
    assert iceberg.vend_requests == {}


async def test_unity_without_cloud_credentials_vends_nothing(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> None:
    """Unity answers a location it holds no credentials for with no credential member."""
    unity.credential_vendor = None
    async with lna.connect("unity", unity_properties(unity, aws)) as ns:
        described = await ns.describe_table({"id": UNITY_TABLE, "vend_credentials": True})
    assert not CREDENTIAL_KEYS & set(options_of(described))
    assert "expires_at_millis" not in options_of(described)


# -- a long job: pylance refreshes through our namespace -------------------------------------


def long_job(
    namespace: Any, table_id: list[str], seconds: float, options: dict[str, str] | None = None
) -> tuple[int, int]:
    """Scans and appends through one dataset handle for ``seconds`` and at least 10 appends,
    however slow the machine: (appends, final rows).

    ``options``: the client's own storage options, under the namespace's."""
    through = {"namespace_client": namespace, "table_id": table_id, "storage_options": options}
    dataset = lance.dataset(**through)
    appends = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or appends < 10:
        assert dataset.count_rows() >= 4
        assert dataset.to_table(columns=["id"]).num_rows >= 4
        dataset = lance.write_dataset(rows(1, 100 + appends), mode="append", **through)
        appends += 1
        time.sleep(0.2)
    return appends, lance.dataset(**through).count_rows()


def test_a_long_job_outlives_its_credentials_on_unity(
    unity: UnityServer, aws: MotoAws, unity_table: str, caplog: pytest.LogCaptureFixture
) -> None:
    first = aws.vendor.total
    properties = unity_properties(unity, aws, vend_credentials="true")
    with caplog.at_level(logging.DEBUG), lna.connect_sync("unity", properties) as namespace:
        opened = namespace.describe_table({"id": UNITY_TABLE})
        initial = options_of(opened)
        appends, total = long_job(namespace, UNITY_TABLE, seconds=3 * LIFETIME)
    assert total == 4 + appends
    # the job ran three lifetimes long: it was handed fresh credentials at least twice more
    issued = aws.vendor.total - first
    assert issued >= 3, unity.credential_requests
    assert len(unity.credential_requests) == issued
    # ... and the first credentials really are dead by now: moto refuses them
    with pytest.raises(REFUSED, match=r"InvalidAccessKeyId|403"):
        lance.dataset(unity_table, storage_options=initial).count_rows()
    # nothing on our side logged them (moto's and botocore's records are AWS's and the
    # look-alike's STS calls: the other side)
    ours = [r for r in caplog.records if not r.name.startswith(("botocore", "moto"))]
    assert ours  # the job did log (httpx, lance, ...)
    for secret in (initial["aws_secret_access_key"], initial["aws_session_token"]):
        assert not [r.name for r in ours if secret in r.getMessage()]


def test_one_dataset_handle_outlives_its_credentials(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> None:
    """No reopening: one handle scans for three lifetimes, and pylance itself asks the
    namespace (DescribeTable) for fresh credentials whenever the ones it holds near expiry."""
    properties = unity_properties(unity, aws, vend_credentials="true")
    with lna.connect_sync("unity", properties) as namespace:
        dataset = lance.dataset(namespace_client=namespace, table_id=UNITY_TABLE)
        opened = len(unity.credential_requests)
        scans = 0
        deadline = time.monotonic() + 3 * LIFETIME
        while time.monotonic() < deadline:
            assert dataset.to_table(columns=["id", "name"]).num_rows == 4
            scans += 1
            time.sleep(0.1)
    assert opened == 1
    assert len(unity.credential_requests) - opened >= 2, scans


def test_a_long_job_through_lance_ns_serve_refreshes_through_the_server(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> None:
    """pylance's own RestNamespace, on ``lance-ns serve --expose-vended-credentials`` in front
    of the unity backend: the client holds only the endpoint, the server hands on what Unity
    vends, and pylance's refreshes go through the server."""
    properties = unity_properties(unity, aws, vend_credentials="true")
    with lance_ns_serve(properties, "--expose-vended-credentials", impl="unity") as served:
        rest = PylanceRestNamespace(uri=served.uri)
        table = ["main", "s", "t"]
        appends, total = long_job(rest, table, 3 * LIFETIME, options=aws.client_options)
    assert total == 4 + appends
    assert len(unity.credential_requests) >= 3


# -- Iceberg -------------------------------------------------------------------------------


@pytest.fixture
def iceberg(aws: MotoAws, tmp_path: Path, s3_root: str) -> Iterator[IcebergCatalogServer]:
    with iceberg_catalog(tmp_path) as server:
        server.test_root = s3_root  # type: ignore[attr-defined]
        server.credential_vendor = lambda location: aws.vendor.vend("READ_WRITE")
        producer = aws.producer_options  # the catalog writes its metadata files as itself
        server.catalog_properties = {
            "s3.endpoint": producer["aws_endpoint"],
            "s3.region": producer["aws_region"],
            "s3.access-key-id": producer["aws_access_key_id"],
            "s3.secret-access-key": producer["aws_secret_access_key"],
        }
        yield server


def iceberg_properties(server: IcebergCatalogServer, aws: MotoAws, **extra: str) -> dict[str, str]:
    return {
        "endpoint": server.uri,
        "root": server.test_root,
        "retry_backoff_ms": "1",
        **storage(aws.client_options),
        **extra,
    }


ICEBERG_TABLE = ["wh", "db", "t"]


@pytest.fixture
async def iceberg_table(iceberg: IcebergCatalogServer, aws: MotoAws) -> str:
    producer = {**iceberg_properties(iceberg, aws), **storage(aws.producer_options)}
    async with lna.connect("iceberg", producer) as ns:
        await ns.create_namespace({"id": ["wh", "db"]})
        created = await ns.create_table({"id": ICEBERG_TABLE}, rows(4))
    iceberg.vend_requests.clear()
    return str(created.location)


@pytest.mark.parametrize("vend_in", ["storage-credentials", "config"])
async def test_iceberg_describe_asks_with_the_delegation_header(
    iceberg: IcebergCatalogServer, aws: MotoAws, iceberg_table: str, vend_in: str
) -> None:
    iceberg.vend_in = vend_in
    async with lna.connect("iceberg", iceberg_properties(iceberg, aws)) as ns:
        plain = await ns.describe_table({"id": ICEBERG_TABLE})
        assert not CREDENTIAL_KEYS & set(options_of(plain))
        assert sum(iceberg.vend_requests.values()) == 0  # no header without vending
        described = await ns.describe_table({"id": ICEBERG_TABLE, "vend_credentials": True})
    options = options_of(described)
    assert set(options) >= CREDENTIAL_KEYS
    assert "expires_at_millis" in options
    assert iceberg.vend_requests == {iceberg_table: 1}
    assert lance.dataset(iceberg_table, storage_options=options).count_rows() == 4


async def test_iceberg_table_operations_use_vended_credentials(
    iceberg: IcebergCatalogServer, aws: MotoAws, iceberg_table: str
) -> None:
    properties = iceberg_properties(iceberg, aws, vend_credentials="true")
    async with lna.connect("iceberg", properties) as ns:
        await ns.insert_into_table({"id": ICEBERG_TABLE}, rows(3, 4))
        assert (await ns.count_table_rows({"id": ICEBERG_TABLE})).count == 7
    assert iceberg.vend_requests[iceberg_table] == 2  # each LoadTable brings its own


def test_a_long_job_outlives_its_credentials_on_iceberg(
    iceberg: IcebergCatalogServer, aws: MotoAws, iceberg_table: str
) -> None:
    properties = iceberg_properties(iceberg, aws, vend_credentials="true")
    with lna.connect_sync("iceberg", properties) as namespace:
        appends, total = long_job(namespace, ICEBERG_TABLE, seconds=3 * LIFETIME)
    assert total == 4 + appends
    assert iceberg.vend_requests[iceberg_table] >= 3


def test_the_iceberg_reference_server_hands_out_static_credentials_in_config(
    aws: MotoAws, tmp_path: Path
) -> None:
    """The Iceberg project's own server, with ``include-credentials``, puts the ``s3.*`` keys
    of its configuration into every LoadTable ``config``: the older place, no expiry. The
    backend takes them only when it vends, and hands them on without ``expires_at_millis``
    (pylance then never refreshes)."""
    issued = dataclasses.replace(aws.vendor, lifetime=3600).vend("READ")
    properties = {
        "include-credentials": "true",
        "s3.access-key-id": issued["access_key_id"],
        "s3.secret-access-key": issued["secret_access_key"],
        "s3.session-token": issued["session_token"],
    }
    with contextlib.ExitStack() as stack:
        server = need(lambda: stack.enter_context(reference_iceberg(tmp_path, properties)))
        space = unique_name("vend")
        server.rest_client().create_namespace(space)
        table = ["wh", space, "t"]
        backend = server.properties(root=str(tmp_path / "lance"), **storage(aws.client_options))
        with lna.connect_sync("iceberg", backend) as ns:
            ns.create_table({"id": table}, rows(2))
            plain = options_of(ns.describe_table({"id": table}))
            vended = options_of(ns.describe_table({"id": table, "vend_credentials": True}))
    assert not CREDENTIAL_KEYS & set(plain)
    assert vended["aws_access_key_id"] == issued["access_key_id"]
    assert vended["aws_session_token"] == issued["session_token"]
    assert "expires_at_millis" not in vended
    assert "refresh_offset_millis" not in vended
    # ... and they are live credentials at moto's S3
    listed = s3_client(aws.endpoint, **credentials_of(issued)).list_objects_v2(Bucket=BUCKET)
    assert listed["ResponseMetadata"]["HTTPStatusCode"] == 200


def credentials_of(issued: dict[str, Any]) -> dict[str, str]:
    return {
        "aws_access_key_id": issued["access_key_id"],
        "aws_secret_access_key": issued["secret_access_key"],
        "aws_session_token": issued["session_token"],
    }


# -- lance-ns serve: vended credentials pass only when the operator allows -------------------


@pytest.fixture
async def unity_ns(
    unity: UnityServer, aws: MotoAws, unity_table: str
) -> AsyncIterator[lna.AsyncLanceNamespace]:
    canary = {"storage.azure_storage_account_key": "c4nary-5ecret-91f7"}  # the server's own
    properties = {**unity_properties(unity, aws, vend_credentials="true"), **canary}
    async with lna.connect("unity", properties) as ns:
        yield ns


async def describe_over_rest(app: Any, body: dict[str, Any]) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://lance") as client:
        response = await client.post("/v1/table/main$s$t/describe", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_server_keeps_vended_credentials_unless_the_operator_allows(
    unity_ns: lna.AsyncLanceNamespace,
) -> None:
    closed = await describe_over_rest(create_app(unity_ns), {"vend_credentials": True})
    assert closed.get("storage_options") is None

    app = create_app(unity_ns, expose_vended_credentials=True)
    passed = (await describe_over_rest(app, {"vend_credentials": True}))["storage_options"]
    # exactly what the catalog vended: nothing of the server's storage.* (endpoint, keys)
    assert set(passed) == CREDENTIAL_KEYS | {"expires_at_millis", "refresh_offset_millis"}
    assert passed["aws_access_key_id"].startswith("ASIA")
    not_vended = await describe_over_rest(app, {"vend_credentials": False})
    assert not_vended.get("storage_options") is None


# -- what a catalog answers, parsed ----------------------------------------------------------


def test_vended_credentials_never_show_their_values() -> None:
    vended = from_unity(
        {
            "aws_temp_credentials": {
                "access_key_id": "ASIAEXAMPLE",
                "secret_access_key": "c4nary-5ecret-91f7",
                "session_token": "c4nary-5ecret-91f7-token",
            },
            "expiration_time": int(time.time() * 1000) + 3_600_000,
        },
        "DescribeTable main.s.t",
    )
    assert vended is not None
    assert "c4nary" not in repr(vended)
    assert "ASIAEXAMPLE" not in repr(vended)
    assert vended.refresh_offset_millis == 60_000  # an hour's credential: pylance's minute
    assert "c4nary" not in repr(VendedCredentialCache())
    answer = DescribeTableResponse.from_dict(
        {"location": "s3://b/t", "storage_options": vended.storage_options()}
    )
    assert "c4nary" not in repr(answer)
    assert "aws_secret_access_key" in repr(answer)  # the keys show, not the values


@pytest.mark.parametrize(
    "answer",
    [
        {"aws_temp_credentials": {"access_key_id": "ASIA", "secret_access_key": 7}},
        {"aws_temp_credentials": {"access_key_id": "ASIA"}},
        {"aws_temp_credentials": "c4nary-5ecret-91f7"},
        {
            "aws_temp_credentials": {
                "access_key_id": "A",
                "secret_access_key": "c4nary-5ecret-91f7",
            },
            "expiration_time": "soon",
        },
    ],
)
def test_a_malformed_unity_answer_is_an_internal_error_without_its_values(
    answer: dict[str, Any],
) -> None:
    with pytest.raises(errors.InternalError) as raised:
        from_unity(answer, "DescribeTable main.s.t")
    assert "c4nary" not in str(raised.value)
    assert "ASIA" not in str(raised.value)


def test_iceberg_credentials_come_from_the_longest_matching_prefix() -> None:
    def entry(prefix: str, key: str) -> dict[str, Any]:
        return {"prefix": prefix, "config": {"s3.access-key-id": key, "s3.secret-access-key": "s"}}

    result = {
        "config": {"s3.access-key-id": "from-config", "s3.secret-access-key": "s"},
        "storage-credentials": [
            entry("s3://b/", "bucket"),
            entry("s3://b/db/t", "table"),
            entry("s3://other/db/t/longer", "other"),
        ],
    }
    chosen = from_iceberg(result, "s3://b/db/t", "LoadTable")
    assert chosen is not None
    assert chosen.options["aws_access_key_id"] == "table"
    elsewhere = from_iceberg(result, "s3://c/x", "LoadTable")
    assert elsewhere is not None
    assert elsewhere.options["aws_access_key_id"] == "from-config"
    assert from_iceberg({"config": {}}, "s3://b/t", "LoadTable") is None
    assert isinstance(from_iceberg(result, "s3://b/db/t", "x"), VendedCredentials)
