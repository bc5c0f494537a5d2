"""One endpoint for several catalogs: ``lance-ns serve --mount`` and ``MountNamespace``.

Servers: ``lance-ns serve`` as a real process (tests/serve_process.py) with two mounts,
``local`` (dir on a temporary directory) and ``sales`` (glue on moto's server,
tests/glue_fixtures.py, tables in a temporary directory), one storage worker; pylance's
own RestAdapter over a directory for the reference run of the operation sequence
(test_serve_parity.py's ``reference``). Library tests run in-process over dir mounts,
and a rest mount pointed at a closed port for health. Clients: pylance's
``RestNamespace``, LanceDB's namespace connection, and plain HTTP for the error codes.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance_namespace as ln
import lancedb
import pyarrow as pa
import pytest
from glue_fixtures import REGION, moto_glue
from lance.namespace import RestNamespace
from serve_process import lance_ns_serve
from test_kit import aws_environment
from test_serve_parity import Run, reference, rows, sequence  # noqa: F401

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._cli import main
from lance_namespace_async._cli.serve_mounts import mount_connection, parse_mount
from lance_namespace_async.mounts import MountNamespace
from lance_namespace_async.server._serving import served_properties
from lance_namespace_async.testing import SCENARIOS, KitRunner, KitSettings, Scenario

# -- the two-mount server ----------------------------------------------------------------------


@dataclass
class TwoMounts:
    uri: str
    local: Path
    glue: dict[str, str]


@pytest.fixture(scope="module")
def two_mounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoMounts]:
    place = tmp_path_factory.mktemp("mounts")
    local, tables = place / "local", place / "glue"
    local.mkdir()
    tables.mkdir()
    with aws_environment(), moto_glue() as endpoint:
        glue = {
            "region": REGION,
            "endpoint": endpoint,
            "child_catalogs": "false",  # moto has no catalog APIs (glue_fixtures)
            "root": str(tables),
        }
        spec = ",".join(f"{key}={value}" for key, value in glue.items())
        options = ["--mount", f"local=dir:root={local}", "--mount", f"sales=glue:{spec}"]
        with lance_ns_serve({}, *options, "--storage-workers", "1", impl=None) as served:
            yield TwoMounts(served.uri, local, glue)


def call(uri: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One request as any HTTP client sends it: (status, JSON answer or None)."""
    data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
    request = urllib.request.Request(f"{uri}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            text = answer.read()
            return answer.status, json.loads(text) if text else None
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read())


def test_the_root_lists_the_mounts_page_by_page(two_mounts: TwoMounts) -> None:
    uri = two_mounts.uri
    assert call(uri, "GET", "/v1/namespace/$/list")[1]["namespaces"] == ["local", "sales"]
    first = call(uri, "GET", "/v1/namespace/$/list?limit=1")[1]
    assert first == {"namespaces": ["local"], "page_token": "local"}
    second = call(uri, "GET", "/v1/namespace/$/list?limit=1&page_token=local")[1]
    assert second["namespaces"] == ["sales"]
    assert not second.get("page_token")
    assert call(uri, "POST", "/v1/namespace/$/exists")[0] == 200
    assert call(uri, "GET", "/v1/namespace/$/table/list")[1]["tables"] == []


def test_readyz_reports_each_mount(two_mounts: TwoMounts) -> None:
    deadline = time.monotonic() + 60  # a cold first check may miss its 2 s on a busy machine
    while (found := call(two_mounts.uri, "GET", "/readyz"))[0] != 200:
        assert time.monotonic() < deadline, found
        time.sleep(0.5)
    answer = found[1]
    assert [(c["name"], c["ready"]) for c in answer["checks"]] == [
        ("local", True),
        ("sales", True),
    ]


def test_the_root_refuses_what_would_change_it(two_mounts: TwoMounts) -> None:
    """The root is read-only: mounts are the operator's, the root holds nothing else."""
    uri = two_mounts.uri
    for path, code in [
        ("/v1/namespace/elsewhere/create", 13),  # only mounts at the top
        ("/v1/namespace/sales/create", 2),  # a mount always exists
        ("/v1/namespace/local/drop", 13),
        ("/v1/namespace/$/drop", 13),
        ("/v1/table/loose/declare", 13),  # no table in the root
        ("/v1/table/loose/describe", 4),
    ]:
        status, answer = call(uri, "POST", path)
        assert answer["code"] == code, (path, answer)
        assert status >= 400
    assert call(uri, "GET", "/v1/namespace/$/list")[1]["namespaces"] == ["local", "sales"]
    exist_ok = call(uri, "POST", "/v1/namespace/sales/create", {"mode": "exist_ok"})
    assert exist_ok[0] == 200, exist_ok


