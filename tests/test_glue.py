"""The glue backend (seed 004) against moto and against a model-checked fake Glue.

moto (tests/glue_fixtures.py documents what moto 5.2.5 does, and the first section
asserts it) serves databases, tables, STS and S3; boto3 is the independent client
that reads back what the backend wrote. moto has no catalog APIs, no CatalogId scoping
and no pagination, so child catalogs, identifier walking, merged root listings,
NextToken paging, CatalogId scoping, credentials and faults run against ``fake_glue``,
which speaks Glue's JSON protocol and checks every request against botocore's model.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import botocore.retries.standard
import lance
import pyarrow as pa
import pyarrow.fs
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from conftest import timed_out_within
from glue_fixtures import (
    ACCOUNT,
    REGION,
    FakeGlue,
    GlueModelViolation,
    fake_glue,
    glue_client,
    moto_glue,
    reset_moto,
    s3_client,
    sts_client,
    use_fake_aws_env,
)

import lance_namespace_async as lna
from lance_namespace_async import errors

OTHER_ACCOUNT = "999999999999"
ROLE_ACCOUNT = "111111111111"
ROLE_ARN = f"arn:aws:iam::{ROLE_ACCOUNT}:role/lance"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_env(monkeypatch)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore retries without sleeping (what is retried is unchanged)."""
    monkeypatch.setattr(
        botocore.retries.standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.0
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "lance-root"
    path.mkdir()
    return path


def props(value: Any) -> dict[str, str]:
    """The additional properties of a response's ``properties``/``storage_options``."""
    return dict(getattr(value, "additional_properties", None) or {})


def lance_table_at(location: Path, rows: int = 3) -> str:
    data = pa.table(
        {"id": pa.array(range(rows), pa.int64()), "name": [f"r{i}" for i in range(rows)]}
    )
    lance.write_dataset(data, str(location))
    return str(location)


# -- moto -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    with moto_glue() as endpoint:
        yield endpoint


@pytest.fixture
def moto(moto_server: str) -> str:
    reset_moto(moto_server)
    return moto_server


def moto_properties(endpoint: str, root: Path | str, **extra: str) -> dict[str, str]:
    # moto has no catalog APIs (asserted below), so the backend runs in its databases-only
    # mode (child_catalogs=false, a key of its own beyond seed 004's list)
    return {
        "endpoint": endpoint,
        "region": REGION,
        "root": str(root),
        "child_catalogs": "false",
        **extra,
    }


@pytest.fixture
async def moto_ns(moto: str, root: Path) -> AsyncIterator[lna.AsyncLanceNamespace]:
    async with lna.connect("glue", moto_properties(moto, root)) as namespace:
        yield namespace


# -- what moto supports (measured; see glue_fixtures' docstring) ---------------------------------


def test_moto_lacks_catalog_apis(moto: str) -> None:
    glue = glue_client(moto)
    calls = {
        "CreateCatalog": lambda: glue.create_catalog(Name="c", CatalogInput={}),
        "GetCatalog": lambda: glue.get_catalog(CatalogId=f"{ACCOUNT}:c"),
        "GetCatalogs": lambda: glue.get_catalogs(),
        "DeleteCatalog": lambda: glue.delete_catalog(CatalogId=f"{ACCOUNT}:c"),
    }
    for action, call in calls.items():
        with pytest.raises(ClientError) as caught:
            call()
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500, action
        assert caught.value.response["Error"]["Code"] == "500", action


def test_moto_ignores_catalog_id_scoping(moto: str) -> None:
    glue = glue_client(moto)
    glue.create_database(CatalogId=OTHER_ACCOUNT, DatabaseInput={"Name": "theirs"})
    glue.create_database(DatabaseInput={"Name": "ours"})
    mine = [d["Name"] for d in glue.get_databases()["DatabaseList"]]
    theirs = [d["Name"] for d in glue.get_databases(CatalogId=OTHER_ACCOUNT)["DatabaseList"]]
    assert mine == theirs == ["theirs", "ours"]
    assert glue.get_database(CatalogId=ROLE_ACCOUNT, Name="ours")["Database"]["Name"] == "ours"


def test_moto_keeps_regions_apart(moto: str) -> None:
    glue_client(moto, region_name="eu-west-1").create_database(DatabaseInput={"Name": "eu_db"})
    assert glue_client(moto).get_databases()["DatabaseList"] == []


def test_moto_does_not_paginate(moto: str) -> None:
    glue = glue_client(moto)
    for i in range(5):
        glue.create_database(DatabaseInput={"Name": f"d{i}"})
        glue.create_table(DatabaseName="d0", TableInput={"Name": f"t{i}"})
    databases = glue.get_databases(MaxResults=2)
    tables = glue.get_tables(DatabaseName="d0", MaxResults=2)
    assert len(databases["DatabaseList"]) == 5
    assert len(tables["TableList"]) == 5
    assert "NextToken" not in databases
    assert "NextToken" not in tables


def test_moto_delete_database_cascades_like_glue(moto: str) -> None:
    glue = glue_client(moto)
    glue.create_database(DatabaseInput={"Name": "d"})
    glue.create_table(DatabaseName="d", TableInput={"Name": "t"})
    glue.delete_database(Name="d")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_tables(DatabaseName="d")


def test_moto_assume_role_scopes_resources_by_the_role_account(moto: str) -> None:
    assert sts_client(moto).get_caller_identity()["Account"] == ACCOUNT
    answer = sts_client(moto).assume_role(
        RoleArn=ROLE_ARN, RoleSessionName="probe", ExternalId="ext-1", DurationSeconds=900
    )
    credentials = answer["Credentials"]
    assert credentials["AccessKeyId"].startswith("ASIA")
    as_role = glue_client(
        moto,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    as_role.create_database(DatabaseInput={"Name": "role_db"})
    assert glue_client(moto).get_databases()["DatabaseList"] == []
    listed = as_role.get_databases()["DatabaseList"]
    assert [(d["Name"], d["CatalogId"]) for d in listed] == [("role_db", ROLE_ACCOUNT)]


# -- an endpoint without the catalog APIs, default settings (issue 15) ------------------------


async def test_default_settings_fall_back_to_databases_on_moto(
    moto: str, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # child_catalogs unset: the first one-level identifier asks GetCatalog (once, without
    # botocore's retries), moto answers an HTML 500, and from then on this connection
    # treats namespaces as databases
    properties = {"endpoint": moto, "region": REGION, "root": str(root)}
    with caplog.at_level(logging.INFO, logger="lance_namespace_async.glue"):
        async with lna.connect("glue", properties) as ns:
            await ns.create_namespace({"id": ["db"], "properties": {"owner": "ana"}})
            await ns.create_namespace({"id": ["other"]})
            assert (await ns.list_namespaces({})).namespaces == ["db", "other"]
            assert (await ns.describe_namespace({"id": ["db"]})).properties.to_dict() == {
                "owner": "ana"
            }
            location = (await ns.declare_table({"id": ["db", "t"]})).location
            lance.write_dataset(pa.table({"x": [1, 2]}), location, mode="overwrite")
            assert (await ns.list_tables({"id": ["db"]})).tables == ["t"]
            await ns.drop_namespace({"id": ["other"]})
            with pytest.raises(errors.InvalidInputError, match="lacks the catalog APIs"):
                await ns.create_namespace(
                    {"id": ["cat"], "properties": {"glue.namespace_type": "catalog"}}
                )
    found = [r for r in caplog.records if "does not support" in r.getMessage()]
    assert len(found) == 1, "logged once per connection"
    assert found[0].levelno == logging.INFO
    glue = glue_client(moto)
    assert [d["Name"] for d in glue.get_databases()["DatabaseList"]] == ["db"]
    table = glue.get_table(DatabaseName="db", Name="t")["Table"]
    assert table["Parameters"]["table_type"] == "lance"


async def test_child_catalogs_true_never_falls_back(moto: str, root: Path) -> None:
    properties = {
        "endpoint": moto,
        "region": REGION,
        "root": str(root),
        "child_catalogs": "true",
        "max_retries": "0",
    }
    async with lna.connect("glue", properties) as ns:
        with pytest.raises(errors.InternalError, match="GetCatalog"):
            await ns.create_namespace({"id": ["db"]})
    assert glue_client(moto).get_databases()["DatabaseList"] == []


async def test_a_missing_catalog_is_not_a_missing_api(fake: FakeGlue, root: Path) -> None:
    # real Glue answers EntityNotFoundException for an unknown catalog: nothing falls back
    async with lna.connect("glue", fake_properties(fake, root)) as ns:
        await ns.create_namespace({"id": ["db"]})
        await ns.create_namespace({"id": ["cat"], "properties": {"glue.namespace_type": "catalog"}})
        assert (await ns.list_namespaces({})).namespaces == ["cat", "db"]


@pytest.mark.usefixtures("no_backoff")
async def test_a_failing_first_catalog_read_is_asked_again_with_retries(
    fake: FakeGlue, root: Path
) -> None:
    # Glue's own 500 (a JSON InternalServiceException) is no missing API: the read the
    # probe sent once goes out again through botocore's retries, and catalogs stay on
    fake.add_catalog("cat")
    fake.fail_next("InternalServiceException", count=2, action="GetCatalog")
    async with lna.connect("glue", fake_properties(fake, root)) as ns:
        await ns.namespace_exists({"id": ["cat"]})
        await ns.create_namespace({"id": ["cat", "db"]})
    reads = [body for action, body in glue_calls(fake) if action == "GetCatalog"]
    assert len(reads) >= 3  # the probe, then the usual client's attempt and retry
    assert set(fake.databases(catalog="cat")) == {"db"}


# -- configuration -------------------------------------------------------------------------------


def test_every_seed_property_is_accepted_and_unknown_keys_are_named() -> None:
    seed_keys = {
        "catalog_id": ACCOUNT,
        "endpoint": "http://127.0.0.1:9",
        "region": REGION,
        "access_key_id": "AKIAEXAMPLE",
        "secret_access_key": "secret",
        "session_token": "token",
        "assume_role_arn": ROLE_ARN,
        "assume_role_region": "eu-west-1",
        "assume_role_external_id": "ext-1",
        "assume_role_session_name": "lance",
        "assume_role_timeout_sec": "900",
        "root": "/tmp/lance",
        "max_retries": "0",
        "connect_timeout": "1000",
        "read_timeout": "1000",
        "storage.aws_region": REGION,
    }
    namespace = lna.connect("glue", seed_keys)  # no I/O until first use
    assert namespace.config.assume_role_timeout_sec == 900
    assert lna.connect("glue", {}).config.assume_role_timeout_sec == 3600
    with pytest.raises(errors.InvalidInputError, match="'warehouse'"):
        lna.connect("glue", {"warehouse": "s3://bucket"})
    for key, bad in (
        ("max_retries", "-1"),
        ("connect_timeout", "0"),
        ("read_timeout", "soon"),
        ("assume_role_timeout_sec", "an hour"),
    ):
        with pytest.raises(errors.InvalidInputError, match=key) as caught:
            lna.connect("glue", {key: bad})
        assert caught.value.code == 13


def test_secrets_never_show() -> None:
    secrets = {
        "secret_access_key": "wJalrXUtnFEMI-K7MDENG-SECRET",
        "session_token": "IQoJb3JpZ2luX2VjEJ-SESSION-TOKEN",
        "storage.aws_secret_access_key": "STORAGE-SECRET-42",
    }
    properties = {"access_key_id": "AKIAEXAMPLE", "endpoint": "http://127.0.0.1:9", **secrets}
    namespace = lna.connect("glue", properties)
    shown = [
        repr(namespace),
        str(namespace),
        namespace.namespace_id(),
        repr(namespace.config),
        str(namespace.config.redacted_properties()),
    ]
    for failing in ({**properties, "read_timeout": "never"}, {**properties, "bogus": "1"}):
        with pytest.raises(errors.InvalidInputError) as caught:
            lna.connect("glue", failing)
        shown += [str(caught.value), repr(caught.value)]
    for text in shown:
        for secret in secrets.values():
            assert secret not in text


async def test_identifiers_are_checked(fake: FakeGlue, root: Path) -> None:
    async with lna.connect("glue", fake_properties(fake, root)) as ns:
        with pytest.raises(errors.InvalidInputError):
            await ns.declare_table({"id": ["only_a_table"]})
        with pytest.raises(errors.InvalidInputError):
            await ns.create_namespace({"id": []})
        with pytest.raises(errors.InvalidInputError):
            await ns.drop_namespace({"id": []})


# -- databases on moto, read back with boto3 -----------------------------------------------------


async def test_databases_are_namespaces(moto_ns: lna.AsyncLanceNamespace, moto: str) -> None:
    glue = glue_client(moto)
    created = await moto_ns.create_namespace({"id": ["sales"], "properties": {"owner": "ana"}})
    assert props(created.properties)["owner"] == "ana"
    assert glue.get_database(Name="sales")["Database"]["Parameters"] == {"owner": "ana"}
    glue.create_database(DatabaseInput={"Name": "hr", "Parameters": {"k": "v"}})
    glue.create_database(DatabaseInput={"Name": "audit"})
    assert (await moto_ns.list_namespaces()).namespaces == ["audit", "hr", "sales"]
    assert props((await moto_ns.describe_namespace({"id": ["hr"]})).properties) == {"k": "v"}
    await moto_ns.namespace_exists({"id": ["sales"]})
    assert (await moto_ns.list_namespaces({"id": ["sales"]})).namespaces == []
    with pytest.raises(errors.NamespaceNotFoundError) as missing:
        await moto_ns.namespace_exists({"id": ["ghost"]})
    assert missing.value.code == 1
    with pytest.raises(errors.NamespaceNotFoundError):
        await moto_ns.describe_namespace({"id": ["ghost"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await moto_ns.list_namespaces({"id": ["ghost"]})


async def test_create_namespace_modes(moto_ns: lna.AsyncLanceNamespace, moto: str) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["sales"], "properties": {"owner": "ana"}})
    with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
        await moto_ns.create_namespace({"id": ["sales"], "properties": {"owner": "bob"}})
    assert caught.value.code == 2
    kept = await moto_ns.create_namespace(
        {"id": ["sales"], "mode": "ExistOk", "properties": {"owner": "bob"}}
    )
    assert props(kept.properties) == {"owner": "ana"}
    assert glue.get_database(Name="sales")["Database"]["Parameters"] == {"owner": "ana"}
    await moto_ns.create_namespace(
        {"id": ["sales"], "mode": "overwrite", "properties": {"owner": "carol"}}
    )
    assert glue.get_database(Name="sales")["Database"]["Parameters"] == {"owner": "carol"}


async def test_drop_namespace_modes(moto_ns: lna.AsyncLanceNamespace, moto: str) -> None:
    glue = glue_client(moto)
    with pytest.raises(errors.NamespaceNotFoundError):
        await moto_ns.drop_namespace({"id": ["ghost"]})
    await moto_ns.drop_namespace({"id": ["ghost"], "mode": "Skip"})
    await moto_ns.create_namespace({"id": ["empty"]})
    await moto_ns.drop_namespace({"id": ["empty"]})
    assert glue.get_databases()["DatabaseList"] == []


async def test_restrict_is_checked_before_deleting(
    moto_ns: lna.AsyncLanceNamespace, moto: str
) -> None:
    """Glue's DeleteDatabase cascades, so restrict must be verified by the backend."""
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["busy"]})
    await moto_ns.declare_table({"id": ["busy", "t"]})
    with pytest.raises(errors.NamespaceNotEmptyError) as caught:
        await moto_ns.drop_namespace({"id": ["busy"]})
    assert caught.value.code == 3
    assert glue.get_table(DatabaseName="busy", Name="t")["Table"]["Name"] == "t"


async def test_cascade_drops_lance_tables_with_data_and_stops_at_foreign_tables(
    moto_ns: lna.AsyncLanceNamespace, moto: str, tmp_path: Path, root: Path
) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["mixed"]})
    location = lance_table_at(root / "data")  # inside the storage root
    await moto_ns.register_table({"id": ["mixed", "lance_t"], "location": location})
    glue.create_table(
        DatabaseName="mixed",
        TableInput={"Name": "hive_t", "TableType": "EXTERNAL_TABLE", "Parameters": {}},
    )
    with pytest.raises(errors.NamespaceNotEmptyError, match="hive_t") as caught:
        await moto_ns.drop_namespace({"id": ["mixed"], "behavior": "Cascade"})
    assert caught.value.code == 3
    names = {t["Name"] for t in glue.get_tables(DatabaseName="mixed")["TableList"]}
    assert names == {"lance_t", "hive_t"}, "nothing is dropped when a foreign table blocks"
    assert Path(location).exists()
    glue.delete_table(DatabaseName="mixed", Name="hive_t")
    await moto_ns.drop_namespace({"id": ["mixed"], "behavior": "cascade"})
    assert glue.get_databases()["DatabaseList"] == []
    assert not Path(location).exists(), "cascade deletes the Lance tables' data"


