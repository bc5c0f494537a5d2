"""The data commands of ``lance-ns`` (issue 17), run as the installed script.

Every test runs the real ``lance-ns`` in a subprocess twice: against a ``dir`` catalog
on tmp_path, and as ``rest`` against our adapter server (``create_app`` over a ``dir``
backend, uvicorn in a thread on a free loopback port, tests/uvicorn_thread.py). What the
commands wrote is read back with pylance straight from storage or through another
command's output, never from the command's own answer alone.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import lance
import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet as pq
import pytest
from conftest import disk_state
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna

SCRIPT = Path(sys.executable).parent / "lance-ns"
TABLE = "shop.items"


@dataclass
class Ran:
    code: int
    out: str
    err: str
    raw: bytes = b""

    def json(self) -> Any:
        return json.loads(self.out)

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines()]


@dataclass
class Catalog:
    """A catalog the script connects to, and the folder its tables live in."""

    name: str
    options: list[str]
    root: Path
    env: dict[str, str]

    def run(self, *argv: str, binary: bool = False) -> Ran:
        command = (
            [str(SCRIPT)]
            if SCRIPT.exists()
            else [sys.executable, "-m", "lance_namespace_async._cli"]
        )
        done = subprocess.run(
            [*command, *argv, *self.options], env=self.env, capture_output=True, timeout=120
        )
        err = done.stderr.decode()
        if binary:
            return Ran(done.returncode, "", err, done.stdout)
        return Ran(done.returncode, done.stdout.decode(), err)

    def ok(self, *argv: str) -> Ran:
        ran = self.run(*argv)
        assert ran.code == 0, ran.err
        return ran

    def location(self, table: str = TABLE) -> str:
        described = self.ok("describe", table, "-o", "json").json()
        return str(described["location"])


@pytest.fixture(params=["dir", "rest"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANCE_NS_")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    root = tmp_path / "catalog"
    if request.param == "dir":
        yield Catalog("dir", ["--impl", "dir", "--prop", f"root={root}"], root, env)
    else:
        from lance_namespace_async.server import create_app

        backend = lna.connect("dir", {"root": str(root)})
        server = UvicornThread(
            create_app(backend, max_body_bytes=8_000_000),
            name="cli-data-adapter",
            description="our REST adapter over dir",
        )
        uri = server.start()
        try:
            options = ["--impl", "rest", "--prop", f"uri={uri}", "--prop", "max_retries=0"]
            yield Catalog("rest", options, root, env)
        finally:
            server.stop()
            anyio.run(backend.aclose)


@pytest.fixture(autouse=True)
def shop(catalog: Catalog) -> None:
    catalog.ok("create-namespace", "shop", "-o", "json")


def rows(count: int, start: int = 0) -> pa.Table:
    ids = range(start, start + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"item-{i}" for i in ids],
            "vec": pa.array([[float(i), float(i)] for i in ids], pa.list_(pa.float32(), 2)),
        }
    )


def write(path: Path, table: pa.Table) -> Path:
    """``table`` in the format of ``path``'s extension."""
    kind = path.suffix
    if kind == ".parquet":
        pq.write_table(table, path, row_group_size=2)  # several batches to stream
    elif kind == ".csv":
        pyarrow.csv.write_csv(table.select([n for n in table.column_names if n != "vec"]), path)
    elif kind == ".arrow":
        with pa.ipc.new_file(str(path), table.schema) as writer:
            writer.write_table(table, max_chunksize=2)
    elif kind == ".arrows":
        with pa.ipc.new_stream(str(path), table.schema) as writer:
            writer.write_table(table, max_chunksize=2)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()))
    return path


def created(catalog: Catalog, tmp_path: Path, count: int = 8) -> str:
    catalog.ok("create-table", TABLE, "--from", str(write(tmp_path / "rows.parquet", rows(count))))
    return catalog.location()


def stored(location: str) -> pa.Table:
    return lance.dataset(location).to_table()


# -- rows in -------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".arrow", ".arrows", ".jsonl"])
def test_create_table_reads_each_file_format(catalog: Catalog, tmp_path: Path, suffix: str) -> None:
    source = write(tmp_path / f"rows{suffix}", rows(5))
    answer = catalog.ok("create-table", TABLE, "--from", str(source), "-o", "json").json()
    assert answer["version"] == 1
    table = stored(catalog.location())
    assert table.column("id").to_pylist() == [0, 1, 2, 3, 4]
    assert table.column("name").to_pylist()[-1] == "item-4"


def test_format_option_overrides_the_extension(catalog: Catalog, tmp_path: Path) -> None:
    source = write(tmp_path / "rows.parquet", rows(3)).rename(tmp_path / "rows.data")
    refused = catalog.run("create-table", TABLE, "--from", str(source))
    assert refused.code == 2
    assert "unknown file type '.data'" in refused.err
    catalog.ok("create-table", TABLE, "--from", str(source), "--format", "parquet")
    assert stored(catalog.location()).num_rows == 3