def test_pylance_rest_namespace_runs_every_operation_under_each_mount(
    two_mounts: TwoMounts,
    reference: Run,  # noqa: F811  (test_serve_parity's fixture)
) -> None:
    """The parity sequence (every operation of the spec, test_serve_parity.py) through
    pylance's RestNamespace, once under each mount: what pylance's own server answers
    over a directory, the dir mount answers; the glue mount all but the operations the
    catalog backends lack (as when glue is served alone)."""
    client = RestNamespace(uri=two_mounts.uri)
    local = Run(client, ("local",), two_mounts.local)
    sequence(local)
    sales = Run(client, ("sales",), Path(two_mounts.glue["root"]))
    sequence(sales)
    for run in (local, sales):
        missing = {op: run.failed.get(op, "never") for op in reference.answered - run.answered}
        assert not missing, missing
    assert {op.method for op in lna.OPERATIONS} >= reference.answered | local.answered


def test_each_mounts_tables_live_in_its_own_backend(two_mounts: TwoMounts) -> None:
    client = RestNamespace(uri=two_mounts.uri)
    for mount in ("local", "sales"):
        client.create_namespace(ln.CreateNamespaceRequest(id=[mount, "kept"]))
        client.create_table(ln.CreateTableRequest(id=[mount, "kept", "t"]), rows(5))
    described = client.describe_table(ln.DescribeTableRequest(id=["sales", "kept", "t"]))
    assert described.namespace == ["sales", "kept"]  # the mount given back
    assert described.location == f"{two_mounts.glue['root']}/kept/t"
    everything = client.list_all_tables(ln.ListTablesRequest())
    assert {"local$kept$t", "sales$kept$t"} <= set(everything.tables)
    paged: list[str] = []
    token = None
    while True:  # one table a page, across the mounts
        page = client.list_all_tables(ln.ListTablesRequest(limit=1, page_token=token))
        paged.extend(page.tables)
        token = page.page_token
        if not token:
            break
    assert paged == sorted(everything.tables, key=lambda t: t.split("$")[0]) == everything.tables

    # each backend, asked directly, holds its own table and not the other's
    async def listed(impl: str, properties: dict[str, str]) -> list[str]:
        async with lna.connect(impl, properties) as backend:
            return list((await backend.list_tables({"id": ["kept"]})).tables)

    with aws_environment():
        assert anyio_run(listed, "dir", {"root": str(two_mounts.local)}) == ["t"]
        assert anyio_run(listed, "glue", two_mounts.glue) == ["t"]


def anyio_run(function: Any, *args: Any) -> Any:
    import anyio

    return anyio.run(function, *args)


def test_lancedb_sees_one_namespace_over_both_mounts(two_mounts: TwoMounts) -> None:
    db = lancedb.connect(
        namespace_client_impl="rest", namespace_client_properties={"uri": two_mounts.uri}
    )
    assert {"local", "sales"} <= set(db.list_namespaces().namespaces)
    data = pa.table({"id": pa.array(range(7), pa.int64())})
    for mount in ("local", "sales"):
        db.create_namespace([mount, "lancedb"])
        table = db.create_table("items", data, namespace_path=[mount, "lancedb"])
        assert table.count_rows() == 7
        assert list(db.list_tables(namespace_path=[mount, "lancedb"]).tables) == ["items"]
        reopened = db.open_table("items", namespace_path=[mount, "lancedb"])
        reopened.add(data)
        assert reopened.count_rows() == 14


