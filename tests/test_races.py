"""Races, end to end: 64 tasks creating one object, and Restrict drops racing declares.

Each backend runs against its real store: pylance's directory catalog on a temporary
folder (directly, and behind our REST adapter and pylance's own RestAdapter), the
Iceberg and Unity test catalogs, and moto's Glue. The Iceberg catalog is our
look-alike (tests/iceberg_rest_server.py: pyiceberg's SqlCatalog, contract-checked).

* 64 tasks create the same namespace, or declare the same table, at once: exactly
  one succeeds, the 63 others get the AlreadyExists error of the object (code 2 or
  5), and the catalog holds the object once.
* A Restrict drop racing declares inside the namespace: either the drop wins (the
  namespace is gone, every declare failed with NamespaceNotFound, and re-creating the
  namespace shows no table) or the declares win (the drop failed with
  NamespaceNotEmpty and the namespace holds exactly the declared tables). Never a
  successful declare into a dropped namespace, never an orphaned table.

Limits (documented, measured): the directory and Glue backends guarantee the
Restrict rule by an in-process guard (pylance's manifest commits a declare and a
drop separately; Glue's DeleteDatabase cascades), so it holds for the calls of one
namespace instance, not across processes. pylance's own RestAdapter has the
manifest race (its case is an expected failure, measured).
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from conftest import SECRET_CANARY
from fault_proxy import AdapterServer, pylance_adapter
from glue_fixtures import REGION, moto_glue, use_fake_aws_env
from iceberg_rest_server import iceberg_catalog
from unity_server import unity_catalog

import lance_namespace_async as lna
from lance_namespace_async import errors
from lance_namespace_async._core.base import AsyncLanceNamespace

TASKS = 64
ROUNDS = 12
WH = "wh"
CATALOG = "main"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_aws_env(monkeypatch)


@dataclass
class Backend:
    impl: str
    properties: dict[str, str]
    #: where test namespaces are created ([] for the root, [warehouse], [catalog])
    parent: list[str]
    #: pylance's own server behind our rest client
    peer: bool = False


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("races")


@pytest.fixture(scope="module")
def our_adapter(module_dir: Path) -> Iterator[str]:
    root = module_dir / "adapter"
    server = AdapterServer(lambda: lna.connect("dir", {"root": str(root)}))
    server.start()
    try:
        yield server.uri
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pylance_server(module_dir: Path) -> Iterator[str]:
    with pylance_adapter(str(module_dir / "pylance")) as uri:
        yield uri


@pytest.fixture(scope="module")
def iceberg_server(module_dir: Path) -> Iterator[str]:
    with iceberg_catalog(module_dir / "iceberg") as server:
        yield server.uri


@pytest.fixture(scope="module")
def unity_server() -> Iterator[str]:
    with unity_catalog() as server:
        server.add_catalog(CATALOG)
        yield server.uri


@pytest.fixture(scope="module")
def glue_server() -> Iterator[str]:
    with moto_glue() as endpoint:
        yield endpoint


BACKENDS = ["dir", "rest", "rest-pylance", "iceberg", "unity", "glue"]


def backend_for(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    # generous pools: 64 calls at once must not queue behind a small default
    http = {"max_connections": "128", "retry_backoff_ms": "5", "auth_token": SECRET_CANARY}
    if name == "dir":
        return Backend("dir", {"root": str(tmp_path / "dir"), "worker_threads": "16"}, [])
    if name == "rest":
        return Backend("rest", {"uri": request.getfixturevalue("our_adapter"), **http}, [])
    if name == "rest-pylance":
        uri = request.getfixturevalue("pylance_server")
        return Backend("rest", {"uri": uri, **http}, [], peer=True)
    if name == "iceberg":
        uri = request.getfixturevalue("iceberg_server")
        return Backend("iceberg", {"endpoint": uri, "root": str(tmp_path), **http}, [WH])
    if name == "unity":
        uri = request.getfixturevalue("unity_server")
        return Backend("unity", {"endpoint": uri, "root": str(tmp_path), **http}, [CATALOG])
    glue = {
        "endpoint": request.getfixturevalue("glue_server"),
        "region": REGION,
        "root": str(tmp_path),
        "child_catalogs": "false",
        "max_pool_connections": "128",
        "access_key_id": "testing",
        "secret_access_key": f"testing-{SECRET_CANARY}",
    }
    return Backend("glue", glue, [])


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return backend_for(request.param, request, tmp_path)


def unique(prefix: str, request: pytest.FixtureRequest) -> str:
    """Names unique per test (module-scoped servers outlive a test)."""
    digest = abs(hash(request.node.nodeid)) % 10**8
    return f"{prefix}_{digest}"


async def all_at_once(count: int, call: Callable[[], Any]) -> list[BaseException | None]:
    """Start ``count`` calls together; each one's outcome (None: it succeeded)."""
    outcomes: list[BaseException | None] = []
    ready = anyio.Event()

    async def one() -> None:
        await ready.wait()
        try:
            await call()
        except errors.LanceNamespaceError as exc:
            outcomes.append(exc)
        else:
            outcomes.append(None)

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
        await anyio.lowlevel.checkpoint()
        ready.set()
    return outcomes