def test_create_modes(catalog: Catalog, tmp_path: Path) -> None:
    location = created(catalog, tmp_path, 4)
    other = str(write(tmp_path / "other.parquet", rows(2, 100)))
    exists = catalog.run("create-table", TABLE, "--from", other)
    assert exists.code == 4, exists.err
    catalog.ok("create-table", TABLE, "--from", other, "--mode", "exist-ok", "-o", "json")
    assert stored(location).num_rows == 4  # kept as it was
    catalog.ok("create-table", TABLE, "--from", other, "--mode", "overwrite", "-o", "json")
    assert stored(location).column("id").to_pylist() == [100, 101]


def test_insert_appends_and_overwrites(catalog: Catalog, tmp_path: Path) -> None:
    location = created(catalog, tmp_path, 4)
    more = str(write(tmp_path / "more.arrow", rows(3, 4)))
    answer = catalog.ok("insert", TABLE, "--from", more, "-o", "json").json()
    assert (answer["num_inserted_rows"], answer["version"]) == (3, 2)
    assert stored(location).column("id").to_pylist() == list(range(7))
    assert catalog.ok("count", TABLE, "-o", "json").json() == {"count": 7}
    assert catalog.ok("count", TABLE, "--filter", "id >= 5", "-o", "json").json() == {"count": 2}
    assert catalog.ok("count", TABLE, "-o", "table").out == "7\n"
    catalog.ok("insert", TABLE, "--from", more, "--mode", "overwrite", "-o", "json")
    assert stored(location).column("id").to_pylist() == [4, 5, 6]


def test_upload_progress_goes_to_stderr_only(catalog: Catalog, tmp_path: Path) -> None:
    source = str(write(tmp_path / "rows.parquet", rows(6)))
    ran = catalog.ok("create-table", TABLE, "--from", source, "--progress", "-o", "json")
    assert "6 rows" in ran.err
    assert ran.json()["version"] == 1  # stdout is the answer alone


# -- rows out ------------------------------------------------------------------------------------


def test_query_with_filter_columns_and_limit(catalog: Catalog, tmp_path: Path) -> None:
    created(catalog, tmp_path, 8)
    picked = catalog.ok("query", TABLE, "--filter", "id < 2", "--columns", "id,name", "-o", "jsonl")
    assert sorted(picked.lines(), key=lambda row: row["id"]) == [
        {"id": 0, "name": "item-0"},
        {"id": 1, "name": "item-1"},
    ]
    every = catalog.ok("query", TABLE, "-o", "jsonl").lines()
    assert sorted(row["id"] for row in every) == list(range(8))  # no --limit: every row
    assert len(catalog.ok("query", TABLE, "--limit", "3", "-o", "jsonl").lines()) == 3


def test_query_nearest_neighbours_come_nearest_first(catalog: Catalog, tmp_path: Path) -> None:
    created(catalog, tmp_path, 10)
    argv = ["--nearest", "vec", "--vector", "6.2,6.2", "--k", "3", "--columns", "id"]
    found = catalog.ok("query", TABLE, *argv, "-o", "jsonl").lines()
    assert [row["id"] for row in found] == [6, 7, 5]
    lonely = catalog.run("query", TABLE, "--vector", "1,2")
    assert lonely.code == 2
    assert "--nearest COL and --vector" in lonely.err


def test_every_output_format(catalog: Catalog, tmp_path: Path) -> None:
    created(catalog, tmp_path, 3)
    query = ["query", TABLE, "--columns", "id,name"]
    expected = [{"id": i, "name": f"item-{i}"} for i in range(3)]
    by_id = sorted(catalog.ok(*query, "-o", "json").json(), key=lambda row: row["id"])
    assert by_id == expected
    assert sorted(catalog.ok(*query, "-o", "jsonl").lines(), key=lambda r: r["id"]) == expected
    shown = catalog.ok(*query, "-o", "table").out
    assert shown.splitlines()[0].split() == ["id", "name"]
    assert "item-2" in shown

    out = tmp_path / "answer.parquet"
    catalog.ok(*query, "-o", "parquet", "--out", str(out))
    assert pq.read_table(out).sort_by("id").to_pylist() == expected
    assert not (tmp_path / "answer.parquet.partial").exists()
    none = tmp_path / "none.parquet"
    catalog.ok(*query, "--filter", "id > 100", "--out", str(none))  # --out alone: Parquet
    assert pq.read_table(none).schema.names == ["id", "name"]
    assert pq.read_table(none).num_rows == 0
    piped = catalog.run(*query, "-o", "parquet", binary=True)
    assert piped.code == 0, piped.err
    assert pq.read_table(io.BytesIO(piped.raw)).sort_by("id").to_pylist() == expected

    listing = catalog.run("ls", "shop", "-o", "parquet")
    assert listing.code == 2
    assert "--output parquet applies to query only" in listing.err


# -- versions, tags, indices, columns ------------------------------------------------------------


