"""pytest plugin of the conformance kit (entry point ``pytest11``: ``lance_namespace_async``).

Installed with the package and loaded by every pytest run, so it is inert unless
``--lance-ns-impl`` is given: it then adds the kit's scenarios as test items to
whatever else the run collects, from any working directory (an empty one too)::

    pytest --lance-ns-impl dir --lance-ns-prop root=/tmp/kit
    pytest --lance-ns-impl my_pkg.mod:MyNamespace --lance-ns-prop uri=http://127.0.0.1:2333

How the items get in: the kit is not a file on the command line, so the usual
``pytest_collect_file`` route (pytest-mypy, pytest-ruff) never reaches it, and items
appended in ``pytest_collection_modifyitems`` bypass collection itself (no
``pytest_itemcollected``, not counted in "collected N items"; pytest-mypy stopped
injecting its status item that way in 0.8.0 because it broke ``--looponfail``).
Instead this plugin wraps ``pytest_make_collect_report`` for the *session* and adds
one :class:`KitCollector` to the session's collected children: pytest then collects
it like anything it was given (``pytest_itemcollected``, ``-k``/``-m``,
``--collect-only``, ``--deselect`` by node id all work), whatever the arguments and
the working directory are.

Only pytest and the standard library are imported here at start-up; the kit
itself is imported when it is asked for, so a plugin that every run loads stays
cheap and cannot break runs that do not use it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._kit import KitRunner, KitSettings, Scenario

# assertion messages with values, like in a test module (must precede the import)
pytest.register_assert_rewrite(
    "lance_namespace_async.testing._kit",
    "lance_namespace_async.testing._scenario",
    "lance_namespace_async.testing.scenarios",
    "lance_namespace_async.testing.data_scenarios",
    "lance_namespace_async.testing.batch_scenarios",
    "lance_namespace_async.testing.job_scenarios",
    "lance_namespace_async.testing.backfill_scenarios",
)

_SETTINGS_KEY = pytest.StashKey["KitSettings | None"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lance-ns", "Lance Namespace conformance kit")
    group.addoption(
        "--lance-ns-impl",
        metavar="IMPL",
        help="run the conformance kit against this backend: an impl name (dir, rest, ...) "
        "or a class path such as my_pkg.module:MyNamespace",
    )
    group.addoption(
        "--lance-ns-prop",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a property of the backend (repeatable)",
    )
    group.addoption(
        "--lance-ns-root",
        metavar="ID",
        default="",
        help="namespace ($-joined) under which every scenario makes its own "
        "(default: the root; e.g. a warehouse or catalog name)",
    )
    group.addoption(
        "--lance-ns-flat",
        action="store_true",
        help="namespaces cannot nest below the kit root (Hive/Glue databases, Unity schemas)",
    )
    group.addoption(
        "--lance-ns-many",
        metavar="N",
        type=int,
        default=1000,
        help="children the pagination scenarios create (default 1000)",
    )
    group.addoption(
        "--lance-ns-page-size",
        metavar="N",
        type=int,
        default=7,
        help="limit the pagination scenarios list with (default 7)",
    )
    group.addoption(
        "--lance-ns-concurrency",
        metavar="N",
        type=int,
        default=16,
        help="calls in flight while creating many children (default 16)",
    )
    group.addoption(
        "--lance-ns-outside",
        metavar="LOCATION",
        default=None,
        help="a writable location outside the backend's storage root, for the scenarios "
        "that register tables there (skipped without it)",
    )


def settings_from_options(config: pytest.Config) -> KitSettings | None:
    """The kit's settings from the command line; None without ``--lance-ns-impl``."""
    impl = config.getoption("lance_ns_impl")
    if not impl:
        return None
    from .._core.identifiers import parse_identifier
    from ..errors import LanceNamespaceError
    from ._kit import KitSettings

    properties: dict[str, str] = {}
    for entry in config.getoption("lance_ns_prop"):
        key, sep, value = str(entry).partition("=")
        if not sep or not key:
            raise pytest.UsageError(f"--lance-ns-prop expects KEY=VALUE, got {entry!r}")
        properties[key] = value
    try:
        root = parse_identifier(config.getoption("lance_ns_root"))
        return KitSettings(
            impl=str(impl),
            properties=properties,
            root=root,
            flat=bool(config.getoption("lance_ns_flat")),
            many=int(config.getoption("lance_ns_many")),
            page_size=int(config.getoption("lance_ns_page_size")),
            concurrency=int(config.getoption("lance_ns_concurrency")),
            outside=config.getoption("lance_ns_outside") or None,
        )
    except (LanceNamespaceError, ValueError) as exc:
        raise pytest.UsageError(f"lance-ns kit: {exc}") from None


