"""The data commands of ``lance-ns`` on the catalog backends (issue 17).

Servers: the Iceberg project's REST reference server (conftest ``iceberg_reference``),
moto's Glue server (tests/glue_fixtures.py), the Unity Catalog look-alike
(tests/unity_server.py, or the real server of ``LANCE_NS_UNITY_URI``) and a real Hive
Metastore 4 (conftest ``hive_metastores``), all on 127.0.0.1, started and stopped by
test_kit.py's ``running``; tables in a temporary storage root.

Each backend runs ``lance-ns`` (its ``main``, in this process: tests/test_cli_data.py
runs the installed script; here the time goes to the catalogs) with ``--impl``/``--prop``
as a user types them, through a table's whole life: create-table from a file, insert, query, count,
versions, tag, restore, index, add-columns, drop-columns, drop. What the commands wrote
is read back with pylance from storage; bad input exits 2 with one line and changes
neither the catalog nor a byte on storage.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from conftest import disk_state
from hive_metastore import Metastore
from iceberg_real_server import unique_name
from test_cli_data import Ran, rows, write
from test_kit import running

from lance_namespace_async._cli import main as cli_main
from lance_namespace_async._storage.places import local_path

BACKENDS = ["iceberg", "glue-moto", "unity", "hive-4"]


@dataclass
class Cli:
    """``lance-ns`` with the backend's options, run in this process."""

    options: list[str]
    root: Path
    capsys: pytest.CaptureFixture[str]

    def run(self, *argv: str) -> Ran:
        code = cli_main([*argv, *self.options])
        captured = self.capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    def ok(self, *argv: str) -> Ran:
        ran = self.run(*argv)
        assert ran.code == 0, ran.err
        return ran

    def location(self, table: str) -> str:
        return str(self.ok("describe", table, "-o", "json").json()["location"])


@pytest.fixture(scope="module", params=BACKENDS)
def backend(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[tuple[list[str], Path, tuple[str, ...]]]:
    """The CLI's options for the backend, its storage root, and the namespace its tests
    go under (the environment as running() leaves it: for Glue, moto's fake AWS keys)."""
    name = str(request.param)
    iceberg = request.getfixturevalue("iceberg_reference") if name == "iceberg" else None
    place = tmp_path_factory.mktemp(f"cli-{name}")
    with running(name, place, hive_metastores, iceberg) as settings:
        options = ["--impl", settings.impl]
        for key, value in settings.properties.items():
            options += ["--prop", f"{key}={value}"]
        yield options, place / "lance-root", settings.root


@pytest.fixture
def cli(
    backend: tuple[list[str], Path, tuple[str, ...]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Cli:
    for key in [k for k in os.environ if k.upper().startswith("LANCE_NS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no profile of the user's
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    options, root, _ = backend
    return Cli(options, root, capsys)


def test_every_data_command_on_the_catalog(
    cli: Cli, backend: tuple[list[str], Path, tuple[str, ...]], tmp_path: Path
) -> None:
    root = backend[2]
    namespace = ".".join([*root, unique_name("shop")])
    table = f"{namespace}.items"
    cli.ok("create-namespace", namespace, "-o", "json")
    answer = cli.ok(
        "create-table",
        table,
        "--from",
        str(write(tmp_path / "rows.parquet", rows(8))),
        "-o",
        "json",
    ).json()
    assert answer["version"] == 1
    location = cli.location(table)
    assert lance.dataset(location).count_rows() == 8

    cli.ok("insert", table, "--from", str(write(tmp_path / "more.jsonl", rows(2, 8))))
    assert cli.ok("count", table, "-o", "json").json() == {"count": 10}
    assert cli.ok("count", table, "--filter", "id >= 7", "-o", "json").json() == {"count": 3}
    found = cli.ok("query", table, "--filter", "id < 2", "--columns", "id", "-o", "jsonl")
    assert sorted(row["id"] for row in found.lines()) == [0, 1]

    versions = cli.ok("versions", table, "-o", "jsonl").lines()
    assert [version["version"] for version in versions] == [1, 2]
    cli.ok("tag", "create", table, "first", "--version", "1", "-o", "json")
    tags = {
        tag["tag"]: tag["version"] for tag in cli.ok("tag", "list", table, "-o", "jsonl").lines()
    }
    assert tags == {"first": 1}
    cli.ok("restore", table, "1", "-o", "json")
    assert lance.dataset(location).version == 3
    assert lance.dataset(location).count_rows() == 8

    cli.ok("index", "create", table, "id", "--type", "btree", "--name", "by_id", "-o", "json")
    vector = ["index", "create", table, "vec", "--type", "IVF_FLAT", "--num-partitions", "1"]
    cli.ok(*vector, "--distance-type", "l2", "-o", "json")
    listed = cli.ok("index", "list", table, "-o", "jsonl").lines()
    assert sorted(index["index_name"] for index in listed) == ["by_id", "vec_idx"]
    nearest = ["--nearest", "vec", "--vector", "3,3", "--k", "1", "--columns", "id"]
    assert cli.ok("query", table, *nearest, "-o", "jsonl").lines() == [{"id": 3, "_distance": 0.0}]

    cli.ok("add-columns", table, "double=id * 2", "-o", "json")
    assert lance.dataset(location).to_table().column("double").to_pylist()[:3] == [0, 2, 4]
    cli.ok("drop-columns", table, "double", "-o", "json")
    assert lance.dataset(location).schema.names == ["id", "name", "vec"]

    # bad input: one line on stderr, exit 2, nothing changed in the catalog or on storage
    before = disk_state(cli.root)
    listed_before = cli.ok("ls", namespace, "-o", "jsonl").out
    for argv in (
        ["query", table, "--filter", "no_such_column > 1"],
        ["count", table, "--filter", "no_such_column > 1"],
        ["insert", table, "--from", str(write(tmp_path / "x.csv", pa.table({"other": [1]})))],
        ["create-table", f"{namespace}.other", "--from", str(tmp_path / "nowhere.csv")],
    ):
        ran = cli.run(*argv)
        assert ran.code == 2, (argv, ran.err)
        assert ran.err.startswith("lance-ns: error: ")
        assert ran.err.count("\n") == 1
    assert disk_state(cli.root) == before
    assert cli.ok("ls", namespace, "-o", "jsonl").out == listed_before

    cli.ok("drop", table, "-o", "json")
    assert not os.path.exists(local_path(location) or location)
    assert cli.ok("ls", namespace, "-o", "jsonl").out == ""
