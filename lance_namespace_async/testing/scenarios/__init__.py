"""The scenarios of the conformance kit: one specification per operation and mode.

Each scenario's docstring is its specification in words. Every scenario works in
its own namespace (``kit.home``, created before and dropped after it), so runs
never collide; "changed nothing" means the scenario's namespaces, their properties,
tables, table locations and versions are as they were (:meth:`Kit.refuses`).
Properties are compared leniently where the specification lets a server add, drop
or rewrite entries: a value the kit set must never come back *wrong*.

The scenarios are registered by theme, in this order: ``namespaces`` (the
namespace operations), ``tables`` (the table operations, listings, versions and
identifiers), then ``batch_scenarios``, ``data_scenarios``, ``branch_scenarios``,
``table_ops_scenarios``, ``view_scenarios`` and ``job_scenarios`` one level up. The registry
(:data:`SCENARIOS`, :func:`scenario`),
the spellings of the modes and the checks the themes share are in ``testing._scenario``,
below the themes; importing this package registers every theme.
"""

from __future__ import annotations

# the themes register themselves on import, in this order: the catalog's, then the
# batches', the data operations', the branches' and the other table operations'
# (import sorting would change the order)
# isort: off
from . import namespaces, tables  # noqa: F401
from .. import batch_scenarios, data_scenarios, branch_scenarios, table_ops_scenarios  # noqa: F401
from .. import view_scenarios  # noqa: F401
from .. import job_scenarios  # noqa: F401
from .. import backfill_scenarios  # noqa: F401
from .._scenario import SCENARIOS, scenario

# isort: on

__all__ = ["SCENARIOS", "scenario"]