# -- tables on moto -------------------------------------------------------------------------------


async def test_declare_writes_a_lance_external_table(
    moto_ns: lna.AsyncLanceNamespace, moto: str, root: Path
) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["sales"]})
    declared = await moto_ns.declare_table({"id": ["sales", "t"], "properties": {"tier": "gold"}})
    table = glue.get_table(DatabaseName="sales", Name="t")["Table"]
    assert table["TableType"] == "EXTERNAL_TABLE"
    assert table["Parameters"]["table_type"] == "lance"
    assert table["Parameters"]["tier"] == "gold"
    assert table["StorageDescriptor"]["Location"] == f"{root}/sales/t" == declared.location
    with pytest.raises(errors.TableAlreadyExistsError) as exists:
        await moto_ns.declare_table({"id": ["sales", "t"]})
    assert exists.value.code == 5
    with pytest.raises(errors.NamespaceNotFoundError) as missing:
        await moto_ns.declare_table({"id": ["ghost", "t"]})
    assert missing.value.code == 1
    chosen = await moto_ns.declare_table({"id": ["sales", "u"], "location": "/elsewhere/u"})
    assert chosen.location == "/elsewhere/u"
    assert glue.get_table(DatabaseName="sales", Name="u")["Table"]["StorageDescriptor"] == {
        "Location": "/elsewhere/u"
    }


