"""The conformance kit (lance_namespace_async.testing) over every backend we ship.

Every scenario runs against: ``dir``; ``rest`` against pylance's own Rust server
(RestAdapter over a directory) and against our adapter server (over ``dir``);
``iceberg`` on the Iceberg project's own REST server (the session's, from Maven Central;
the kit works below a top-level namespace of a unique name) and on our contract-checked
look-alike (``iceberg-lookalike``), ``unity`` (the spec-checked
Unity look-alike, as 0.5+), ``glue`` on moto's server and on the model-checked fake (which has
child catalogs and pages of 3), and ``hive`` against real Hive Metastores 2.3.10 and
4.0.1 (``hive-2.3``, ``hive-4``: conftest's session-scoped ``hive_metastores``, shared
with test_hive). Other servers are module-scoped; each scenario works in a namespace of
its own.

A third party's kit run may skip scenarios whose operation its backend does not
support. Ours may not drift: :data:`EXPECTED_SKIPS` is the exact set of skipped
scenarios per backend, with their reasons, so a regression that makes an
operation unsupported fails here, and so does an operation that starts working.
:data:`EXPECTED_FAILURES` lists where a peer we do not control (pylance 14.0.2's
server) or a documented choice (iceberg's seed-000 drop) departs from the kit;
each must still fail, so the day it changes is noticed.

The plugin itself (third-party use from any directory) is proven at the end, with
pytester and with one real ``pytest`` subprocess in an empty directory.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from glue_fixtures import FAKE_AWS_ENV, REGION, fake_glue, moto_glue
from hive_metastore import Metastore
from iceberg_real_server import ReferenceIcebergServer, unique_name
from iceberg_rest_server import iceberg_catalog
from lance.namespace import RestAdapter
from unity_real import unity_under_test
from uvicorn_thread import UvicornThread

import lance_namespace_async as lna
from lance_namespace_async._core.registry import resolve_impl
from lance_namespace_async.errors import LanceNamespaceError
from lance_namespace_async.testing import (
    SCENARIOS,
    KitRunner,
    KitSettings,
    Scenario,
    ScenarioSkipped,
)

pytest_plugins = ["pytester"]

# -- what each backend legitimately does not do ----------------------------------------------

_NESTED = {
    "create_namespace_needs_its_parent": "nested",
    "drop_namespace_behavior_restrict_refuses_a_namespace_with_children": "nested",
    "drop_namespace_behavior_cascade_drops_child_namespaces": "nested",
    "a_table_and_a_namespace_never_share_a_name": "nested",
}
_RENAME = {
    "rename_table_renames_within_its_namespace": "RenameTable",
    "rename_table_moves_it_to_another_namespace": "RenameTable",
    "rename_table_refuses_an_existing_target": "RenameTable",
    "rename_table_of_a_missing_table_is_not_found": "RenameTable",
    "rename_table_into_a_missing_namespace_is_not_found": "RenameTable",
}
#: Hive (``[A-Za-z0-9_]``) and Unity (``[a-zA-Z0-9_@-]``) refuse such names with InvalidInput
_ASCII_NAMES = {"identifiers_with_unicode_and_spaces": "names"}

#: Hive 4 allows spaces (and '-', '/', ':') in names; it still refuses non-ASCII ones
_NON_ASCII_NAMES = {
    f"identifiers_with_unicode_and_spaces[{name}]": "names"
    for name in ("données", "名前", "émoji 🚀")
}

#: backend -> {scenario base name, or full name with its parameter: the operation it lacks,
#: "nested" (a flat backend) or "names" (the catalog refuses unicode/space names with
#: InvalidInput)}
EXPECTED_SKIPS: dict[str, dict[str, str]] = {
    "dir": {},
    "rest-pylance": {},
    "rest-adapter": {},
    "iceberg": {},
    "iceberg-lookalike": {},
    "unity": {**_NESTED, **_RENAME, **_ASCII_NAMES},
    "glue-moto": {**_NESTED},
    "glue-fake": {**_NESTED},
    "hive-2.3": {**_NESTED, **_ASCII_NAMES},
    "hive-4": {**_NESTED, **_NON_ASCII_NAMES},
}

#: where pylance 14.0.2's own server (RestAdapter over its DirectoryNamespace) breaks the
#: specification; each must still fail, so a pylance upgrade that fixes one shows up here.
#: (Our dir backend adds exactly these on top of pylance's Rust implementation.)
_RELATIVE_ONLY = "RegisterTable refuses absolute locations (InvalidInput): root-relative only"
PYLANCE_SERVER_BREAKS: dict[str, str] = {
    "a_job_nobody_started_is_not_found": "no jobs: a bare transaction id is InvalidInput",
    "a_materialized_view_is_created_empty_then_refreshed_by_a_job": (
        "CreateMaterializedView not implemented, as code 18"
    ),
    "a_materialized_view_over_a_missing_table_is_refused": (
        "CreateMaterializedView not implemented, as code 18"
    ),
    "create_namespace_mode_exist_ok_keeps_the_existing_namespace": "ExistOk: AlreadyExists",
    "create_namespace_mode_overwrite_replaces_it_with_an_empty_one": "Overwrite: AlreadyExists",
    "create_namespace_refuses_an_unknown_mode": "any mode is accepted",
    "list_namespaces_of_a_missing_namespace_is_not_found": "a missing namespace lists empty",
    "list_tables_of_a_missing_namespace_is_not_found": "a missing namespace lists empty",
    "drop_namespace_mode_skip_ignores_a_missing_namespace": "Skip: NamespaceNotFound",
    "drop_namespace_behavior_cascade_drops_its_tables_and_their_data": "Cascade: NotEmpty",
    "drop_namespace_behavior_cascade_drops_child_namespaces": "Cascade: NotEmpty",
    "drop_namespace_refuses_an_unknown_mode_or_behavior": "any mode/behavior is accepted",
    "declare_table_needs_its_namespace": "declares into a missing namespace",
    "register_table_registers_an_existing_table": _RELATIVE_ONLY,
    "register_table_mode_create_refuses_an_existing_table": _RELATIVE_ONLY,
    "register_table_mode_overwrite_replaces_the_registration": _RELATIVE_ONLY,
    "register_table_needs_its_namespace": _RELATIVE_ONLY,
    "drop_table_keeps_the_data_of_a_table_registered_outside_the_root": _RELATIVE_ONLY,
    "describe_table_reads_the_latest_version_with_details": "no stats",
    "describe_table_of_a_missing_version_is_table_version_not_found": "succeeds",
    "table_exists_of_a_version": "the version is ignored",
    "rename_table_renames_within_its_namespace": "not implemented, as code 18 (not 0)",
    "rename_table_moves_it_to_another_namespace": "not implemented, as code 18 (not 0)",
    "rename_table_refuses_an_existing_target": "not implemented, as code 18 (not 0)",
    "rename_table_of_a_missing_table_is_not_found": "not implemented, as code 18 (not 0)",
    "rename_table_into_a_missing_namespace_is_not_found": "not implemented, as code 18 (not 0)",
    "list_all_tables_lists_the_tables_of_every_namespace": "lists no namespaced tables",
    "list_all_tables_honours_delimiter_and_include_declared": "lists no namespaced tables",
    "restore_table_of_a_missing_version_is_table_version_not_found": "code 18 (not 11)",
    "insert_into_table_refuses_rows_of_another_schema": "code 18 (not 20)",
    "count_table_rows_with_a_bad_filter_is_invalid_input": "code 18 (not 13)",
    "batch_create_table_versions_records_every_version_or_none": "not implemented, as 18 (not 0)",
    "batch_commit_tables_applies_every_operation_or_none": "not implemented, as 18 (not 0)",
    "table_branches_are_created_listed_and_deleted": "an insert on a branch lands on main",
    "a_branch_name_or_a_missing_branch_is_refused_before_anything_changes": (
        "an insert on a missing branch lands on main"
    ),
    "operations_on_a_branch_act_on_it_never_on_main": "a delete on a branch acts on main",
    "update_field_metadata_stores_it_on_that_field": "not implemented, as 18 (not 0)",
    "a_computed_column_is_added_empty_and_a_backfill_job_fills_it": (
        "computed columns: an expression is required, as 18 (not 0)"
    ),
}
#: backend -> {scenario name, or base name for all its parameters: why it must fail}
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "rest-pylance": PYLANCE_SERVER_BREAKS,
    # README: following seed 000, dropping a missing namespace succeeds unless mode=Fail
    # is given explicitly
    "iceberg": {
        "drop_namespace_mode_fail_on_a_missing_namespace_is_not_found[default]": "seed 000"
    },
    "iceberg-lookalike": {
        "drop_namespace_mode_fail_on_a_missing_namespace_is_not_found[default]": "seed 000"
    },
}

#: children of the pagination scenarios: the kit's default 1,000 for dir, both rest
#: peers and iceberg; 120 (still 18 pages of 7) for the rest. Unity, glue and hive
#: return sorted pages, so every page of 7 re-reads the whole listing from the catalog
#: (Unity 50 items a request, Glue pages of 3 on the fake): quadratic in N. Measured on
#: this 2-core machine at load ~12: unity at 1,000 took 67 s + 107 s; hive at 120 takes
#: 7 s + 20 s (Derby commits every database and table one by one), glue 120 ~10 s each.
#: The iceberg look-alike pages 1,000 in 90-180 s here (SqlCatalog on sqlite, every
#: request contract-checked); the reference server runs the full 1,000.
MANY: dict[str, int] = {
    "unity": 120,
    "glue-moto": 120,
    "glue-fake": 120,
    "hive-2.3": 120,
    "hive-4": 120,
    "iceberg-lookalike": 120,
}


@dataclass(frozen=True)
class Backend:
    name: str
    settings: KitSettings
    runner: KitRunner


# -- servers -----------------------------------------------------------------------------------


@contextlib.contextmanager
def our_adapter(root: Path) -> Iterator[str]:
    """Our REST adapter server (uvicorn in a thread) over a dir backend."""
    from lance_namespace_async.server import create_app

    server = UvicornThread(
        create_app(lna.connect("dir", {"root": str(root)})),
        name="kit-adapter",
        description="our REST adapter server",
    )
    try:
        yield server.start()
    finally:
        server.stop()


@contextlib.contextmanager
def pylance_adapter(root: Path) -> Iterator[str]:
    """pylance's own Rust RestAdapter over its DirectoryNamespace."""
    adapter = RestAdapter("dir", {"root": str(root)}, host="127.0.0.1", port=0)
    adapter.start()
    try:
        yield f"http://127.0.0.1:{adapter.port}"
    finally:
        adapter.stop()


