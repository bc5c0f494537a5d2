"""The conformance kit's machinery: settings, the per-scenario ``Kit`` and the runner.

A scenario is an ``async def`` taking a :class:`Kit`. The runner connects to the
backend under test, gives the scenario a namespace of its own (``kit.home``, a
fresh uniquely-named child of the kit root), runs it, and drops everything the
scenario made afterwards, whatever happened. An operation the backend does not
support raises ``UnsupportedOperationError`` (code 0): the runner checks it is
exactly that error and reports the scenario as skipped with the reason
``"<Operation> unsupported by <impl>"``.

Nothing here imports pytest: the plugin (``plugin.py``) turns outcomes into pytest
reports, and a project's own suite may call :func:`run_scenario` directly.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import secrets
import types
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar, cast

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .. import errors
from .._core.base import OPERATIONS, AsyncLanceNamespace
from .._core.operation_methods import DictRequestOperations
from .._core.registry import connect

#: a request as the kit writes it: the request model's fields as a dict
Request = Mapping[str, Any]

__all__ = [
    "Kit",
    "KitRunner",
    "KitSettings",
    "Namespace",
    "Scenario",
    "ScenarioSkipped",
    "run_scenario",
]

E = TypeVar("E", bound=errors.LanceNamespaceError)

#: public coroutine code object -> operation id, to name the operation that raised
_OPERATION_OF_CODE: dict[types.CodeType, str] = {
    getattr(AsyncLanceNamespace, op.method).__code__: op.operation_id for op in OPERATIONS
}
_OPERATION_OF_METHOD: dict[str, str] = {op.method: op.operation_id for op in OPERATIONS}


class Namespace(DictRequestOperations, Protocol):
    """The operations as the kit calls them: with plain dict requests, which every
    :class:`AsyncLanceNamespace` coroutine accepts (see ``coerce_request``); their
    signatures come from the stub generated from spec/rest.yaml."""

    delimiter: str


@dataclass(frozen=True)
class KitSettings:
    """What the kit runs against and how hard it pushes.

    ``root`` is the namespace under which every scenario creates its own (the
    true root by default; ``("wh",)`` for an Iceberg warehouse, ``("main",)`` for a
    Unity catalog). ``flat`` says namespaces cannot nest below ``root`` (Hive and
    Glue databases, Unity schemas): scenarios that need a namespace inside a
    namespace are then skipped, and the children a scenario lists are siblings of
    its own namespace. ``many`` is the number of children the pagination scenarios
    create, ``page_size`` the ``limit`` they list with, ``concurrency`` how many
    calls they keep in flight while creating. ``outside`` is a location outside the
    backend's storage root where the kit may write tables (a path or URI the server
    can read too); the scenarios that register a table there are skipped without it.
    """

    impl: str
    properties: Mapping[str, str] = field(default_factory=dict)
    root: tuple[str, ...] = ()
    flat: bool = False
    many: int = 1000
    page_size: int = 7
    concurrency: int = 16
    outside: str | None = None

    def __post_init__(self) -> None:
        if not self.impl:
            raise ValueError("impl must not be empty")
        if self.many < 1 or self.page_size < 1 or self.concurrency < 1:
            raise ValueError("many, page_size and concurrency must be positive")
        object.__setattr__(self, "properties", dict(self.properties))
        object.__setattr__(self, "root", tuple(self.root))

    def outside_location(self, name: str) -> str:
        """A fresh location below ``outside`` (ScenarioSkipped without it)."""
        if not self.outside:
            raise ScenarioSkipped("needs a location outside the storage root (outside)")
        return f"{self.outside.rstrip('/')}/{name}"

    def storage_options(self) -> dict[str, str]:
        """The ``storage.*`` properties, for writing table data with pylance."""
        return {
            key.removeprefix("storage."): value
            for key, value in self.properties.items()
            if key.startswith("storage.")
        }


class ScenarioSkipped(Exception):
    """The scenario cannot run against this backend; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Scenario:
    """One specification: ``func`` run with a fresh :class:`Kit`.

    ``name`` is the pytest item name; ``nested`` marks scenarios that need a
    namespace inside a namespace below the kit root.
    """

    name: str
    func: Callable[..., Awaitable[None]]
    args: tuple[Any, ...] = ()
    nested: bool = False

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.func) or ""

    @property
    def location(self) -> tuple[str, int]:
        """(source file, 0-based line) of the scenario, for test reports."""
        code = self.func.__code__
        return code.co_filename, code.co_firstlineno - 1


