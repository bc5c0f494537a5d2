"""The Lance Namespace conformance kit: scenarios any backend can be checked against.

As a pytest plugin (installed with this package; inert unless asked)::

    pytest --lance-ns-impl dir --lance-ns-prop root=/tmp/kit
    pytest --lance-ns-impl my_pkg.module:MyNamespace --lance-ns-prop uri=http://... \\
        --lance-ns-root main --lance-ns-flat --lance-ns-many 200

From Python (a project's own suite): a :class:`KitRunner` over :data:`SCENARIOS`.
Names are imported on first use, so loading the pytest plugin stays cheap.

Layer (ARCHITECTURE.md): the top, beside ``_cli`` and ``spark``. May import the
facade, storage, the core; backends only by name through ``connect()``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._kit import Kit, KitRunner, KitSettings, Scenario, ScenarioSkipped, run_scenario
    from .scenarios import SCENARIOS

__all__ = [
    "SCENARIOS",
    "Kit",
    "KitRunner",
    "KitSettings",
    "Scenario",
    "ScenarioSkipped",
    "run_scenario",
]

_LAZY = {name: "._kit" for name in __all__ if name != "SCENARIOS"} | {"SCENARIOS": ".scenarios"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