async def test_root_defaults_to_the_working_directory(
    moto: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    properties = moto_properties(moto, "")
    del properties["root"]
    async with lna.connect("glue", properties) as ns:
        await ns.create_namespace({"id": ["db"]})
        declared = await ns.declare_table({"id": ["db", "t"]})
    assert declared.location == f"{os.getcwd()}/db/t"


async def test_describe_and_exists(
    moto_ns: lna.AsyncLanceNamespace, moto: str, tmp_path: Path
) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["sales"]})
    location = lance_table_at(tmp_path / "existing")
    await moto_ns.register_table(
        {"id": ["sales", "t"], "location": location, "properties": {"tier": "gold"}}
    )
    described = await moto_ns.describe_table({"id": ["sales", "t"]})
    assert described.location == location
    assert props(described.storage_options)["tier"] == "gold"
    detailed = await moto_ns.describe_table({"id": ["sales", "t"], "load_detailed_metadata": True})
    assert detailed.version == 1
    assert [field.name for field in detailed.schema.fields] == ["id", "name"]
    assert detailed.stats.num_fragments == 1
    await moto_ns.table_exists({"id": ["sales", "t"]})
    with pytest.raises(errors.TableNotFoundError) as caught:
        await moto_ns.table_exists({"id": ["sales", "nope"]})
    assert caught.value.code == 4
    with pytest.raises(errors.TableNotFoundError):
        await moto_ns.describe_table({"id": ["sales", "nope"]})
    glue.create_table(
        DatabaseName="sales",
        TableInput={
            "Name": "iceberg_t",
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"table_type": "ICEBERG"},
            "StorageDescriptor": {"Location": "/somewhere"},
        },
    )
    with pytest.raises(errors.InvalidInputError) as foreign:
        await moto_ns.describe_table({"id": ["sales", "iceberg_t"]})
    assert foreign.value.code == 13