def one_winner(
    outcomes: list[BaseException | None], loser: type[Exception], code: int, backend: Backend
) -> None:
    """One success; every other call lost with the AlreadyExists error of the object.

    pylance's own RestAdapter answers some losers with ConcurrentModification (14): its
    DirectoryNamespace reports a lost manifest commit that way (our dir backend turns it
    into AlreadyExists). Our client reports what the server said; one winner still holds.
    """
    kinds = collections.Counter(
        "ok" if o is None else f"{type(o).__name__}({getattr(o, 'code', '?')})" for o in outcomes
    )
    lost = f"{loser.__name__}({code})"
    if backend.peer:
        kinds[lost] += kinds.pop("ConcurrentModificationError(14)", 0)
    assert kinds == {"ok": 1, lost: TASKS - 1}, dict(kinds)


async def test_64_tasks_creating_one_namespace_leave_one_winner(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    name = unique("ns", request)
    target = [*backend.parent, name]
    async with lna.connect(backend.impl, backend.properties) as ns:
        outcomes = await all_at_once(TASKS, lambda: ns.create_namespace({"id": target}))
        one_winner(outcomes, errors.NamespaceAlreadyExistsError, 2, backend)
        listed = (await ns.list_namespaces({"id": backend.parent})).namespaces
        assert listed.count(name) == 1


async def test_64_tasks_declaring_one_table_leave_one_winner(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    namespace = [*backend.parent, unique("ns", request)]
    async with lna.connect(backend.impl, backend.properties) as ns:
        await ns.create_namespace({"id": namespace})
        table = [*namespace, "t"]
        outcomes = await all_at_once(TASKS, lambda: ns.declare_table({"id": table}))
        one_winner(outcomes, errors.TableAlreadyExistsError, 5, backend)
        assert (await ns.list_tables({"id": namespace})).tables == ["t"]


async def restrict_round(
    ns: AsyncLanceNamespace, namespace: list[str], declares: int, jitter: float
) -> str:
    """Declares and a Restrict drop at once (each after a random delay up to ``jitter``
    seconds, so both orders and overlaps occur); checks the invariant; returns who won."""
    await ns.create_namespace({"id": namespace})
    declared: dict[str, BaseException | None] = {}
    dropped: list[BaseException | None] = []
    ready = anyio.Event()

    async def declare(table: str) -> None:
        await ready.wait()
        await anyio.sleep(random.uniform(0, jitter))
        try:
            await ns.declare_table({"id": [*namespace, table]})
        except errors.LanceNamespaceError as exc:
            declared[table] = exc
        else:
            declared[table] = None

    async def drop() -> None:
        await ready.wait()
        await anyio.sleep(random.uniform(0, jitter))
        try:
            await ns.drop_namespace({"id": namespace, "behavior": "Restrict"})
        except errors.LanceNamespaceError as exc:
            dropped.append(exc)
        else:
            dropped.append(None)

    async with anyio.create_task_group() as group:
        for index in range(declares):
            group.start_soon(declare, f"t{index}")
        group.start_soon(drop)
        await anyio.lowlevel.checkpoint()
        ready.set()

    succeeded = sorted(t for t, outcome in declared.items() if outcome is None)
    for outcome in declared.values():
        assert outcome is None or isinstance(outcome, errors.NamespaceNotFoundError), outcome
    try:
        await ns.namespace_exists({"id": namespace})
        exists = True
    except errors.NamespaceNotFoundError:
        exists = False
    if dropped[0] is None:
        assert not exists, "a successful Restrict drop left the namespace"
        assert succeeded == [], f"declared {succeeded} into a namespace that was dropped"
        await ns.create_namespace({"id": namespace})  # an orphan would reappear here
        assert (await ns.list_tables({"id": namespace})).tables == [], "orphaned tables"
        winner = "drop"
    else:
        assert isinstance(dropped[0], errors.NamespaceNotEmptyError), dropped[0]
        assert dropped[0].code == 3
        assert exists
        assert sorted((await ns.list_tables({"id": namespace})).tables) == succeeded
        assert succeeded, "the drop saw a table nobody declared"
        winner = "declares"
    return winner


PYLANCE_RESTRICT_RACE = pytest.mark.xfail(
    strict=False,
    reason="pylance 14.0.2's own DirectoryNamespace (behind its RestAdapter) commits a "
    "declare and a Restrict drop as separate manifest writes: measured 10 of 12 rounds "
    "with a declare succeeding into the dropped namespace (our dir backend guards it)",
)


@pytest.mark.parametrize(
    "backend_name",
    [pytest.param(b, marks=PYLANCE_RESTRICT_RACE) if b == "rest-pylance" else b for b in BACKENDS],
)
async def test_restrict_drop_never_races_a_declare_into_an_orphan(
    backend_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend = backend_for(backend_name, request, tmp_path)
    base = unique("r", request)
    winners: collections.Counter[str] = collections.Counter()
    async with lna.connect(backend.impl, backend.properties) as ns:
        for round_ in range(ROUNDS):
            namespace = [*backend.parent, f"{base}_{round_}"]
            jitter = 0.0 if round_ % 3 == 0 else 0.02
            winners[await restrict_round(ns, namespace, declares=2, jitter=jitter)] += 1
    assert sum(winners.values()) == ROUNDS
    print(f"restrict race {backend_name}: {dict(winners)} over {ROUNDS} rounds")