def test_hostile_ids_are_typed_errors_that_change_nothing(two_mounts: TwoMounts) -> None:
    uri = two_mounts.uri
    client = RestNamespace(uri=uri)
    client.create_namespace(ln.CreateNamespaceRequest(id=["local", "hostile"]))
    client.create_table(ln.CreateTableRequest(id=["local", "hostile", "t"]), rows(3))
    for path, code in [
        ("/v1/table/..$t/describe", 13),  # no mount can be called ".."
        ("/v1/table/.$hostile$t/describe", 13),
        ("/v1/table/$hostile$t/describe", 13),  # an empty first name
        ("/v1/table/nowhere$hostile$t/describe", 4),  # no such mount
        ("/v1/namespace/nowhere$x/describe", 1),
        ("/v1/namespace/..$x/create", 13),
        ("/v1/table/local$..$t/describe", 13),  # the mount's backend checks the rest
        ("/v1/table/sales$..$t/describe", 13),
    ]:
        status, answer = call(uri, "POST", path)
        assert (status, answer["code"]) == (400 if code == 13 else 404, code), (path, answer)
    # a table never crosses mounts: refused before either mount sees it
    status, answer = call(
        uri,
        "POST",
        "/v1/table/local$hostile$t/rename",
        {"new_table_name": "t", "new_namespace_id": ["sales", "kept"]},
    )
    assert (status, answer["code"]) == (400, 13), answer
    batch = {
        "entries": [
            {"id": ["local", "hostile", "t"], "version": 9, "manifest_path": "_versions/9.m"},
            {"id": ["sales", "kept", "t"], "version": 9, "manifest_path": "_versions/9.m"},
        ]
    }
    status, answer = call(uri, "POST", "/v1/table/version/batch-create", batch)
    assert (status, answer["code"]) == (400, 13), answer
    commit = {
        "operations": [
            {"deregister_table": {"id": ["local", "hostile", "t"]}},
            {"deregister_table": {"id": ["sales", "kept", "t"]}},
        ]
    }
    status, answer = call(uri, "POST", "/v1/table/batch-commit", commit)
    assert (status, answer["code"]) == (400, 13), answer
    assert client.list_tables(ln.ListTablesRequest(id=["local", "hostile"])).tables == ["t"]
    assert call(uri, "POST", "/v1/table/local$hostile$t/exists")[0] == 200