async def test_list_tables_is_lance_only_sorted_and_paginated(
    moto_ns: lna.AsyncLanceNamespace, moto: str
) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["s"]})
    names = ["t4", "t1", "t3", "t0", "t2"]
    for name in names:
        await moto_ns.declare_table({"id": ["s", name]})
    foreign = {
        "hive": {"TableType": "EXTERNAL_TABLE", "Parameters": {}},
        "managed_lance": {"TableType": "MANAGED_TABLE", "Parameters": {"table_type": "lance"}},
        "shouting": {"TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "LaNcE"}},
    }
    for name, fields in foreign.items():
        glue.create_table(DatabaseName="s", TableInput={"Name": name, **fields})
    expected = sorted([*names, "shouting"])
    assert (await moto_ns.list_tables({"id": ["s"]})).tables == expected
    seen: list[str] = []
    token = None
    while True:
        page = await moto_ns.list_tables({"id": ["s"], "limit": 2, "page_token": token})
        assert len(page.tables) <= 2
        seen += page.tables
        token = page.page_token
        if not token:
            break
    assert seen == expected
    with pytest.raises(errors.NamespaceNotFoundError):
        await moto_ns.list_tables({"id": ["ghost"]})


async def test_register_deregister_and_drop(
    moto_ns: lna.AsyncLanceNamespace, moto: str, tmp_path: Path, root: Path
) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["s"]})
    location = lance_table_at(root / "data")  # inside the storage root
    await moto_ns.register_table({"id": ["s", "t"], "location": location})
    table = glue.get_table(DatabaseName="s", Name="t")["Table"]
    assert table["StorageDescriptor"]["Location"] == location
    assert table["Parameters"]["table_type"] == "lance"
    assert table["TableType"] == "EXTERNAL_TABLE"
    with pytest.raises(errors.InvalidInputError) as caught:
        await moto_ns.register_table({"id": ["s", "bad"], "location": str(tmp_path / "nothing")})
    assert caught.value.code == 13
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table(DatabaseName="s", Name="bad")
    deregistered = await moto_ns.deregister_table({"id": ["s", "t"]})
    assert deregistered.location == location
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table(DatabaseName="s", Name="t")
    assert lance.dataset(location).count_rows() == 3, "deregister keeps the data"
    await moto_ns.register_table({"id": ["s", "t"], "location": location})
    await moto_ns.drop_table({"id": ["s", "t"]})
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table(DatabaseName="s", Name="t")
    assert not Path(location).exists(), "drop deletes the data"
    with pytest.raises(errors.TableNotFoundError):
        await moto_ns.drop_table({"id": ["s", "t"]})


async def test_deregister_and_drop_verify_lance_first(
    moto_ns: lna.AsyncLanceNamespace, moto: str, tmp_path: Path
) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["s"]})
    kept = tmp_path / "parquet-files"
    kept.mkdir()
    glue.create_table(
        DatabaseName="s",
        TableInput={
            "Name": "hive_t",
            "TableType": "EXTERNAL_TABLE",
            "StorageDescriptor": {"Location": str(kept)},
        },
    )
    for operation in (moto_ns.deregister_table, moto_ns.drop_table):
        with pytest.raises(errors.InvalidInputError) as caught:
            await operation({"id": ["s", "hive_t"]})
        assert caught.value.code == 13
    assert glue.get_table(DatabaseName="s", Name="hive_t")["Table"]["Name"] == "hive_t"
    assert kept.exists()


async def test_rename_table(moto_ns: lna.AsyncLanceNamespace, moto: str, tmp_path: Path) -> None:
    glue = glue_client(moto)
    await moto_ns.create_namespace({"id": ["s"]})
    await moto_ns.create_namespace({"id": ["archive"]})
    location = lance_table_at(tmp_path / "data")
    await moto_ns.register_table(
        {"id": ["s", "old"], "location": location, "properties": {"tier": "gold"}}
    )
    await moto_ns.rename_table({"id": ["s", "old"], "new_table_name": "new"})
    renamed = glue.get_table(DatabaseName="s", Name="new")["Table"]
    assert renamed["StorageDescriptor"]["Location"] == location
    assert renamed["Parameters"] == {"table_type": "lance", "tier": "gold"}
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_table(DatabaseName="s", Name="old")
    await moto_ns.declare_table({"id": ["s", "taken"]})
    with pytest.raises(errors.TableAlreadyExistsError) as caught:
        await moto_ns.rename_table({"id": ["s", "new"], "new_table_name": "taken"})
    assert caught.value.code == 5
    assert glue.get_table(DatabaseName="s", Name="new")["Table"]["Name"] == "new"
    taken = glue.get_table(DatabaseName="s", Name="taken")["Table"]
    assert taken["StorageDescriptor"]["Location"] != location, "the target is left alone"
    await moto_ns.rename_table(
        {"id": ["s", "new"], "new_namespace_id": ["archive"], "new_table_name": "moved"}
    )
    assert (await moto_ns.list_tables({"id": ["archive"]})).tables == ["moved"]
    assert (await moto_ns.list_tables({"id": ["s"]})).tables == ["taken"]
    assert lance.dataset(location).count_rows() == 3, "rename keeps the data where it is"


# -- pylance end to end ------------------------------------------------------------------------


def test_pylance_writes_and_reads_through_connect_sync(moto: str, root: Path) -> None:
    with lna.connect_sync("glue", moto_properties(moto, root)) as ns:
        ns.create_namespace({"id": ["db"]})
        lance.write_dataset(pa.table({"x": [1, 2, 3]}), namespace_client=ns, table_id=["db", "t"])
        lance.write_dataset(
            pa.table({"x": [4]}), namespace_client=ns, table_id=["db", "t"], mode="append"
        )
        dataset = lance.dataset(namespace_client=ns, table_id=["db", "t"])
        assert dataset.count_rows() == 4
        assert ns.list_tables({"id": ["db"]}).tables == ["t"]
    table = glue_client(moto).get_table(DatabaseName="db", Name="t")["Table"]
    assert table["Parameters"]["table_type"] == "lance"
    assert lance.dataset(table["StorageDescriptor"]["Location"]).count_rows() == 4


