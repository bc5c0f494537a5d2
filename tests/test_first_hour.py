"""The first hour of a new user: the command after a plain install, errors that say what
went wrong, examples that run, smoke benchmarks that keep the committed results.

Servers: real directory catalogs on tmp_path; our adapter under uvicorn on a free
127.0.0.1 port (tests/uvicorn_thread.py) for the HTTP cases. The command line runs as
a subprocess: the installed ``lance-ns`` script, or, for "only the base install", this
interpreter started without site-packages (``-S``) and given exactly the distributions
that ``pip install lance-namespace-async`` brings (the base dependencies of
pyproject.toml and theirs), linked into one directory.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import socket
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import lance
import pyarrow as pa
import pytest
from packaging.requirements import Requirement
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async.models import UNSET, DescribeTableResponse

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "lance-ns"
#: what pylance's Rust errors carry that a user should not have to read
RUST_INTERNALS = ("Location {", "/home/runner", "backtrace", "LanceError(", "Os {")


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANCE_NS_")}
    home = str(tmp_path / "home")
    return {**env, "HOME": home, "XDG_CONFIG_HOME": home, **extra}


def lance_ns(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The installed ``lance-ns`` script, in ``tmp_path``, without a config file."""
    return subprocess.run(
        [str(SCRIPT), *argv],
        cwd=tmp_path,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``main(argv)`` in this process (the script's own code, minus the interpreter start
    that costs seconds on a loaded machine), in ``tmp_path``, without a config file."""
    from lance_namespace_async._cli import main

    monkeypatch.chdir(tmp_path)
    for name, value in environment(tmp_path).items():
        if name in ("HOME", "XDG_CONFIG_HOME"):
            monkeypatch.setenv(name, value)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        try:
            code = main(list(argv))
        except SystemExit as exited:  # argparse's usage errors
            code = int(exited.code or 0)
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, captured.out, captured.err)

    return run


def error_line(ran: subprocess.CompletedProcess[str]) -> str:
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert lines[0].startswith("lance-ns: error: ")
    return lines[0]


# -- the command after `pip install lance-namespace-async` ------------------------------------


def _base_distributions() -> set[str]:
    """The distributions a plain install brings: pyproject's dependencies, transitively."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pending = [Requirement(text) for text in project["dependencies"]]
    found: set[str] = set()
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = requirement.name.lower().replace("_", "-")
        if name in found:
            continue
        found.add(name)
        for text in importlib.metadata.requires(name) or []:
            pending.append(Requirement(text))
    return found


@pytest.fixture(scope="session")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding exactly the base install: our packages and the base closure.

    Every top-level entry of each installed distribution (its modules, its .libs and
    .dist-info) is linked, so imports resolve as in a venv that pip filled with the
    base install alone; anything else (rich, before it was a base dependency) is absent.
    """
    target = tmp_path_factory.mktemp("base-install")
    for name in sorted(_base_distributions()):
        distribution = importlib.metadata.distribution(name)
        site = Path(str(distribution.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in distribution.files or []}
        for top in sorted(tops - {"..", "__pycache__"}):
            if (site / top).exists() and not (target / top).exists():
                (target / top).symlink_to(site / top)
    for package in ("lance_namespace_async", "pyspark_lance_namespace"):
        (target / package).symlink_to(REPO / package)
    (target / "lance_namespace_rest_client").symlink_to(
        REPO / "generated" / "lance_namespace_rest_client"
    )
    return target


def base_lance_ns(base: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """What the ``lance-ns`` script runs, in an interpreter that sees only ``base``."""
    env = {**environment(cwd), "PYTHONPATH": str(base), "PYTHONNOUSERSITE": "1"}
    code = "import sys; from lance_namespace_async._cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-S", "-c", code, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_lance_ns_works_with_the_base_install_alone(base_install: Path, tmp_path: Path) -> None:
    probe = base_lance_ns(base_install, tmp_path, "--help")
    assert probe.returncode == 0, probe.stderr
    # the quickstart's catalog, then the commands a user tries next, with table output
    # as on a terminal (rich) and a config file (pyyaml)
    made = base_lance_ns(base_install, tmp_path, "--impl", "dir", "--prop", "root=demo-lance",
                         "create-namespace", "sales", "-o", "table")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "created namespace sales" in made.stdout
    config = tmp_path / "lance-ns.yaml"
    config.write_text("profiles:\n  demo:\n    impl: dir\n    root: demo-lance\n")
    listed = base_lance_ns(
        base_install, tmp_path, "--config", str(config), "--profile", "demo", "ls", "-o", "table"
    )
    assert listed.returncode == 0, listed.stderr
    assert "namespace" in listed.stdout
    assert "sales" in listed.stdout
    assert "ModuleNotFoundError" not in listed.stderr


# -- lance-ns serve on a port that is taken --------------------------------------------------


def test_serve_on_a_taken_port_says_so_and_exits_with_the_usage_code(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        ran = lance_ns(tmp_path, "--impl", "dir", "--prop", "root=cat", "serve", "--port",
                       str(port))  # fmt: skip
    assert ran.returncode == 2
    assert "serving" not in ran.stdout
    assert f"port {port} on 127.0.0.1 is already in use" in error_line(ran)


# -- identifiers as the user typed them --------------------------------------------------------


def test_errors_spell_identifiers_as_the_user_typed_them(cli: Any) -> None:
    connection = ("--impl", "dir", "--prop", "root=cat")
    assert cli(*connection, "create-namespace", "sales").returncode == 0
    assert cli(*connection, "create-namespace", "sales.eu").returncode == 0
    missing = cli(*connection, "describe", "sales.eu.invoices")
    assert missing.returncode == 3
    assert "'sales.eu.invoices'" in error_line(missing)
    assert "$" not in missing.stderr
    slashed = cli(*connection, "--delimiter", "/", "describe", "sales/eu/invoices")
    assert "'sales/eu/invoices'" in error_line(slashed)
    parent = cli(*connection, "declare", "sales.asia.invoices")
    assert parent.returncode == 3
    assert "namespace 'sales.asia' does not exist" in error_line(parent)


def test_an_identifier_with_an_empty_name_is_named_with_the_reason(
    cli: Any, tmp_path: Path
) -> None:
    ran = cli("--impl", "dir", "--prop", "root=cat", "declare", "a/../b")
    assert ran.returncode == 2
    line = error_line(ran)
    assert "'a/../b'" in line
    assert "empty name" in line
    assert "'.' separates names" in line
    assert not (tmp_path / "cat").exists()  # nothing was touched


# -- secrets: values are redacted, not the words around them ----------------------------------


def test_redaction_keeps_prose_and_hides_values() -> None:
    assert errors.redact("missing bearer token") == "missing bearer token"
    assert errors.redact("invalid bearer token") == "invalid bearer token"
    assert errors.redact("Authorization: Bearer abc.DEF-123") == "Authorization: Bearer ***"
    assert errors.redact("sent basic dXNlcjpwYXNz") == "sent basic ***"
    assert errors.redact("auth_token=abc123") == "auth_token=***"


@pytest.fixture
def guarded_adapter(tmp_path: Path) -> Iterator[str]:
    """Our adapter over a dir catalog, requiring a bearer token."""
    from lance_namespace_async.server import create_app

    backend = lna.connect("dir", {"root": str(tmp_path / "served")})
    server = UvicornThread(
        create_app(backend, auth_token="s3cret-token-value"),
        name="first-hour-adapter",
        description="the adapter",
    )
    try:
        yield server.start()
    finally:
        server.stop()
        anyio.run(backend.aclose)


def test_a_request_without_a_token_reads_missing_bearer_token(
    guarded_adapter: str, tmp_path: Path
) -> None:
    ran = lance_ns(
        tmp_path, "--impl", "rest", "--prop", f"uri={guarded_adapter}", "--prop", "max_retries=0",
        "ls",
    )  # fmt: skip
    assert ran.returncode == 6
    assert "missing bearer token" in error_line(ran)


# -- a root that does not exist, or cannot hold a catalog --------------------------------------


def test_reading_a_root_that_does_not_exist_is_namespace_not_found(
    cli: Any, tmp_path: Path
) -> None:
    root = tmp_path / "nonexistent" / "deep" / "x"
    for command in ("ls", "crawl"):
        ran = cli("--impl", "dir", "--prop", f"root={root}", command)
        assert ran.returncode == 3, ran.stderr
        assert f"namespace root '{root}' does not exist" in error_line(ran)
        assert ran.stdout == ""
    assert not root.exists()


async def test_the_api_reports_a_missing_root_on_reads_and_creates_it_on_writes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "not-yet"
    async with lna.connect("dir", {"root": str(root)}) as ns:
        for read in (ns.list_namespaces, ns.list_tables, ns.list_all_tables, ns.describe_namespace):
            with pytest.raises(errors.NamespaceNotFoundError, match="does not exist"):
                await read({})
        assert not root.exists()
        await ns.create_namespace({"id": ["sales"]})
        assert (await ns.list_namespaces({})).namespaces == ["sales"]
    async with lna.connect("dir", {"root": str(tmp_path / "empty")}) as ns:
        (tmp_path / "empty").mkdir()
        assert (await ns.list_tables({})).tables == []  # an existing empty root is empty


@pytest.mark.parametrize(
    ("root", "expected"),
    [
        ("/proc/x", "namespace root '/proc/x': No such file or directory"),
        ("foo://bar", "namespace root 'foo://bar': no storage provider for the scheme 'foo'"),
        ("a-file", "Not a directory (at "),
    ],
    ids=["uncreatable", "unknown-scheme", "a-file"],
)
def test_storage_failures_are_one_typed_line_naming_the_root(
    cli: Any, tmp_path: Path, root: str, expected: str
) -> None:
    (tmp_path / "a-file").write_text("not a catalog")
    ran = cli("--impl", "dir", "--prop", f"root={root}", "create-namespace", "a")
    assert ran.returncode == 2
    line = error_line(ran)
    assert expected in line
    assert not any(internal in line for internal in RUST_INTERNALS)
    # pylance's own account stays available for a bug report
    verbose = cli("--impl", "dir", "--prop", f"root={root}", "--verbose", "create-namespace", "a")
    assert verbose.returncode == 2
    assert "Traceback" in verbose.stderr


# -- requests: unknown keys and missing fields ------------------------------------------------


async def test_an_unknown_request_key_is_invalid_input_naming_it(tmp_path: Path) -> None:
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        await ns.create_namespace({"id": ["sales"]})
        await ns.declare_table({"id": ["sales", "t"]})
        with pytest.raises(errors.InvalidInputError, match="no field 'idd'"):
            await ns.describe_table({"idd": ["sales", "t"]})
        with pytest.raises(errors.InvalidInputError, match="no field 'mdoe'"):
            await ns.drop_namespace({"id": ["sales"], "mdoe": "Skip"})
        assert (await ns.list_namespaces({})).namespaces == ["sales"]  # nothing changed
        with pytest.raises(errors.InvalidInputError, match="missing required field 'location'"):
            await ns.register_table({"id": ["sales", "u"]})


@pytest.fixture
def open_adapter(tmp_path: Path) -> Iterator[str]:
    from lance_namespace_async.server import create_app

    backend = lna.connect("dir", {"root": str(tmp_path / "served")})
    server = UvicornThread(create_app(backend), name="first-hour-open", description="the adapter")
    try:
        yield server.start()
    finally:
        server.stop()
        anyio.run(backend.aclose)


def test_over_http_a_missing_field_is_named_and_unknown_fields_are_ignored(
    open_adapter: str,
) -> None:
    with httpx.Client(base_url=open_adapter, timeout=30) as api:
        assert api.post("/v1/namespace/sales/create", json={"added_later": "x"}).status_code == 200
        response = api.post("/v1/table/sales$t/register", json={})
        assert response.status_code == 400
        body = response.json()
        assert body["code"] == errors.ErrorCode.INVALID_INPUT
        assert "missing required field 'location'" in body["error"]


# -- the README's examples ---------------------------------------------------------------------


def test_writing_into_a_missing_namespace_names_it(tmp_path: Path) -> None:
    missing = pytest.raises(errors.NamespaceNotFoundError, match="namespace 'sales' does not exist")
    with lna.connect_sync("dir", {"root": str(tmp_path / "fresh")}) as ns, missing:
        lance.write_dataset(pa.table({"x": [1]}), namespace_client=ns, table_id=["sales", "t"])


def test_the_readme_sync_example_runs_on_a_fresh_root(tmp_path: Path) -> None:
    with lna.connect_sync("dir", {"root": str(tmp_path / "fresh")}) as ns:
        ns.create_namespace({"id": ["sales"], "mode": "exist_ok"})
        lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=ns, table_id=["sales", "t"])
        assert lance.dataset(namespace_client=ns, table_id=["sales", "t"]).count_rows() == 2


async def test_unset_fields_print_as_unset(tmp_path: Path) -> None:
    assert repr(UNSET) == "UNSET"
    async with lna.connect("dir", {"root": str(tmp_path)}) as ns:
        await ns.create_namespace({"id": ["sales"]})
        await ns.declare_table({"id": ["sales", "orders"]})
        described = await ns.describe_table(
            {"id": ["sales", "orders"], "load_detailed_metadata": True}
        )
    assert isinstance(described, DescribeTableResponse)
    assert "version=UNSET" in repr(described)
    assert not re.search(r"object at 0x", repr(described))


# -- warnings and smoke benchmarks -------------------------------------------------------------


def test_the_conformance_kit_from_an_empty_directory_starts_without_warnings(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "--lance-ns-impl", "dir", "--lance-ns-prop", f"root={tmp_path / 'kit'}",
         "--lance-ns-many", "3", "-k", "create_namespace"],
        cwd=empty, env=environment(tmp_path), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Warning" not in ran.stderr
    assert "warning" not in ran.stdout.lower()


def test_a_smoke_run_of_the_adapter_load_test_keeps_the_committed_results(
    tmp_path: Path,
) -> None:
    committed = REPO / "benchmarks" / "results" / "adapter_load.md"
    before = committed.read_bytes()
    smoke = Path(tempfile.gettempdir()) / "lna-bench" / "smoke" / "adapter_load.md"
    smoke.unlink(missing_ok=True)
    ran = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "adapter_load.py"), "--clients", "2",
         "--duration", "1", "--namespaces", "2", "--tables-per-ns", "2"],
        cwd=tmp_path, env=environment(tmp_path), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert committed.read_bytes() == before
    assert smoke.is_file()


def test_the_default_nox_sessions_run_in_noxs_own_interpreter() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "nox", "--no-color", "-s", "codegen"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert "Creating virtual environment" not in output
    assert f"{sys.executable} scripts/codegen.py --check" in output