def test_a_mount_name_that_is_no_name_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``lance-ns serve --mount`` refuses bad mounts before serving (exit 2, one line that
    never quotes a property's value); a profile names a mount's backend too."""

    def serve(*argv: str) -> tuple[int, str]:
        try:
            code = main(["serve", "--port", "1", *argv])
        except SystemExit as exited:
            code = int(exited.code or 0)
        return code, capsys.readouterr().err

    for spec in ["a$b=dir:root=/tmp/x", "..=dir:root=/tmp/x", "=dir:root=/tmp/x"]:
        code, err = serve("--mount", spec)
        assert code == 2, err
        assert "mount" in err
    code, err = serve("--mount", "a=dir:root=/tmp/x", "--impl", "dir")
    assert (code, "--mount replaces --impl" in err) == (2, True), err
    code, err = serve("--mount", "a=rest:uri=http://h,hunter2secret")
    assert code == 2
    assert "hunter2secret" not in err
    config = tmp_path / "lance-ns.yaml"
    config.write_text("profiles:\n  s:\n    impl: rest\n    uri: http://127.0.0.1:1\n")
    from_profile = mount_connection(["sales=s", "ml=dir:root=/x"], config=str(config))
    assert dict(from_profile.properties) == {
        "mount.sales.impl": "rest",
        "mount.sales.uri": "http://127.0.0.1:1",
        "mount.ml.impl": "dir",
        "mount.ml.root": "/x",
    }


# -- the library ------------------------------------------------------------------------------


def test_the_mount_option_and_the_config_file_table_give_one_connection() -> None:
    name, impl, given = parse_mount(r"sales=glue:region=eu-west-1,root=s3://b/x\,y,note=a\\b")
    assert (name, impl, given) == (
        "sales",
        "glue",
        {"region": "eu-west-1", "root": "s3://b/x,y", "note": "a\\b"},
    )
    flag = mount_connection(
        [r"sales=glue:region=eu-west-1,root=s3://b/x\,y", "ml=rest:uri=http://h:1"]
    )
    table = mount_connection(
        {
            "sales": {"impl": "glue", "region": "eu-west-1", "root": "s3://b/x,y"},
            "ml": "rest:uri=http://h:1",
        }
    )
    assert flag.impl == table.impl == "mounts"
    assert (
        dict(flag.properties)
        == dict(table.properties)
        == {
            "mount.sales.impl": "glue",
            "mount.sales.region": "eu-west-1",
            "mount.sales.root": "s3://b/x,y",
            "mount.ml.impl": "rest",
            "mount.ml.uri": "http://h:1",
        }
    )
    with pytest.raises(errors.InvalidInputError, match="given twice"):
        mount_connection(["a=dir:root=/x", "a=dir:root=/y"])
    with pytest.raises(errors.InvalidInputError) as bad:
        mount_connection(["a=rest:uri=http://h,hunter2secret"])
    assert "hunter2secret" not in bad.value.message  # the item's position, never its text


def test_serving_confines_each_mount_in_its_own_properties() -> None:
    served = served_properties(
        "mounts",
        {
            "mount.a.impl": "dir",
            "mount.a.root": "/data/a",
            "mount.r.impl": "rest",
            "mount.r.uri": "http://h",
        },
        allowed_locations=["/shared"],
        allowed_storage_options=["region"],
    )
    assert served == {
        "mount.a.impl": "dir",
        "mount.a.root": "/data/a",
        "mount.a.confine_storage": "true",
        "mount.a.allowed_locations": "/shared",
        "mount.a.table_storage_options": "region",
        "mount.r.impl": "rest",
        "mount.r.uri": "http://h",
    }
    with pytest.raises(errors.InvalidInputError, match="allow-location"):
        served_properties(
            "mounts", {"mount.r.impl": "rest", "mount.r.uri": "http://h"}, allowed_locations=["/x"]
        )


async def test_secrets_of_a_mount_are_masked_by_its_own_backend(tmp_path: Path) -> None:
    async with lna.connect(
        "mounts",
        {
            "mount.r.impl": "rest",
            "mount.r.uri": "http://127.0.0.1:1",
            "mount.r.header.Authorization": "Bearer hunter2secret",
            "mount.d.impl": "dir",
            "mount.d.root": str(tmp_path),
        },
    ) as ns:
        shown = ns.config.redacted_properties()
        assert shown["mount.r.header.Authorization"] == errors.REDACTED
        assert shown["mount.d.root"] == str(tmp_path)
        assert "hunter2secret" not in repr(ns) + repr(ns.config) + json.dumps(shown)


async def test_each_mount_reports_its_own_health(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    down = lna.connect("rest", {"uri": f"http://127.0.0.1:{closed}", "max_retries": "0"})
    async with MountNamespace(
        {"up": lna.connect("dir", {"root": str(tmp_path)}), "down": down}
    ) as ns:
        health = await ns.mount_health(timeout=5)
    assert list(health) == ["down", "up"]
    assert health["up"].ready, health["up"]
    assert health["up"].reason is None
    assert not health["down"].ready
    assert "code" in (health["down"].reason or "")


async def test_list_all_tables_pages_across_mounts(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).mkdir()
    mounts = {name: lna.connect("dir", {"root": str(tmp_path / name)}) for name in "abc"}
    data = pa.table({"i": [1]})
    async with MountNamespace(mounts) as ns:
        for mount, count in [("a", 3), ("b", 0), ("c", 2)]:
            for number in range(count):
                await ns.create_table({"id": [mount, f"t{number}"]}, data)
        everything = (await ns.list_all_tables({})).tables
        assert everything == ["a$t0", "a$t1", "a$t2", "c$t0", "c$t1"]
        for limit in (1, 2, 3, 5):
            seen: list[str] = []
            token = None
            while True:
                page = await ns.list_all_tables({"limit": limit, "page_token": token})
                assert len(page.tables) <= limit
                seen.extend(page.tables)
                token = page.page_token
                if not token:
                    break
            assert seen == everything, limit
        dotted = await ns.list_all_tables({"delimiter": "."})
        assert dotted.tables[0] == "a.t0"
        with pytest.raises(errors.InvalidInputError):
            await ns.list_all_tables({"page_token": "nowhere:"})
        assert set(ns.list_operations()) == set(
            lna.connect("dir", {"root": "/x"}).list_operations()
        )
        assert len(MountNamespace.list_operations()) == len(lna.OPERATIONS)


async def test_mounts_do_not_nest_and_need_names_every_id_can_carry(tmp_path: Path) -> None:
    inner = MountNamespace({"a": lna.connect("dir", {"root": str(tmp_path)})})
    for bad in [{"x": inner}, {"a.b": lna.connect("dir", {"root": "/x"})}, {}]:
        with pytest.raises(errors.InvalidInputError):
            MountNamespace(bad)
    with pytest.raises(errors.InvalidInputError, match="mount 'x'"):
        lna.connect("mounts", {"mount.x.impl": "dir"})  # dir needs its root
    with pytest.raises(errors.InvalidInputError, match="at least one mount"):
        lna.connect("mounts", {})
    await inner.aclose()


# -- the conformance kit under a mount ------------------------------------------------------------


@pytest.fixture(scope="module")
def kit_under_a_mount(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KitRunner]:
    place = tmp_path_factory.mktemp("kit-mounts")
    settings = KitSettings(
        "mounts",
        {"mount.m.impl": "dir", "mount.m.root": str(place / "root")},
        root=("m",),
        many=120,
        outside=str(place / "outside"),
    )
    with KitRunner(settings) as runner:
        yield runner


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_kit_passes_under_a_dir_mount(kit_under_a_mount: KitRunner, scenario: Scenario) -> None:
    """Every scenario passes under mount ``m`` as over ``dir`` alone (no skips)."""
    kit_under_a_mount.run(scenario)


def test_lancedb_and_lance_namespace_get_mounts_in_process(tmp_path: Path) -> None:
    """The same mounting namespace without a server: lance_namespace's plugin class
    (``lna-mounts``) and LanceDB's ``namespace_client_impl``."""
    properties = {
        "mount.a.impl": "dir",
        "mount.a.root": str(tmp_path / "a"),
        "mount.b.impl": "dir",
        "mount.b.root": str(tmp_path / "b"),
    }
    db = lancedb.connect(
        namespace_client_impl="lance_namespace_async.impls.MountsNamespace",
        namespace_client_properties=properties,
    )
    data = pa.table({"id": pa.array(range(4), pa.int64())})
    for mount in ("a", "b"):
        db.create_namespace([mount, "x"])
        db.create_table("items", data, namespace_path=[mount, "x"])
    assert (tmp_path / "a").is_dir()
    assert (tmp_path / "b").is_dir()
    with ln.connect("lna-mounts", properties) as ns:
        assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a", "b"]
        listed = ns.list_all_tables(ln.ListTablesRequest()).tables
        assert listed == ["a$x$items", "b$x$items"]


async def test_the_root_answers_as_a_read_only_namespace_of_mounts(tmp_path: Path) -> None:
    """What the root itself answers (mounts/_namespace.py's docstring), in-process."""
    data = pa.table({"i": [1]})
    async with MountNamespace({"m": lna.connect("dir", {"root": str(tmp_path)})}) as ns:
        await ns.create_table({"id": ["m", "t"]}, data)
        refusals: list[tuple[Any, type[errors.LanceNamespaceError]]] = [
            (ns.create_table({"id": ["t"]}, data), errors.InvalidInputError),
            (ns.declare_table({"id": ["elsewhere", "t"]}), errors.NamespaceNotFoundError),
            (ns.describe_table({"id": ["m"]}), errors.TableNotFoundError),
            (ns.describe_table({"id": []}), errors.InvalidInputError),
            (ns.describe_transaction({"id": ["7"]}), errors.TransactionNotFoundError),
            (
                ns.rename_table({"id": ["m", "t"], "new_table_name": "u", "new_namespace_id": []}),
                errors.InvalidInputError,
            ),
            (ns.create_namespace({"id": ["m"], "mode": "overwrite"}), errors.InvalidInputError),
            (ns.create_namespace({"id": []}), errors.NamespaceAlreadyExistsError),
            (ns.drop_namespace({"id": ["gone"]}), errors.NamespaceNotFoundError),
            (ns.list_tables({"id": ["gone"]}), errors.NamespaceNotFoundError),
        ]
        for attempt, expected in refusals:
            with pytest.raises(expected):
                await attempt
        assert (await ns.drop_namespace({"id": ["gone"], "mode": "skip"})) is not None
        assert (await ns.describe_namespace({"id": []})).properties.to_dict() == {}
        assert (await ns.list_tables({"id": ["m"]})).tables == ["t"]
        await ns.rename_table({"id": ["m", "t"], "new_table_name": "u", "new_namespace_id": ["m"]})
        assert (await ns.list_tables({"id": ["m"]})).tables == ["u"]
        dropped = await ns.drop_table({"id": ["m", "u"]})
        assert dropped.id == ["m", "u"]


async def test_storage_options_never_cross_mounts(tmp_path: Path) -> None:
    """Each mount answers with its own backend's storage options, never another's."""
    properties = {"mount.eu.impl": "dir", "mount.us.impl": "dir"}
    for mount, region in [("eu", "eu-west-1"), ("us", "us-east-1")]:
        properties |= {f"mount.{mount}.root": str(tmp_path / mount)}
        properties |= {f"mount.{mount}.storage.region": region}
    async with lna.connect("mounts", properties) as ns:
        for mount, region in [("eu", "eu-west-1"), ("us", "us-east-1")]:
            await ns.create_table({"id": [mount, "t"]}, pa.table({"i": [1]}))
            described = await ns.describe_table({"id": [mount, "t"]})
            assert described.storage_options.to_dict() == {"region": region}