def properties_of(response: object) -> dict[str, str]:
    """The string map of a response's ``properties`` (empty when absent)."""
    value = getattr(response, "properties", None)
    extra = getattr(value, "additional_properties", None)
    return {str(k): str(v) for k, v in (extra or {}).items()}


class _Answering:
    """The backend as a scenario calls it: each operation that answers (raises
    nothing) is added to ``answered``, so a run can tell which operations a passing
    scenario really exercised."""

    def __init__(self, ns: AsyncLanceNamespace, answered: set[str]) -> None:
        self._ns = ns
        self._answered = answered

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._ns, name)
        operation = _OPERATION_OF_METHOD.get(name)
        if operation is None:
            return value

        @functools.wraps(value)
        async def call(*args: Any, **kwargs: Any) -> Any:
            result = await value(*args, **kwargs)
            self._answered.add(operation)
            return result

        return call


class Kit:
    """What a scenario works with: the backend, its own namespace, and helpers."""

    def __init__(self, ns: AsyncLanceNamespace, settings: KitSettings, token: str) -> None:
        #: the operation ids that answered a call through ``ns`` (see :class:`_Answering`)
        self.answered: set[str] = set()
        #: the backend under test, typed for the dict requests the kit writes
        self.ns = cast(Namespace, _Answering(ns, self.answered))
        #: the same object as an AsyncLanceNamespace (for crawl and the like)
        self.backend = ns
        self.settings = settings
        self.token = token
        #: the scenario's own namespace, created before it runs and dropped after
        self.home: list[str] = [*settings.root, f"kit_{token}"]
        self._children: list[list[str]] = []
        self._loose: list[tuple[str, dict[str, str]]] = []

    # -- identifiers -------------------------------------------------------------------

    def child(self, name: str) -> list[str]:
        """The id of a namespace this scenario may create (dropped afterwards).

        Inside ``home``; with ``flat`` settings a sibling of ``home`` whose name
        starts with home's, since namespaces cannot nest there.
        """
        if self.settings.flat:
            found = [*self.settings.root, f"{self.home[-1]}_{name}"]
        else:
            found = [*self.home, name]
        self._children.append(found)
        return found

    def table(self, name: str, namespace: Sequence[str] | None = None) -> list[str]:
        """The id of table ``name`` in ``namespace`` (default: ``home``)."""
        return [*(self.home if namespace is None else namespace), name]

    def parent_of_children(self) -> list[str]:
        """Where the namespaces of :meth:`child` are listed."""
        return list(self.settings.root) if self.settings.flat else list(self.home)

    def child_names(self, listed: Iterable[str]) -> list[str]:
        """The names of :meth:`child` namespaces among a listing of their parent."""
        if not self.settings.flat:
            return list(listed)
        prefix = f"{self.home[-1]}_"
        return [name.removeprefix(prefix) for name in listed if name.startswith(prefix)]

    # -- data --------------------------------------------------------------------------

    def storage_options(self, response: object = None) -> dict[str, str]:
        """Storage options to write at a location: ``storage.*`` props over the response's."""
        options = self.settings.storage_options()
        given = getattr(response, "storage_options", None)
        options.update(
            {
                str(k): str(v)
                for k, v in (getattr(given, "additional_properties", None) or {}).items()
            }
        )
        return options

    async def write(
        self,
        location: str,
        rows: int = 3,
        *,
        mode: str = "overwrite",
        options: Mapping[str, str] | None = None,
    ) -> None:
        """Write ``rows`` rows (column ``x``) as a Lance table version at ``location``."""
        import lance
        import pyarrow as pa

        data = pa.table({"x": pa.array(range(rows), pa.int64())})
        storage = dict(options) if options is not None else self.storage_options()

        def write() -> None:
            lance.write_dataset(data, location, mode=mode, storage_options=storage or None)

        await anyio.to_thread.run_sync(write)

    async def count_rows(self, location: str, options: Mapping[str, str] | None = None) -> int:
        import lance

        storage = dict(options) if options is not None else self.storage_options()

        def count() -> int:
            return int(lance.dataset(location, storage_options=storage or None).count_rows())

        return await anyio.to_thread.run_sync(count)

    async def exists_on_storage(self, location: str) -> bool:
        """Whether a Lance table can be opened at ``location``."""
        import lance

        storage = self.storage_options()

        def probe() -> bool:
            try:
                lance.dataset(location, storage_options=storage or None)
            except (ValueError, OSError):
                return False
            return True

        return await anyio.to_thread.run_sync(probe)

    async def create_table(self, table_id: Sequence[str], rows: int = 3) -> str:
        """Declare ``table_id`` and write ``rows`` rows at its location; the location."""
        declared = await self.ns.declare_table({"id": list(table_id)})
        location = declared.location
        if not isinstance(location, str) or not location:
            raise AssertionError(f"DeclareTable answered no location: {location!r}")
        await self.write(location, rows, options=self.storage_options(declared))
        return location

    def forget_later(self, location: str) -> None:
        """Delete the Lance table at ``location`` after the scenario (a deregistered one)."""
        self._loose.append((location, self.storage_options()))

    # -- listings ----------------------------------------------------------------------

    async def pages(
        self, operation: str, request: Mapping[str, Any], field_name: str
    ) -> list[list[str]]:
        """Every page of a listing, following ``page_token`` until the last page."""
        call = getattr(self.ns, operation)
        found: list[list[str]] = []
        token: str | None = None
        seen_tokens: set[str] = set()
        while True:
            body = dict(request)
            if token is not None:
                body["page_token"] = token
            page = await call(body)
            found.append(list(getattr(page, field_name)))
            next_token = page.page_token
            if not isinstance(next_token, str) or not next_token:
                return found
            assert next_token not in seen_tokens, f"{operation} returned page token twice"
            seen_tokens.add(next_token)
            assert len(found) <= 100_000, f"{operation} never ends"
            token = next_token

    async def listed(
        self, operation: str, request: Mapping[str, Any], field_name: str
    ) -> list[str]:
        """A whole listing (every page), in the order served."""
        return [name for page in await self.pages(operation, request, field_name) for name in page]

    async def namespaces(self, parent: Sequence[str]) -> list[str]:
        return await self.listed("list_namespaces", {"id": list(parent)}, "namespaces")

    async def tables(self, namespace: Sequence[str] | None = None) -> list[str]:
        where = list(self.home if namespace is None else namespace)
        return await self.listed("list_tables", {"id": where}, "tables")

    # -- expectations ------------------------------------------------------------------

    async def snapshot(self) -> dict[tuple[str, ...], tuple[Any, ...]]:
        """What the scenario's part of the catalog holds: namespaces with their
        properties, tables with their location and version."""
        state: dict[tuple[str, ...], tuple[Any, ...]] = {}

        async def walk(namespace: list[str]) -> None:
            described = await self.ns.describe_namespace({"id": namespace})
            state[tuple(namespace)] = ("namespace", sorted(properties_of(described).items()))
            for name in await self.tables(namespace):
                table = await self.ns.describe_table({"id": [*namespace, name]})
                state[(*namespace, name)] = ("table", table.location, table.version)
            if not self.settings.flat:
                for child in await self.namespaces(namespace):
                    await walk([*namespace, child])

        await walk(list(self.home))
        if self.settings.flat:
            listed = set(await self.namespaces(self.settings.root))
            for child in self._children:
                if child[-1] in listed and child != self.home:
                    await walk(child)
        return state

    async def refuses(
        self,
        error: type[E],
        operation: Callable[[Any], Awaitable[object]],
        request: Mapping[str, Any],
    ) -> E:
        """Call ``operation(request)``; it must raise exactly ``error`` (class and code)
        and leave the scenario's namespaces and tables as they were."""
        before = await self.snapshot()
        try:
            await operation(dict(request))
        except errors.UnsupportedOperationError:
            if error is not errors.UnsupportedOperationError:
                raise
            caught: errors.LanceNamespaceError = errors.UnsupportedOperationError()
        except errors.LanceNamespaceError as exc:
            caught = exc
        else:
            raise AssertionError(
                f"{_name(operation)}({dict(request)}) succeeded; expected "
                f"{error.__name__} (code {error.code})"
            )
        if type(caught) is not error or caught.code != error.code:
            raise AssertionError(
                f"{_name(operation)}({dict(request)}) raised {type(caught).__name__} "
                f"(code {caught.code}: {caught}); expected {error.__name__} (code {error.code})"
            )
        after = await self.snapshot()
        assert after == before, (
            f"{_name(operation)} failed with {error.__name__} but changed the catalog:\n"
            f"before {before}\nafter  {after}"
        )
        return caught

    async def all_at_once(self, calls: Iterable[Callable[[], Awaitable[object]]]) -> None:
        """Run the calls concurrently, at most ``settings.concurrency`` in flight."""
        limiter = anyio.Semaphore(self.settings.concurrency)

        async def one(call: Callable[[], Awaitable[object]]) -> None:
            async with limiter:
                await call()

        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(one, call)

    # -- teardown ----------------------------------------------------------------------

    async def cleanup(self) -> None:
        """Drop what the scenario made: its child namespaces, its home, loose tables.

        Everything is taken apart concurrently (tables, then namespaces bottom-up),
        so a scenario that made a thousand children does not wait on a thousand
        sequential drops.
        """
        problems: list[str] = []

        async def drop(namespace: list[str]) -> None:
            try:
                await self._drop_tree(namespace)
            except errors.LanceNamespaceError as exc:
                problems.append(f"{namespace}: {type(exc).__name__}: {exc}")

        if self.settings.flat:  # siblings of home: those still listed, each on its own
            try:
                listed = set(await self.namespaces(self.settings.root))
            except errors.LanceNamespaceError as exc:
                problems.append(f"listing {list(self.settings.root)}: {exc}")
                listed = {child[-1] for child in self._children}
            unique = {tuple(child): list(child) for child in self._children}.values()
            children = [c for c in unique if c[-1] in listed and c != self.home]
            await self.all_at_once(functools.partial(drop, child) for child in children)
        await drop(self.home)  # with everything still inside it
        for location, options in self._loose:
            try:
                await _delete_table_data(location, options)
            except Exception as exc:  # data we wrote; report it, keep cleaning
                problems.append(f"{location}: {type(exc).__name__}: {exc}")
        if problems:
            raise AssertionError("the kit could not clean up:\n" + "\n".join(problems))

    async def _drop_tree(self, namespace: list[str]) -> None:
        """Drop a namespace and what is inside, with the basic operations only (a
        backend's Cascade may be unsupported, ignored, or sequential and slow)."""
        if await self._drop_if_empty(namespace):
            return
        try:
            tables = await self.tables(namespace)
        except errors.NamespaceNotFoundError:
            return
        await self.all_at_once(
            functools.partial(self._drop_table, [*namespace, name]) for name in tables
        )
        if not self.settings.flat:
            children = await self.namespaces(namespace)
            await self.all_at_once(
                functools.partial(self._drop_tree, [*namespace, child]) for child in children
            )
        if not await self._drop_if_empty(namespace):  # something unlisted is left
            await self.ns.drop_namespace({"id": namespace, "behavior": "Cascade"})

    async def _drop_if_empty(self, namespace: list[str]) -> bool:
        """Drop ``namespace`` if it is empty; whether it is gone."""
        try:
            await self.ns.drop_namespace({"id": namespace})
        except errors.NamespaceNotFoundError:
            return True
        except (errors.NamespaceNotEmptyError, errors.InvalidInputError):
            return False
        return True

    async def _drop_table(self, table: list[str]) -> None:
        try:
            await self.ns.drop_table({"id": table})
        except errors.TableNotFoundError:
            pass
        except errors.UnsupportedOperationError:  # deregister, then delete the data
            deregistered = await self.ns.deregister_table({"id": table})
            if isinstance(deregistered.location, str):
                self._loose.append((deregistered.location, self.storage_options()))