_LOOP_SCOPE_OPTION = "asyncio_default_fixture_loop_scope"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = settings_from_options(config)
    if settings is not None:
        _default_fixture_loop_scope(config)
    if settings is not None:
        from .._core.registry import resolve_impl
        from ..errors import LanceNamespaceError

        try:  # fail fast on a misspelt impl, before anything is collected
            resolve_impl(settings.impl)
        except LanceNamespaceError as exc:
            raise pytest.UsageError(f"--lance-ns-impl {settings.impl}: {exc}") from None
    config.stash[_SETTINGS_KEY] = settings


def _default_fixture_loop_scope(config: pytest.Config) -> None:
    """Run from a directory without pytest configuration, the kit would start with
    pytest-asyncio's deprecation warning that ``asyncio_default_fixture_loop_scope``
    is unset. The kit's scenarios use no async fixtures; the value pytest-asyncio
    announces as its future default ("function") is set, unless the user set one.

    This runs before pytest-asyncio's own ``pytest_configure`` reads the option
    (``tryfirst``). pytest has no public way for a plugin to default another
    plugin's ini option, so the value goes into the config's ini cache, which
    ``getini`` consults first.
    """
    if not config.pluginmanager.hasplugin("asyncio"):
        return
    try:
        configured = config.getini(_LOOP_SCOPE_OPTION)
    except ValueError:  # a pytest-asyncio without that option
        return
    cache = getattr(config, "_inicache", None)
    if not configured and isinstance(cache, dict):
        cache[_LOOP_SCOPE_OPTION] = "function"


def pytest_report_header(config: pytest.Config) -> str | None:
    settings = config.stash.get(_SETTINGS_KEY, None)
    if settings is None:
        return None
    keys = ", ".join(sorted(settings.properties)) or "none"  # values may be secrets
    return (
        f"lance-ns kit: impl={settings.impl} root={list(settings.root)} flat={settings.flat} "
        f"many={settings.many} page_size={settings.page_size} (property keys: {keys})"
    )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    settings = collector.config.stash.get(_SETTINGS_KEY, None)
    if settings is not None and isinstance(collector, pytest.Session) and report.passed:
        report.result.append(KitCollector.from_parent(collector, settings=settings))
    return report


class KitCollector(pytest.Collector):
    """The kit's scenarios for one backend, as one collector below the session."""

    def __init__(self, *, settings: KitSettings, **kwargs: Any) -> None:
        name = f"lance-ns-kit[{settings.impl}]"
        super().__init__(name=name, nodeid=name, **kwargs)
        self.settings = settings
        self.runner: KitRunner | None = None

    def setup(self) -> None:
        """One event loop and one connection for all the scenarios (see KitRunner)."""
        from ._kit import KitRunner

        self.runner = KitRunner(self.settings)
        self.runner.start()

    def teardown(self) -> None:
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def collect(self) -> Iterator[ScenarioItem]:
        from .scenarios import SCENARIOS

        for scenario in SCENARIOS:
            yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)


class ScenarioItem(pytest.Item):
    """One scenario run against the collector's backend."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        from ._kit import ScenarioSkipped

        parent = self.parent
        if not isinstance(parent, KitCollector) or parent.runner is None:
            raise RuntimeError("a kit scenario runs below its KitCollector")
        try:
            parent.runner.run(self.scenario)
        except ScenarioSkipped as skipped:
            pytest.skip(skipped.reason)

    def reportinfo(self) -> tuple[str, int, str]:
        path, line = self.scenario.location
        return path, line, f"{self.name}: {self.scenario.doc.splitlines()[0]}"