def test_pylance_on_moto_s3_through_storage_options(
    moto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3 = s3_client(moto)
    s3.create_bucket(Bucket="lance-warehouse")
    storage = {
        "storage.aws_endpoint": moto,
        "storage.aws_access_key_id": "testing",
        "storage.aws_secret_access_key": "testing",
        "storage.aws_region": REGION,
        "storage.allow_http": "true",
    }
    properties = {**moto_properties(moto, "s3://lance-warehouse/root"), **storage}

    def keys() -> list[str]:
        listed = s3.list_objects_v2(Bucket="lance-warehouse", Prefix="root/db/t/")
        return [item["Key"] for item in listed.get("Contents", [])]

    with lna.connect_sync("glue", properties) as ns:
        ns.create_namespace({"id": ["db"]})
        lance.write_dataset(pa.table({"x": [1, 2, 3]}), namespace_client=ns, table_id=["db", "t"])
        assert any(key.endswith(".lance") for key in keys())
        assert lance.dataset(namespace_client=ns, table_id=["db", "t"]).count_rows() == 3
        table = glue_client(moto).get_table(DatabaseName="db", Name="t")["Table"]
        assert table["StorageDescriptor"]["Location"] == "s3://lance-warehouse/root/db/t"
        detailed = ns.describe_table({"id": ["db", "t"], "load_detailed_metadata": True})
        assert detailed.version == 1

        # Deleting the data must use the storage.* endpoint. A filesystem built from the
        # bare s3:// URI would go to AWS itself: refuse it here rather than let it try.
        real_filesystem = pyarrow.fs.FileSystem

        class LocalOnly:
            @staticmethod
            def from_uri(uri: str) -> Any:
                if uri.startswith(("s3://", "s3a://")):
                    raise RuntimeError(f"{uri}: S3 filesystem without the storage.* endpoint")
                return real_filesystem.from_uri(uri)

        monkeypatch.setattr(pyarrow.fs, "FileSystem", LocalOnly)
        ns.drop_table({"id": ["db", "t"]})
        monkeypatch.setattr(pyarrow.fs, "FileSystem", real_filesystem)
    assert keys() == [], "drop deletes the data on the object store"


# -- credentials -------------------------------------------------------------------------------


async def test_assume_role_on_moto(moto: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", moto)  # the STS client's endpoint, as AWS SDKs do
    properties = moto_properties(
        moto, root, assume_role_arn=ROLE_ARN, assume_role_session_name="lance-tests"
    )
    async with lna.connect("glue", properties) as ns:
        await ns.create_namespace({"id": ["role_db"]})
        assert (await ns.list_namespaces()).namespaces == ["role_db"]
    assert glue_client(moto).get_databases()["DatabaseList"] == [], "not in the caller's account"
    credentials = sts_client(moto).assume_role(RoleArn=ROLE_ARN, RoleSessionName="check")[
        "Credentials"
    ]
    as_role = glue_client(
        moto,
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )
    assert [d["Name"] for d in as_role.get_databases()["DatabaseList"]] == ["role_db"]


# -- fake Glue: catalogs, paging, scoping ----------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeGlue]:
    with fake_glue() as running:
        yield running


def fake_properties(fake: FakeGlue, root: Path, **extra: str) -> dict[str, str]:
    return {"endpoint": fake.endpoint, "region": REGION, "root": str(root), **extra}


@pytest.fixture
async def fake_ns(fake: FakeGlue, root: Path) -> AsyncIterator[lna.AsyncLanceNamespace]:
    async with lna.connect("glue", fake_properties(fake, root)) as namespace:
        yield namespace


def glue_calls(fake: FakeGlue) -> list[tuple[str, dict[str, Any]]]:
    return [(action, body) for action, body in fake.calls if not action.startswith("sts:")]


def send_requests_outside_the_model(seen: list[str]) -> None:
    with fake_glue() as fake:
        glue = glue_client(fake.endpoint)

        def add_member(request: Any, **_: Any) -> None:
            request.data = json.dumps({**json.loads(request.data), "Bogus": 1}).encode()

        glue.meta.events.register("before-sign.glue.GetDatabases", add_member)
        with pytest.raises(ClientError, match="InvalidInputException"):
            glue.get_databases()
        unchecked = glue_client(fake.endpoint, config=Config(parameter_validation=False))
        with pytest.raises(ClientError, match="InvalidInputException"):
            unchecked.get_database()
        with pytest.raises(ClientError, match="does not match the pattern"):
            glue_client(fake.endpoint).create_catalog(Name="a/b", CatalogInput={})
        seen.extend(fake.violations)


def test_the_fake_holds_requests_to_the_glue_model() -> None:
    """Requests outside botocore's Glue model are violations; constraints are Glue's 400s."""
    seen: list[str] = []
    with pytest.raises(GlueModelViolation, match="2 Glue model violation"):
        send_requests_outside_the_model(seen)
    assert len(seen) == 2, "a constraint failure is Glue's own answer, not a violation"
    assert "unknown member 'Bogus'" in seen[0]
    assert "missing required member 'Name'" in seen[1]


def test_the_fake_pages_in_creation_order_with_listing_bound_tokens(fake: FakeGlue) -> None:
    glue = glue_client(fake.endpoint)
    for name in ("c", "a", "b"):
        glue.create_database(DatabaseInput={"Name": name})
    first = glue.get_databases(MaxResults=100)
    assert [d["Name"] for d in first["DatabaseList"]] == ["c", "a", "b"]
    last = glue.get_databases(NextToken=first["NextToken"])
    assert last["DatabaseList"] == [], "a full page carries a token, even before nothing"
    assert "NextToken" not in last
    glue.create_catalog(Name="cat", CatalogInput={})
    with pytest.raises(ClientError, match="NextToken"):
        glue.get_catalogs(NextToken=first["NextToken"])
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.get_databases(CatalogId="ghost")
    wrong = glue_client(fake.endpoint, aws_secret_access_key="nope")
    with pytest.raises(ClientError, match="InvalidSignatureException"):
        wrong.get_databases()


async def test_root_lists_databases_and_child_catalogs_merged(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue
) -> None:
    fake.add_database("orders")
    fake.add_catalog("sales", {"owner": "ana"})
    fake.add_database("accounts")
    fake.add_catalog("marketing")
    fake.add_database("eu", catalog="sales")
    assert (await fake_ns.list_namespaces()).namespaces == [
        "accounts",
        "marketing",
        "orders",
        "sales",
    ]
    assert (await fake_ns.list_namespaces({"id": ["sales"]})).namespaces == ["eu"]
    assert props((await fake_ns.describe_namespace({"id": ["sales"]})).properties) == {
        "owner": "ana"
    }
    await fake_ns.namespace_exists({"id": ["sales", "eu"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await fake_ns.namespace_exists({"id": ["sales", "orders"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await fake_ns.list_namespaces({"id": ["ghost"]})


async def test_identifiers_walk_child_catalogs_down_to_a_database(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue, root: Path
) -> None:
    fake.add_catalog("sales")
    fake.add_catalog("sales/eu", {"region": "eu"})
    fake.add_database("orders", catalog="sales/eu", parameters={"k": "v"})
    fake.add_database("orders")  # a namesake in the account catalog stays apart
    assert (await fake_ns.list_namespaces({"id": ["sales"]})).namespaces == ["eu"]
    assert (await fake_ns.list_namespaces({"id": ["sales", "eu"]})).namespaces == ["orders"]
    described = await fake_ns.describe_namespace({"id": ["sales", "eu", "orders"]})
    assert props(described.properties) == {"k": "v"}
    declared = await fake_ns.declare_table({"id": ["sales", "eu", "orders", "t"]})
    assert declared.location == f"{root}/sales/eu/orders/t"
    stored = fake.tables("orders", catalog="sales/eu")["t"]
    assert stored["CatalogId"] == f"{ACCOUNT}:sales/eu"
    assert stored["TableType"] == "EXTERNAL_TABLE"
    assert stored["Parameters"]["table_type"] == "lance"
    assert fake.tables("orders") == {}
    assert (await fake_ns.list_tables({"id": ["sales", "eu", "orders"]})).tables == ["t"]
    await fake_ns.table_exists({"id": ["sales", "eu", "orders", "t"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await fake_ns.declare_table({"id": ["sales", "ghost", "orders", "t"]})
    with pytest.raises(errors.NamespaceNotFoundError):
        await fake_ns.list_tables({"id": ["ghost", "orders"]})


async def test_a_child_catalog_wins_over_a_database_of_the_same_name(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue
) -> None:
    fake.add_database("dup", parameters={"kind": "database"})
    fake.add_catalog("dup", {"kind": "catalog"})
    fake.add_database("inner", catalog="dup")
    assert (await fake_ns.list_namespaces({"id": ["dup"]})).namespaces == ["inner"]
    described = await fake_ns.describe_namespace({"id": ["dup"]})
    assert props(described.properties) == {"kind": "catalog"}


async def test_create_namespace_makes_catalogs_and_databases(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue
) -> None:
    await fake_ns.create_namespace(
        {"id": ["analytics"], "properties": {"glue.namespace_type": "catalog", "team": "bi"}}
    )
    catalog = fake.catalogs()[f"{ACCOUNT}:analytics"]
    assert catalog["Name"] == "analytics"
    assert catalog["Parameters"]["team"] == "bi"
    assert fake.databases() == {}
    with pytest.raises(errors.NamespaceAlreadyExistsError) as caught:
        await fake_ns.create_namespace(
            {"id": ["analytics"], "properties": {"glue.namespace_type": "catalog"}}
        )
    assert caught.value.code == 2
    await fake_ns.create_namespace(
        {"id": ["analytics"], "mode": "ExistOk", "properties": {"glue.namespace_type": "catalog"}}
    )
    await fake_ns.create_namespace({"id": ["analytics", "daily"], "properties": {"k": "v"}})
    assert fake.databases("analytics")["daily"]["Parameters"] == {"k": "v"}
    with pytest.raises(errors.NamespaceAlreadyExistsError):
        await fake_ns.create_namespace({"id": ["analytics", "daily"]})
    await fake_ns.create_namespace({"id": ["plain"]})
    assert "plain" in fake.databases()
    assert (await fake_ns.list_namespaces()).namespaces == ["analytics", "plain"]
    with pytest.raises(errors.NamespaceNotFoundError) as missing:
        await fake_ns.create_namespace({"id": ["ghost", "db"]})
    assert missing.value.code == 1
    creates = [body for action, body in glue_calls(fake) if action == "CreateDatabase"]
    assert {body.get("CatalogId") for body in creates} >= {f"{ACCOUNT}:analytics"}


async def test_a_catalog_below_a_catalog_cannot_be_created_through_glue(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue
) -> None:
    """CreateCatalog has no parent and Glue's catalog names exclude '/': a typed refusal."""
    fake.add_catalog("sales")
    with pytest.raises(errors.LanceNamespaceError) as caught:
        await fake_ns.create_namespace(
            {"id": ["sales", "eu"], "properties": {"glue.namespace_type": "catalog"}}
        )
    assert caught.value.code in (errors.ErrorCode.UNSUPPORTED, errors.ErrorCode.INVALID_INPUT)
    assert list(fake.catalogs()) == [f"{ACCOUNT}:sales"]


async def test_drop_catalog_restrict_and_cascade(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue, tmp_path: Path, root: Path
) -> None:
    fake.add_catalog("sales")
    fake.add_catalog("sales/eu")
    fake.add_database("orders", catalog="sales/eu")
    location = lance_table_at(root / "data")  # inside the storage root
    fake.add_table("orders", "t", catalog="sales/eu", location=location)
    fake.add_catalog("empty")
    with pytest.raises(errors.NamespaceNotEmptyError) as caught:
        await fake_ns.drop_namespace({"id": ["sales"]})
    assert caught.value.code == 3
    with pytest.raises(errors.NamespaceNotEmptyError):
        await fake_ns.drop_namespace({"id": ["sales", "eu"]})
    assert set(fake.catalogs()) == {f"{ACCOUNT}:sales", f"{ACCOUNT}:sales/eu", f"{ACCOUNT}:empty"}
    assert "DeleteCatalog" not in fake.actions()
    assert "DeleteDatabase" not in fake.actions()
    await fake_ns.drop_namespace({"id": ["empty"]})
    assert ("DeleteCatalog", {"CatalogId": f"{ACCOUNT}:empty"}) in fake.calls
    fake.add_table("orders", "hive_t", catalog="sales/eu", parameters={})
    with pytest.raises(errors.NamespaceNotEmptyError, match="hive_t"):
        await fake_ns.drop_namespace({"id": ["sales"], "behavior": "Cascade"})
    assert set(fake.tables("orders", catalog="sales/eu")) == {"t", "hive_t"}
    assert Path(location).exists()
    fake.remove_table("orders", "hive_t", catalog="sales/eu")
    await fake_ns.drop_namespace({"id": ["sales"], "behavior": "Cascade"})
    assert fake.catalogs() == {}
    assert fake.databases("sales/eu") == {}
    assert not Path(location).exists(), "cascade deletes the Lance tables' data"
    await fake_ns.drop_namespace({"id": ["sales"], "mode": "Skip"})


async def test_listings_follow_next_token_over_many_pages(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue
) -> None:
    databases = [f"db{i:02d}" for i in (7, 3, 9, 1, 0, 8, 2, 6, 4, 5)]
    catalogs = ["cat_b", "cat_d", "cat_a", "cat_c"]
    for name in databases:
        fake.add_database(name)
    for name in catalogs:
        fake.add_catalog(name)
    tables = [f"t{i:02d}" for i in (10, 4, 0, 7, 3, 9, 1, 8, 2, 6, 5)]
    for name in tables:
        fake.add_table("db00", name)
    fake.add_table("db00", "aaa_hive", parameters={"table_type": "hive"})
    fake.add_table("db00", "zzz_view", table_type="VIRTUAL_VIEW")
    expected_root = sorted(databases + catalogs)

    fake.clear_calls()
    assert (await fake_ns.list_namespaces()).namespaces == expected_root
    assert fake.actions().count("GetDatabases") == 4  # 10 databases, pages of 3
    assert fake.actions().count("GetCatalogs") == 2  # 4 catalogs, pages of 3

    seen: list[str] = []
    token = None
    while True:
        page = await fake_ns.list_namespaces({"limit": 4, "page_token": token})
        assert len(page.namespaces) <= 4
        seen += page.namespaces
        token = page.page_token
        if not token:
            break
    assert seen == expected_root

    fake.clear_calls()
    assert (await fake_ns.list_tables({"id": ["db00"]})).tables == sorted(tables)
    assert fake.actions().count("GetTables") == 5  # 13 tables, pages of 3
    seen = []
    token = None
    while True:
        page = await fake_ns.list_tables({"id": ["db00"], "limit": 5, "page_token": token})
        seen += page.tables
        token = page.page_token
        if not token:
            break
    assert seen == sorted(tables)


async def test_a_next_token_naming_a_page_again_ends_the_listing(
    fake_ns: lna.AsyncLanceNamespace, fake: FakeGlue
) -> None:
    """Every GetDatabases/GetTables call has a deadline, a listing of endless pages would
    not: a page naming a token the listing already followed ends the call with
    InternalError, and a cascade that could not list everything deletes nothing."""
    for i in range(5):
        fake.add_database(f"db{i}")
        fake.add_table("db0", f"t{i}")
    fake.endless_pages = True
    with anyio.fail_after(30):
        with pytest.raises(errors.InternalError, match="page 2 of the listing"):
            await fake_ns.list_namespaces()
        with pytest.raises(errors.InternalError, match="already given"):
            await fake_ns.list_tables({"id": ["db0"]})
        with pytest.raises(errors.InternalError, match="already given"):
            await fake_ns.drop_namespace({"id": ["db0"], "behavior": "Cascade"})
    fake.endless_pages = False
    assert (await fake_ns.list_namespaces()).namespaces == [f"db{i}" for i in range(5)]
    assert (await fake_ns.list_tables({"id": ["db0"]})).tables == [f"t{i}" for i in range(5)]


async def test_catalog_id_scopes_every_call(fake: FakeGlue, root: Path) -> None:
    fake.add_database("theirs", account=OTHER_ACCOUNT, parameters={"owner": "them"})
    fake.add_catalog("shared", account=OTHER_ACCOUNT)
    fake.add_database("inner", catalog="shared", account=OTHER_ACCOUNT)
    fake.add_database("ours")
    properties = fake_properties(fake, root, catalog_id=OTHER_ACCOUNT)
    async with lna.connect("glue", properties) as ns:
        assert (await ns.list_namespaces()).namespaces == ["shared", "theirs"]
        assert (await ns.list_namespaces({"id": ["shared"]})).namespaces == ["inner"]
        assert props((await ns.describe_namespace({"id": ["theirs"]})).properties) == {
            "owner": "them"
        }
        await ns.declare_table({"id": ["theirs", "t"]})
        await ns.declare_table({"id": ["shared", "inner", "u"]})
        await ns.create_namespace({"id": ["fresh"]})
        with pytest.raises(errors.NamespaceNotFoundError):
            await ns.namespace_exists({"id": ["ours"]})
    assert set(fake.tables("theirs", account=OTHER_ACCOUNT)) == {"t"}
    assert set(fake.tables("inner", catalog="shared", account=OTHER_ACCOUNT)) == {"u"}
    assert "fresh" in fake.databases(account=OTHER_ACCOUNT)
    assert set(fake.databases()) == {"ours"}
    for action, body in glue_calls(fake):
        scope = body.get("CatalogId", body.get("ParentCatalogId"))
        assert scope is not None, (action, body)
        assert scope.startswith(OTHER_ACCOUNT), (action, body)


# -- fake Glue: faults ---------------------------------------------------------------------------


async def fault_ns(fake: FakeGlue, root: Path) -> lna.AsyncLanceNamespace:
    return lna.connect("glue", fake_properties(fake, root, catalog_id=ACCOUNT, max_retries="2"))


def attempts(fake: FakeGlue, action: str) -> int:
    return fake.actions().count(action)


@pytest.mark.usefixtures("no_backoff")
async def test_throttling_is_retried_then_21(fake: FakeGlue, root: Path) -> None:
    fake.add_database("db")
    async with await fault_ns(fake, root) as ns:
        fake.fail_next("ThrottlingException", count=2, action="GetDatabase")
        await ns.describe_namespace({"id": ["db"]})
        assert attempts(fake, "GetDatabase") == 3
        fake.clear_calls()
        fake.fail_next("ThrottlingException", count=10, action="GetDatabase")
        with pytest.raises(errors.ThrottlingError) as caught:
            await ns.describe_namespace({"id": ["db"]})
        assert caught.value.code == 21
        assert attempts(fake, "GetDatabase") == 3, "max_retries=2: three attempts"


@pytest.mark.usefixtures("no_backoff")
async def test_access_denied_is_16_and_not_retried(fake: FakeGlue, root: Path) -> None:
    async with await fault_ns(fake, root) as ns:
        fake.fail_next("AccessDeniedException", count=5, action="GetDatabases")
        with pytest.raises(errors.UnauthenticatedError) as caught:
            await ns.list_namespaces()
        assert caught.value.code == 16
        assert attempts(fake, "GetDatabases") == 1


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize(
    ("code", "status"), [("InternalServiceException", 500), ("ServiceUnavailable", 503)]
)
async def test_service_failures_are_17_after_retries(
    fake: FakeGlue, root: Path, code: str, status: int
) -> None:
    fake.add_database("db")
    async with await fault_ns(fake, root) as ns:
        fake.fail_next(code, status, count=2, action="GetTables")
        assert (await ns.list_tables({"id": ["db"]})).tables == []
        fake.clear_calls()
        fake.fail_next(code, status, count=10, action="GetTables")
        with pytest.raises(errors.ServiceUnavailableError) as caught:
            await ns.list_tables({"id": ["db"]})
        assert caught.value.code == 17
        assert attempts(fake, "GetTables") == 3


async def test_invalid_input_is_13_and_names_route_not_found_and_exists(
    fake: FakeGlue, root: Path
) -> None:
    fake.add_database("db")
    async with await fault_ns(fake, root) as ns:
        fake.fail_next("InvalidInputException", action="CreateTable", message="bad location")
        with pytest.raises(errors.InvalidInputError, match="bad location") as caught:
            await ns.declare_table({"id": ["db", "t"]})
        assert caught.value.code == 13
        assert attempts(fake, "CreateTable") == 1
        fake.fail_next("EntityNotFoundException", action="GetTable")
        with pytest.raises(errors.TableNotFoundError):
            await ns.describe_table({"id": ["db", "t"]})
        fake.fail_next("AlreadyExistsException", action="CreateDatabase")
        with pytest.raises(errors.NamespaceAlreadyExistsError):
            await ns.create_namespace({"id": ["other"]})


@pytest.mark.usefixtures("no_backoff")
async def test_read_timeout_is_in_milliseconds(fake: FakeGlue, root: Path) -> None:
    properties = fake_properties(
        fake, root, catalog_id=ACCOUNT, read_timeout="300", max_retries="0"
    )
    # 300 ms, not 300 s: the call gives up long before the server would answer (and the
    # margin leaves room for a loaded machine)
    fake.slow_next(12, count=1, action="GetDatabases")
    async with lna.connect("glue", properties) as ns:
        with anyio.fail_after(8):
            with pytest.raises(errors.ServiceUnavailableError) as caught:
                await ns.list_namespaces()
    assert caught.value.code == 17


@pytest.mark.usefixtures("no_backoff")
async def test_a_call_ends_at_its_deadline_retries_included(fake: FakeGlue, root: Path) -> None:
    """``read_timeout`` bounds one wait and botocore retries it; ``call_timeout`` (or
    ``timeout=`` per call) bounds the whole call, as on the HTTP backends."""
    properties = fake_properties(
        fake, root, catalog_id=ACCOUNT, read_timeout="400", call_timeout="1000"
    )
    fake.slow_next(5, count=8, action="GetDatabases")  # every attempt times out
    async with lna.connect("glue", properties) as ns:
        assert "deadline of 1 s" in str(await timed_out_within(3, ns.list_namespaces()))
        per_call = ns.list_namespaces(timeout=0.3)
        assert "deadline of 0.3 s" in str(await timed_out_within(2, per_call))
        fake.add_database("db", parameters={"owner": "ann"})
        with anyio.fail_after(8):  # cut calls leave the client usable (GetDatabase is not held)
            described = await ns.describe_namespace({"id": ["db"]})
        assert props(described.properties) == {"owner": "ann"}


async def test_an_answer_past_max_response_bytes_is_internal_and_not_retried(
    fake: FakeGlue, root: Path
) -> None:
    """botocore reads an answer whole before parsing it: the backend's session stops
    reading past ``max_response_bytes`` (an endpoint streaming without end would otherwise
    sit in memory until the deadline), and the connection is not reused."""
    fake.add_database("big", parameters={"blob": "x" * 20_000})
    fake.add_database("small", parameters={"owner": "ann"})
    properties = fake_properties(fake, root, catalog_id=ACCOUNT, max_response_bytes="8192")
    async with lna.connect("glue", properties) as ns:
        fake.clear_calls()
        with pytest.raises(errors.InternalError) as caught:
            await ns.list_namespaces()
        assert "larger than max_response_bytes (8192 bytes)" in str(caught.value)
        assert fake.actions().count("GetDatabases") == 1
        with pytest.raises(errors.InternalError, match="max_response_bytes"):
            await ns.describe_namespace({"id": ["big"]})
        described = await ns.describe_namespace({"id": ["small"]})
        assert props(described.properties) == {"owner": "ann"}


async def test_an_endless_answer_is_cut_at_max_response_bytes(root: Path) -> None:
    """Server: not Glue, a socket answering every request 200 with a chunked body that
    never ends, as fast as it is read."""
    sent = 0

    async def flood(client: anyio.abc.SocketStream) -> None:
        nonlocal sent
        async with client:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await client.receive()
                await client.send(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.1\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
                while True:
                    await client.send(chunk)
                    sent += len(chunk)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    properties = {
        "endpoint": f"http://127.0.0.1:{port}",
        "region": REGION,
        "root": str(root),
        "catalog_id": ACCOUNT,
        "child_catalogs": "false",
        "access_key_id": "testing",
        "secret_access_key": "testing",
        "max_response_bytes": str(1 << 20),
    }
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, flood)
        async with lna.connect("glue", properties) as ns:
            with anyio.fail_after(20), pytest.raises(errors.InternalError) as caught:
                await ns.list_namespaces()
        assert "larger than max_response_bytes (1048576 bytes)" in str(caught.value)
        assert sent < 16 << 20  # the client stopped reading: the server could not go on
        group.cancel_scope.cancel()


# -- fake Glue: credentials ----------------------------------------------------------------------


async def test_static_credentials_and_region_sign_every_call(fake: FakeGlue, root: Path) -> None:
    fake.add_credentials("AKIASTATICKEY", "static-secret-value", "static-session-token")
    fake.add_database("db")
    properties = fake_properties(
        fake,
        root,
        region="eu-west-1",
        access_key_id="AKIASTATICKEY",
        secret_access_key="static-secret-value",
        session_token="static-session-token",
    )
    async with lna.connect("glue", properties) as ns:
        assert (await ns.list_namespaces()).namespaces == ["db"]
    assert fake.requests
    for request in fake.requests:
        assert request.access_key_id == "AKIASTATICKEY", request
        assert request.session_token == "static-session-token"
        assert request.region == "eu-west-1"
        assert request.answer == "ok"


@pytest.mark.parametrize(
    ("wrong", "answer"),
    [
        ({"session_token": "stale-token-value"}, "UnrecognizedClientException"),
        ({"secret_access_key": "not-the-secret"}, "InvalidSignatureException"),
    ],
)
async def test_rejected_credentials_are_16_and_never_echoed(
    fake: FakeGlue, root: Path, wrong: dict[str, str], answer: str
) -> None:
    """AWS answers UnrecognizedClientException / InvalidSignatureException: unauthenticated."""
    fake.add_credentials("AKIASTATICKEY", "static-secret-value", "static-session-token")
    credentials = {
        "access_key_id": "AKIASTATICKEY",
        "secret_access_key": "static-secret-value",
        "session_token": "static-session-token",
    }
    properties = fake_properties(fake, root, catalog_id=ACCOUNT, **{**credentials, **wrong})
    async with lna.connect("glue", properties) as ns:
        with pytest.raises(errors.LanceNamespaceError) as caught:
            await ns.list_namespaces()
    assert fake.requests[-1].answer == answer
    assert caught.value.code == errors.ErrorCode.UNAUTHENTICATED
    for secret in wrong.values():
        assert secret not in str(caught.value)
        assert secret not in repr(caught.value)


async def test_assume_role_signs_glue_calls_with_the_role(
    fake: FakeGlue, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", fake.endpoint)
    fake.add_database("role_db", account=ROLE_ACCOUNT)
    fake.add_database("caller_db")
    properties = fake_properties(
        fake,
        root,
        assume_role_arn=ROLE_ARN,
        assume_role_region="eu-central-1",
        assume_role_external_id="ext-secret-7",
        assume_role_session_name="lance-tests",
        assume_role_timeout_sec="1800",
    )
    async with lna.connect("glue", properties) as ns:
        assert "ext-secret-7" not in repr(ns)
        assert (await ns.list_namespaces()).namespaces == ["role_db"]
    assumed = [r for r in fake.requests if r.action == "sts:AssumeRole"]
    assert len(assumed) == 1
    assert assumed[0].body == {
        "RoleArn": ROLE_ARN,
        "RoleSessionName": "lance-tests",
        "ExternalId": "ext-secret-7",
        "DurationSeconds": "1800",
    }
    assert assumed[0].region == "eu-central-1"
    assert assumed[0].access_key_id == "testing", "the role is assumed with the base credentials"
    glue = [r for r in fake.requests if not r.action.startswith("sts:")]
    assert glue
    for request in glue:
        assert request.access_key_id is not None
        assert request.access_key_id.startswith("ASIA")
        assert request.session_token is not None
        assert request.region == REGION


async def test_a_15_minute_role_session_is_not_renewed_on_every_call(
    fake: FakeGlue, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """900 s is STS's shortest session: it is renewed near its end, not before each call."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", fake.endpoint)
    fake.add_database("db", account=ROLE_ACCOUNT)
    properties = fake_properties(
        fake, root, assume_role_arn=ROLE_ARN, assume_role_timeout_sec="900", catalog_id=ROLE_ACCOUNT
    )
    async with lna.connect("glue", properties) as ns:
        for _ in range(3):
            await ns.namespace_exists({"id": ["db"]})
    assert fake.actions().count("sts:AssumeRole") == 1


async def test_assumed_credentials_are_refreshed_before_they_expire(
    fake: FakeGlue, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", fake.endpoint)
    fake.sts_lifetime_seconds = 60  # inside botocore's refresh window: renewed on use
    fake.add_database("db", account=ROLE_ACCOUNT)
    properties = fake_properties(fake, root, assume_role_arn=ROLE_ARN, catalog_id=ROLE_ACCOUNT)
    async with lna.connect("glue", properties) as ns:
        for _ in range(3):
            await ns.namespace_exists({"id": ["db"]})
    keys = [r.access_key_id for r in fake.requests if not r.action.startswith("sts:")]
    assert fake.actions().count("sts:AssumeRole") >= 2
    assert len(set(keys)) >= 2, "later calls use the renewed credentials"


# -- pylance through the sync facade, on the fake's catalogs --------------------------------


def test_pylance_through_connect_sync_in_a_child_catalog(fake: FakeGlue, root: Path) -> None:
    fake.add_catalog("sales")
    with lna.connect_sync("glue", fake_properties(fake, root)) as ns:
        ns.create_namespace({"id": ["sales", "orders"]})
        table_id = ["sales", "orders", "t"]
        lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=ns, table_id=table_id)
        lance.write_dataset(
            pa.table({"x": [3]}), namespace_client=ns, table_id=table_id, mode="append"
        )
        assert lance.dataset(namespace_client=ns, table_id=table_id).count_rows() == 3
    stored = fake.tables("orders", catalog="sales")["t"]
    assert stored["StorageDescriptor"]["Location"] == f"{root}/sales/orders/t"
    assert lance.dataset(f"{root}/sales/orders/t").count_rows() == 3