async def _delete_table_data(location: str, options: Mapping[str, str]) -> None:
    import lance

    def drop() -> None:
        lance.LanceDataset.drop(
            location, storage_options=dict(options) or None, ignore_not_found=True
        )

    await anyio.to_thread.run_sync(drop)


def _name(operation: Callable[..., object]) -> str:
    method = getattr(operation, "__name__", "call")
    return _OPERATION_OF_METHOD.get(method, method)


def unsupported_operation(exc: BaseException) -> str:
    """The operation id whose call raised ``exc`` (from its traceback)."""
    tb = exc.__traceback__
    last_method = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        if code in _OPERATION_OF_CODE:
            return _OPERATION_OF_CODE[code]
        if code.co_name in _OPERATION_OF_METHOD:
            last_method = code.co_name
        tb = tb.tb_next
    return _OPERATION_OF_METHOD.get(last_method, "an operation")


async def _run_with(
    ns: AsyncLanceNamespace, scenario: Scenario, settings: KitSettings
) -> tuple[str | None, frozenset[str]]:
    """Run ``scenario`` in a fresh home namespace: the skip reason (or None) and the
    operations that answered while it ran (not its setup or cleanup)."""
    if scenario.nested and settings.flat:
        return "needs namespaces nested below the kit root (the kit runs flat)", frozenset()
    kit = Kit(ns, settings, secrets.token_hex(4))
    await cast(Namespace, ns).create_namespace({"id": kit.home})  # setup: not recorded
    skipped: str | None = None
    answered: frozenset[str] = frozenset()
    try:
        await scenario.func(kit, *scenario.args)
        answered = frozenset(kit.answered)
    except ScenarioSkipped as skip:
        skipped = skip.reason
    except errors.UnsupportedOperationError as exc:
        if type(exc) is not errors.UnsupportedOperationError or exc.code != 0:
            raise AssertionError(
                "an unsupported operation must raise UnsupportedOperationError (code 0), "
                f"got {type(exc).__name__} (code {exc.code})"
            ) from exc
        skipped = f"{unsupported_operation(exc)} unsupported by {settings.impl}"
    except BaseException as failure:
        with anyio.CancelScope(shield=True):
            try:
                await kit.cleanup()
            except Exception as cleanup_failure:
                failure.add_note(f"and cleaning up failed too: {cleanup_failure}")
        raise
    await kit.cleanup()
    return skipped, answered


