"""The ``lance-ns`` command line, run for real.

``main([...])`` runs in-process (output captured by capsys) against a real directory
catalog on tmp_path and against the ``rest`` backend talking to our adapter server
under uvicorn; a few runs go through the installed ``lance-ns`` script in a
subprocess (the entry point, signals, stdout vs stderr). A canary secret sits in
the connection of every run, and no output may ever contain it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import lance
import pyarrow as pa
import pytest
from uvicorn_thread import UvicornThread, free_port

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._cli import exit_code_for, main
from lance_namespace_async._cli.profiles import environment_profiles, is_secret_key

CANARY = "canary-5ecret-7a1f"
SCRIPT = Path(sys.executable).parent / "lance-ns"


@attrs.frozen
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines()]


@pytest.fixture(autouse=True)
def clean_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No LANCE_NS_* variable and no config file of the machine leak into a test."""
    for name in list(os.environ):
        if name.upper().startswith("LANCE_NS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """Run ``main(argv)``; every output of the test is checked for the canary at the end."""
    seen: list[str] = []

    def run(*argv: str) -> Ran:
        try:
            code = main(list(argv))
        except SystemExit as exited:  # argparse's usage errors
            code = int(exited.code or 0)
        captured = capsys.readouterr()
        seen.extend([captured.out, captured.err])
        return Ran(code, captured.out, captured.err)

    yield run
    assert not any(CANARY in text for text in seen)


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return tmp_path / "catalog"


@pytest.fixture
def adapter(tmp_path: Path) -> Iterator[str]:
    """Our adapter over a dir backend, requiring the canary as bearer token."""
    from lance_namespace_async.server import create_app

    backend = lna.connect("dir", {"root": str(tmp_path / "served")})
    server = UvicornThread(
        create_app(backend, auth_token=CANARY), name="cli-adapter", description="the adapter"
    )
    try:
        yield server.start()
    finally:
        server.stop()
        anyio.run(backend.aclose)


def write_config(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(params=["dir", "rest"])
def connection(request: pytest.FixtureRequest, tmp_path: Path, catalog: Path) -> list[str]:
    """Connection options of a profile holding the canary: a dir catalog, or rest to the adapter."""
    if request.param == "dir":
        body = f"impl: dir\n    root: {catalog}\n    storage.aws_secret_access_key: {CANARY}\n"
    else:
        uri = request.getfixturevalue("adapter")
        body = f"impl: rest\n    uri: {uri}\n    auth_token: {CANARY}\n    max_retries: '0'\n"
    config = write_config(tmp_path / "lance-ns.yaml", f"profiles:\n  it:\n    {body}")
    return ["--config", str(config), "--profile", "it"]


def make_dataset(path: Path, rows: int = 3) -> str:
    lance.write_dataset(pa.table({"x": list(range(rows))}), str(path))
    return str(path)


# -- every command -----------------------------------------------------------------------------


def test_every_catalog_command_round_trips(cli: Any, connection: list[str], tmp_path: Path) -> None:
    c = connection
    created = cli("create-namespace", "sales", *c, "--property", "owner=ann", "-o", "json")
    assert created.code == 0, created.err
    assert created.json()["properties"] == {"owner": "ann"}
    assert cli("create-namespace", "sales.eu", *c, "-o", "json").code == 0
    assert cli("create-namespace", "sales", *c, "--mode", "exist_ok", "-o", "json").code == 0

    declared = cli("declare", "sales.orders", *c, "-o", "json")
    assert declared.code == 0, declared.err
    location = declared.json()["location"]
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), location)

    external = make_dataset(tmp_path / "external.lance", rows=5)
    registered = cli("register", "sales.eu.ext", external, *c, "-o", "json")
    assert registered.code == 0, registered.err

    listing = cli("ls", "sales", *c, "-o", "jsonl")
    assert listing.code == 0, listing.err
    assert listing.lines() == [
        {"type": "namespace", "id": ["sales", "eu"]},
        {"type": "table", "id": ["sales", "orders"]},
    ]
    assert cli("ls", *c, "-o", "json").json() == [{"type": "namespace", "id": ["sales"]}]

    described = cli("describe", "sales.orders", *c, "-o", "json").json()
    assert described["version"] == 1
    assert described["location"].rstrip("/").endswith(location.rstrip("/").split("/")[-1])
    assert [f["name"] for f in described["schema"]["fields"]] == ["x"]
    assert "context" not in described  # transport metadata (response headers) stays out
    namespace = cli("describe", "--namespace", "sales", *c, "-o", "json").json()
    assert namespace["properties"] == {"owner": "ann"}

    renamed = cli("rename", "sales.orders", "sales.eu.orders2", *c, "-o", "json")
    assert renamed.code == 0, renamed.err
    assert cli("ls", "sales.eu", *c, "-o", "json").json() == [
        {"type": "table", "id": ["sales", "eu", "ext"]},
        {"type": "table", "id": ["sales", "eu", "orders2"]},
    ]

    deregistered = cli("deregister", "sales.eu.ext", *c, "-o", "json")
    assert deregistered.code == 0, deregistered.err
    assert lance.dataset(external).count_rows() == 5  # the data stays
    dropped = cli("drop", "sales.eu.orders2", *c, "-o", "json")
    assert dropped.code == 0, dropped.err

    assert cli("drop-namespace", "sales", *c, "-o", "json").code == 5  # not empty
    gone = cli("drop-namespace", "sales", *c, "--behavior", "cascade", "-o", "json")
    assert gone.code == 0, gone.err
    assert cli("ls", *c, "-o", "json").json() == []
    assert cli("drop-namespace", "sales", *c, "--mode", "skip", "-o", "json").code == 0


def test_table_output_is_human_and_masks_secret_properties(cli: Any, connection: list[str]) -> None:
    c = connection
    ran = cli("create-namespace", "ops", *c, "--property", f"api_key={CANARY}", "-o", "table")
    assert ran.code == 0, ran.err
    assert ran.out.splitlines()[0] == "created namespace ops"
    assert "***" in ran.out
    cli("declare", "ops.[bold]t", *c, "-o", "json")  # a name that looks like rich markup
    shown = cli("ls", "ops", *c, "-o", "table")
    assert "ops.[bold]t" in shown.out  # printed as data, not markup
    assert shown.out.split()[:2] == ["TYPE", "ID"]
    described = cli("describe", "--namespace", "ops", *c, "-o", "table")
    assert "api_key" in described.out
    assert "***" in described.out
    assert cli("ls", "ops.[bold]t", *c, "-o", "table").code == 3  # a table is no namespace


def test_output_defaults_to_json_when_stdout_is_not_a_terminal(cli: Any, catalog: Path) -> None:
    c = ["--impl", "dir", "--prop", f"root={catalog}"]
    assert cli("create-namespace", "a", *c).json() == {"properties": {}}
    cli("declare", "a.t", *c)
    assert cli("ls", "a", *c).lines() == [{"type": "table", "id": ["a", "t"]}]  # jsonl
    assert cli("crawl", *c).lines() == [{"id": ["a", "t"]}]


def test_options_work_before_and_after_the_command(cli: Any, catalog: Path) -> None:
    assert cli("--impl", "dir", "create-namespace", "x", "--prop", f"root={catalog}").code == 0
    ran = cli("--impl", "dir", "--prop", f"root={catalog}", "-o", "json", "ls")
    assert ran.json() == [{"type": "namespace", "id": ["x"]}]


def test_delimiter_option_addresses_names_with_dots(cli: Any, catalog: Path) -> None:
    c = ["--impl", "dir", "--prop", f"root={catalog}", "-o", "json"]
    assert cli("create-namespace", "v1.2", *c, "--delimiter", "/").code == 0
    assert cli("declare", "v1.2/t", *c, "--delimiter", "/").code == 0
    assert cli("ls", "v1.2", *c, "--delimiter", "/").json() == [
        {"type": "table", "id": ["v1.2", "t"]}
    ]
    assert cli("ls", "v1.2", *c).code == 3  # with '.', that is namespace v1 > 2


# -- crawl ------------------------------------------------------------------------------------


TREE = [("a",), ("a", "b"), ("a", "b", "c"), ("d",)]
TABLES = [("a", "t1"), ("a", "b", "t2"), ("a", "b", "c", "t3"), ("a", "b", "c", "t4"), ("d", "t5")]


def build_tree(cli: Any, connection: list[str]) -> None:
    for namespace in TREE:
        assert cli("create-namespace", ".".join(namespace), *connection, "-o", "json").code == 0
    for table in TABLES:
        assert cli("declare", ".".join(table), *connection, "-o", "json").code == 0


def test_crawl_streams_every_table_of_a_multi_level_tree_as_jsonl(
    cli: Any, connection: list[str]
) -> None:
    build_tree(cli, connection)
    ran = cli("crawl", *connection, "-o", "jsonl", "--progress", "--concurrency", "3")
    assert ran.code == 0, ran.err
    found = ran.lines()  # every stdout line is one JSON object: the bar stays on stderr
    assert sorted(tuple(item["id"]) for item in found) == sorted(TABLES)
    assert all(set(item) == {"id"} for item in found)
    assert "tables found" in ran.err
    assert "namespaces visited" in ran.err

    below = cli("crawl", "a.b", *connection, "-o", "jsonl", "--no-progress")
    assert sorted(tuple(i["id"]) for i in below.lines()) == sorted(TABLES[1:4])
    assert below.err == ""

    described = cli("crawl", "d", *connection, "-o", "json", "--describe")
    assert described.code == 0, described.err
    [table] = described.json()
    assert table["id"] == ["d", "t5"]
    assert {"location", "version", "properties"} <= set(table)
    assert cli("crawl", "nope", *connection, "-o", "jsonl").code == 3


def test_crawl_table_output_lists_joined_ids(cli: Any, connection: list[str]) -> None:
    build_tree(cli, connection)
    ran = cli("crawl", "a.b.c", *connection, "-o", "table")
    assert ran.code == 0, ran.err
    assert {"a.b.c.t3", "a.b.c.t4"} <= set(ran.out.split())


# -- profiles ---------------------------------------------------------------------------------


def test_profile_layers_file_then_environment_then_command_line(
    cli: Any, tmp_path: Path, catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(
        tmp_path / "c.yaml",
        f"profiles:\n  Local:\n    impl: dir\n    root: {tmp_path / 'wrong'}\n"
        f"    worker_threads: 2\n    manifest_enabled: true\n",
    )
    monkeypatch.setenv("LANCE_NS_CONFIG", str(config))
    monkeypatch.setenv("LANCE_NS_PROFILE", "local")  # profile names are case-insensitive
    monkeypatch.setenv("LANCE_NS_LOCAL__WORKER_THREADS", "3")
    monkeypatch.setenv("LANCE_NS_LOCAL__STORAGE__AWS_REGION", "eu-west-1")
    shown = cli("config", "--prop", f"root={catalog}", "-o", "json").json()
    assert shown["profile"] == "local"
    assert shown["config_file"] == str(config)
    assert shown["impl"] == "dir"
    assert shown["properties"] == {
        "manifest_enabled": "true",
        "root": str(catalog),
        "storage.aws_region": "***",  # storage options are masked wholesale
        "worker_threads": "3",
    }
    assert shown["sources"] == {
        "impl": "file",
        "manifest_enabled": "file",
        "root": "command line",
        "storage.aws_region": "env",
        "worker_threads": "env",
    }
    assert cli("create-namespace", "layered", "--prop", f"root={catalog}", "-o", "json").code == 0
    assert (catalog / "__manifest").is_dir()


def test_profile_choice_flag_beats_variable_beats_default_profile(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots = {name: tmp_path / name for name in ("one", "two", "three")}
    write_config(
        tmp_path / "home" / ".config" / "lance-ns" / "config.yaml",  # the default location
        "default-profile: one\nprofiles:\n"
        + "".join(f"  {n}:\n    impl: dir\n    root: {r}\n" for n, r in roots.items()),
    )
    assert cli("config", "-o", "json").json()["profile"] == "one"
    monkeypatch.setenv("LANCE_NS_PROFILE", "two")
    assert cli("config", "-o", "json").json()["profile"] == "two"
    assert cli("config", "--profile", "THREE", "-o", "json").json()["profile"] == "three"
    # --impl without --profile: the command line alone, LANCE_NS_PROFILE ignored
    alone = cli("config", "--impl", "dir", "--prop", "root=/x", "-o", "json").json()
    assert alone["profile"] is None
    assert alone["properties"] == {"root": "/x"}
    # --profile with --impl: the profile's properties, another impl
    mixed = cli("config", "--profile", "one", "--impl", "rest", "-o", "json").json()
    assert (mixed["impl"], mixed["sources"]["impl"]) == ("rest", "command line")
    assert mixed["profiles"] == ["one", "three", "two"]


def test_explicit_config_flag_beats_the_variable(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write_config(tmp_path / "1.yaml", "profiles:\n  default:\n    impl: dir\n    root: a\n")
    second = write_config(
        tmp_path / "2.yaml", "profiles:\n  default:\n    impl: dir\n    root: b\n"
    )
    monkeypatch.setenv("LANCE_NS_CONFIG", str(first))
    assert cli("config", "-o", "json").json()["properties"] == {"root": "a"}
    assert cli("config", "--config", str(second), "-o", "json").json()["properties"] == {
        "root": "b"
    }


def test_a_profile_from_environment_variables_alone(
    cli: Any, catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANCE_NS_DEFAULT__IMPL", "dir")
    monkeypatch.setenv("LANCE_NS_DEFAULT__ROOT", str(catalog))
    assert cli("create-namespace", "env_only", "-o", "json").code == 0
    assert cli("ls", "-o", "json").json() == [{"type": "namespace", "id": ["env_only"]}]


def test_environment_keys_map_double_underscores_to_dots() -> None:
    profiles = environment_profiles(
        {
            "LANCE_NS_PROD__AUTH_TOKEN": "t",
            "lance_ns_prod__storage__aws_region": "r",
            "LANCE_NS_MY_PROFILE__TLS__SSL_CA_CERT": "c",
            "LANCE_NS_CONFIG": "ignored: no '__'",
            "LANCE_NS_PROFILE": "ignored too",
            "OTHER__X": "not ours",
        }
    )
    assert profiles == {
        "prod": {"auth_token": "t", "storage.aws_region": "r"},
        "my_profile": {"tls.ssl_ca_cert": "c"},
    }
    for ambiguous in ("LANCE_NS_P__A___B", "LANCE_NS_P__A__", "LANCE_NS___A", "LANCE_NS_P__X-Y"):
        with pytest.raises(errors.InvalidInputError) as caught:
            environment_profiles({ambiguous: CANARY})
        assert ambiguous in str(caught.value)
        assert CANARY not in str(caught.value)


BAD_CONFIGS = {
    "malformed YAML": ("profiles:\n  p: {impl: dir, root: " + CANARY + "\n", "not valid YAML"),
    "non-string value": (f"profiles:\n  p:\n    impl: dir\n    root: [{CANARY}]\n", "p.root"),
    "nested map": (f"profiles:\n  p:\n    impl: dir\n    header: {{x: {CANARY}}}\n", "p.header"),
    "duplicate key": (f"profiles:\n  p:\n    root: {CANARY}\n    root: b\n", "duplicate key"),
    "unknown top-level key": (f"profile:\n  p:\n    root: {CANARY}\n", "'profile'"),
    "profile not a map": (f"profiles:\n  p: {CANARY}\n", "profiles.p must be a mapping"),
    "missing profile": (f"profiles:\n  q:\n    root: {CANARY}\n", "profile 'p' not found"),
    "profile without impl": (f"profiles:\n  p:\n    root: {CANARY}\n", "sets no impl"),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_config_problems_are_one_line_naming_file_and_key_never_values(
    cli: Any, tmp_path: Path, case: str
) -> None:
    text, expected = BAD_CONFIGS[case]
    config = write_config(tmp_path / "bad.yaml", text)
    ran = cli("ls", "--config", str(config), "--profile", "p", "--verbose")
    assert ran.code == 2
    assert ran.out == ""
    last = ran.err.strip().splitlines()[-1]
    assert last.startswith("lance-ns: error: ")
    assert expected in last
    if case != "missing profile" and case != "profile without impl":
        assert str(config) in last
    quiet = cli("ls", "--config", str(config), "--profile", "p")
    assert quiet.err.count("\n") == 1  # one line without --verbose


def test_a_broken_profile_does_not_stop_the_others(cli: Any, tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.yaml",
        f"profiles:\n  good:\n    impl: dir\n    root: {tmp_path}\n  bad:\n    root: [1]\n",
    )
    assert cli("ls", "--config", str(config), "--profile", "good", "-o", "json").code == 0
    assert cli("ls", "--config", str(config), "--profile", "bad").code == 2


def test_unreadable_or_missing_config_files_are_invalid_input(cli: Any, tmp_path: Path) -> None:
    missing = cli("ls", "--config", str(tmp_path / "nope.yaml"))
    assert missing.code == 2
    assert "does not exist" in missing.err
    unreadable = cli("ls", "--config", str(tmp_path))  # a directory
    assert unreadable.code == 2
    assert f"cannot read config file {tmp_path}" in unreadable.err
    nothing = cli("ls")
    assert nothing.code == 2
    assert "give --impl or --profile" in nothing.err


def test_scalars_are_text_as_in_pyiceberg(cli: Any, tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "c.yaml",
        "profiles:\n  p:\n    impl: dir\n    root: /r\n    worker_threads: 4\n"
        "    manifest_enabled: yes\n    storage.mode: 0755\n",
    )
    shown = cli("config", "--config", str(config), "--profile", "p", "-o", "json").json()
    assert shown["properties"]["worker_threads"] == "4"
    assert shown["properties"]["manifest_enabled"] == "yes"  # not True


# -- exit codes and errors -------------------------------------------------------------------------


def test_exit_codes_tell_error_classes_apart(cli: Any, connection: list[str]) -> None:
    c = [*connection, "-o", "json"]
    assert cli("describe", "missing.t", *c).code == 3
    assert cli("drop-namespace", "missing", *c).code == 3
    assert cli("create-namespace", "n", *c).code == 0
    assert cli("create-namespace", "n", *c).code == 4
    assert cli("declare", "n.t", *c).code == 0
    assert cli("declare", "n.t", *c).code == 4
    assert cli("drop-namespace", "n", *c).code == 5
    assert cli("describe", "n..t", *c).code == 2
    assert cli("drop", "", *c).code == 2  # the root is no table
    assert cli("create-namespace", "n", *c, "--mode", "sometimes").code == 2  # argparse
    errors_only = cli("describe", "missing.t", *c)
    assert errors_only.out == ""
    assert errors_only.err.startswith("lance-ns: error: ")
    assert errors_only.err.count("\n") == 1


def _give_up(signum: int, frame: Any) -> None:
    raise TimeoutError("still running after 60 s")


def test_versions_stop_at_a_page_token_given_twice(cli: Any, tmp_path: Path) -> None:
    """A server whose ListTableVersions pages never end (our adapter over a dir backend
    that names the same next page every time): ``versions`` ends with an internal error
    after the second page instead of printing versions for ever."""
    from lance_namespace_async.server import create_app

    backend = lna.connect("dir", {"root": str(tmp_path / "served")})
    anyio.run(backend.create_namespace, {"id": ["n"]})
    declared = anyio.run(backend.declare_table, {"id": ["n", "t"]})
    lance.write_dataset(pa.table({"x": [1]}), declared.location, mode="overwrite")
    honest = backend._list_table_versions

    async def endless(request: Any) -> Any:
        answer = await honest(request)
        answer.page_token = "1"  # versions after the first: none, and then "1" again
        return answer

    backend._list_table_versions = endless  # type: ignore[method-assign]
    server = UvicornThread(create_app(backend), name="cli-endless", description="the adapter")
    try:
        uri = server.start()
        previous = signal.signal(signal.SIGALRM, _give_up)  # the old loop never ended
        signal.alarm(60)
        try:
            ran = cli("versions", "n.t", "--impl", "rest", "--prop", f"uri={uri}", "-o", "jsonl")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    finally:
        server.stop()
        anyio.run(backend.aclose)
    assert ran.code != 0
    assert "page 2 of the listing" in ran.err
    assert [json.loads(line)["version"] for line in ran.out.splitlines()] == [1]


def test_wrong_token_is_an_auth_error(cli: Any, adapter: str) -> None:
    ran = cli("ls", "--impl", "rest", "--prop", f"uri={adapter}", "--prop", "auth_token=wrong")
    assert ran.code == 6
    assert "wrong" not in ran.err
    anonymous = cli("ls", "--impl", "rest", "--prop", f"uri={adapter}")
    assert anonymous.code == 6


def test_unreachable_server_is_unavailable_and_never_shows_url_credentials(cli: Any) -> None:
    uri = f"http://user:{CANARY}@127.0.0.1:{free_port()}"
    props = ["--prop", f"uri={uri}", "--prop", "max_retries=0", "--prop", "connect_timeout=2000"]
    ran = cli("ls", "--impl", "rest", *props, "--verbose")
    assert ran.code == 7
    assert "Traceback" in ran.err
    assert ran.err.strip().splitlines()[-1].startswith("lance-ns: error: ")
    assert cli("ls", "--impl", "rest", *props, "--timeout", "1").code == 7


@pytest.mark.parametrize("code", range(24))
def test_every_protocol_error_code_has_its_exit_code(code: int) -> None:
    error = errors.from_code(code, "x")
    expected = {
        13: 2, 20: 2,
        1: 3, 4: 3, 6: 3, 8: 3, 10: 3, 11: 3, 12: 3, 22: 3,
        2: 4, 5: 4, 7: 4, 9: 4, 23: 4,
        3: 5, 14: 5, 19: 5,
        15: 6, 16: 6,
        17: 7, 21: 7,
    }.get(code, 1)  # fmt: skip
    assert exit_code_for(error) == expected


def test_transport_failures_and_interrupts_have_their_exit_codes() -> None:
    assert exit_code_for(TimeoutError()) == 7
    assert exit_code_for(ConnectionRefusedError()) == 7
    assert exit_code_for(KeyboardInterrupt()) == 130
    assert exit_code_for(RuntimeError("boom")) == 1


def test_secrets_are_masked_in_verbose_logs_and_config(cli: Any, connection: list[str]) -> None:
    assert cli("create-namespace", "made", *connection).code == 0  # the root must exist
    logged = cli("ls", *connection, "--verbose", "-o", "json")
    assert logged.code == 0, logged.err
    assert "lance-ns: connecting to" in logged.err
    assert "=***" in logged.err
    for fmt in ("table", "json", "jsonl"):
        shown = cli("config", *connection, "-o", fmt)
        assert shown.code == 0
        assert "***" in shown.out
    failed = cli("describe", "no.such", *connection, "--verbose")
    assert failed.code == 3
    assert "Traceback" in failed.err


def test_secret_detection_covers_the_usual_names() -> None:
    for key in ("auth_token", "api_key", "x-api-key", "credential", "storage.aws_secret_access_key",
                "password", "header.Authorization", "storage.azure_storage_account_key",
                "session_token", "client_secret"):  # fmt: skip
        assert is_secret_key(key), key
    for key in ("uri", "root", "region", "owner", "max_retries", "keyspace_name"):
        assert not is_secret_key(key), key


def test_serve_takes_its_connection_from_profiles_too(cli: Any, tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", f"profiles:\n  s:\n    root: {CANARY}\n")
    ran = cli("serve", "--config", str(config), "--profile", "s", "--port", "1")
    assert ran.code == 2
    assert ran.err.startswith("lance-ns: error: profile 's' sets no impl")
    assert ran.err.count("\n") == 1


# -- the real script -------------------------------------------------------------------------------


def _script(*argv: str, env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    command = (
        [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "lance_namespace_async._cli"]
    )
    return subprocess.run(
        [*command, *argv], env=env, capture_output=True, text=True, timeout=60, **kwargs
    )


def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("LANCE_NS_")}
    return {**env, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "x"), **extra}


def test_installed_script_crawls_with_progress_on_stderr_only(
    tmp_path: Path, catalog: Path
) -> None:
    async def build() -> None:
        async with lna.connect("dir", {"root": str(catalog)}) as ns:
            for namespace in TREE:
                await ns.create_namespace({"id": list(namespace)})  # type: ignore[arg-type]
            for table in TABLES:
                await ns.declare_table({"id": list(table)})  # type: ignore[arg-type]

    anyio.run(build)
    env = _environment(
        tmp_path,
        LANCE_NS_CLI__IMPL="dir",
        LANCE_NS_CLI__ROOT=str(catalog),
        LANCE_NS_CLI__STORAGE__AWS_SECRET_ACCESS_KEY=CANARY,
        LANCE_NS_PROFILE="cli",
    )
    ran = _script("crawl", "--progress", "-o", "jsonl", "--verbose", env=env)
    assert ran.returncode == 0, ran.stderr
    ids = sorted(tuple(json.loads(line)["id"]) for line in ran.stdout.splitlines())
    assert ids == sorted(TABLES)
    assert "5 tables found" in ran.stderr
    assert CANARY not in ran.stdout + ran.stderr


def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        command = (
            [str(SCRIPT)]
            if SCRIPT.exists()
            else [sys.executable, "-m", "lance_namespace_async._cli"]
        )
        process = subprocess.Popen(
            [*command, "ls", "--impl", "rest", "--prop", f"uri={uri}", "--prop", "max_retries=0"],
            env=_environment(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            silent.settimeout(30)
            connection, _ = silent.accept()  # the request is under way
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=30)
            connection.close()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.strip() == "lance-ns: interrupted"
    assert stdout == ""