def test_versions_restore_and_tags(catalog: Catalog, tmp_path: Path) -> None:
    location = created(catalog, tmp_path, 2)
    catalog.ok("insert", TABLE, "--from", str(write(tmp_path / "more.jsonl", rows(1, 2))))
    versions = catalog.ok("versions", TABLE, "-o", "jsonl").lines()
    assert [version["version"] for version in versions] == [1, 2]

    catalog.ok("tag", "create", TABLE, "first", "--version", "1", "-o", "json")
    catalog.ok("tag", "create", TABLE, "newest", "-o", "json")  # default: the newest version
    tags = {
        tag["tag"]: tag["version"]
        for tag in catalog.ok("tag", "list", TABLE, "-o", "jsonl").lines()
    }
    assert tags == {"first": 1, "newest": 2}
    assert catalog.run("tag", "create", TABLE, "first", "--version", "2").code == 4

    catalog.ok("restore", TABLE, "1", "-o", "json")
    assert lance.dataset(location).version == 3
    assert stored(location).column("id").to_pylist() == [0, 1]

    catalog.ok("tag", "delete", TABLE, "first", "-o", "json")
    assert [tag["tag"] for tag in catalog.ok("tag", "list", TABLE, "-o", "jsonl").lines()] == [
        "newest"
    ]
    assert catalog.run("tag", "delete", TABLE, "first").code == 3


def test_scalar_and_vector_indices(catalog: Catalog, tmp_path: Path) -> None:
    location = created(catalog, tmp_path, 16)
    catalog.ok("index", "create", TABLE, "id", "--type", "btree", "--name", "by_id", "-o", "json")
    vector = ["index", "create", TABLE, "vec", "--type", "IVF_FLAT", "--num-partitions", "1"]
    catalog.ok(*vector, "--distance-type", "l2", "-o", "json")
    listed = catalog.ok("index", "list", TABLE, "-o", "jsonl").lines()
    assert {index["index_name"]: index["columns"] for index in listed} == {
        "by_id": ["id"],
        "vec_idx": ["vec"],
    }
    assert {index.name for index in lance.dataset(location).describe_indices()} == {
        "by_id",
        "vec_idx",
    }
    catalog.ok("index", "drop", TABLE, "by_id", "-o", "json")
    names = [
        index["index_name"] for index in catalog.ok("index", "list", TABLE, "-o", "jsonl").lines()
    ]
    assert names == ["vec_idx"]
    nearest = ["--nearest", "vec", "--vector", "3,3", "--k", "1", "--columns", "id"]
    found = catalog.ok("query", TABLE, *nearest, "-o", "jsonl").lines()
    assert found == [{"id": 3, "_distance": 0.0}]  # the index answers, distances included


def test_add_and_drop_columns(catalog: Catalog, tmp_path: Path) -> None:
    location = created(catalog, tmp_path, 3)
    catalog.ok("add-columns", TABLE, "double=id * 2", "label=concat(name, '!')", "-o", "json")
    table = stored(location)
    assert table.column("double").to_pylist() == [0, 2, 4]
    assert table.column("label").to_pylist()[0] == "item-0!"
    catalog.ok("drop-columns", TABLE, "vec", "label", "-o", "json")
    assert lance.dataset(location).schema.names == ["id", "name", "double"]
    malformed = catalog.run("add-columns", TABLE, "no-expression")
    assert malformed.code == 2
    assert "expected COLUMN=EXPRESSION" in malformed.err


# -- bad input changes nothing ---------------------------------------------------------------------


def test_a_missing_or_broken_file_is_invalid_input_and_creates_nothing(
    catalog: Catalog, tmp_path: Path
) -> None:
    before = disk_state(catalog.root)
    missing = catalog.run("create-table", TABLE, "--from", str(tmp_path / "nowhere.csv"))
    assert missing.code == 2
    assert missing.err == f"lance-ns: error: {tmp_path / 'nowhere.csv'}: no such file\n"
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    ran = catalog.run("create-table", TABLE, "--from", str(broken))
    assert ran.code == 2
    assert ran.err.startswith(f"lance-ns: error: {broken}: not a readable parquet file")
    assert ran.err.count("\n") == 1
    assert disk_state(catalog.root) == before
    assert catalog.ok("ls", "shop", "-o", "jsonl").out == ""


def test_an_unknown_column_is_invalid_input_and_changes_nothing(
    catalog: Catalog, tmp_path: Path
) -> None:
    created(catalog, tmp_path, 4)
    before = disk_state(catalog.root)
    for argv in (
        ["query", TABLE, "--filter", "no_such_column > 1"],
        ["count", TABLE, "--filter", "no_such_column > 1"],
        ["insert", TABLE, "--from", str(write(tmp_path / "x.csv", pa.table({"other": [1]})))],
    ):
        ran = catalog.run(*argv)
        assert ran.code == 2, (argv, ran.err)
        assert ran.err.startswith("lance-ns: error: ")
        assert ran.err.count("\n") == 1
        assert ran.out == ""
    assert disk_state(catalog.root) == before
    assert catalog.ok("count", TABLE, "-o", "json").json() == {"count": 4}
