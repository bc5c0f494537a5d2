"""The registry of the conformance kit's scenarios (:data:`SCENARIOS`, :func:`scenario`),
the spellings of the modes, and the checks the themes share.

Below every theme (``scenarios.namespaces``, ``scenarios.tables``, ``batch_scenarios``,
``data_scenarios``): a theme imports it to register itself, and ``scenarios`` imports
the themes in their order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from .. import errors
from ._kit import Kit, Scenario

__all__ = [
    "CASCADE",
    "CREATE",
    "EXIST_OK",
    "FAIL",
    "OVERWRITE",
    "RESTRICT",
    "SCENARIOS",
    "SKIP",
    "UNUSUAL_NAMES",
    "check_pages",
    "gone",
    "scenario",
    "table_gone",
]

#: every scenario, in the order the kit runs them
SCENARIOS: list[Scenario] = []

ScenarioFunc = TypeVar("ScenarioFunc", bound=Callable[..., Awaitable[None]])

CREATE = ("Create", "CREATE", "create")
EXIST_OK = ("ExistOk", "EXIST_OK", "exist_ok")
OVERWRITE = ("Overwrite", "OVERWRITE", "overwrite")
FAIL = ("Fail", "FAIL", "fail")
SKIP = ("Skip", "SKIP", "skip")
RESTRICT = ("Restrict", "RESTRICT", "restrict")
CASCADE = ("Cascade", "CASCADE", "cascade")
#: names people really use: accents, CJK, spaces, emoji
UNUSUAL_NAMES = ("données", "名前", "with space", "émoji 🚀")


def scenario(
    *, params: Sequence[str] = (), nested: bool = False
) -> Callable[[ScenarioFunc], ScenarioFunc]:
    """Register the decorated coroutine as a scenario (one per entry of ``params``)."""

    def register(func: ScenarioFunc) -> ScenarioFunc:
        name = func.__name__
        if params:
            SCENARIOS.extend(Scenario(f"{name}[{p}]", func, (p,), nested) for p in params)
        else:
            SCENARIOS.append(Scenario(name, func, (), nested))
        return func

    return register


async def gone(kit: Kit, namespace: list[str]) -> None:
    """The namespace does not exist (NamespaceExists raises NamespaceNotFound)."""
    try:
        await kit.ns.namespace_exists({"id": namespace})
    except errors.NamespaceNotFoundError:
        return
    raise AssertionError(f"namespace {namespace} still exists")


async def table_gone(kit: Kit, table: list[str]) -> None:
    try:
        await kit.ns.table_exists({"id": table})
    except errors.TableNotFoundError:
        return
    raise AssertionError(f"table {table} still exists")


def check_pages(
    pages: list[list[str]],
    limit: int,
    ours: Callable[[list[str]], list[str]],
    expected: list[str],
) -> None:
    too_long = [len(page) for page in pages if len(page) > limit]
    assert not too_long, f"pages longer than limit={limit}: {too_long}"
    everything = [name for page in pages for name in page]
    repeated = sorted({name for name in everything if everything.count(name) > 1})
    assert not repeated, f"listed more than once across pages: {repeated[:10]}"
    found = ours(everything)
    missing = sorted(set(expected) - set(found))
    assert not missing, f"{len(missing)} never listed, e.g. {missing[:10]}"
    assert sorted(found) == sorted(expected)
    assert len(pages) >= -(-len(expected) // limit), "fewer pages than the limit allows"