@contextlib.contextmanager
def aws_environment() -> Iterator[None]:
    """Fake credentials, no config files, never AWS (as in test_glue.py)."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in FAKE_AWS_ENV.items():
            if value is None:
                patch.delenv(key, raising=False)
            else:
                patch.setenv(key, value)
        yield


@contextlib.contextmanager
def running_param(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
    prefix: str,
) -> Iterator[KitSettings]:
    """:func:`running` for a fixture parametrized by server name (``request.param``), in a
    fresh ``<prefix>-<name>`` folder, with the session's Iceberg reference server when the
    name is ``iceberg`` (started only then)."""
    name = str(request.param)
    iceberg = request.getfixturevalue("iceberg_reference") if name == "iceberg" else None
    place = tmp_path_factory.mktemp(f"{prefix}-{name}")
    with running(name, place, hive_metastores, iceberg) as settings:
        yield settings


@contextlib.contextmanager
def running(
    name: str,
    tmp: Path,
    hive_metastores: Callable[[str], Metastore],
    iceberg: ReferenceIcebergServer | None = None,
) -> Iterator[KitSettings]:
    """The backend ``name`` on real local servers, as kit settings.

    ``iceberg`` is the session's Iceberg reference server (only for ``name="iceberg"``).
    """
    data = tmp / "lance-root"
    data.mkdir()
    many = MANY.get(name, 1000)
    outside = str(tmp / "outside")  # beside the storage root, not in it
    if name == "dir":
        yield KitSettings("dir", {"root": str(data)}, many=many, outside=outside)
    elif name == "rest-pylance":
        with pylance_adapter(data) as uri:
            properties = {"uri": uri, "max_retries": "0"}
            yield KitSettings("rest", properties, many=many, outside=outside)
    elif name == "rest-adapter":
        with our_adapter(data) as uri:
            properties = {"uri": uri, "max_retries": "0"}
            yield KitSettings("rest", properties, many=many, outside=outside)
    elif name == "iceberg":
        assert iceberg is not None
        space = unique_name("kit")
        iceberg.rest_client().create_namespace(space)
        properties = iceberg.properties(root=str(data), retry_backoff_ms="1", warehouses="wh")
        yield KitSettings("iceberg", properties, root=("wh", space), many=many, outside=outside)
    elif name == "iceberg-lookalike":
        with iceberg_catalog(tmp / "iceberg") as catalog:
            properties = {
                "endpoint": catalog.uri,
                "root": str(data),
                "retry_backoff_ms": "1",
                "warehouses": "wh",
            }
            yield KitSettings("iceberg", properties, root=("wh",), many=many, outside=outside)
    elif name == "unity":
        with unity_under_test() as server:  # LANCE_NS_UNITY_URI: a real server
            server.add_catalog("main")
            properties = {"endpoint": server.uri, "root": str(data), "retry_backoff_ms": "1"}
            yield KitSettings(
                "unity", properties, root=("main",), flat=True, many=many, outside=outside
            )
    elif name in ("glue-moto", "glue-fake"):
        with aws_environment(), contextlib.ExitStack() as stack:
            properties = {"region": REGION, "root": str(data)}
            if name == "glue-moto":  # moto has no catalog APIs (see glue_fixtures)
                properties |= {"endpoint": stack.enter_context(moto_glue())}
                properties |= {"child_catalogs": "false"}
            else:
                properties |= {"endpoint": stack.enter_context(fake_glue()).endpoint}
            yield KitSettings("glue", properties, flat=True, many=many, outside=outside)
    elif name.startswith("hive-"):
        metastore = hive_metastores(name.removeprefix("hive-"))
        properties = {"uri": metastore.uri, "root": str(data)}
        yield KitSettings("hive", properties, flat=True, many=many, outside=outside)
    else:
        raise ValueError(name)


@pytest.fixture(scope="module", params=list(EXPECTED_SKIPS))
def backend(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    hive_metastores: Callable[[str], Metastore],
) -> Iterator[Backend]:
    with (
        running_param(request, tmp_path_factory, hive_metastores, "kit") as settings,
        KitRunner(settings) as runner,
    ):
        yield Backend(str(request.param), settings, runner)


# -- the kit over every backend ----------------------------------------------------------------


def _expected_skip(backend: Backend, scenario_name: str) -> str | None:
    skips = EXPECTED_SKIPS[backend.name]
    kind = skips.get(scenario_name, skips.get(scenario_name.partition("[")[0]))
    if kind is None:
        return None
    impl = backend.settings.impl
    if kind == "nested":
        return "needs namespaces nested below the kit root (the kit runs flat)"
    if kind == "names":
        return f"namespace name {scenario_name.partition('[')[2][:-1]!r} refused by {impl}"
    return f"{kind} unsupported by {impl}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_kit_scenario_passes_or_skips_exactly_as_expected(
    backend: Backend, scenario: Scenario
) -> None:
    known = EXPECTED_FAILURES.get(backend.name, {})
    breaks = known.get(scenario.name, known.get(scenario.name.partition("[")[0]))
    if breaks is not None:  # a peer's known deviation: must still be caught by the kit
        with pytest.raises((AssertionError, LanceNamespaceError)):
            backend.runner.run(scenario)
        PASSED[backend.name][scenario.name] = frozenset()
        return
    expected = _expected_skip(backend, scenario.name)
    if expected is None:
        answered = backend.runner.run(scenario)  # ScenarioSkipped here fails the test
        PASSED[backend.name][scenario.name] = answered
        return
    with pytest.raises(ScenarioSkipped) as skipped:
        backend.runner.run(scenario)
    assert skipped.value.reason.startswith(expected), skipped.value.reason
    PASSED[backend.name][scenario.name] = frozenset()


#: backend -> {scenario that ran as expected in this session: the operations that
#: answered while it passed (empty for an expected skip or failure)}; filled above
PASSED: dict[str, dict[str, frozenset[str]]] = {name: {} for name in EXPECTED_SKIPS}

#: the REST backend lists every operation (a client sends whatever it is asked): what
#: works is what the server behind it runs, a directory here
SERVED_BY = {"rest-pylance": "dir", "rest-adapter": "dir"}
#: what pylance 14.0.2's server does not do that our dir backend does (see
#: PYLANCE_SERVER_BREAKS: every scenario of these fails there)
PYLANCE_SERVER_LACKS = {
    "RenameTable": "not implemented, as code 18",
    "ListAllTables": "lists no namespaced tables",
    "BatchCreateTableVersions": "not implemented, as code 18",
    "BatchCommitTables": "not implemented, as code 18",
    "UpdateFieldMetadata": "not implemented, as code 18",
    "RegisterTable": "root-relative locations only; the kit registers absolute ones",
    # it answers the branch operations, but every branch scenario fails on it (writes
    # addressed to a branch land on main): see PYLANCE_SERVER_BREAKS
    "CreateTableBranch": "its branch scenarios fail (writes land on main)",
    "ListTableBranches": "its branch scenarios fail (writes land on main)",
    "DeleteTableBranch": "its branch scenarios fail (writes land on main)",
    "CreateMaterializedView": "not implemented, as code 18",
    "RefreshMaterializedView": "not implemented, as code 18",
    "AlterTableBackfillColumns": "not implemented, as code 18",
}


def listed_operations(backend: Backend) -> set[str]:
    """The operation ids ``backend`` lists (for REST: what the server behind it runs)."""
    impl = SERVED_BY.get(backend.name, backend.settings.impl)
    methods = set(resolve_impl(impl).list_operations())
    listed = {op.operation_id for op in lna.OPERATIONS if op.method in methods}
    if backend.name == "rest-pylance":
        listed -= set(PYLANCE_SERVER_LACKS)
    return listed


def test_every_listed_operation_answers_in_a_scenario_that_passes_there(
    backend: Backend,
) -> None:
    """Each operation the backend lists answers (raises nothing) in at least one scenario
    that passes on that backend: ``list_operations()`` claims nothing the kit does not
    check (its counterpart, every_unlisted_operation_answers_unsupported, checks the
    others). Runs after the whole kit on the backend in the same session."""
    ran = PASSED[backend.name]
    if len(ran) < len(SCENARIOS):
        pytest.skip(f"needs the whole kit run on {backend.name} first ({len(ran)} ran)")
    exercised = set().union(*ran.values())
    unexercised = sorted(listed_operations(backend) - exercised)
    assert not unexercised, f"listed by {backend.name}, never answered in a passing scenario"


def test_every_expected_skip_names_a_real_scenario() -> None:
    names = {scenario.name.partition("[")[0] for scenario in SCENARIOS}
    full_names = {scenario.name for scenario in SCENARIOS}
    for backend, skips in EXPECTED_SKIPS.items():
        assert set(skips) <= names | full_names, backend
    for backend, breaks in EXPECTED_FAILURES.items():
        assert set(breaks) <= names | full_names, backend


# -- the plugin, as a third party uses it ------------------------------------------------------


def test_the_plugin_adds_nothing_without_an_impl(pytester: pytest.Pytester) -> None:
    # the third party's own configuration: without it pytest-asyncio warns that its
    # loop scope is unset, a warning about their setup that the inert plugin leaves alone
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    assert pytester.runpytest("-p", "no:cacheprovider").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.makepyfile(test_theirs="def test_one():\n    pass\n")
    collected = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert "lance-ns-kit" not in collected.stdout.str()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_whole_kit_runs_from_an_empty_directory(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """--lance-ns-impl takes a class path too; --lance-ns-prop repeats."""
    catalog = tmp_path / "catalog"
    options = [
        "--lance-ns-impl=lance_namespace_async.directory:DirectoryNamespace",
        f"--lance-ns-prop=root={catalog}",
        f"--lance-ns-outside={tmp_path / 'outside'}",
        "--lance-ns-prop=worker_threads=4",
        "--lance-ns-many=30",
        "-p",
        "no:cacheprovider",
    ]
    collected = pytester.runpytest("--collect-only", "-q", *options)
    kit_items = [line for line in collected.outlines if line.startswith("lance-ns-kit[")]
    assert len(kit_items) == len(SCENARIOS)
    result = pytester.runpytest(*options, "-rs")
    result.assert_outcomes(passed=len(SCENARIOS))
    assert catalog.exists()
    # nothing left behind but the job records the pipeline keeps as history (_lna_jobs)
    assert sorted(p.name for p in catalog.iterdir()) == ["__manifest", "_lna_jobs"]


def test_the_kit_selects_scenarios_by_keyword(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = pytester.runpytest(
        "--lance-ns-impl=dir",
        f"--lance-ns-prop=root={tmp_path / 'catalog'}",
        f"--lance-ns-outside={tmp_path / 'outside'}",
        "-k",
        "drop_table",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=sum("drop_table" in s.name for s in SCENARIOS))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--lance-ns-impl=dir", "--lance-ns-prop=root"], "--lance-ns-prop expects KEY=VALUE"),
        (["--lance-ns-impl=no_such_impl"], "--lance-ns-impl no_such_impl"),
        (["--lance-ns-impl=dir", "--lance-ns-many=0"], "must be positive"),
    ],
)
def test_bad_kit_options_are_usage_errors(
    pytester: pytest.Pytester, options: list[str], message: str
) -> None:
    result = pytester.runpytest(*options, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_real_pytest_process_runs_the_kit_against_a_server(tmp_path: Path) -> None:
    """What a third party types, in an empty directory, against a REST server."""
    empty = tmp_path / "empty"
    empty.mkdir()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    with pylance_adapter(tmp_path / "served") as uri:
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--lance-ns-impl",
            "rest",
            "--lance-ns-prop",
            f"uri={uri}",
            "--lance-ns-many",
            "20",
            "-k",
            "paginates or unicode or mode_create_refuses_an_existing_namespace",
        ]
        done = subprocess.run(
            command, cwd=empty, env=environment, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{2 + 4 + 3} passed" in done.stdout, done.stdout