class KitRunner:
    """Runs scenarios one after another on one event loop and one backend connection.

    Connecting once matters: an AWS SDK client or a thrift pool costs far more to
    build than most scenarios take. The loop runs in a worker thread (an anyio
    blocking portal), so ``run`` is called from plain synchronous code such as a
    pytest item::

        with KitRunner(settings) as runner:
            for scenario in SCENARIOS:
                runner.run(scenario)
    """

    def __init__(self, settings: KitSettings) -> None:
        self.settings = settings
        self._stack: contextlib.ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._ns: AsyncLanceNamespace | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        if self._stack is not None:
            return
        stack = contextlib.ExitStack()
        try:
            portal = stack.enter_context(start_blocking_portal())
            ns = connect(self.settings.impl, self.settings.properties)
            stack.callback(portal.call, ns.aclose)
        except BaseException:
            stack.close()
            raise
        self._stack, self._portal, self._ns = stack, portal, ns

    def close(self) -> None:
        stack, self._stack, self._portal, self._ns = self._stack, None, None, None
        if stack is not None:
            stack.close()

    def run(self, scenario: Scenario) -> frozenset[str]:
        """Run one scenario: the ids of the operations that answered while it ran
        (what a passing scenario exercised). Raises :class:`ScenarioSkipped`,
        AssertionError or the backend's error when the backend breaks the specification."""
        self.start()
        if self._portal is None or self._ns is None:
            raise RuntimeError("the kit runner is closed")
        skipped, answered = self._portal.call(_run_with, self._ns, scenario, self.settings)
        if skipped is not None:
            raise ScenarioSkipped(skipped)
        return answered


def run_scenario(scenario: Scenario, settings: KitSettings) -> frozenset[str]:
    """Run one scenario against a fresh connection to ``settings``' backend: the ids of
    the operations that answered while it ran.

    Raises :class:`ScenarioSkipped` when the backend does not support an operation
    the scenario needs (or the settings rule the scenario out), AssertionError or
    the backend's error when the backend breaks the specification.
    """
    with KitRunner(settings) as runner:
        return runner.run(scenario)
